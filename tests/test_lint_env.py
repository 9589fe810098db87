"""lint-env: removed variables and their flags, typos, what resolution variables change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelcfg import releases
from kernelcfg.lint_env import _history, lint

from .cli_helpers import run

REMOVED = sorted(_history()["removed"].items())


@pytest.mark.parametrize("version", releases.known_versions())
@pytest.mark.parametrize(("name", "spec"), REMOVED, ids=[n for n, _ in REMOVED])
def test_every_removed_variable_names_its_flag(
    version: str, name: str, spec: dict[str, object]
) -> None:
    release = releases.load(version)
    assert name not in release.envs
    by_value = spec.get("by_value")
    value = next(iter(by_value)) if isinstance(by_value, dict) else "1"
    (finding,) = lint({name: value}, release)
    assert finding.code == "removed-variable"
    assert finding.severity == "warning"
    assert spec["flag"] in finding.use_instead
    assert f"removed in vLLM {spec['removed_in']}" in finding.message


def test_value_decides_the_replacement() -> None:
    release = releases.load(None)
    env = {"VLLM_USE_FLASHINFER_MOE_FP8": "1", "VLLM_FLASHINFER_MOE_BACKEND": "throughput"}
    fp8 = next(f for f in lint(env, release) if f.variable == "VLLM_USE_FLASHINFER_MOE_FP8")
    assert fp8.use_instead == ("--moe-backend", "flashinfer_cutlass")
    (off,) = lint({"VLLM_USE_FLASHINFER_MOE_FP4": "0"}, release)
    assert off.use_instead == ()
    assert "no flag says that" in off.message


def test_typo_and_resolution_variables() -> None:
    release = releases.load("0.33.0")
    found = {
        f.variable: f
        for f in lint(
            {
                "VLLM_USE_OINK_OP": "1",
                "VLLM_USE_OINK_OPS": "yes",
                "VLLM_ROCM_USE_AITER_RMSNORM": "0",
                "TORCH_COMPILE_DISABLE": "1",
                "PATH": "/bin",
                "VLLM_USE_BREAKABLE_CUDAGRAPH": "0",
            },
            release,
        )
    }
    assert "did you mean 'VLLM_USE_OINK_OPS'" in found["VLLM_USE_OINK_OP"].message
    assert found["VLLM_USE_OINK_OPS"].message.startswith("VLLM_USE_OINK_OPS=yes: reads as off")
    assert "reads as off" in found["VLLM_ROCM_USE_AITER_RMSNORM"].message
    assert found["TORCH_COMPILE_DISABLE"].code == "changes-resolution"
    assert found["VLLM_USE_BREAKABLE_CUDAGRAPH"].code == "changes-resolution"
    assert "PATH" not in found


def test_cli_env_file_and_formats(tmp_path: Path) -> None:
    env_file = tmp_path / "vllm.env"
    env_file.write_text(
        "# deployment\nVLLM_ALL2ALL_BACKEND=deepep_low_latency\n\nVLLM_USE_DEEP_GEMM=1\n"
    )
    result = run("lint-env", "--env-file", str(env_file), "--format", "json")
    assert result.exit_code == 1
    data = result.json()
    codes = {f["field"]: f["code"] for f in data["findings"]}
    assert codes == {
        "VLLM_ALL2ALL_BACKEND": "removed-variable",
        "VLLM_USE_DEEP_GEMM": "steers-kernels",
    }
    github = run("lint-env", "--env-file", str(env_file), "--format", "github").stdout
    assert github.startswith("::warning title=kernelcfg VLLM_ALL2ALL_BACKEND%3A removed-variable::")
    clean = tmp_path / "clean.env"
    clean.write_text("VLLM_USE_DEEP_GEMM=1\n")
    assert run("lint-env", "--env-file", str(clean)).exit_code == 0
    bad = tmp_path / "bad.env"
    bad.write_text("NOT A PAIR\n")
    broken = run("lint-env", "--env-file", str(bad))
    assert broken.exit_code == 2
    assert "expected KEY=VALUE" in broken.stderr
    json.loads(run("lint-env", "--env-file", str(env_file), "--format", "sarif").stdout)
