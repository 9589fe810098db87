"""Execute a vLLM release's own fused-MoE backend selection and write the project's
vectors, ``tests/golden/vllm-X.Y.Z/executed-moe.json``.

    python scripts/release/execute/moe.py 0.34.0 [--targets h100,b200] [--out FILE]

Downloads the wheel (``$KERNELCFG_WHEELS``, default /tmp/kernelcfg-wheels), builds a
throwaway venv outside the repository (/tmp/kernelcfg-venv-X.Y.Z: CPU torch, the wheel
``--no-deps``, the imports the selection code needs), compiles stand-in CUDA libraries
so the wheel's compiled support queries load, and runs ``inside/moe_driver.py`` there:
vLLM's ``select_*_moe_backend`` per (target, install, variant, model, layout, value).
The matrix (targets, installs, variants, models, layouts) is this file's; what vLLM
answered is the driver's; ``meta`` says what was simulated and what could not run.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from extras import ensure_extras

TARGETS = {
    "h100": {"capability": "9.0", "device_name": "NVIDIA H100 80GB HBM3"},
    "h200": {"capability": "9.0", "device_name": "NVIDIA H200"},
    "b200": {"capability": "10.0", "device_name": "NVIDIA B200"},
    "gb200": {"capability": "10.0", "device_name": "NVIDIA GB200"},
    "b300": {"capability": "10.3", "device_name": "NVIDIA B300 SXM6 AC"},
    "rtx-pro-6000": {
        "capability": "12.0",
        "device_name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    },
    "dgx-spark": {"capability": "12.1", "device_name": "NVIDIA GB10"},
    "a100": {"capability": "8.0", "device_name": "NVIDIA A100-SXM4-80GB"},
    "l40s": {"capability": "8.9", "device_name": "NVIDIA L40S"},
}
"""CUDA targets: what each GPU reports (capability, name)."""

ROCM_TARGETS = {
    "mi300x": {"kind": "rocm", "gfx_arch": "gfx942", "device_name": "AMD Instinct MI300X"},
    "mi325x": {"kind": "rocm", "gfx_arch": "gfx942", "device_name": "AMD Instinct MI325X"},
    "mi355x": {"kind": "rocm", "gfx_arch": "gfx950", "device_name": "AMD Instinct MI355X"},
    "rx-7900-xtx": {"kind": "rocm", "gfx_arch": "gfx1100", "device_name": "AMD Radeon RX 7900 XTX"},
}
"""ROCm targets: the gfx arch and name each AMD GPU reports (``inside/simulate_rocm.py``)."""

WORLDS: dict[str, dict[str, Any]] = {
    "minimal": {"libraries": []},
    "pip": {"libraries": ["cutlass_dsl", "deep_gemm", "humming", "tilelang", "triton_kernels"]},
    "image": {
        "libraries": [
            "cutlass_dsl",
            "deep_ep",
            "deep_gemm",
            "flashinfer",
            "humming",
            "nvcc",
            "tilelang",
            "triton_kernels",
        ]
    },
    "all": {
        "libraries": [
            "aiter",
            "b12x",
            "conch",
            "cpu_ops",
            "cutlass_dsl",
            "deep_ep",
            "deep_gemm",
            "fbgemm",
            "flashinfer",
            "flydsl",
            "hpc",
            "humming",
            "moonep",
            "mori",
            "nixl_ep",
            "nvcc",
            "quark",
            "rocm_ops",
            "tilelang",
            "triton_kernels",
            "zentorch",
        ],
        "env": {"VLLM_USE_FLASHINFER_MOE_INT4": "1"},
    },
}
"""kernelcfg's installs on CUDA (``installs.cuda`` of kernelcfg/vllm/releases/moe-0.34.0.json):
nothing optional; ``pip install vllm``; the official image (with a CUDA toolkit, nvcc);
every optional library and the env vars that enable them."""

ROCM_WORLDS: dict[str, dict[str, Any]] = {
    "minimal": {"libraries": []},
    "pip": {"libraries": ["triton_kernels"]},
    "image": {"libraries": ["aiter", "rocm_ops", "triton_kernels"]},
    "all": {
        "libraries": list(WORLDS["all"]["libraries"]),
        "env": {"VLLM_ROCM_USE_AITER": "1", "VLLM_USE_FLASHINFER_MOE_INT4": "1"},
    },
}
"""The installs on ROCm, as real vLLM's vectors name them (``meta.worlds`` of
auto-picks.json: bare / wheel / docker / full): nothing optional; ``pip install vllm``
(vendored triton_kernels); the ROCm image (aiter installed, ``VLLM_ROCM_USE_AITER`` off
as the image leaves it); every optional library with ``VLLM_ROCM_USE_AITER=1``."""


_QWEN3_MOE = {
    "num_experts": 128,
    "top_k": 8,
    "hidden": 4096,
    "intermediate": 1536,
    "activation": "SILU",
    "scoring": "softmax",
    "renormalize": True,
    "groups": None,
    "bias": False,
    "expert_bias": False,
    "model_type": "qwen3_moe",
}
"""Qwen3-235B-A22B's MoE layer (Qwen3.5-MoE's differs in its model type only)."""

MODELS = {
    "qwen3_moe": _QWEN3_MOE,
    "deepseek_v3": {
        "num_experts": 256,
        "top_k": 8,
        "hidden": 7168,
        "intermediate": 2048,
        "activation": "SILU",
        "scoring": "sigmoid",
        "renormalize": True,
        "groups": 8,
        "bias": True,
        "expert_bias": False,
        "model_type": "deepseek_v3",
    },
    "gpt_oss": {
        "num_experts": 128,
        "top_k": 4,
        "hidden": 2880,
        "intermediate": 2880,
        "activation": "SWIGLUOAI",
        "scoring": "softmax",
        "renormalize": True,
        "groups": None,
        "bias": False,
        "expert_bias": True,
        "model_type": "gpt_oss",
    },
    "deepseek_v4": {
        "num_experts": 256,
        "top_k": 6,
        "hidden": 7168,
        "intermediate": 2048,
        "activation": "SILU",
        "scoring": "sqrtsoftplus",
        "renormalize": True,
        "groups": None,
        "bias": True,
        "expert_bias": False,
        "model_type": "deepseek_v4",
        "router_logits_dtype": "float32",
        "swiglu_limit": 10.0,
    },
    "qwen3_5_moe": {**_QWEN3_MOE, "model_type": "qwen3_5_moe_text"},
}
"""MoE layer shapes and routers as the model files build them (Qwen3-235B-A22B,
DeepSeek-V3, gpt-oss-120b, DeepSeek-V4, Qwen3.5)."""

LAYOUTS = [
    "TP1",
    "TP8",
    "DP8",
    "TP8+EP",
    "DP8+EP/allgather_reducescatter",
    "DP8+EP/deepep_high_throughput",
    "DP8+EP/deepep_low_latency",
    "DP8+EP/deepep_v2",
    "DP8+EP/nixl_ep",
    "DP8+EP/moonep",
    "DP8+EP/flashinfer_nvlink_one_sided",
    "DP8+EP/flashinfer_nvlink_two_sided",
]
ROCM_LAYOUTS = [
    "TP1",
    "TP8",
    "DP8",
    "TP8+EP",
    "DP8+EP/allgather_reducescatter",
    "DP8+EP/deepep_high_throughput",
    "DP8+EP/deepep_low_latency",
    "DP8+EP/mori_high_throughput",
    "DP8+EP/mori_low_latency",
]
"""The layouts on ROCm (real vLLM's ``parallel_layouts.per_kind.rocm`` less
``DP8+EP/mori``, see ``NOT_RUN``)."""
EXPLICIT_LAYOUTS = ["TP1", "DP8+EP/allgather_reducescatter"]
"""Where every ``--moe-backend`` value is tried (expert parallel off and on; the
first model of each variant); elsewhere only ``auto``."""


def _v(
    module: str,
    function: str,
    weight: str | None,
    activation: str | None,
    models: list[str],
    **args: Any,
) -> dict[str, Any]:
    return {
        "module": module,
        "function": function,
        "weight_key": weight,
        "activation_key": activation,
        "models": models,
        "args": args,
    }


QD = ["qwen3_moe", "deepseek_v3"]
VARIANTS = {
    "unquantized/bf16": _v(
        "unquantized", "select_unquantized_moe_backend", None, None, [*QD, "gpt_oss"]
    ),
    "fp8_tensor/fp8_config.static": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8StaticTensorSym",
        "kFp8StaticTensorSym",
        [*QD, "qwen3_5_moe"],
        allow_vllm_cutlass=False,
    ),
    "fp8_tensor/fp8_config.dynamic": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8StaticTensorSym",
        "kFp8DynamicTensorSym",
        QD,
        allow_vllm_cutlass=False,
    ),
    "fp8_tensor/modelopt": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8StaticTensorSym",
        "kFp8StaticTensorSym",
        QD,
        allow_vllm_cutlass=False,
    ),
    "fp8_tensor/compressed_tensors.static": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8StaticTensorSym",
        "kFp8StaticTensorSym",
        QD,
        allow_vllm_cutlass=True,
    ),
    "fp8_channel/compressed_tensors.dynamic": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8StaticChannelSym",
        "kFp8DynamicTokenSym",
        [*QD, "qwen3_5_moe"],
        allow_vllm_cutlass=True,
    ),
    "fp8_channel/quark": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8StaticChannelSym",
        "kFp8DynamicTokenSym",
        QD,
        allow_vllm_cutlass=False,
    ),
    "fp8_block/compressed_tensors": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8Static128BlockSym",
        "kFp8Dynamic128Sym",
        ["deepseek_v3", "qwen3_moe"],
        allow_vllm_cutlass=True,
    ),
    "fp8_block/online": _v(
        "fp8",
        "select_fp8_moe_backend",
        "kFp8Static128BlockSym",
        "kFp8Dynamic128Sym",
        ["deepseek_v3", "qwen3_moe"],
        allow_vllm_cutlass=False,
    ),
    "mxfp8/any": _v("mxfp8", "select_mxfp8_moe_backend", None, None, [*QD, "qwen3_5_moe"]),
    "nvfp4/modelopt": _v("nvfp4", "select_nvfp4_moe_backend", "kNvfp4Static", "kNvfp4Dynamic", QD),
    "nvfp4/modelopt.w4a16": _v("nvfp4", "select_nvfp4_moe_backend", "kNvfp4Static", None, QD),
    "nvfp4/compressed_tensors": _v(
        "nvfp4", "select_nvfp4_moe_backend", "kNvfp4Static", "kNvfp4Dynamic", QD
    ),
    "mxfp4/gpt_oss": _v("mxfp4", "select_mxfp4_moe_backend", None, None, ["gpt_oss"]),
    "mxfp4/quark.w4a16": _v("mxfp4", "select_mxfp4_moe_backend", None, None, QD),
    "mxfp4/quark.w4a4": _v("mxfp4", "select_mxfp4_moe_backend", None, "kMxfp4Dynamic", QD),
    "mxfp4/quark.w4a8_fp8": _v(
        "mxfp4", "select_mxfp4_moe_backend", None, "kFp8StaticTensorSym", QD
    ),
    "mxfp4/mxfp4_config": _v(
        "mxfp4",
        "select_deepseek_v4_mxfp4_moe_backend",
        None,
        None,
        ["deepseek_v4", "qwen3_moe"],
    ),
    "int8_w8a8/compressed_tensors": _v(
        "int8", "select_int8_moe_backend", "kInt8StaticChannelSym", "kInt8DynamicTokenSym", QD
    ),
    "int8_w8a8/online": _v(
        "int8",
        "select_int8_moe_backend",
        "kInt8StaticChannelSym",
        "kInt8DynamicTokenSym",
        ["qwen3_moe"],
    ),
    "w4a8_fp8/compressed_tensors": _v(
        "w4a8", "select_w4a8_moe_backend", "kInt4Static", "kFp8DynamicTokenSym", QD
    ),
}
"""The quantisation variants whose quantisation method calls its oracle directly with
fixed keys (named as real vLLM's vectors name them). Not here yet: the variants whose
method does more than the call (FP8 block shapes refined for TP, online PTPC's
post-selection refusal, WNA16's quant-config objects, inline choices)."""

NOT_RUN = {
    "fp8_block/fp8_config": "Fp8MoEMethod refines the block shape for TP before the call",
    "fp8_tensor/online": "the online method adjusts keys under VLLM_BATCH_INVARIANT",
    "fp8_tensor/quark": "keys come from a Quark config match (not built)",
    "fp8_channel/online.ptpc": "refuses some picks after selection (not modelled)",
    "nvfp4/online.per_token": "a capability check precedes the oracle (not modelled)",
    "mxfp4/online": "an activation override follows the selection (not modelled)",
    "mxfp4/compressed_tensors.w4a4": "inline choice in the method (no oracle under auto)",
    "mxfp4/inc": "inline choice in the method (oracle only on XPU)",
    "int4_w4a16/*": "select_wna16_moe_backend needs a quant-config object (not built yet)",
    "w4a8_int8/compressed_tensors": "CPU only",
    "CPU, XPU targets": "only CUDA and ROCm targets are simulated so far",
    "DP8+EP/mori (ROCm, 0.34.0+)": "vLLM picks MoRI EPv1 or EPv2 in "
    "config/parallel.py:_resolve_mori_ep_v2 from the checkpoint's quantisation metadata "
    "and the host layout (not built)",
}


ALL_TARGETS = {**TARGETS, **ROCM_TARGETS}
"""Every target, CUDA then ROCm (each kind runs in its own driver process)."""


def run_per_kind(
    venv: Path,
    driver: str,
    targets: list[str],
    request: Callable[[dict[str, Any], bool], dict[str, Any]],
    rocm_found: tuple[str, ...] = ("rocm_facts",),
) -> dict[str, Any]:
    """Run ``inside/<driver>`` once per kind of target asked for (CUDA, then ROCm), each
    kind in its own process (a platform is bound at import); ``request(targets, rocm)``
    is that run's request. The records of both runs, what each found (the CUDA run's
    wins), and from the ROCm run its ``rocm_found`` keys, each as ``rocm_<key>``."""
    answer: dict[str, Any] = {"records": [], "found": {}}
    for kind in (TARGETS, ROCM_TARGETS):
        part = {t: kind[t] for t in targets if t in kind}
        if not part:
            continue
        rocm = kind is ROCM_TARGETS
        got = common.run_inside(venv, driver, request(part, rocm))
        answer["records"] += got["records"]
        answer["found"] = {**got["found"], **answer["found"]}
        if rocm:
            for key in rocm_found:
                name = key if key.startswith("rocm_") else f"rocm_{key}"
                answer["found"][name] = got["found"].get(key)
    return answer


def _request(targets: list[str]) -> dict[str, Any]:
    rocm = any(t in ROCM_TARGETS for t in targets)
    return {
        "targets": {t: ALL_TARGETS[t] for t in targets},
        "worlds": ROCM_WORLDS if rocm else WORLDS,
        "models": MODELS,
        "layouts": ROCM_LAYOUTS if rocm else LAYOUTS,
        "explicit_layouts": EXPLICIT_LAYOUTS,
        "variants": VARIANTS,
    }


def _index(records: list[list[Any]]) -> dict[str, Any]:
    """``index[target][variant][model][layout][world][value]`` -> outcome id."""
    outcomes: dict[str, dict[str, Any]] = {}
    ids: dict[str, str] = {}
    index: dict[str, Any] = {}
    for target, variant, model, layout, world, value, outcome in records:
        text = json.dumps(outcome, sort_keys=True)
        oid = ids.get(text)
        if oid is None:
            oid = ids[text] = f"o{len(ids):05d}"
            outcomes[oid] = outcome
        node = index.setdefault(target, {}).setdefault(variant, {})
        node = node.setdefault(str(model), {}).setdefault(str(layout), {})
        node.setdefault(world, {})[value] = oid
    return {"index": index, "outcomes": outcomes}


def _meta(version: str, venv: Path, answer: dict[str, Any], wall: float) -> dict[str, Any]:
    whl = common.wheel(version)
    return {
        "vllm_version": version,
        "made_by": "scripts/release/execute/moe.py (vLLM's own select_*_moe_backend, executed)",
        "lookup": "moe.index[target][variant][model][layout][world][moe_backend] -> "
        "moe.outcomes[id]: status (selected | no_kernel | error | config_error | not_run), "
        "backend (<Enum>.<MEMBER>), experts (class), trials ([experts class, ok|rejected, "
        "reason] for every is_supported_config vLLM called, in order), error",
        "wheel": {"name": whl.name, "sha256": _sha256(whl)},
        "torch": common.TORCH_PIN,
        "venv": str(venv),
        "platform": {
            "how": "vllm.platforms._current_platform replaced before any vLLM module binds "
            "it by a proxy forwarding to one target object at a time",
            "class": "a subclass of vLLM's vllm.platforms.cuda.CudaPlatformBase whose "
            "get_device_capability / get_device_name / get_device_total_memory / "
            "is_fully_connected / device_count answer the target's",
            "rocm_class": "a subclass of vLLM's vllm.platforms.rocm.RocmPlatform whose "
            "get_device_name / get_device_total_memory / is_fully_connected / device_count "
            "answer the target's; capability is vLLM's own (from _GCN_ARCH, or torch's "
            "answered as HIP derives it from the gfx arch)",
            "rocm_facts": answer["found"].get("rocm_facts"),
            "targets": {t: ALL_TARGETS[t] for t in answer["targets"]},
        },
        "compiled_queries": "the wheel's own _C_stable_libtorch / _moe_C extensions, loaded "
        "against gcc-compiled stand-in libcuda / libcudart / libtorch_cuda whose functions "
        "return 0 (scripts/release/execute/common.py stub_libraries)",
        "worlds": WORLDS,
        "rocm_worlds": ROCM_WORLDS,
        "probes": answer["found"]["probes"],
        "caches": "every functools cache of every loaded vllm module cleared between "
        "targets and worlds; os.environ's VLLM_* replaced by the world's env",
        "model_context": "vllm.config.set_current_vllm_config(VllmConfig()) whose "
        "model_config is a stand-in with hf_config/hf_text_config.model_type and dtype",
        "moe_config": "FusedMoEConfig built from the model (num_experts, top_k, hidden, "
        "intermediate, activation, routing via vLLM's get_routing_method_type, expert bias, "
        "router logits dtype, swiglu_limit), bf16 activations, device 'cuda', the layout "
        "through vLLM's FusedMoEParallelConfig.make on rank 0 (its group getters answer "
        "rank 0); fields left at their defaults: "
        + ", ".join(answer["found"].get("moe_config_fields_not_set", [])),
        "models": MODELS,
        "layouts": LAYOUTS,
        "rocm_layouts": ROCM_LAYOUTS,
        "explicit_layouts": EXPLICIT_LAYOUTS,
        "variants": VARIANTS,
        "not_run": NOT_RUN,
        "import_failures": answer["found"]["import_failures"],
        "oracles_found": answer["found"]["oracles"],
        "moe_backend_values": answer["found"]["moe_backend_values"],
        "wall_s": round(wall, 1),
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    args = common.driver_arguments(__doc__, ALL_TARGETS, argv)
    started = time.monotonic()
    venv = common.ensure_venv(args.version)
    ensure_extras(args.version, venv)  # Humming's Python, so the Humming backends import
    targets = args.targets
    answer = run_per_kind(
        venv,
        "moe_driver.py",
        targets,
        lambda part, _rocm: _request(list(part)),
        rocm_found=("rocm_facts", "probes"),
    )
    answer["targets"] = targets
    data = {
        "meta": _meta(args.version, venv, answer, time.monotonic() - started),
        "moe": _index(answer["records"]),
    }
    out = common.write_vectors(args.out, args.version, "moe", data)
    n = len(answer["records"])
    print(
        f"{out}: {n} records, {len(data['moe']['outcomes'])} outcomes, {data['meta']['wall_s']} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
