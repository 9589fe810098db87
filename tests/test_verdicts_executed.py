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
from kernelcfg.vllm.kernels.quantization import SCHEMES

from .executed import load, releases

RELEASES = releases("verdicts")
"""The releases whose verdicts selection was executed."""

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

RUNTIME_CHECKED = {
    ("0.29.0", "linear_backend", "cutlass"): "CutlassFP8ScaledMMLinearKernel.is_supported "
    "asks only for CUDA (kernels/linear/scaled_mm/cutlass.py:164-169); the compiled "
    "cutlass_scaled_mm has no FP8 GEMM below SM89 and refuses at the first call (0.31.0 "
    "moved the check into is_supported: cutlass_fp8_supported(), :168)",
    ("0.30.0", "linear_backend", "cutlass"): "the same (scaled_mm/cutlass.py:164-169)",
    ("0.28.0", "linear_backend", "cutlass"): "the same (scaled_mm/cutlass.py:164-169, as 0.29.0's)",
    ("0.27.0", "linear_backend", "cutlass"): "the same (scaled_mm/cutlass.py:164-169, as 0.29.0's)",
    ("0.26.0", "linear_backend", "cutlass"): "the same (scaled_mm/cutlass.py:164-169, as 0.27.0's)",
    ("0.25.0", "linear_backend", "cutlass"): "the same (scaled_mm/cutlass.py:164-169, as 0.29.0's)",
    ("0.27.1", "linear_backend", "cutlass"): "the same (0.27.0's cutlass.py, unchanged: RECORD)",
    ("0.25.1", "linear_backend", "cutlass"): "the same (0.25.0's cutlass.py, unchanged: RECORD)",
    ("0.24.0", "linear_backend", "cutlass"): "the same (scaled_mm/cutlass.py:164-169, as 0.25.0's)",
    ("0.23.0", "linear_backend", "cutlass"): "the same (scaled_mm/cutlass.py:163-168, as 0.24.0's)",
}
"""(release, field, value) that vLLM's selection honours and its compiled kernel then
refuses on the device: kernelcfg's error stands."""


EXECUTOR_GAPS = {
    ("0.29.0", "w4a8_fp8"): "compressed-tensors routes W4A8-FP8 MoE layers to the method "
    "that calls select_w4a8_moe_backend only on SM90 (_is_fp8_w4a8_sm90, "
    "compressed_tensors_moe.py:174); the executor calls the oracle directly",
    ("0.30.0", "w4a8_fp8"): "the same (compressed_tensors_moe.py:167)",
    ("0.28.0", "w4a8_fp8"): "the same (compressed_tensors_moe.py:174; oracle/w4a8.py:49-80 "
    "select_w4a8_moe_backend, CUTLASS only, as in 0.29.0)",
    ("0.27.0", "w4a8_fp8"): "the same (compressed_tensors_moe.py:174, oracle/w4a8.py:49-80)",
    ("0.26.0", "w4a8_fp8"): "the same (compressed_tensors_moe.py:215, oracle/w4a8.py as 0.27.0's)",
    ("0.25.0", "w4a8_fp8"): "the same (compressed_tensors_moe.py:198, oracle/w4a8.py:49)",
    ("0.27.1", "w4a8_fp8"): "the same (0.27.0's two files, unchanged: RECORD)",
    ("0.25.1", "w4a8_fp8"): "the same (0.25.0's two files, unchanged: RECORD)",
    ("0.24.0", "w4a8_fp8"): "the same (compressed_tensors_moe.py:195, oracle/w4a8.py:49)",
    ("0.23.0", "w4a8_fp8"): "the same (compressed_tensors_moe/compressed_tensors_moe.py:172, "
    "oracle/w4a8.py:49, the file 0.24.0's)",
}
"""(release, scheme) whose executed MoE cells skip a step of vLLM's path: left out, and
the verdict with the scheme unknown recomputed from the others."""


