"""Execute a vLLM release's own linear-kernel choice and write the project's vectors,
``tests/golden/vllm-X.Y.Z/executed-linear.json``.

    python scripts/release/execute/linear.py 0.34.0 [--targets h100,b200] [--out FILE]

Same venv, stand-in CUDA libraries, simulated targets and install worlds as
``moe.py`` (``common.py``, ``inside/simulate.py``); runs ``inside/linear_driver.py``:
vLLM's ``init_*_linear_kernel`` / ``choose_mp_linear_kernel`` (and
``dispatch_unquantized_gemm``) per (target, world, layer kind, ``--linear-backend``
value). The layer kinds are named as real vLLM's vectors name them
(``auto-picks.json``'s ``linear``); ``meta`` says what was simulated.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import moe
from extras import ensure_extras
from vectors import index_records, sha256

SHAPE = [4096, 4096]
"""The weight shape every layer is asked about (as real vLLM's vectors)."""


def _fp8(call: str, weight: str, activation: str | None) -> dict[str, Any]:
    return {
        "call": call,
        "keys": {"weight_quant_key": weight, "activation_quant_key": activation},
        "args": {"weight_shape": SHAPE, "input_dtype": "bfloat16", "out_dtype": "bfloat16"},
    }


def _mp(weight_type: str, act: str, group: int, zero_points: bool, **extra: Any) -> dict[str, Any]:
    return {
        "call": "choose_mp_linear_kernel",
        "shape": SHAPE,
        "weight_type": weight_type,
        "act_type": act,
        "group_size": group,
        "zero_points": zero_points,
        **extra,
    }


def _int8(channelwise: bool, static: bool) -> dict[str, Any]:
    return {
        "call": "init_int8_linear_kernel",
        "args": {
            "is_channelwise": channelwise,
            "is_static_input_scheme": static,
            "input_symmetric": True,
            "module_name": "layer",
        },
    }


LAYERS: dict[str, dict[str, Any]] = {
    "unquantized/bf16": {"call": "dispatch_unquantized_gemm"},
    "fp8_tensor/static_act": _fp8(
        "init_fp8_linear_kernel", "kFp8StaticTensorSym", "kFp8StaticTensorSym"
    ),
    "fp8_tensor/dynamic_act": _fp8(
        "init_fp8_linear_kernel", "kFp8StaticTensorSym", "kFp8DynamicTensorSym"
    ),
    "fp8_channel/dynamic_token": _fp8(
        "init_fp8_linear_kernel", "kFp8StaticChannelSym", "kFp8DynamicTokenSym"
    ),
    "fp8_block/128x128": _fp8(
        "init_fp8_linear_kernel", "kFp8Static128BlockSym", "kFp8Dynamic128Sym"
    ),
    "w8a16_fp8/channel": _fp8(
        "init_wfp8_a16_linear_kernel", "kFp8StaticChannelSym", "kFp8DynamicTensorSym"
    ),
    "w8a16_fp8/tensor": _fp8(
        "init_wfp8_a16_linear_kernel", "kFp8StaticTensorSym", "kFp8DynamicTensorSym"
    ),
    "int8_w8a8/channel_dynamic": _int8(channelwise=True, static=False),
    "int8_w8a8/tensor_static": _int8(channelwise=False, static=True),
    "int4_w4a16/gptq_sym": _mp("uint4b8", "bfloat16", 128, False),
    "int4_w4a16/awq_zp": _mp("uint4", "bfloat16", 128, True),
    "int4_w4a16/gptq_sym_fp16": _mp("uint4b8", "float16", 128, False),
    "int4_w4a16/channelwise": _mp("uint4b8", "bfloat16", -1, False),
    "int8_w8a16/gptq": _mp("uint8b128", "bfloat16", 128, False),
    "w4a8_fp8/int4_fp8": _mp("int4", "float8_e4m3fn", 128, False, out_type="bfloat16"),
    "mxfp8/1x32": {"call": "init_mxfp8_linear_kernel", "args": {"weight_shape": SHAPE}},
    "mxfp4/w4a16": {"call": "init_mxfp4_linear_kernel", "keys": {"activation_quant_key": None}},
    "mxfp4/w4a4": {
        "call": "init_mxfp4_linear_kernel",
        "keys": {"activation_quant_key": "kMxfp4Dynamic"},
    },
    "mxfp4/w4a8_mxfp8": {
        "call": "init_mxfp4_linear_kernel",
        "keys": {"activation_quant_key": "kMxfp8Dynamic"},
    },
    "mxfp6/e3m2": {
        "call": "init_mxfp6_linear_kernel",
        "keys": {"weight_quant_key": "kMxfp6E3M2Static", "activation_quant_key": None},
    },
    "mxfp6/e2m3": {
        "call": "init_mxfp6_linear_kernel",
        "keys": {"weight_quant_key": "kMxfp6E2M3Static", "activation_quant_key": None},
    },
    "nvfp4/w4a4": {"call": "init_nvfp4_linear_kernel", "args": {"use_a16": False}},
    "nvfp4/w4a16": {"call": "init_nvfp4_linear_kernel", "args": {"use_a16": True}},
}
"""Layer kinds (real vLLM's names) -> the chooser and the arguments the quantisation
methods pass it (ModelOpt / compressed-tensors / Quark / AWQ / GPTQ call sites; BF16
activations, a 4096x4096 weight)."""

ENV_WORLDS = {
    "image+VLLM_USE_DEEP_GEMM=0": {"VLLM_USE_DEEP_GEMM": "0"},
    "image+VLLM_BLOCKSCALE_FP8_GEMM_FLASHINFER=0": {"VLLM_BLOCKSCALE_FP8_GEMM_FLASHINFER": "0"},
    "image+VLLM_BATCH_INVARIANT=1": {"VLLM_BATCH_INVARIANT": "1"},
}
"""The env switches the linear choosers read, each set on the ``image`` world."""


ROCM_ENV_WORLDS = {"image+VLLM_ROCM_USE_AITER=1": {"VLLM_ROCM_USE_AITER": "1"}}
"""On ROCm: the image with AITER switched on (the image leaves it off)."""


def worlds(rocm: bool = False) -> dict[str, dict[str, Any]]:
    """``moe.py``'s install worlds (CUDA's, or ROCm's), and the env-switch worlds built
    on ``image``."""
    source: dict[str, Any] = moe.ROCM_WORLDS if rocm else moe.WORLDS
    out: dict[str, dict[str, Any]] = {k: dict(v) for k, v in source.items()}
    for name, env in (ROCM_ENV_WORLDS if rocm else ENV_WORLDS).items():
        out[name] = {"libraries": out["image"]["libraries"], "env": env}
    return out


EXPLICIT_WORLDS = ["minimal", "pip", "image", "all"]
"""Where every ``--linear-backend`` value is tried (elsewhere only ``auto``)."""


def _meta(version: str, venv: Path, answer: dict[str, Any], wall: float) -> dict[str, Any]:
    whl = common.wheel(version)
    return {
        "vllm_version": version,
        "made_by": "scripts/release/execute/linear.py (vLLM's own init_*_linear_kernel / "
        "choose_mp_linear_kernel / dispatch_unquantized_gemm, executed)",
        "lookup": "linear.index[target][layer][world][linear_backend] -> "
        "linear.outcomes[id]: status (selected | error | not_run), kernel (class, or the "
        "GEMM function for unquantized layers), candidates (the list vLLM walked, after "
        "prioritize_humming and the --linear-backend filter), trials ([kernel, ok|rejected, "
        "reason] in the order vLLM checked them), forced (no list walked: a kernel forced "
        "by the chooser), error",
        "wheel": {"name": whl.name, "sha256": sha256(whl)},
        "torch": common.TORCH_PIN,
        "venv": str(venv),
        "extras": "installed in the venv so that vLLM's imports of them run: "
        + ", ".join(answer["extras"]),
        "platform": {
            "how": "as executed-moe.json: vllm.platforms._current_platform replaced by a "
            "proxy forwarding to a subclass of vLLM's CudaPlatformBase per target",
            "rocm_class": "as executed-moe.json: a subclass of vLLM's RocmPlatform per "
            "ROCm target, the gfx facts vLLM computes at import recomputed per target",
            "rocm_facts": answer["found"].get("rocm_facts"),
            "targets": {t: moe.ALL_TARGETS[t] for t in answer["targets"]},
        },
        "compiled_queries": "the wheel's own extensions against gcc-compiled stand-in CUDA "
        "libraries (scripts/release/execute/common.py stub_libraries); the CUDA version "
        "queries answer the wheel's CUDA major release",
        "worlds": worlds(),
        "rocm_worlds": worlds(rocm=True),
        "explicit_worlds": EXPLICIT_WORLDS,
        "probes": answer["found"]["probes"],
        "submodules": "stand-in modules (every attribute present) for the libraries a world "
        "installs, answered by "
        + ", ".join(answer["found"].get("submodules", []))
        + "; other names import for real",
        "import_time_constants": "recomputed per target and world by calling the same "
        "function: " + "; ".join(answer["found"].get("import_time_constants", [])),
        "config": "vllm.config.set_current_vllm_config(VllmConfig(kernel_config="
        "KernelConfig(linear_backend=value))) with a stand-in model config (bf16)",
        "reading": "kernel classes' is_supported / can_implement / _supports_quant_scheme / "
        "get_min_capability wrapped to log their answers; _resolve_backend_kernels wrapped to "
        "read the list walked; the chosen class's constructor raises a marker (construction "
        "is not selection); nothing vLLM decides is replaced",
        "layers": LAYERS,
        "weight_shape": SHAPE,
        "choosers_found": answer["found"]["choosers"],
        "linear_backend_values": answer["found"]["linear_backend_values"],
        "backend_kernels": answer["found"].get("backend_kernels", {}),
        "not_run": {
            "CPU, XPU targets": "only CUDA and ROCm targets are simulated so far",
            "linear_backend_per_quant": "per-scheme overrides not varied",
        },
        "wall_s": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = common.driver_arguments(__doc__, moe.ALL_TARGETS, argv)
    started = time.monotonic()
    venv = common.ensure_venv(args.version)
    extras = ensure_extras(args.version, venv)
    targets = args.targets
    answer = moe.run_per_kind(
        venv,
        "linear_driver.py",
        targets,
        lambda part, rocm: {
            "targets": part,
            "worlds": worlds(rocm=rocm),
            "explicit_worlds": EXPLICIT_WORLDS,
            "layers": LAYERS,
        },
    )
    answer["targets"] = targets
    answer["extras"] = extras
    data = {
        "meta": _meta(args.version, venv, answer, time.monotonic() - started),
        "linear": index_records(answer["records"], "l"),
    }
    out = common.write_vectors(args.out, args.version, "linear", data)
    n = len(answer["records"])
    outcomes = len(data["linear"]["outcomes"])
    print(f"{out}: {n} records, {outcomes} outcomes, {data['meta']['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
