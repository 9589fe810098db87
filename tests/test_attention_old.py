"""The attention selector of vLLM 0.29.0-0.32.0 (``selector-0.29.0.json`` ...
``selector-0.32.0.json``), checked by hand against each release's own source.

These releases have no executed golden: every expected pick below was derived by
reading the wheel's source, and each case cites the lines it rests on (paths inside
the wheel, ``vllm-X.Y.Z-cp38-abi3-manylinux_2_28_x86_64.whl``). The walks not quoted
here are those of 0.33.0 (``test_attention_golden.py``): where a release's code is the
same, so is the pick.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands.pipeline import resolve_args
from kernelcfg.engine.resolution import Resolution
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config import attention as attention_config
from kernelcfg.vllm.kernels.attention.facts import Selection
from kernelcfg.vllm.kernels.attention.features import features, platform_of
from kernelcfg.vllm.kernels.attention.selector import selector

from .conftest import golden

OLD = ("0.29.0", "0.30.0", "0.31.0", "0.32.0")
"""The releases whose selector data is read from their source by hand."""
EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
}
"""Llama 3.1 8B's config.json (head size 4096/32 = 128, bf16, no sinks, no MLA)."""
GPT_OSS: dict[str, Any] = json.loads((EXAMPLES / "gpt-oss-20b" / "config.json").read_text())
"""gpt-oss-20b: head size 64, attention sinks."""
R1: dict[str, Any] = json.loads((EXAMPLES / "deepseek-r1" / "config.json").read_text())
"""DeepSeek-R1: MLA, head size kv_lora_rank + qk_rope_head_dim = 576."""
V32: dict[str, Any] = next(
    f["hf_config"]
    for f in golden("0.33.0", "attention-picks")["meta"]["features"]
    if f["id"] == "mla.h576.bf16.kv-auto.dsa.nh16"
)
"""DeepSeek-V3.2: sparse MLA (index_topk 2048), 128 heads."""
MODELS = {"llama": LLAMA, "gpt-oss": GPT_OSS, "r1": R1}


def _pick(
    version: str,
    hf: dict[str, Any],
    where: str,
    backend: str | None = None,
    kv: str = "auto",
    tp: int = 1,
) -> Selection:
    """The selection for ``where`` (a preset, or ``preset/install``; pip by default)."""
    device, _, install = where.partition("/")
    model = selector(version)
    assert model is not None
    found = features(model, hf, None, kv_cache_dtype=kv, tensor_parallel_size=tp)
    place = platform_of(model, PRESETS[device], install or "pip")
    return model.select(backend, found, place)


def _outcome(pick: Selection) -> str:
    return pick.backend if pick.status == "selected" and pick.backend else pick.status


