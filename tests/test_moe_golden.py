"""``--moe-backend auto`` against vLLM 0.33.0's and 0.34.0's own fused-MoE selection,
executed on simulated targets (``golden/vllm-X.Y.Z/auto-picks-moe.json``): status, backend,
experts class, every trial with vLLM's reason, and the error text, for every target,
variant, model, parallel layout and install. Golden names are mapped to kernelcfg's inputs
here only; the golden harness's own conventions are the named normalisations below (the
same in both releases)."""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm.kernels import words as kernel_words
from kernelcfg.vllm.kernels.moe import layer as moe_layer
from kernelcfg.vllm.kernels.moe import oracle
from kernelcfg.vllm.kernels.words import Where

GOLDEN = Path(__file__).resolve().parent / "golden"


def _load(version: str) -> dict[str, Any]:
    with (GOLDEN / f"vllm-{version}" / "auto-picks-moe.json").open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


pytestmark = pytest.mark.golden

RECORDS = {"0.33.0": 13394, "0.34.0": 13742}
"""The releases with executed MoE picks, and how many records each golden holds."""
DATA = {version: _load(version) for version in RECORDS}
META, MOE = DATA["0.33.0"]["meta"], DATA["0.33.0"]["moe"]
"""0.33.0's meta and picks: the targets and model shapes (the same in 0.34.0's) that the
per-release tests (``moe_release``) build their layers from."""
MODEL = oracle.model("0.33.0")
INSTALL = {"bare": "minimal", "wheel": "pip", "docker": "image", "full": "all"}
"""The golden worlds as kernelcfg's installs (0.34.0's ``cuda_toolkit`` piece, in docker
and full, is the ``nvcc`` library of kernelcfg's ``image`` and ``all``)."""
SLICES = {
    "fp8": ("fp8_tensor/", "fp8_channel/", "fp8_block/"),
    "mxfp4": ("mxfp4/",),
    "nvfp4": ("nvfp4/", "mxfp8/"),
    "wna16": ("int4_w4a16/",),
    "misc": ("unquantized/", "int8_w8a8/", "w4a8_fp8/", "w4a8_int8/"),
}
FIELDS = ("status", "backend", "experts", "trials", "error")

# ---------------------------------------------------------------- golden -> inputs
# How each golden model routes, as its model file builds the router (scoring function,
# renormalize, expert groups, score bias): the routing method follows from vLLM's rule.
ROUTERS = {
    "qwen3_moe": ("softmax", True, None, False),
    "qwen3_5_moe": ("softmax", True, None, False),
    "gpt_oss": ("softmax", True, None, False),
    "deepseek_v3": ("sigmoid", True, 8, True),
    "deepseek_v4": ("sqrtsoftplus", True, None, True),
}
# Model-file facts the meta does not carry: DeepSeek-V4 passes fp32 router logits and its
# config's swiglu_limit (any value: only "set" is read).
MODEL_EXTRA: dict[str, dict[str, Any]] = {
    "deepseek_v4": {"router_logits_dtype": "float32", "swiglu_limit": 10.0},
}


def layer(model: str, layout: str) -> dict[str, Any]:
    """The golden model and parallel layout as kernelcfg's layer features."""
    spec = META["moe_models"][model]
    scoring, renorm, groups, bias = ROUTERS[model]
    extra = dict(MODEL_EXTRA.get(model, {}))
    tp, dp, ep, backend = 1, 1, False, "allgather_reducescatter"
    if layout.startswith("TP8"):
        tp = 8
    if layout.startswith("DP8"):
        dp = 8
    if "+EP" in layout:
        ep = True
    if "/" in layout:
        backend = layout.split("/", 1)[1]
    features = {
        "hidden_dim": spec["model_dim"],
        "intermediate_size": spec["moe_intermediate"],
        "num_experts": spec["num_experts"],
        "top_k": spec["top_k"],
        "activation": spec["activation"],
        "routing_method": moe_layer.routing_method_type(
            scoring, spec["top_k"], renorm, groups, bias
        ),
        "has_bias": spec["expert_bias"],
        "in_dtype": "bfloat16",
        "model_type": spec["model_type"],
        **extra,
    }
    return moe_layer.layer_features(features, moe_layer.Layout(tp, dp, ep, backend))


def where(target: str, world: str, found_model: oracle.MoeModel | None = MODEL) -> Where:
    """The golden target under one golden world, for one release's data (0.33.0's by
    default)."""
    assert found_model is not None
    spec = META["targets"][target]
    env = {"VLLM_USE_FLASHINFER_MOE_INT4": "1"} if world == "full" else {}
    # NORMALISATION full-world-AITER-env-on-ROCm-only: the golden's `full` world lists
    # VLLM_ROCM_USE_AITER=1, but its CUDA/CPU/XPU records were taken without it (with it,
    # oracle/fp8.py:506 (0.34.0: :481) would force AITER everywhere); it is applied on
    # ROCm only.
    if world == "full" and spec["kind"] == "rocm":
        env["VLLM_ROCM_USE_AITER"] = "1"
    found = kernel_words.where(
        found_model.data,
        spec["kind"],
        spec.get("capability"),
        spec.get("gfx_arch"),
        INSTALL[world],
        env,
    )
    features = dict(found.features)
    # NORMALISATION zentorch-probe-in-full: the golden's `full` world stubs vLLM's
    # has_zentorch_op() (zentorch_utils.py:35; 0.34.0: kernels/linear/zentorch_utils.py:35)
    # on every platform; the data reads its is_zen_cpu() as the host feature `zen`, so
    # `full` gets `zen` on every kind.
    if world == "full":
        features["zen"] = True
    return dataclasses.replace(found, features=features, device_name=spec["device_name"])


