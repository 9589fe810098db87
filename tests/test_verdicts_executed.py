"""Explicit ``--moe-backend`` / ``--linear-backend`` / ``--sparse-indexer-topk-backend``
verdicts against the vectors the project executed itself from each release
(``golden/vllm-X.Y.Z/executed-verdicts.json``, derived by
``scripts/release/execute/verdicts.py`` from ``executed-{moe,linear,topk}.json``).

The rule: kernelcfg never says "error" where the executed vLLM honours the value (or
selects as on auto) for the scheme, or for some scheme when the scheme is unknown. The
executed MoE matrix holds one model per variant and the schemes with oracles, so an
executed refusal is not a proof of "error" and is not asked of kernelcfg here."""

from __future__ import annotations

from typing import Any

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS, Target

from .executed import RELEASES, load

pytestmark = pytest.mark.golden

LIBRARY_CHECKED = {
    ("linear_backend", "flashinfer_trtllm"): "FlashInferTrtllmNvFp4LinearKernel.is_supported "
    "asks only for FlashInfer; FlashInfer's TRT-LLM kernels refuse a non-SM100 GPU at the "
    "first call, which the executor's stand-in FlashInfer cannot",
    ("linear_backend", "flashinfer_cudnn"): "FlashInferCudnnNvFp4LinearKernel.is_supported "
    "asks only for FlashInfer; the cuDNN FP4 GEMM's device check is the library's",
}
"""Values whose device check is the optional library's own, made at run time: vLLM's
selection honours them wherever the library is installed, and the executor's stand-in
libraries accept every device, so an executed honour is not evidence against
kernelcfg's error there."""


def _target(version: str, name: str) -> Target:
    spec = load(version, "linear")["meta"]["platform"]["targets"][name]
    return next(p for p in PRESETS.values() if p.device == spec["device_name"])


def _severity(version: str, case: dict[str, Any], scheme: str | None) -> str:
    target = _target(version, case["device"])
    ctx = Context(target, version, scheme, expert_parallel=case["expert_parallel"])
    problem = check(case["field"], case["value"], ctx).problem()
    return "ok" if problem is None else problem.severity


@pytest.mark.parametrize("version", RELEASES)
def test_no_false_error_against_the_executed_verdicts(version: str) -> None:
    compared, false_errors = 0, []
    for case in load(version, "verdicts")["cases"]:
        if case["expected"] != "error":
            compared += 1
            if _severity(version, case, None) == "error":
                false_errors.append((case["device"], case["field"], case["value"], None))
        for scheme, status in case["per_quantization"].items():
            if status == "refused" or scheme == "any":
                continue
            compared += 1
            if (case["field"], case["value"]) in LIBRARY_CHECKED:
                continue
            if _severity(version, case, scheme) == "error":
                false_errors.append((case["device"], case["field"], case["value"], scheme))
    assert compared > 3000
    assert false_errors == []
