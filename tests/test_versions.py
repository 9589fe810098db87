"""``kernelcfg versions``, completion, and release-aware refusals."""

from __future__ import annotations

import json

from kernelcfg.cli.common import complete_flags
from kernelcfg.vllm import releases

from .cli_helpers import run


def test_versions_lists_every_release() -> None:
    result = run("versions", "--format", "json")
    assert result.exit_code == 0
    assert [row["version"] for row in result.json()["releases"]] == list(releases.known_versions())
    assert result.json()["format_version"] == "1"


def test_the_release_table_fits_80_columns_with_each_ir_op_whole() -> None:
    """A CI log is 80 columns wide: no line is longer, and no IR op's name is split."""
    from typer.testing import CliRunner

    from kernelcfg.cli import app

    table = CliRunner().invoke(app, ["versions"], terminal_width=80, env={"COLUMNS": "80"})
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    cells = {c.strip() for line in lines for c in line.split("│")}
    ops = {
        op for row in run("versions", "--format", "json").json()["releases"] for op in row["ir_ops"]
    }
    assert ops
    assert ops <= cells


def test_versions_diff_names_what_changed() -> None:
    data = run("versions", "0.32", "0.33", "--format", "json").json()
    assert data["fields"]["added"] == ["monokernel"]
    assert "monokernel" in data["hash_inputs"]["added"]
    assert "aiter_triton_mxfp4_mxfp4" in data["choices"]["MoEBackend"]["added"]
    assert data["platform_ir_defaults_changed"] == ["rocm"]
    old = run("versions", "0.29.0", "v0.30.0", "--format", "json").json()
    assert old["ir_ops"]["added"] == ["gelu_and_mul_sparse"]
    assert "enable_bf16x3_router_gemm" in old["fields"]["removed"]
    table = run("versions", "0.32", "0.33")
    assert "monokernel" in table.stdout


def _before_oldest() -> str:
    """The minor release before the oldest kernelcfg knows (``0.27`` while that is 0.28.0)."""
    major, minor, _ = releases.known_versions()[0].split(".")
    return f"{major}.{int(minor) - 1}"


def test_versions_refuses_unknown_release() -> None:
    result = run("versions", _before_oldest(), "0.33")
    assert result.exit_code == 2
    assert "0.33.0" in result.stderr


def test_field_missing_from_release_names_the_releases_that_have_it() -> None:
    result = run(
        "resolve", "--vllm-version", "0.32", "--device", "h100", "--format", "json", "--monokernel"
    )
    assert result.exit_code == 2
    assert "exists in vLLM 0.33.0, 0.34.0; you are resolving for 0.32.0" in result.stderr
    dotted = run(
        "resolve",
        "--vllm-version",
        "0.32.0",
        "--device",
        "h100",
        "--format",
        "json",
        "--kernel-config.monokernel=true",
    )
    assert dotted.exit_code == 2
    assert "exists in vLLM 0.33.0" in dotted.stderr


def test_release_from_environment(clean_env: object) -> None:
    data = run(
        "resolve", "--device", "h100", "--format", "json", env={"KERNELCFG_VLLM_VERSION": "0.30"}
    ).json()
    assert data["vllm_version"] == "0.30.0"
    assert "monokernel" not in data["kernel_config"]


def test_completion_offers_backend_names() -> None:
    assert "flashinfer_trtllm" in complete_flags(None, ["--moe-backend"], "flash")  # type: ignore[arg-type]
    assert "passthrough" not in complete_flags(None, ["--all2all-backend"], "")  # type: ignore[arg-type]
    assert "--moe-backend" in complete_flags(None, [], "--moe")  # type: ignore[arg-type]
    json.dumps(complete_flags(None, ["--linear-backend"], ""))  # type: ignore[arg-type]
