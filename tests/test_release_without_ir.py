"""A release without ``ir_op_priority`` (vLLM has announced its removal) is a data file
and nothing more: every command works on it or refuses it in one line, and nothing
reports a stale IR-op priority."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelcfg.checks import lint_env
from kernelcfg.flags.serve_line import parser as serve_parser
from kernelcfg.targets import presets
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config import config, defaults, hashing

from .cli_helpers import run

SYNTHETIC = "0.35.0"


def _without_ir(data: dict) -> dict:  # type: ignore[type-arg]
    data = json.loads(json.dumps(data))
    data["vllm_version"] = SYNTHETIC
    kc = data["kernel_config"]
    kc["fields"] = [f for f in kc["fields"] if f["name"] != "ir_op_priority"]
    kc["hash_ignored"] = [f for f in kc["hash_ignored"] if f != "ir_op_priority"]
    data.pop("ir_op_priority", None)
    data["engine_args"] = [a for a in data["engine_args"] if a != "ir_op_priority"]
    data["ir_ops"] = {}
    data["rules"]["docs"]["fields"].pop("ir_op_priority", None)
    return data


def _clear_caches() -> None:
    releases.forget()
    for fn in (
        releases._load,
        releases.known_versions,
        releases._kernel_fields,
        config.config_classes,
        lint_env._known_elsewhere,
        hashing._ir_hash,
        defaults._defaults,
        releases.data_file,
        presets._from_flags,
        serve_parser.options,
    ):
        fn.cache_clear()


@pytest.fixture
def synthetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The release's two files in a user's folder (``KERNELCFG_DATA_PATH``), as the release
    command would write them the day vLLM ships it."""
    source = Path(releases.__file__).parent
    newest = json.loads((source / f"vllm-{releases.newest()}.json").read_text())
    (tmp_path / f"vllm-{SYNTHETIC}.json").write_text(json.dumps(_without_ir(newest)))
    serve = json.loads((source / f"serve-{releases.newest()}.json").read_text())
    serve["vllm_version"] = SYNTHETIC
    serve["options"] = [o for o in serve["options"] if o["dest"] != "ir_op_priority"]
    (tmp_path / f"serve-{SYNTHETIC}.json").write_text(json.dumps(serve))
    monkeypatch.setenv("KERNELCFG_DATA_PATH", str(tmp_path))
    _clear_caches()
    yield SYNTHETIC
    monkeypatch.delenv("KERNELCFG_DATA_PATH")
    _clear_caches()


def test_api_has_no_ir_field(synthetic: str) -> None:
    api_release = releases.load(synthetic)
    assert api_release.ir_ops == ()
    cfg = config.config_classes(api_release).KernelConfig()
    assert "ir_op_priority" not in cfg.hash_factors()
    assert len(cfg.compute_hash()) == 64


@pytest.mark.parametrize(
    "args",
    [
        ["resolve", "--device", "mi300x", "--env", "VLLM_ROCM_USE_AITER=1", "--format", "json"],
        ["resolve", "--device", "h100", "--moe-backend", "triton", "--format", "table"],
        ["resolve", "--device", "h100", "--format", "env"],
        ["resolve", "--device", "h100", "-O0", "--format", "args"],
        ["schema"],
        ["versions"],
        ["versions", "0.34", SYNTHETIC],
        ["diff", "--a", "--moe-backend triton", "--b", "--moe-backend cutlass", "--device", "h100"],
        ["backends", "--device", "b200"],
        ["explain", "moe_backend"],
        ["lint-env"],
    ],
)
def test_every_command_works_without_the_field(synthetic: str, args: list[str]) -> None:
    result = run(*args, env={"KERNELCFG_VLLM_VERSION": synthetic})
    assert result.exit_code in (0, 1), result.stderr
    if "--format" in args and args[args.index("--format") + 1] == "json":
        data = json.loads(result.stdout)
        assert data["vllm_version"] == synthetic
        assert "ir_op_priority" not in data["kernel_config"]
        assert "ir_op_priority" not in data["hash_factors"]
        assert data["ir_dispatch"] is None
    else:
        assert "ir_op_priority" not in result.stdout or args[0] in ("versions", "explain")


def test_an_ir_flag_is_refused_in_one_line(synthetic: str) -> None:
    result = run(
        "resolve",
        "--device",
        "h100",
        "--ir-op-priority.rms_norm=native",
        "--format",
        "json",
        env={"KERNELCFG_VLLM_VERSION": synthetic},
    )
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "ir-op-priority" in result.stderr or "ir_op_priority" in result.stderr