# ---------------------------------------------------------------- normalisations
def _reason(text: str | None, layout: str, fnuz: bool) -> str | None:
    """The golden's reason normalisation (meta.record_fields.normalisation): the device
    name (and all after it) becomes 'current device', FusedMoEParallelConfig(...) the
    layout label; and NORMALISATION fn-for-fnuz: on gfx94x the golden prints FP8 keys as
    f8e4m3fn where vLLM's quant_utils.FP8_DTYPE is float8_e4m3fnuz (rocm.py:1258; 0.34.0:
    rocm.py:1296-1303)."""
    if text is None:
        return None
    text = re.sub(r"current device.*", "current device", text, flags=re.S)
    text = re.sub(r"FusedMoEParallelConfig\([^)]*\)", f"<{layout}>", text)
    return text.replace("f8e4m3fnuz", "f8e4m3fn") if fnuz else text


def _error(got: str | None, gold: str | None, layout: str, fnuz: bool) -> bool:
    mine = _reason(got, layout, fnuz)
    if mine is not None and gold is not None and len(gold) >= 400:
        mine = mine[: len(gold)]  # the golden cuts errors at 400 characters
    return mine == gold


def compare(pick: oracle.Pick, gold: Mapping[str, Any], layout: str, fnuz: bool) -> dict[str, bool]:
    """Field by field, with the golden's normalisations."""
    backend = f"{pick.enum}.{pick.backend}" if pick.backend else None
    trials = [
        [
            t.backend,
            t.kernel,
            "ok" if t.verdict == "ok" else "rejected",
            _reason(t.reason, layout, fnuz),
        ]
        for t in pick.trials
    ]
    gold_trials = [list(t) for t in gold.get("trials") or []]
    if gold.get("chosen_by") != "oracle" and not gold_trials:
        trials = []
    return {
        "status": pick.status == gold["status"],
        "backend": backend == gold.get("backend"),
        "experts": pick.kernel == gold.get("experts"),
        "trials": trials == gold_trials,
        "error": _error(pick.message, gold.get("error"), layout, fnuz),
    }


def _slice(variant: str) -> str:
    return next(s for s, prefixes in SLICES.items() if variant.startswith(prefixes))


def run_all(
    version: str = "0.33.0",
) -> tuple[collections.Counter[tuple[str, str]], collections.Counter[str], list[Any]]:
    """Every golden record of one release: (slice, field) matches, records per slice,
    mismatches."""
    found = oracle.model(version)
    assert found is not None
    picks = DATA[version]["moe"]
    good: collections.Counter[tuple[str, str]] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    wrong = []
    for target, by_variant in picks["index"].items():
        gfx = META["targets"][target].get("gfx_arch") or ""
        fnuz = gfx.startswith("gfx94")
        for variant, by_model in by_variant.items():
            part = _slice(variant)
            for model_name, by_layout in by_model.items():
                for layout, by_world in by_layout.items():
                    feats = layer(model_name, layout)
                    for world, oid in by_world.items():
                        pick = found.pick(variant, feats, where(target, world, found))
                        result = compare(pick, picks["outcomes"][oid], layout, fnuz)
                        total[part] += 1
                        for name, ok in result.items():
                            good[(part, name)] += ok
                        if not all(result.values()):
                            wrong.append((target, variant, model_name, layout, world, oid, result))
    return good, total, wrong


def table(good: collections.Counter[tuple[str, str]], total: collections.Counter[str]) -> str:
    """The match table, by slice and field."""
    lines = [f"{'slice':<6} {'n':>6} " + " ".join(f"{f:>9}" for f in FIELDS)]
    for part in [*SLICES, "all"]:
        n = sum(total.values()) if part == "all" else total[part]
        row = [
            sum(good[(p, f)] for p in SLICES) if part == "all" else good[(part, f)] for f in FIELDS
        ]
        lines.append(f"{part:<6} {n:>6} " + " ".join(f"{r:>9}" for r in row))
    return "\n".join(lines)


@pytest.mark.parametrize("version", list(RECORDS))
def test_moe_walk_is_vllms(version: str, capsys: pytest.CaptureFixture[str]) -> None:
    good, total, wrong = run_all(version)
    with capsys.disabled():
        print(f"\nvLLM {version}\n" + table(good, total))
        classes = collections.Counter(
            (w[1].split("/")[0], w[4], tuple(k for k, v in w[6].items() if not v)) for w in wrong
        )
        for cls, n in classes.most_common(30):
            print("  mismatch", n, cls)
    assert sum(total.values()) == RECORDS[version]
    assert wrong == []


def test_layer_features_follow_vllm() -> None:
    feats = layer("qwen3_moe", "DP8")
    assert (feats["tp_size"], feats["dp_size"], feats["ep_size"], feats["use_ep"]) == (
        8,
        8,
        1,
        False,
    )
    feats = layer("qwen3_moe", "DP8+EP/deepep_low_latency")
    assert feats["use_batched_activation_format"]
    assert (feats["tp_size"], feats["ep_size"]) == (1, 8)
    assert moe_layer.routing_method_type("softmax", 8, True, None, False) == "RenormalizeNaive"
    assert moe_layer.routing_method_type("sigmoid", 8, True, 8, True) == "DeepSeekV3"
