"""Execute a vLLM release's own attention-backend selection and write the project's
vectors, ``tests/golden/vllm-X.Y.Z/executed-attention.json``.

    python scripts/release/execute/attention.py 0.34.0 [--targets h100,b200] [--out FILE]

Same venv, stand-in CUDA libraries, simulated targets and install worlds as ``moe.py``;
runs ``inside/attention_driver.py``: the CUDA platform's ``get_attn_backend_cls`` (each
backend's ``validate_configuration``) per (target, world, model feature set), with no
backend (``auto``: the pick and the ordered candidates with vLLM's reasons) and with
every ``AttentionBackendEnum`` value (honoured, ignored, or refused with vLLM's
message). Feature sets are named as real vLLM's vectors name them
(``attention-picks.json``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import moe
from extras import ensure_extras
from vectors import sha256

WORLDS = ("pip", "image", "all")
"""The install worlds run (``minimal`` changes no attention check on CUDA)."""
ROCM_WORLDS = ("pip", "image")
"""On ROCm, real vLLM's (wheel, docker): the optional CUDA libraries of ``all`` (FlashInfer,
...) are no ROCm install."""

QWEN3 = {
    "model_type": "qwen3",
    "architectures": ["Qwen3ForCausalLM"],
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 36,
    "intermediate_size": 12288,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
}
GPT_OSS = {
    "model_type": "gpt_oss",
    "architectures": ["GptOssForCausalLM"],
    "hidden_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "num_hidden_layers": 24,
    "intermediate_size": 2880,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "vocab_size": 201088,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 150000.0,
}
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 2048,
    "intermediate_size": 18432,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "rms_norm_eps": 1e-06,
}
DSA = {"index_topk": 2048, "index_head_dim": 128, "index_n_heads": 64}
"""The model layouts behind the feature sets (Qwen3, gpt-oss with sinks, DeepSeek-V3
MLA, DeepSeek-V3.2 sparse MLA): ``config.json`` fields kernelcfg reads."""

STAND_IN_PACKAGES = ["flashinfer", "tokenspeed_mla"]
"""Packages ``pip install vllm`` brings on CUDA that the backend modules import at load
(their kernels stay off unless the world's probes say otherwise): importable stand-ins
(every attribute present) where the venv lacks them. Not on ROCm, whose install does not
bring them (there vLLM reads FlashInfer's backend as an ``ImportError``)."""

PLACEHOLDERS = ["vllm.vllm_flash_attn.cute"]
"""vLLM's FA4 CuTe-DSL package imports nvidia-cutlass-dsl / quack / cuda-python kernels
(all in ``pip install vllm`` on CUDA): an importable placeholder; vLLM's own FA4
availability check (``is_fa_version_supported(4)``) still decides."""

DTYPES = {"bfloat16": "bf16", "float16": "fp16"}
KV = ("auto", "fp8", "fp8_e4m3")


def features() -> list[dict[str, Any]]:
    """The model feature sets: MHA head sizes 64/128/256 with and without sinks, MLA
    (576) dense and sparse at 128 and 16 heads per rank, each dtype and KV-cache dtype."""
    out = []
    for head in (64, 128, 256):
        for dtype, short in DTYPES.items():
            for kv in KV:
                for sink in (False, True):
                    base = GPT_OSS if sink else QWEN3
                    hf = {**base, "head_dim": head, "torch_dtype": dtype}
                    fid = f"mha.h{head}.{short}.kv-{kv}" + (".sinks" if sink else "")
                    out.append(_feature(fid, head, dtype, kv, hf, sink=sink))
    for dtype, short in DTYPES.items():
        for kv in KV:
            for sparse in (False, True):
                for heads in (128, 16):
                    arch = "DeepseekV32ForCausalLM" if sparse else "DeepseekV3ForCausalLM"
                    hf = {
                        **DEEPSEEK_V3,
                        **(DSA if sparse else {}),
                        "model_type": "deepseek_v32" if sparse else "deepseek_v3",
                        "architectures": [arch],
                        "torch_dtype": dtype,
                    }
                    fid = f"mla.h576.{short}.kv-{kv}" + (".dsa" if sparse else "") + f".nh{heads}"
                    out.append(
                        _feature(fid, 576, dtype, kv, hf, mla=True, sparse=sparse, heads=heads)
                    )
    return out


def _feature(
    fid: str, head: int, dtype: str, kv: str, hf: dict[str, Any], **flags: Any
) -> dict[str, Any]:
    """One feature set; ``flags``: ``sink``, ``mla``, ``sparse``, ``heads`` (per rank)."""
    heads = flags.get("heads")
    return {
        "id": fid,
        "head_size": head,
        "dtype": dtype,
        "kv_cache_dtype": kv,
        "use_mla": flags.get("mla", False),
        "use_sparse": flags.get("sparse", False),
        "has_sink": flags.get("sink", False),
        "num_heads": heads,
        "tensor_parallel_size": 1 if heads in (None, 128) else 128 // heads,
        "block_size": None,
        "hf_config": hf,
    }


def _index(records: list[list[Any]]) -> dict[str, Any]:
    """``auto.index[target][feature][world]`` -> id in ``auto.outcomes``;
    ``explicit.index[target][feature][world]`` -> a row of ``explicit.rows``: outcome
    numbers aligned with ``meta.backends`` (``explicit.outcomes[n]``)."""
    auto: dict[str, Any] = {"index": {}, "outcomes": {}}
    explicit: dict[str, Any] = {"index": {}, "rows": [], "outcomes": []}
    auto_ids: dict[str, str] = {}
    explicit_ids: dict[str, int] = {}
    row_ids: dict[str, int] = {}
    for target, feature, world, outcome, values in records:
        text = json.dumps(outcome, sort_keys=True)
        if text not in auto_ids:
            auto_ids[text] = f"a{len(auto_ids):05d}"
            auto["outcomes"][auto_ids[text]] = outcome
        node = auto["index"].setdefault(target, {}).setdefault(feature, {})
        node[world] = auto_ids[text]
        numbers = []
        for value in values:
            text = json.dumps(value, sort_keys=True)
            if text not in explicit_ids:
                explicit_ids[text] = len(explicit_ids)
                explicit["outcomes"].append(value)
            numbers.append(explicit_ids[text])
        text = json.dumps(numbers)
        if text not in row_ids:
            row_ids[text] = len(row_ids)
            explicit["rows"].append(numbers)
        node = explicit["index"].setdefault(target, {}).setdefault(feature, {})
        node[world] = row_ids[text]
    return {"auto": auto, "explicit": explicit}


def _meta(version: str, venv: Path, answer: dict[str, Any], wall: float) -> dict[str, Any]:
    whl = common.wheel(version)
    found = answer["found"]
    return {
        "vllm_version": version,
        "made_by": "scripts/release/execute/attention.py (vLLM's own "
        "CudaPlatform.get_attn_backend_cls / get_valid_backends and each backend's "
        "validate_configuration, executed)",
        "lookup": "auto.index[target][feature][world] -> auto.outcomes[id]: status "
        "(selected | error), backend (AttentionBackendEnum name), candidates ([backend, "
        "ok|rejected, vLLM's reasons] in priority order), message; "
        "explicit.index[target][feature][world] -> row number; explicit.rows[row] -> list "
        "aligned with meta.backends of numbers into explicit.outcomes: status (honoured | "
        "ignored | refused), backend (the one used when ignored), message (vLLM's "
        "exception, 'Type: text')",
        "wheel": {"name": whl.name, "sha256": sha256(whl)},
        "torch": common.TORCH_PIN,
        "venv": str(venv),
        "extras": ", ".join(answer["extras"]),
        "platform": {
            "how": "as executed-moe.json: vllm.platforms._current_platform replaced by a "
            "proxy forwarding to a subclass of vLLM's CudaPlatformBase per target",
            "rocm_class": "as executed-moe.json: a subclass of vLLM's RocmPlatform per "
            "ROCm target (its own get_attn_backend_cls / get_valid_backends), the gfx facts "
            "vLLM computes at import recomputed per target; torch.cuda's device properties "
            "answer the target's gfx arch as gcnArchName",
            "rocm_facts": found.get("rocm_facts"),
            "targets": {t: moe.ALL_TARGETS[t] for t in answer["targets"]},
        },
        "worlds": {w: moe.WORLDS[w] for w in WORLDS},
        "rocm_worlds": {w: moe.ROCM_WORLDS[w] for w in ROCM_WORLDS},
        "probes": found["probes"],
        "submodules": found.get("submodules", []),
        "torch_cuda": found.get("torch_cuda", []),
        "stand_in_packages": "importable stand-ins (every attribute present, calls answer "
        "True): " + ", ".join(found.get("stand_in_packages", [])),
        "import_time_constants": found.get("import_time_constants", []),
        "config": "AttentionSelectorConfig built from the feature (head size, dtype, KV-cache "
        "dtype, MLA, sinks, sparse; block size not given; decoder); num_heads per rank for "
        "MLA; under set_current_vllm_config(VllmConfig(cache_config=CacheConfig(cache_dtype="
        "kv))) whose model config is vLLM's own ModelConfig of the feature's config.json "
        "(written alone into a temporary folder, no tokenizer) and whose parallel config "
        "has the feature's tensor-parallel size; an explicit value is "
        "AttentionBackendEnum[value]",
        "caveat": "every backend class is imported once, on the first target before any "
        "world is entered (not re-imported per target and world, as real vLLM's generator "
        "does); module-level availability they compute at import is that of a bare venv on "
        "the first target, except the import-time constants listed",
        "import_failures": found.get("import_failures", []),
        "backends": found["backends"],
        "features": answer["features"],
        "not_run": {
            "CPU, XPU targets": "only CUDA and ROCm targets are simulated so far",
            "model-specific overrides": "Gemma4 / DeepSeek-V4 / MiniMax-M3 model code",
        },
        "wall_s": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = common.driver_arguments(__doc__, moe.ALL_TARGETS, argv)
    started = time.monotonic()
    venv = common.ensure_venv(args.version)
    extras = ensure_extras(args.version, venv)
    targets = args.targets
    feats = features()

    def request(part: dict[str, Any], rocm: bool) -> dict[str, Any]:
        worlds = moe.ROCM_WORLDS if rocm else moe.WORLDS
        return {
            "targets": part,
            "worlds": {w: worlds[w] for w in (ROCM_WORLDS if rocm else WORLDS)},
            "features": feats,
            "stand_in_packages": [] if rocm else STAND_IN_PACKAGES,
            "placeholders": PLACEHOLDERS,
        }

    answer = moe.run_per_kind(venv, "attention_driver.py", targets, request)
    answer.update(targets=targets, extras=extras, features=feats)
    data = {
        "meta": _meta(args.version, venv, answer, time.monotonic() - started),
        **_index(answer["records"]),
    }
    out = common.write_vectors(args.out, args.version, "attention", data)
    n = len(answer["records"])
    print(f"{out}: {n} (target, feature, world) records, {data['meta']['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
