"""Quantised checkpoints end to end: a ``config.json`` written the way its producer writes
it (each cites a published model card using that layout), read through
``resolve -- vllm serve DIR``, gives the scheme, the kinds of linear layer vLLM builds, and
the linear kernel vLLM 0.33.0 itself picked for that kind (its executed selection,
``golden/vllm-0.33.0/auto-picks-linear-topk.json``) on every target and install the
vectors hold for it; MoE checkpoints also give the MoE variant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands.pipeline import resolve_args
from kernelcfg.engine.resolution import Resolution

from .conftest import golden

GOLDEN = golden("0.33.0", "auto-picks-linear-topk")
INSTALL = {"bare": "minimal", "wheel": "pip", "docker": "image", "full": "all"}
"""The golden worlds as kernelcfg's installs."""

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "max_position_embeddings": 131072,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
}
"""Llama 3.1 8B's shape, as the quantised copies below keep it."""


def _ct_args(**given: Any) -> dict[str, Any]:
    """A QuantizationArgs as llm-compressor serialises it (every key, nulls included)."""
    return {
        "actorder": None,
        "block_structure": None,
        "dynamic": False,
        "group_size": None,
        "num_bits": 8,
        "observer": "minmax",
        "observer_kwargs": {},
        "strategy": "tensor",
        "symmetric": True,
        "type": "int",
        **given,
    }


def _ct(weights: dict[str, Any], inputs: dict[str, Any] | None, fmt: str) -> dict[str, Any]:
    """compressed-tensors' ``quantization_config`` as llm-compressor writes it."""
    return {
        "config_groups": {
            "group_0": {
                "input_activations": inputs,
                "output_activations": None,
                "targets": ["Linear"],
                "weights": weights,
            }
        },
        "format": fmt,
        "global_compression_ratio": None,
        "ignore": ["lm_head"],
        "kv_cache_scheme": None,
        "quant_method": "compressed-tensors",
        "quantization_status": "compressed",
        "version": "0.9.1",
    }


CHECKPOINTS: dict[str, tuple[dict[str, Any], str, tuple[str, ...]]] = {
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic (llm-compressor FP8_DYNAMIC)
    "ct-fp8-dynamic": (
        _ct(
            _ct_args(type="float", strategy="channel"),
            _ct_args(type="float", strategy="token", dynamic=True, observer=None),
            "float-quantized",
        ),
        "fp8_channel",
        ("fp8_channel/dynamic_token",),
    ),
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8 (llm-compressor FP8, static per-tensor)
    "ct-fp8-static": (
        _ct(
            _ct_args(type="float"),
            _ct_args(type="float"),
            "float-quantized",
        ),
        "fp8_tensor",
        ("fp8_tensor/static_act",),
    ),
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8 (llm-compressor W8A8 INT8)
    "ct-w8a8-int8": (
        _ct(
            _ct_args(strategy="channel"),
            _ct_args(strategy="token", dynamic=True, observer=None),
            "int-quantized",
        ),
        "int8_w8a8",
        ("int8_w8a8/channel_dynamic",),
    ),
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 (llm-compressor W4A16)
    "ct-w4a16": (
        _ct(_ct_args(num_bits=4, strategy="group", group_size=128), None, "pack-quantized"),
        "int4_w4a16",
        ("int4_w4a16/gptq_sym",),
    ),
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-NVFP4 (llm-compressor NVFP4)
    "ct-nvfp4": (
        _ct(
            _ct_args(type="float", num_bits=4, strategy="tensor_group", group_size=16),
            _ct_args(
                type="float", num_bits=4, strategy="tensor_group", group_size=16, dynamic="local"
            ),
            "nvfp4-pack-quantized",
        ),
        "nvfp4",
        ("nvfp4/w4a4",),
    ),
    # nvidia/Llama-3.1-8B-Instruct-FP8 (ModelOpt 0.31+, written into config.json)
    "modelopt-fp8": (
        {
            "producer": {"name": "modelopt", "version": "0.31.0"},
            "quant_algo": "FP8",
            "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
            "ignore": ["lm_head"],
            "quant_method": "modelopt",
        },
        "fp8_tensor",
        ("fp8_tensor/static_act",),
    ),
    # amd/Llama-3.1-8B-Instruct-FP8-KV (AMD Quark FP8)
    "quark-fp8": (
        {
            "quant_method": "quark",
            "global_quant_config": {
                "weight": {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False},
                "input_tensors": {
                    "dtype": "fp8_e4m3",
                    "qscheme": "per_tensor",
                    "is_dynamic": False,
                },
                "output_tensors": None,
                "bias": None,
            },
            "layer_quant_config": {},
            "exclude": ["lm_head"],
            "export": {
                "kv_cache_group": [],
                "pack_method": "reorder",
                "weight_format": "real_quantized",
            },
        },
        "fp8_tensor",
        ("fp8_tensor/static_act",),
    ),
    # amd/Llama-3.3-70B-Instruct-MXFP4-Preview (AMD Quark OCP MXFP4)
    "quark-mxfp4": (
        {
            "quant_method": "quark",
            "global_quant_config": {
                "weight": {
                    "dtype": "fp4",
                    "qscheme": "per_group",
                    "group_size": 32,
                    "is_dynamic": False,
                    "scale_format": "e8m0",
                },
                "input_tensors": {
                    "dtype": "fp4",
                    "qscheme": "per_group",
                    "group_size": 32,
                    "is_dynamic": True,
                    "scale_format": "e8m0",
                },
            },
            "layer_quant_config": {},
            "exclude": ["lm_head"],
        },
        "mxfp4",
        ("mxfp4/w4a4",),
    ),
    # Intel/Qwen2.5-7B-Instruct-int4-AutoRound style (auto-round, GPTQ packing)
    "autoround-int4": (
        {
            "quant_method": "auto-round",
            "bits": 4,
            "group_size": 128,
            "sym": True,
            "data_type": "int",
            "packing_format": "auto_round:auto_gptq",
            "autoround_version": "0.5.1",
            "iters": 200,
        },
        "int4_w4a16",
        ("int4_w4a16/gptq_sym",),
    ),
    # hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 (AutoAWQ GEMM)
    "awq": (
        {
            "quant_method": "awq",
            "bits": 4,
            "group_size": 128,
            "version": "gemm",
            "zero_point": True,
            "modules_to_not_convert": None,
        },
        "int4_w4a16",
        ("int4_w4a16/awq_zp",),
    ),
    # hugging-quants/Meta-Llama-3.1-8B-Instruct-GPTQ-INT4 (AutoGPTQ; saved in float16)
    "gptq-fp16": (
        {
            "quant_method": "gptq",
            "bits": 4,
            "group_size": 128,
            "desc_act": True,
            "sym": True,
            "damp_percent": 0.1,
            "true_sequential": True,
            "static_groups": False,
        },
        "int4_w4a16",
        ("int4_w4a16/gptq_sym_fp16",),
    ),
    # Qwen/Qwen3-8B-FP8 (quant_method fp8, 128x128 blocks)
    "fp8-block": (
        {
            "quant_method": "fp8",
            "activation_scheme": "dynamic",
            "fmt": "e4m3",
            "weight_block_size": [128, 128],
        },
        "fp8_block",
        ("fp8_block/128x128",),
    ),
}
"""name -> (quantization_config, scheme, linear kinds)."""


