"""``--linear-backend`` against the vectors the project executed itself: each release's
own ``init_*_linear_kernel`` / ``choose_mp_linear_kernel`` / ``dispatch_unquantized_gemm``
run on simulated CUDA and ROCm targets by ``scripts/release/execute/linear.py``
(``golden/vllm-X.Y.Z/executed-linear.json``; its ``meta`` says what was simulated).

Every ``auto`` cell (targets x install worlds, the env-switch worlds included, x layer
kinds): status and kernel, the list walked and every trial; and a fixed sample of the
explicit ``--linear-backend`` cells where kernelcfg narrows the list (``pick_named``):
status and kernel."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from kernelcfg.vllm.kernels import linear

from .executed import load, releases, rocm_params

RELEASES = releases("linear")
"""The releases whose linear selection was executed."""

pytestmark = pytest.mark.golden

SAMPLE = 4
"""One explicit-value cell in SAMPLE (by a hash of its key) is checked."""


def _model(version: str) -> linear.LinearModel:
    found = linear.model(version)
    assert found is not None
    return found


def _own_path(version: str, layer: str) -> bool:
    """Whether the release hands ``layer`` to its quantisation method's own code, which
    calls no linear-kernel chooser (the data's selector for it is a quantisation
    method's fixed dispatch: 0.26.0's Quark OCP MX emulates MXFP4 weight-only, MXFP4 with
    MXFP8 inputs and MXFP6 layers). What the driver's chooser did with such a layer kind
    is nothing vLLM does: those cells are left out."""
    data = _model(version).data
    selector = data["selectors"][data["layers"][layer]["selector"]]
    return "list" not in selector and "/quantization/" in selector.get("entry", "")


AITER_TABLES = "TypeError: 'bool' object is not subscriptable"
"""The executor's mark of a cell where vLLM reads aiter's own tuned-shape tables
(``_aiter_ops._triton_gemm_config_is_tuned``: ``get_gemm_config(...)[1]``, RDNA's AITER
FP8 block GEMM): data inside aiter that the executor's stand-in library does not hold
(it answers ``True``, which vLLM then indexes). Such cells say nothing about vLLM and
are left out; kernelcfg reads a shape as not tuned there."""


AITER_TUNED = "tuned"
"""A trial where vLLM refused an AITER kernel after looking the shape up in aiter's own
tuned-GEMM CSV tables (0.27.1-0.30.0's ``is_shuffled_per_token_w8a8_gemm_tuned`` /
``is_per_token_w8a8_gemm_tuned`` read ``AITER_CONFIGS``' files): the executor's stand-in
aiter has no tables, so its answer says nothing about a real aiter; kernelcfg reads the
shape as tuned there. Such cells are left out."""


def _aiter_table_gap(outcome: dict[str, Any]) -> bool:
    if (outcome.get("error") or "").startswith(AITER_TABLES):
        return True
    return any(
        name.startswith("Aiter")
        and verdict == "rejected"
        and AITER_TUNED in (reason or "")
        and "N: " in (reason or "")
        for name, verdict, reason in outcome.get("trials") or ()
    )


def _same_trials(mine: list[list[Any]], theirs: list[list[Any]]) -> bool:
    """Trials equal, where kernelcfg's reason may name the layer's weight shape as
    ``{n}`` / ``{k}`` (a layer kind fixes no shape; vLLM prints the one it was given)."""
    if len(mine) != len(theirs):
        return False
    for (name, verdict, reason), (v_name, v_verdict, v_reason) in zip(mine, theirs, strict=True):
        if (name, verdict) != (v_name, v_verdict):
            return False
        if reason != v_reason:
            pattern = re.escape(reason or "").replace(r"\{n\}", r"\d+").replace(r"\{k\}", r"\d+")
            if not re.fullmatch(pattern, v_reason or ""):
                return False
    return True


def _cells(version: str, explicit: bool) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    data = load(version, "linear")
    cells = []
    outcomes = data["linear"]["outcomes"]
    for target, by_layer in data["linear"]["index"].items():
        for layer, by_world in by_layer.items():
            if _own_path(version, layer):
                continue
            for world, by_value in by_world.items():
                for value, oid in by_value.items():
                    if (value != "auto") != explicit:
                        continue
                    key = f"{target}|{layer}|{world}|{value}"
                    if explicit and hashlib.sha256(key.encode()).digest()[0] % SAMPLE:
                        continue
                    if _aiter_table_gap(outcomes[oid]):
                        continue
                    cells.append((target, layer, world, value, outcomes[oid]))
    return cells


def _where(version: str, target: str, world: str) -> linear.Where:
    meta = load(version, "linear")["meta"]
    spec = meta["platform"]["targets"][target]
    kind = spec.get("kind", "cuda")
    worlds = meta["rocm_worlds"] if kind == "rocm" else meta["worlds"]
    env = dict(worlds[world].get("env", {}))
    install = world.split("+", maxsplit=1)[0]
    return _model(version).where(kind, spec.get("capability"), spec.get("gfx_arch"), install, env)


@pytest.mark.parametrize("version", RELEASES)
def test_meta_says_what_was_simulated(version: str) -> None:
    meta = load(version, "linear")["meta"]
    assert meta["vllm_version"] == version
    assert {"minimal", "pip", "image", "all"} <= set(meta["worlds"])
    assert any(w.get("env") for w in meta["worlds"].values()), "env switches are worlds"
    assert meta["probes"]["replaced"], "the library probes replaced are listed"
    assert "auto" in meta["linear_backend_values"]


@pytest.mark.parametrize("version", rocm_params(RELEASES))
def test_rocm_targets_are_executed(version: str) -> None:
    # every ROCm preset kernelcfg knows is a target, under ROCm's own install worlds
    meta = load(version, "linear")["meta"]
    rocm = {t for t, s in meta["platform"]["targets"].items() if s.get("kind") == "rocm"}
    assert rocm == {"mi300x", "mi325x", "mi355x", "rx-7900-xtx"}
    assert "aiter" in meta["rocm_worlds"]["image"]["libraries"]
    assert meta["platform"]["rocm_facts"]["recomputed"], "the gfx facts recomputed"
    cells = {c[0] for c in _cells(version, explicit=False)}
    assert rocm <= cells


@pytest.mark.parametrize("version", RELEASES)
def test_kernelcfg_walks_what_vllm_executed_on_auto(version: str) -> None:
    wrong = []
    cells = _cells(version, explicit=False)
    for target, layer, world, _, outcome in cells:
        got = _model(version).pick(layer, _where(version, target, world))
        trials = [[n, "ok" if v == "ok" else "rejected", r] for n, v, r in got.trials]
        if (got.status, got.kernel) != (outcome["status"], outcome.get("kernel")):
            wrong.append((target, layer, world, got.kernel, outcome.get("kernel")))
        elif got.status == "selected" and (
            list(got.candidates) != outcome["candidates"]
            or not _same_trials(trials, outcome["trials"])
        ):
            wrong.append((target, layer, world, "walk", got.trials))
    assert len(cells) > 1100  # 0.26.0 hands four of the 23 layer kinds to Quark (_own_path)
    assert wrong == []


@pytest.mark.parametrize("version", RELEASES)
def test_kernelcfg_narrows_as_vllm_executed_a_named_backend(version: str) -> None:
    compared, wrong = 0, []
    for target, layer, world, value, outcome in _cells(version, explicit=True):
        got = _model(version).pick_named(layer, _where(version, target, world), value)
        if got is None:  # kernelcfg: no kernel of that backend, vLLM walks as on auto
            continue
        compared += 1
        if (got.status, got.kernel) != (outcome["status"], outcome.get("kernel")):
            wrong.append((target, layer, world, value, got.kernel, outcome.get("kernel")))
    assert compared > 300
    assert wrong == []
