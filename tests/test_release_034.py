"""vLLM 0.34.0: the hash scheme as data, the release chosen by default, the variables
it refuses at start-up."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kernelcfg import for_version
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config import hashing

from .cli_helpers import Run, run
from .conftest import golden


def resolve(version: str, *words: str, device: str = "h100") -> Run:
    """``kernelcfg resolve --device DEVICE --vllm-version VERSION --format json WORDS``."""
    return run("resolve", "--device", device, "--vllm-version", version, "--format", "json", *words)


def test_each_release_names_a_known_scheme() -> None:
    schemes = {v: releases.load(v).hash_scheme for v in releases.known_versions()}
    assert set(schemes.values()) <= set(hashing.SCHEMES)
    assert schemes["0.33.0"] == "compute_hash"
    assert schemes["0.34.0"] == "hash_config"


def test_api_compute_hash_is_hash_config_in_034() -> None:
    api = for_version("0.34")
    for case in golden("0.34.0", "cases")["cases"][:20]:
        if case.get("ir_op_priority_via", "absent") != "absent" or "kwargs_py" in case:
            continue
        cfg = api.KernelConfig(**case["kwargs"])
        assert cfg.compute_hash() == case["hash"]
        assert json.dumps(cfg.hash_factors(), sort_keys=True) == case["kernel_hash_json"]


def test_json_names_the_scheme() -> None:
    old = resolve("0.33").json()
    new = resolve("0.34").json()
    assert old["hash_scheme"] == "compute_hash"
    assert isinstance(old["hash_factors"]["ir_op_priority"], str)
    assert new["hash_scheme"] == "hash_config"
    assert set(new["hash_factors"]["ir_op_priority"]) == {*releases.load("0.34").ir_ops, "_impls"}
    assert old["vllm_version_source"] == "flag"


def test_versions_explains_the_scheme_change() -> None:
    result = run("versions", "0.33", "0.34", "--format", "json")
    change = result.json()["hash_scheme"]
    assert change["old"] == "compute_hash"
    assert change["new"] == "hash_config"
    assert "no longer hashed on its own" in change["means"]
    assert "under `kernel`" in change["means"]
    assert run("versions", "0.32", "0.33", "--format", "json").json()["hash_scheme"] is None


def test_default_release_is_the_installed_vllm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: pytest.MonkeyPatch
) -> None:
    del clean_env
    (tmp_path / "vllm-0.32.0.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    releases.installed_vllm.cache_clear()
    try:
        data = run("resolve", "--device", "h100", "--format", "json").json()
        assert data["vllm_version"] == "0.32.0"
        assert data["vllm_version_source"] == "installed"
        flagged = run("resolve", "--device", "h100", "--vllm-version", "0.34", "--format", "json")
        assert flagged.json()["vllm_version"] == "0.34.0"
        (tmp_path / "vllm-0.32.0.dist-info").rename(tmp_path / "vllm-9.1.0.dist-info")
        releases.installed_vllm.cache_clear()
        unknown = run("resolve", "--device", "h100", "--format", "json")
        assert unknown.exit_code == 2
        assert "vLLM 9.1.0 is installed here" in unknown.stderr
        assert "0.34.0" in unknown.stderr
    finally:
        releases.installed_vllm.cache_clear()


def test_no_vllm_installed_means_the_newest(clean_env: pytest.MonkeyPatch) -> None:
    del clean_env
    data = run("resolve", "--device", "h100", "--format", "json").json()
    assert data["vllm_version"] == releases.newest()
    assert data["vllm_version_source"] == "newest"


@pytest.mark.parametrize(
    ("env", "code", "severity"),
    [
        ("VLLM_MARLIN_INPUT_DTYPE=int8", 1, "error"),
        ("VLLM_USE_V2_MODEL_RUNNER=0", 1, "error"),
        ("VLLM_USE_V2_MODEL_RUNNER=1", 0, "warning"),
    ],
)
def test_variables_034_refuses(env: str, code: int, severity: str) -> None:
    result = resolve("0.34", "--env", env)
    assert result.exit_code == code
    name = env.split("=", maxsplit=1)[0]
    assert [p["severity"] for p in result.json()["problems"] if p["field"] == name] == [severity]
    older = resolve("0.33", "--env", env)
    assert older.exit_code == 0


def test_lint_env_reports_refusals(tmp_path: Path) -> None:
    path = tmp_path / "x.env"
    path.write_text("VLLM_MARLIN_INPUT_DTYPE=int8\n")
    result = run("lint-env", "--env-file", str(path), "--vllm-version", "0.34", "--format", "json")
    assert result.exit_code == 1
    finding = result.json()["findings"][0]
    assert finding["severity"] == "error"
    assert "--quantization humming" in finding["message"]


def test_new_fields_only_in_034() -> None:
    new = resolve("0.34", "--kernel-config.rdna_hybrid_w4a16_prefill_dequant=Enable")
    assert new.json()["kernel_config"]["rdna_hybrid_w4a16_prefill_dequant"] == "enable"
    old = resolve("0.33", "--kernel-config.rdna_hybrid_w4a16_prefill_dequant=enable")
    assert old.exit_code == 2
    assert "exists in vLLM 0.34.0" in old.stderr


def test_mori_all2all_only_in_034() -> None:
    assert resolve("0.34", "--all2all-backend", "mori", device="mi355x").exit_code == 0
    assert resolve("0.33", "--all2all-backend", "mori", device="mi355x").exit_code == 2


def test_compile_factors_only_where_vllm_has_it() -> None:
    new = for_version("0.34").KernelConfig(moe_backend="triton")
    assert new.compile_factors() == new.hash_factors()  # type: ignore[attr-defined]
    assert "_impls" in new.compile_factors()["ir_op_priority"]  # type: ignore[attr-defined]
    old = for_version("0.33").KernelConfig()
    assert not hasattr(old, "compile_factors")