def _write(folder: Path, quant: dict[str, Any] | None, **more: Any) -> Path:
    config = {**LLAMA, **more}
    if quant is not None:
        config["quantization_config"] = quant
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return folder


def _resolve(folder: Path, *flags: str) -> Resolution:
    result = resolve_args(["--vllm-version", "0.33", *flags, "--", "vllm", "serve", str(folder)])
    assert isinstance(result, Resolution)
    return result


def _target_flags(name: str) -> list[str]:
    """A golden target as kernelcfg's flags: its preset, else platform and architecture."""
    from kernelcfg.targets.presets import PRESETS

    if name in PRESETS:
        return ["--device", name]
    spec = GOLDEN["meta"]["targets"][name]
    flags = ["--platform", spec["kind"]]
    if spec.get("capability"):
        flags += ["--capability", spec["capability"]]
    if spec.get("gfx_arch"):
        flags += ["--gfx-arch", spec["gfx_arch"]]
    return flags


def _golden_worlds(kind: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every (target, world, outcome) the vectors hold for a linear kind (worlds whose
    enabling variables kernelcfg's install does not set, ROCm's ``full``, left out)."""
    found = []
    for target, layers in GOLDEN["linear"]["index"].items():
        kind_of = GOLDEN["meta"]["targets"][target]["kind"]
        for world, outcome in layers.get(kind, {}).items():
            if world == "full" and kind_of == "rocm":
                continue
            found.append((target, world, GOLDEN["linear"]["outcomes"][outcome]))
    return found


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_scheme_and_linear_kinds(tmp_path: Path, name: str) -> None:
    quant, scheme, kinds = CHECKPOINTS[name]
    dtype = "float16" if name.endswith("fp16") else "bfloat16"
    result = _resolve(_write(tmp_path / name, quant, torch_dtype=dtype), "--device", "h100")
    assert result.inputs is not None
    assert result.inputs.quant_scheme == scheme
    picked = result.selection["linear_backend"]
    assert tuple(picked["layers"]) == kinds


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_linear_pick_is_vllms(tmp_path: Path, name: str) -> None:
    quant, _scheme, kinds = CHECKPOINTS[name]
    dtype = "float16" if name.endswith("fp16") else "bfloat16"
    folder = _write(tmp_path / name, quant, torch_dtype=dtype)
    cases = _golden_worlds(kinds[0])
    assert cases, f"the vectors hold no {kinds[0]} layer"
    wrong = []
    for target, world, expected in cases:
        result = _resolve(folder, *_target_flags(target), "--install", INSTALL[world])
        picked = result.selection["linear_backend"]
        got = (picked["status"], picked["kernel"])
        if got != (expected["status"], expected["kernel"]):
            wrong.append((target, world, got, expected["kernel"]))
    assert wrong == []


def test_modelopt_side_file_is_read(tmp_path: Path) -> None:
    # nvidia/Llama-3.1-8B-Instruct-FP4 (ModelOpt 0.29 and older: hf_quant_config.json)
    folder = _write(tmp_path / "fp4", None)
    side = {
        "producer": {"name": "modelopt", "version": "0.23.0"},
        "quantization": {
            "quant_algo": "NVFP4",
            "kv_cache_quant_algo": None,
            "group_size": 16,
            "exclude_modules": ["lm_head"],
        },
    }
    (folder / "hf_quant_config.json").write_text(json.dumps(side), encoding="utf-8")
    result = _resolve(folder, "--device", "b200")
    assert result.inputs is not None
    assert (result.inputs.quantization, result.inputs.quant_scheme) == ("modelopt_fp4", "nvfp4")
    assert tuple(result.selection["linear_backend"]["layers"]) == ("nvfp4/w4a4",)


def test_mixed_schemes_are_each_walked(tmp_path: Path) -> None:
    # llm-compressor recipes that keep some layers at W8A8 and others at W4A16
    quant = _ct(_ct_args(num_bits=4, strategy="group", group_size=128), None, "pack-quantized")
    quant["config_groups"]["group_1"] = {
        "targets": ["re:.*down_proj"],
        "weights": _ct_args(type="float", strategy="channel"),
        "input_activations": _ct_args(type="float", strategy="token", dynamic=True),
    }
    quant["format"] = "mixed-precision"
    quant["config_groups"]["group_0"]["format"] = "pack-quantized"
    quant["config_groups"]["group_1"]["format"] = "float-quantized"
    result = _resolve(_write(tmp_path / "mixed", quant), "--device", "h100")
    layers = result.selection["linear_backend"]["layers"]
    assert list(layers) == ["int4_w4a16/gptq_sym", "fp8_channel/dynamic_token"]
    assert result.inputs is not None
    assert result.inputs.quant_scheme == "int4_w4a16"


def test_gpt_oss_linear_layers_are_unquantised(tmp_path: Path) -> None:
    # openai/gpt-oss-20b: MXFP4 experts; attention and router stay BF16
    folder = Path(__file__).resolve().parents[1] / "docs" / "examples" / "gpt-oss-20b"
    result = _resolve(folder, "--device", "h100")
    assert result.inputs is not None
    assert result.inputs.quant_scheme == "mxfp4"
    assert list(result.selection["linear_backend"]["layers"]) == ["unquantized/bf16"]
    assert result.selection["moe_backend"]["status"] in ("selected", "depends")


def test_bitsandbytes_names_its_scheme(tmp_path: Path) -> None:
    # unsloth/llama-3-8b-bnb-4bit (bitsandbytes NF4): its own linear kernels, no choice
    quant = {
        "quant_method": "bitsandbytes",
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_compute_dtype": "bfloat16",
        "bnb_4bit_use_double_quant": True,
    }
    result = _resolve(_write(tmp_path / "bnb", quant), "--device", "h100")
    assert result.inputs is not None
    assert result.inputs.quant_scheme == "bitsandbytes"
    assert "linear_backend" not in result.selection


def test_quantization_flag_that_contradicts_the_checkpoint(tmp_path: Path) -> None:
    quant = CHECKPOINTS["ct-fp8-dynamic"][0]
    result = _resolve(_write(tmp_path / "ct", quant), "--device", "h100", "--quantization", "awq")
    assert result.inputs is not None
    assert result.inputs.quant_scheme is None


def test_modelopt_kv_cache_scheme_sets_the_cache_dtype(tmp_path: Path) -> None:
    # nvidia/Llama-3.1-8B-Instruct-FP8: FP8 weights and an FP8 KV cache
    quant = {**CHECKPOINTS["modelopt-fp8"][0], "kv_cache_quant_algo": "FP8"}
    result = _resolve(_write(tmp_path / "kv", quant), "--device", "h100")
    assert result.inputs is not None
    assert result.inputs.kv_cache_dtype == "fp8_e4m3"
    assert result.inputs.sources["kv_cache_dtype"].endswith("config.json")
    given = _resolve(
        _write(tmp_path / "kv2", quant), "--device", "h100", "--kv-cache-dtype", "fp8_e5m2"
    )
    assert given.inputs is not None
    assert given.inputs.kv_cache_dtype == "fp8_e5m2"
    plain = _resolve(_write(tmp_path / "kv3", CHECKPOINTS["ct-fp8-static"][0]), "--device", "h100")
    assert plain.inputs is not None
    assert plain.inputs.kv_cache_dtype == "auto"
