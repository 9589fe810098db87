"""Explicit backend verdicts against vLLM 0.33.0's and 0.34.0's own support checks,
executed on simulated targets (``golden/vllm-X.Y.Z/constraints.json``).

The rule that matters: kernelcfg never says "error" where vLLM would start (a false
error stops a deployment that works), and it says "error" wherever every way vLLM can
read the value on that target refuses it. ``warning`` and ``ok`` may differ in
emphasis (a note where vLLM needs an optional library, say); that is counted, not
failed.
"""

from __future__ import annotations

from typing import Any

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS, Target

from .conftest import golden

pytestmark = pytest.mark.golden

RELEASES = ("0.33.0", "0.34.0")
DATA = {version: golden(version, "constraints") for version in RELEASES}
CASES = [(version, case) for version in RELEASES for case in DATA[version]["cases"]]

KNOWN_GAPS: dict[tuple[str, str, str, str, str], str] = {}
"""Cases kernelcfg does not yet get right, each with why (strict: fixing one fails the
test until it is taken off this list)."""


def _target(version: str, name: str) -> Target:
    """The kernelcfg preset that stands for a golden target (same kind and device)."""
    spec = DATA[version]["meta"]["targets"][name]
    for preset in PRESETS.values():
        if preset.kind == spec["kind"] and preset.device == spec["device_name"]:
            return preset
    raise AssertionError(f"no preset for golden target {name}: {spec}")


def _severity(version: str, case: dict[str, Any]) -> str:
    ctx = Context(
        _target(version, case["device"]),
        version,
        case["quantization"],
        expert_parallel=case["expert_parallel"],
    )
    problem = check(case["field"], case["value"], ctx).problem()
    return "ok" if problem is None else problem.severity


def _gap(version: str, case: dict[str, Any]) -> str | None:
    key = (version, case["device"], case["field"], case["value"], case["quantization"])
    return KNOWN_GAPS.get(key)


@pytest.mark.parametrize(
    ("version", "case"),
    [
        pytest.param(v, c, marks=pytest.mark.xfail(reason=str(_gap(v, c)), strict=True))
        if _gap(v, c)
        else (v, c)
        for v, c in CASES
    ],
    ids=[
        f"{v}:{c['device']}:{c['field']}={c['value']}:q={c['quantization']}:"
        f"ep={c['expert_parallel']}"
        for v, c in CASES
    ],
)
def test_error_exactly_where_vllm_refuses(version: str, case: dict[str, Any]) -> None:
    mine = _severity(version, case)
    if case["expected"] == "error":
        assert mine == "error", case["reason"]
    else:
        assert mine != "error", case["reason"]


@pytest.mark.parametrize("version", RELEASES)
def test_most_verdicts_agree_in_emphasis_too(version: str) -> None:
    """A note (``info``) stands for either; the known gap is a note where vLLM needs an
    optional library (FlashInfer's kernels, say), which ``--install`` will tell apart."""
    agree = {"error": {"error"}, "warning": {"warning", "info"}, "ok": {"ok", "info"}}
    cases = DATA[version]["cases"]
    same = sum(_severity(version, c) in agree[c["expected"]] for c in cases)
    assert same / len(cases) >= 0.85, same