# The picks every release 0.29.0-0.32.0 makes for three typical models, by the same code
# as 0.33.0 (0.32.0's lines; the older releases' differ by a few lines, not in content):
# CUDA's list, vllm/platforms/cuda.py:83 _get_backend_priorities (FLASH_ATTN first off
# SM100, FLASHINFER first on SM100; MLA: FLASH_ATTN_MLA first off SM100, FLASHINFER_MLA
# on it); ROCm's, vllm/platforms/rocm.py:478 (ROCM_ATTN first; ROCM_AITER_UNIFIED_ATTN
# when aiter is installed on CDNA3; MLA without VLLM_ROCM_USE_AITER: TRITON_MLA only);
# CPU's tree, vllm/platforms/cpu.py:143 (CPU_ATTN; MLA: AMX_MLA on an AMX host, else
# CPU_MLA).
TYPICAL = [
    ("llama", "h100", "pip", "FLASH_ATTN"),  # flash_attn.py:286: head 128, bf16, SM80+
    ("llama", "b200", "pip", "FLASHINFER"),  # flashinfer.py:431, flashinfer in the wheel
    ("llama", "b200", "minimal", "FLASH_ATTN"),  # no flashinfer package: ImportError
    ("llama", "a100", "pip", "FLASH_ATTN"),
    ("llama", "mi300x", "pip", "ROCM_ATTN"),  # rocm_attn.py: 128 among its head sizes
    ("llama", "mi300x", "image", "ROCM_ATTN"),  # aiter off unless VLLM_ROCM_USE_AITER=1
    ("llama", "cpu", "pip", "CPU_ATTN"),
    # FA3 (SM90) and FA4 (SM100) serve sinks: fa_utils.py flash_attn_supports_sinks
    ("gpt-oss", "h100", "pip", "FLASH_ATTN"),
    ("gpt-oss", "b200", "pip", "FLASH_ATTN"),  # FLASHINFER's TRT-LLM sinks need its cubins
    ("gpt-oss", "b200", "image", "FLASHINFER"),
    ("gpt-oss", "a100", "pip", "TRITON_ATTN"),  # FA2 has no sinks; triton_attn.py does
    ("gpt-oss", "mi300x", "pip", "TRITON_ATTN"),  # ROCM_ATTN: no sinks
    ("gpt-oss", "mi300x", "image", "ROCM_AITER_UNIFIED_ATTN"),
    ("gpt-oss", "cpu", "pip", "CPU_ATTN"),
    ("r1", "h100", "pip", "FLASH_ATTN_MLA"),  # flashattn_mla.py: FA3 on SM90, 576
    ("r1", "b200", "pip", "FLASHINFER_MLA"),  # flashinfer_mla.py: qk_nope_head_dim 128
    ("r1", "b200", "minimal", "CUTLASS_MLA"),  # TOKENSPEED_MLA: an FP8 KV cache only
    ("r1", "a100", "pip", "TRITON_MLA"),  # the others need SM90 or SM100
    ("r1", "mi300x", "pip", "TRITON_MLA"),
]


@pytest.mark.parametrize("version", OLD)
@pytest.mark.parametrize(("model", "device", "install", "expected"), TYPICAL)
def test_typical_models_on_five_targets(
    version: str, model: str, device: str, install: str, expected: str
) -> None:
    assert _outcome(_pick(version, MODELS[model], f"{device}/{install}")) == expected


@pytest.mark.parametrize("version", OLD)
def test_mla_on_cpu_depends_on_the_hosts_amx(version: str) -> None:
    """cpu.py get_attn_backend_cls: AMX_MLA where the host has AMX tiles, else CPU_MLA."""
    found = _pick(version, R1, "cpu")
    assert found.status == "depends"
    assert "AMX" in (found.message or "")


def test_flashinfer_sinks_on_sm90_from_030() -> None:
    """0.29.0 flashinfer.py:517 supports_sink: TRT-LLM sinks on SM12x and SM100 only;
    0.30.0 flashinfer.py:521 adds SM90 (XQA decode)."""
    old = _pick("0.29.0", GPT_OSS, "h100/image", "FLASHINFER")
    assert old.status == "error"
    assert old.candidates[0].reasons == ("attention sinks not supported",)
    for version in OLD[1:]:
        assert _outcome(_pick(version, GPT_OSS, "h100/image", "FLASHINFER")) == "FLASHINFER"
    assert _outcome(_pick("0.29.0", GPT_OSS, "b200/image", "FLASHINFER")) == "FLASHINFER"


def test_mla_head_size_512_from_030() -> None:
    """0.29.0 mla_attention.py:1473 MLACommonBackend.get_supported_head_sizes is
    [320, 576]; 0.30.0 (line 1596) adds 512 (kv_lora_rank 512 without a RoPE part)."""
    nope = {**R1, "qk_rope_head_dim": 0}
    old = _pick("0.29.0", nope, "h100")
    assert _outcome(old) == "TRITON_MLA"
    assert old.candidates[0].reasons == ("head_size not supported",)
    for version in OLD[1:]:
        assert _outcome(_pick(version, nope, "h100")) == "FLASH_ATTN_MLA"


