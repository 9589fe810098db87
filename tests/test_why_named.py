"""Issue 34: ``kernelcfg why FIELD`` with a value named by flag walks the checks resolve
makes of it, in order, one line each, to the first that refuses it: its verdict and
exit code are resolve's, and the check that refuses is the one resolve's problem
comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelcfg.commands.pipeline import Request, resolve_args
from kernelcfg.engine.explicit import CHECKS
from kernelcfg.engine.resolution import Resolution
from kernelcfg.output import render

from .cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
R1 = str(ROOT / "docs" / "examples" / "deepseek-r1")

CASES = {
    # name: (why's field, the flags)
    "moe-install": (
        "moe",
        ["--device", "h100", "--hf-config-path", R1, "--moe-backend", "deep_gemm"],
    ),
    "moe-runs": ("moe", ["--device", "h100", "--hf-config-path", R1, "--moe-backend", "triton"]),
    "moe-target": (
        "moe",
        ["--device", "h100", "--hf-config-path", R1, "--moe-backend", "flashinfer_trtllm"],
    ),
    "moe-rule": (
        "moe",
        [
            "--device",
            "b200",
            "--moe-backend",
            "flashinfer_moe_ep_cutedsl",
            "--all2all-backend",
            "deepep_low_latency",
            "-ep",
            "-dp",
            "2",
        ],
    ),
    "linear": (
        "linear",
        [
            "--device",
            "h100",
            "--quant-scheme",
            "fp8_block",
            "--linear-backend",
            "flashinfer_cutlass",
        ],
    ),
    "topk": ("topk", ["--device", "h100", "--sparse-indexer-topk-backend", "aiter"]),
    "linear-ignored": (  # vLLM warns and chooses automatically: resolve exits 0
        "linear",
        ["--device", "cpu", "--quant-scheme", "fp8_block", "--linear-backend", "cutlass"],
    ),
    "kernel-config": (
        "moe",
        ["--device", "h100", "--hf-config-path", R1, "--kernel-config", '{"moe_backend":"marlin"}'],
    ),
}
FIELD = {"moe": "moe_backend", "linear": "linear_backend", "topk": "sparse_indexer_topk_backend"}
FROM = {  # the check a problem of resolve's comes from, by its code
    "backend-cannot-run": "target",
    "moe-backend-needs-install": "install",
    "linear-backend-needs-install": "install",
    "all2all-conflicts-with-moe-backend": "start-up rules",
}


def _resolve(flags: list[str]) -> Resolution:
    result = resolve_args(flags, Request(environ={}))
    assert isinstance(result, Resolution)
    return result


@pytest.mark.parametrize("case", list(CASES))
def test_a_named_value_is_walked_as_resolve_checks_it(case: str) -> None:
    field, flags = CASES[case]
    done = run("why", field, *flags, "--format", "json")
    assert done.exit_code in (0, 1), done.stderr
    data = done.json()
    resolved = _resolve(flags)
    refusals = [
        p
        for p in resolved.problems
        if p.severity == "error" and (p.field == FIELD[field] or p.code in FROM)
    ]
    assert done.exit_code == (1 if refusals else 0) == render.exit_code_of(resolved)
    checks = [c["check"] for c in data["checks"]]
    assert checks == list(CHECKS[: len(checks)])  # resolve's order, none skipped
    verdicts = [c["verdict"] for c in data["checks"]]
    if refusals:
        assert data["status"] == "error"
        assert verdicts[-1] == "refused"
        assert "refused" not in verdicts[:-1]
        assert checks[-1] == FROM[refusals[0].code]
        assert data["checks"][-1]["reason"] in refusals[0].message
        assert data["instead"]
        assert "runs here instead: " in data["instead"]
    else:
        assert "refused" not in verdicts
        assert checks == list(CHECKS)
        ignored = any(p.code == "backend-falls-back" for p in resolved.problems)
        assert (data["status"] == "ignored") == ignored == ("ignored" in verdicts)
        assert data["status"] in ("selected", "depends", "ignored")


def test_the_table_says_each_check_on_its_own_line() -> None:
    field, flags = CASES["moe-install"]
    done = run("why", field, *flags)
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    walked = [line for line in lines if line.startswith("  ") and " — " in line]
    assert [line.split(". ", 1)[1].split(" — ")[0] for line in walked] == list(CHECKS[:4])
    assert walked[-1].split(" — ")[1].startswith("refuses it: ")
    assert "vLLM refuses --moe-backend deep_gemm" in lines
    assert lines[-1].startswith("Runs here instead: ")


def test_auto_still_walks_vllms_list() -> None:
    done = run("why", "moe", "--device", "h100", "--hf-config-path", R1, "--format", "json")
    assert done.exit_code == 0
    data = done.json()
    assert data["requested"] == "auto"
    assert data["candidates"]
    assert "checks" not in data