def _schemes(version: str, case: dict[str, Any]) -> dict[str, str]:
    return {
        scheme: status
        for scheme, status in case["per_quantization"].items()
        if case["field"] != "moe_backend" or (version, scheme) not in EXECUTOR_GAPS
    }


def _unknown_scheme(per_scheme: dict[str, str]) -> str:
    statuses = set(per_scheme.values())
    return "error" if statuses <= {"refused"} else "not error"


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
    compared = 0
    false_errors: list[tuple[str, str, str, str | None]] = []
    for case in load(version, "verdicts")["cases"]:
        schemes = _schemes(version, case)
        if _unknown_scheme(schemes) != "error":
            compared += 1
            if _severity(version, case, None) == "error":
                false_errors.append((case["device"], case["field"], case["value"], None))
        for scheme, status in schemes.items():
            if status == "refused" or scheme == "any":
                continue
            compared += 1
            if (case["field"], case["value"]) in LIBRARY_CHECKED:
                continue
            if (version, case["field"], case["value"]) in RUNTIME_CHECKED:
                continue
            if _severity(version, case, scheme) == "error":
                false_errors.append((case["device"], case["field"], case["value"], scheme))
    # 0.23.0 compares fewest (1,881): it has the fewest values (no 'flashinfer_cutedsl' nor
    # 'flashinfer_b12x' linear backend, no 'flydsl' MoE backend: 486 cases, 0.24.0's 540);
    # 0.27.0 next (2,035): its linear filter raises for a backend with no kernel for the
    # layer type (3,688 refused linear cells; 0.28.0 on warns, 834 refused)
    assert compared > 1800
    assert false_errors == []


def _resolve_argv(version: str, case: dict[str, Any], scheme: str) -> list[str]:
    """The ``resolve`` words for one executed verdict cell: its target's preset, the
    scheme, the value, and on ``expert_parallel`` the layout MoE values were executed in
    (DP8+EP with ``allgather_reducescatter``)."""
    flag = "--" + case["field"].replace("_", "-")
    preset = next(k for k, p in PRESETS.items() if p is _target(version, case["device"]))
    words = ["--vllm-version", version, "--device", preset, "--quant-scheme", scheme]
    words += [flag, case["value"]]
    if case["expert_parallel"]:
        words += ["--", "vllm", "serve", "m", "--data-parallel-size", "8"]
        words += ["--enable-expert-parallel", "--all2all-backend", "allgather_reducescatter"]
    return words


def _model_path_only(version: str, case: dict[str, Any], scheme: str) -> bool:
    """Whether kernelcfg's verdict waits on the model's architecture: values vLLM takes
    only on a model's own path (DeepSeek-V4's mega-MoE), which the executor, calling the
    oracles, never walks; its refusal says nothing about those models."""
    target = _target(version, case["device"])
    ctx = Context(target, version, scheme, expert_parallel=case["expert_parallel"])
    verdict = check(case["field"], case["value"], ctx)
    return any(u.startswith("the model's architecture") for u in verdict.unknowns)


@pytest.mark.parametrize("version", RELEASES)
def test_no_missed_refusal_against_the_executed_verdicts(version: str) -> None:
    """The other direction: where the executed vLLM refuses a value for a scheme in every
    install world, ``resolve`` with that scheme says error (the load-time refusals
    included), but where the verdict waits on a model-specific path."""
    from kernelcfg.commands.pipeline import Failure, Request, resolve_args

    request = Request(environ={})
    compared = 0
    missed: list[tuple[str, bool, str, str, str]] = []
    for case in load(version, "verdicts")["cases"]:
        for scheme, status in _schemes(version, case).items():
            if status != "refused" or scheme not in SCHEMES:
                continue
            if _model_path_only(version, case, scheme):
                continue
            compared += 1
            result = resolve_args(_resolve_argv(version, case, scheme), request)
            assert not isinstance(result, Failure), result.problem.message
            if not any(p.severity == "error" for p in result.problems):
                missed.append(
                    (case["device"], case["expert_parallel"], case["field"], case["value"], scheme)
                )
    assert compared > 1000
    assert missed == []