def test_fp8_kv_with_fa4_on_sm90_from_031() -> None:
    """Head size 512 on SM90 upgrades FA3 to FA4 (fa_utils.py:146). An FP8 KV cache
    there: 0.29.0/0.30.0 fa_utils.py:306 want FA3 on SM90 and refuse it (flash_attn.py
    "FP8 KV cache requires FA3 on SM90 or FA4 on SM100"), FLASHINFER takes it; 0.31.0
    fa_utils.py:307 accepts FA4 at head size 512 on SM90."""
    h512 = {**LLAMA, "head_dim": 512, "num_attention_heads": 8}
    for version in ("0.29.0", "0.30.0"):
        found = _pick(version, h512, "h100", kv="fp8")
        assert _outcome(found) == "FLASHINFER"
        assert found.candidates[0].reasons == ("FP8 KV cache requires FA3 on SM90 or FA4 on SM100",)
    for version in ("0.31.0", "0.32.0"):
        assert _outcome(_pick(version, h512, "h100", kv="fp8")) == "FLASH_ATTN"


def test_triton_flash_attn_causal_route() -> None:
    """0.30.0 triton_flash_attn.py:54: the causal route needs FA4 (head 256 on SM90 gets
    FA3, refused); 0.31.0 triton_flash_attn.py:52 takes FA3 or FA4."""
    h256 = {**LLAMA, "head_dim": 256}
    old = _pick("0.30.0", h256, "h100", backend="TRITON_FLASH_ATTN")
    assert old.status == "error"
    assert old.candidates[0].reasons == ("FLASH_ATTN: causal route requires FlashAttention v4",)
    for version in ("0.31.0", "0.32.0"):
        found = _pick(version, h256, "h100", backend="TRITON_FLASH_ATTN")
        assert _outcome(found) == "TRITON_FLASH_ATTN"


def test_triton_diffkv_fp8_kv_from_032() -> None:
    """triton_attn_diffkv.py:74 lists auto and bfloat16 up to 0.31.0; 0.32.0 (line 73)
    adds fp8 and fp8_e4m3."""
    for version in OLD[:3]:
        found = _pick(version, LLAMA, "h100", backend="TRITON_ATTN_DIFFKV", kv="fp8")
        assert found.candidates[0].reasons == ("kv_cache_dtype not supported",)
    found = _pick("0.32.0", LLAMA, "h100", backend="TRITON_ATTN_DIFFKV", kv="fp8")
    assert _outcome(found) == "TRITON_ATTN_DIFFKV"


def test_flashinfer_nvfp4_kv_off_sm100_from_032() -> None:
    """0.31.0 flashinfer.py:499: an NVFP4 KV cache only through TRT-LLM on SM100, so on
    an H100 no backend takes it; 0.32.0 flashinfer.py:531 serves plain nvfp4 through FA2
    on SM80/SM90/SM12x."""
    for version in OLD[:3]:
        found = _pick(version, LLAMA, "h100", kv="nvfp4")
        assert found.status == "error"
        assert "No valid attention backend found" in (found.message or "")
    assert _outcome(_pick("0.32.0", LLAMA, "h100", kv="nvfp4")) == "FLASHINFER"
    assert _outcome(_pick("0.31.0", LLAMA, "b200/image", kv="nvfp4")) == "FLASHINFER"


def test_sparse_mla_on_sm90_and_sm100() -> None:
    """cuda.py _get_backend_priorities: 0.29.0 lists FLASH_ATTN_MLA_SPARSE, FLASHMLA_SPARSE
    after the dense MLA backends on SM90, 0.30.0 (line 142) appends
    FLASHINFER_MLA_SPARSE_SM90; FLASHMLA_SPARSE takes "fp8", not "fp8_e4m3"
    (flashmla_sparse.py supported_kv_cache_dtypes). On SM100 with 16 heads per rank
    0.32.0 (line 110) tries FLASHINFER_MLA_SPARSE first; 0.33.0 puts FA4's sparse MLA
    before it."""
    assert _pick("0.29.0", V32, "h100/image", kv="fp8_e4m3").status == "error"
    for version in OLD[1:]:
        found = _pick(version, V32, "h100/image", kv="fp8_e4m3")
        assert _outcome(found) == "FLASHINFER_MLA_SPARSE_SM90"
    for version in OLD:
        assert _outcome(_pick(version, V32, "h100", kv="fp8")) == "FLASHMLA_SPARSE"
        assert _outcome(_pick(version, V32, "b200/image", tp=8)) == "FLASHINFER_MLA_SPARSE"
    assert _outcome(_pick("0.33.0", V32, "b200/image", tp=8)) == "FLASH_ATTN_MLA_SPARSE_FA4"


def test_cpu_checks_no_kv_cache_dtype_before_033() -> None:
    """0.32.0 cpu.py:143 get_attn_backend_cls takes MLA with an FP8 KV cache (AMX_MLA or
    CPU_MLA, by the host); 0.33.0 cpu.py:158 refuses it while selecting."""
    for version in OLD:
        assert _pick(version, R1, "cpu", kv="fp8").status == "depends"
    assert _pick("0.33.0", R1, "cpu", kv="fp8").status == "error"


def test_xpu_mla_takes_triton_mla_before_032() -> None:
    """0.29.0-0.31.0 xpu.py (0.31.0 line 161): every MLA model takes TRITON_MLA, an
    explicit backend is not read; 0.32.0 xpu.py:170 tries XPUFlashAttnMLABackend."""
    for version in OLD[:3]:
        assert _outcome(_pick(version, R1, "intel-max-1550")) == "TRITON_MLA"
        asked = _pick(version, R1, "intel-max-1550", backend="FLASH_ATTN_MLA")
        assert (asked.status, asked.backend) == ("ignored", "TRITON_MLA")
    assert _outcome(_pick("0.32.0", R1, "intel-max-1550")) == "FLASH_ATTN_MLA"


@pytest.mark.parametrize(
    ("version", "rocm"),
    [
        ("0.29.0", ["ROCM_ATTN", "TRITON_ATTN", "TURBOQUANT"]),
        ("0.31.0", ["ROCM_ATTN", "TRITON_ATTN", "TURBOQUANT"]),
        ("0.32.0", ["ROCM_ATTN", "TRITON_ATTN", "TURBOQUANT", "ULTRAQUANT"]),
        ("0.33.0", ["ROCM_ATTN", "TRITON_ATTN", "TURBOQUANT", "ROCM_OCTAVE", "ULTRAQUANT"]),
    ],
)
def test_rocm_list_per_release(version: str, rocm: list[str]) -> None:
    """rocm.py _get_backend_priorities: ULTRAQUANT from 0.32.0 (line 478), ROCM_OCTAVE
    from 0.33.0."""
    model = selector(version)
    assert model is not None
    found = features(model, LLAMA, None)
    assert model.priorities(found, platform_of(model, PRESETS["mi300x"], "pip")) == rocm


_SOURCE = re.compile(r"vllm/[\w/]+\.py(:\d+| \(\w+\))\Z")


@pytest.mark.parametrize("version", OLD)
def test_release_data_names_its_backends_and_sources(version: str) -> None:
    """Every backend of the release's enum has facts, none more; each backend, rule and
    platform names the source line it was read from."""
    model = selector(version)
    found = attention_config.facts(version)
    assert model is not None
    assert found is not None
    assert set(model.backends) == set(found.backends)
    sources = [facts["source"] for facts in model.backends.values()]
    sources += [r["source"] for f in model.backends.values() for r in f.get("combination", ())]
    sources += [p["source"] for p in model.data["platforms"].values()]
    assert all(_SOURCE.match(s) for s in sources), [s for s in sources if not _SOURCE.match(s)]


def test_selection_attention_for_every_release_and_preset(tmp_path: Path) -> None:
    """An unquantised Llama on every preset of every known release gets
    ``selection.attention`` (``depends`` where kernelcfg does not model the platform)."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    folder = str(tmp_path)
    missing = []
    for version in releases.known_versions():
        for device in PRESETS:
            result = resolve_args(
                ["--vllm-version", version, "--device", device, "--hf-config-path", folder]
            )
            assert isinstance(result, Resolution)
            picked = (result.selection or {}).get("attention")
            if not picked or picked["status"] not in ("selected", "depends"):
                missing.append((version, device, picked and picked["status"]))
    assert missing == []
