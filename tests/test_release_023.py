"""vLLM 0.23.0, added by ``make release VERSION=0.23.0``: what its hand-read
files changed from 0.24.0's, each case citing the 0.23.0
lines (paths inside the wheel) it rests on. Its MoE, linear, attention and verdict picks
are checked against the selection 0.23.0 itself executed in ``test_*_executed.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernelcfg.checks.constraints import Context, check
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache import env as compile_env
from kernelcfg.vllm.compile_cache.start_up import Launch, writes

from .cli_helpers import run
from .moe_release import MoeRelease
from .test_linear_old import kernel, release

VERSION = "0.23.0"
NEXT = "0.24.0"
LINEAR = "vllm/model_executor/kernels/linear/__init__.py"


def _data(kind: str, version: str = VERSION) -> dict[str, Any]:
    found = releases.release_data(kind, version)
    assert found is not None, (kind, version)
    return dict(found)


def _severity(flag: str, value: str, device: str, scheme: str, version: str = VERSION) -> Any:
    ctx = Context(PRESETS[device], version, scheme, expert_parallel=False)
    problem = check(flag, value, ctx).problem()
    return None if problem is None else problem.severity


def test_backend_values() -> None:
    # config/kernel.py:122-137 MoEBackend without 'flydsl'; :139-155 LinearBackend without
    # 'flashinfer_cutedsl' and 'flashinfer_b12x' (each a value 0.24.0 adds)
    mine, newer = _data("vllm")["choices"], _data("vllm", NEXT)["choices"]
    assert set(newer["MoEBackend"]) - set(mine["MoEBackend"]) == {"flydsl"}
    added = set(newer["LinearBackend"]) - set(mine["LinearBackend"])
    assert added == {"flashinfer_cutedsl", "flashinfer_b12x"}
    result = run(
        "resolve", "--device", "b200", "--vllm-version", VERSION, "--linear-backend",
        "flashinfer_cutedsl",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "flashinfer_cutedsl" in result.stderr


def test_deprecated_env_variables_read_as_their_getter() -> None:
    # envs.py:349-369 deprecated_env(name, removal, replacement, getter) warns when the
    # variable is set and returns the getter's value: :1474-1479 VLLM_USE_FLASHINFER_MOE_FP8
    # reads bool(int(...)) with default '0' (0.24.0 removed the variable)
    variables = _data("env")["variables"]
    entry = variables["VLLM_USE_FLASHINFER_MOE_FP8"]
    assert entry["kind"] == "bool_int"
    assert entry["default"] is False
    assert compile_env.parse_raw(entry, "1") is True
    assert "VLLM_USE_FLASHINFER_MOE_FP8" not in _data("env", NEXT)["variables"]


@pytest.mark.parametrize(
    "variable",
    ["VLLM_USE_FLASHINFER_MOE_FP8", "VLLM_MXFP4_USE_MARLIN", "VLLM_NVFP4_GEMM_BACKEND"],
)
def test_lint_env_says_what_a_deprecated_variable_steers(tmp_path: Path, variable: str) -> None:
    # oracle/fp8.py:311-358, oracle/mxfp4.py:525-533, kernels/linear/__init__.py:900-911:
    # 0.23.0 still chooses kernels by them (resolve does not model it, lint-env says so);
    # 0.24.0 removed them (a removed-variable warning naming the flag)
    path = tmp_path / "launch.env"
    path.write_text(f"{variable}=1\n")

    def codes(version: str) -> list[str]:
        result = run(
            "lint-env", "--env-file", str(path), "--vllm-version", version, "--format", "json"
        )
        return [f["code"] for f in result.json()["findings"]]

    assert codes(VERSION) == ["steers-kernels"]
    assert codes(NEXT) == ["removed-variable"]


# ---------------------------------------------------------------- MoE
@pytest.mark.parametrize("variant", ["fp8_block/compressed_tensors", "fp8_block/online"])
def test_deep_gemm_experts_not_on_sm12x(variant: str) -> None:
    # platforms/cuda.py:556-559 support_deep_gemm: SM90 or the SM100 family (0.24.0 adds
    # SM120), read by utils/deep_gemm.py:92-98 is_deep_gemm_supported; on an RTX PRO 6000
    # block FP8 falls to Triton (executed: TritonExperts)
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    mine = old.pick(variant, "deepseek_v3", "TP1", old.where("rtx-pro-6000", "all"))
    theirs = new.pick(variant, "deepseek_v3", "TP1", new.where("rtx-pro-6000", "all"))
    assert (mine.backend, mine.kernel) == ("TRITON", "TritonExperts")
    assert theirs.kernel == "TritonOrDeepGemmExperts"
    assert _severity("moe_backend", "deep_gemm", "rtx-pro-6000", "fp8_block") == "error"
    assert _severity("moe_backend", "deep_gemm", "rtx-pro-6000", "fp8_block", NEXT) != "error"


def test_mxfp8_oracle_has_no_deep_gemm_nor_rocm_fallback() -> None:
    # oracle/mxfp8.py:18-22 _SUPPORTED_BACKENDS FLASHINFER_TRTLLM, MARLIN, XPU and :24-28
    # the values (no 'deep_gemm'); no _select_rocm_mxfp8_backend: every platform raises at
    # :89 when none serves. On B200 without FlashInfer the MXFP8 experts are Marlin's
    oracle = _data("moe")["oracles"]["mxfp8"]
    assert oracle["priority"] == ["FLASHINFER_TRTLLM", "MARLIN", "XPU"]
    assert oracle["forced"] == []
    assert "deep_gemm" not in oracle["values"]
    assert "deep_gemm" in _data("moe", NEXT)["oracles"]["mxfp8"]["values"]
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    mine = old.pick("mxfp8/any", "deepseek_v3", "DP8", old.where("b200", "pip"))
    theirs = new.pick("mxfp8/any", "deepseek_v3", "DP8", new.where("b200", "pip"))
    assert mine.kernel == "MarlinExperts"
    assert theirs.kernel == "DeepGemmExperts"
    assert _severity("moe_backend", "deep_gemm", "b200", "mxfp8") == "error"
    assert _severity("moe_backend", "deep_gemm", "b200", "mxfp8", NEXT) != "error"


def test_no_deepep_v2_for_trtllm_fp8() -> None:
    # oracle/fp8.py:60-130 no DeepEP v2 branch moving FLASHINFER_TRTLLM first (0.24.0
    # :93-104); experts/trtllm_fp8_moe.py:84-89 the modular class keeps the base's parallel
    # config (no use_deepep_v2_kernels; 0.24.0 :98-104 adds it)
    reorder = _data("moe")["oracles"]["fp8"]["reorder"]
    assert not [r for r in reorder if "use_deepep_v2_kernels" in str(r["when"])]
    modular = _data("moe")["experts"]["TrtLlmFp8ExpertsModular"]["supports"]
    newer = _data("moe", NEXT)["experts"]["TrtLlmFp8ExpertsModular"]["supports"]
    assert "use_deepep_v2_kernels" not in str(modular["parallel_config"])
    assert "use_deepep_v2_kernels" in str(newer["parallel_config"])


def test_wna16_oracle_has_no_cpu_backend() -> None:
    # oracle/int_wna16.py:68-84 _get_priority_backends: XPU on XPU, else FLASHINFER_TRTLLM,
    # MARLIN, BATCHED_MARLIN (0.24.0 returns [CPU] on CPU, :83-84, with CPUExpertsInt4)
    mine, newer = _data("moe")["oracles"]["wna16"], _data("moe", NEXT)["oracles"]["wna16"]
    assert [p["when"] for p in mine["priority_by"]] == [{"kind": ["xpu"]}]
    assert "CPU" not in mine["backend_classes"]
    assert {"kind": ["cpu"]} in [p["when"] for p in newer["priority_by"]]


def test_experts_checks_of_the_wheel() -> None:
    # activation.py: MoEActivation has no SWIGLUOAI_UNINTERLEAVE; experts/trtllm_bf16_moe.py
    # SiLU only, gated only (0.24.0 adds RELU2_NO_MUL); flashinfer_cutlass_moe.py and
    # trtllm_nvfp4_moe.py without GELU_TANH; cutlass_moe.py CutlassExpertsMxfp4 on the SM100
    # family; deep_gemm_moe.py DeepGemmExperts block FP8 only (0.24.0 adds MXFP8 on SM10x);
    # xpu_moe.py XPUExpertsWNA16 kInt4Static only; no cpu_moe.CPUExpertsInt4
    experts, newer = _data("moe")["experts"], _data("moe", NEXT)["experts"]
    assert "SWIGLUOAI_UNINTERLEAVE" not in str(experts["TritonExperts"]["supports"])
    assert "SWIGLUOAI_UNINTERLEAVE" in str(newer["TritonExperts"]["supports"])
    bf16 = experts["TrtLlmBf16Experts"]["supports"]
    assert bf16["activation"] == {"attr": {"activation": ["SILU"]}}
    assert bf16["no_act_and_mul"] is False
    assert newer["TrtLlmBf16Experts"]["supports"]["no_act_and_mul"] is True
    for name in ("FlashInferExperts", "TrtLlmNvFp4ExpertsModular"):
        assert "GELU_TANH" not in experts[name]["supports"]["activation"]["attr"]["activation"]
        assert "GELU_TANH" in newer[name]["supports"]["activation"]["attr"]["activation"]
    mxfp4 = experts["CutlassExpertsMxfp4"]["supports"]["current_device"]
    assert mxfp4 == {"kind": ["cuda"], "major_in": [10]}
    assert "kMxfp8Static" not in str(experts["DeepGemmExperts"]["supports"]["quant_scheme"])
    assert "kInt4Static32" not in str(experts["XPUExpertsWNA16"]["supports"]["quant_scheme"])
    assert "cpu_moe.CPUExpertsInt4" not in experts
    assert "cpu_moe.CPUExpertsInt4" in newer


def test_nvfp4_clamp_is_trtllm_only() -> None:
    # oracle/nvfp4.py:184-191 NVFP4_BACKENDS_WITH_CLAMP is FLASHINFER_TRTLLM alone (0.24.0
    # adds FlashInfer CUTLASS and Marlin): a model with a SwiGLU limit (DeepSeek V4) has
    # no NVFP4 MoE backend on H100
    old, new = MoeRelease(VERSION), MoeRelease(NEXT)
    mine = old.pick("nvfp4/modelopt", "deepseek_v4", "TP1", old.where("h100", "all"))
    theirs = new.pick("nvfp4/modelopt", "deepseek_v4", "TP1", new.where("h100", "all"))
    assert mine.kernel is None
    assert theirs.kernel == "MarlinExperts"
    blackwell = old.pick("nvfp4/modelopt", "deepseek_v4", "TP1", old.where("b200", "all"))
    assert blackwell.backend == "FLASHINFER_TRTLLM"


# ---------------------------------------------------------------- linear
def test_no_cutedsl_linear_kernels() -> None:
    # __init__.py:376-381 the CUDA MXFP8 list FlashInfer CUTLASS, Marlin, emulation and
    # :391-403 the CUDA NVFP4 list from FlashInfer CUTLASS (0.24.0 puts the CuTe-DSL
    # kernels first); :382-384 ROCm MXFP8 is emulation only (no mxfp8/rocm_native.py)
    lists = _data("linear")["candidate_lists"]
    assert lists["mxfp8"]["cuda"] == [
        "FlashInferCutlassMxfp8LinearKernel",
        "MarlinMxfp8LinearKernel",
        "EmulationMxfp8LinearKernel",
    ]
    assert lists["nvfp4"]["cuda"][0] == "FlashInferCutlassNvFp4LinearKernel"
    assert lists["mxfp8"]["rocm"] == ["EmulationMxfp8LinearKernel"]
    newer = _data("linear", NEXT)["candidate_lists"]
    assert newer["mxfp8"]["cuda"][0] == "FlashInferCutedslMxfp8LinearKernel"
    assert newer["nvfp4"]["cuda"][0] == "FlashInferCuteDslNvFp4LinearKernel"


def test_deep_gemm_block_fp8_linear_not_on_sm12x() -> None:
    # scaled_mm/deep_gemm.py:47-52 is_deep_gemm_supported (SM90 or SM10x in 0.23.0): on
    # an RTX PRO 6000 (SM120) block FP8 goes on to CUTLASS (executed, as on DGX Spark:
    # CutlassFp8BlockScaledMMKernel)
    layer = "fp8_block/128x128"
    assert kernel(VERSION, layer, "rtx-pro-6000", "all") == "CutlassFp8BlockScaledMMKernel"
    assert kernel(NEXT, layer, "rtx-pro-6000", "all") == "DeepGemmFp8BlockScaledMMKernel"


@pytest.mark.parametrize(("version", "ok"), [(VERSION, True), (NEXT, False)])
def test_conch_takes_activation_reordering(version: str, ok: bool) -> None:
    # mixed_precision/conch.py:29-45 can_implement has no g_idx refusal (0.24.0 adds
    # 'Activation reordering (g_idx) is not supported by ConchLinearKernel')
    found = release(version)
    layer = {**found.data["layers"]["int4_w4a16/gptq_sym"], "has_g_idx": True}
    where = found.where("cuda", "9.0", None, "all", {})
    assert found._check("ConchLinearKernel", where, layer, "mp", ("can_implement",))[0] is ok


def test_linear_errors_at_the_releases_lines() -> None:
    # the raises of __init__.py: 'Failed to find a kernel' :516 :698 :744 :798 :965, and a
    # --linear-backend without a kernel in the list :502 :666 :717 :776 :928
    data = _data("linear")
    lines = {k: v["source"].split()[0] for k, v in data["no_kernel_error"].items()}
    assert lines["fp8"] == f"{LINEAR}:516"
    assert lines["mp"] == f"{LINEAR}:698"
    assert lines["nvfp4"] == f"{LINEAR}:965"
    named = data["no_named_kernel_error"]
    assert named["mp"]["source"] == f"{LINEAR}:666 choose_mp_linear_kernel"
    assert named["nvfp4"]["source"] == f"{LINEAR}:928 init_nvfp4_linear_kernel"


# ---------------------------------------------------------------- attention
def test_no_sm120_sparse_mla_backend() -> None:
    # v1/attention/backends/registry.py has no FLASHINFER_MLA_SPARSE_SM120,
    # TRITON_ATTN_DIFFKV nor MINIMAX_M3_SPARSE; platforms/cuda.py:78-131 no SM12x MLA list
    data, newer = _data("selector"), _data("selector", NEXT)
    gone = {"FLASHINFER_MLA_SPARSE_SM120", "TRITON_ATTN_DIFFKV", "MINIMAX_M3_SPARSE"}
    assert not gone & set(data["backends"])
    assert gone <= set(newer["backends"])
    whens = [p["when"] for p in data["platforms"]["cuda"]["priorities"]]
    assert {"mla": True, "major_in": [12]} not in whens
    assert {"mla": True, "major_in": [12]} in [
        p["when"] for p in newer["platforms"]["cuda"]["priorities"]
    ]


def test_flashinfer_attention_from_sm75() -> None:
    # v1/attention/backends/flashinfer.py:407-410 supports_compute_capability SM75 to SM121
    # (0.24.0 from SM80); triton_attn.py:273-282 no int4_per_token_head KV cache
    mine, newer = _data("selector")["backends"], _data("selector", NEXT)["backends"]
    assert mine["FLASHINFER"]["capability"]["min"] == [7, 5]
    assert newer["FLASHINFER"]["capability"]["min"] == [8, 0]
    assert "int4_per_token_head" not in mine["TRITON_ATTN"]["kv_cache_dtypes"]


# ---------------------------------------------------------------- start-up writes
def test_start_up_writes_hold() -> None:
    # platforms/cpu.py:234 VLLM_DISABLE_SHARED_EXPERTS_STREAM=1, :240-241 SD where
    # torch.cpu._is_amx_tile_supported(); platforms/rocm.py:813 VLLM_USE_TRITON_AWQ=1 for
    # any quantization method; config/vllm.py:1071-1080 breakable CUDA graphs on for
    # DeepSeek V4 (the release's list) unless the variable is set
    cpu = writes(VERSION, {}, Launch("cpu", False, False, {"amx_tile": True}))
    assert cpu.written == {
        "VLLM_DISABLE_SHARED_EXPERTS_STREAM": "1",
        "VLLM_SSM_CONV_STATE_LAYOUT": "SD",
    }
    rocm = writes(VERSION, {}, Launch("rocm", quantized=True, breakable_auto=False))
    assert rocm.written == {"VLLM_USE_TRITON_AWQ": "1"}
    cuda = writes(VERSION, {}, Launch("cuda", quantized=False, breakable_auto=True))
    assert cuda.written == {"VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}
    architectures = _data("vllm")["breakable_cudagraph_architectures"]
    assert sorted(architectures) == ["DeepSeekV4MTPModel", "DeepseekV4ForCausalLM"]


# ---------------------------------------------------------------- catalogue spans
# constraints.json spans that began at 0.24.0, read again in 0.23.0's wheel: each holds
SPANS = [
    # experts/cutlass_moe.py:733-735 CutlassExpertsFp4: ep_size == 1
    ("moe_backend", "cutlass", "nvfp4", True, "b200"),
    # oracle/unquantized.py:137-149 map_unquantized_backend has no marlin (ValueError)
    ("moe_backend", "marlin", "unquantized", False, "h100"),
    # oracle/mxfp8.py:24-28 no 'triton' MXFP8 value
    ("moe_backend", "triton", "mxfp8", False, "h100"),
    # oracle/mxfp4.py:249 'humming' maps for MXFP4 only
    ("moe_backend", "humming", "fp8_block", False, "h100"),
    # kernels/linear/__init__.py:230-234 'torch': per-tensor, channel-wise, row-wise FP8 only
    ("linear_backend", "torch", "fp8_block", False, "h100"),
    ("linear_backend", "torch", "nvfp4", False, "b200"),
    # :209-211 the 'flashinfer_trtllm' set is the NVFP4 kernel alone
    ("linear_backend", "flashinfer_trtllm", "mxfp8", False, "b200"),
]


@pytest.mark.parametrize(("flag", "value", "scheme", "ep", "device"), SPANS)
def test_spans_from_0240_hold_for_0230(
    flag: str, value: str, scheme: str, ep: bool, device: str
) -> None:
    def severity(version: str) -> str | None:
        ctx = Context(PRESETS[device], version, scheme, expert_parallel=ep)
        problem = check(flag, value, ctx).problem()
        return None if problem is None else problem.severity

    assert severity(VERSION) == severity(NEXT) == "error"


@pytest.mark.parametrize("value", ["marlin", "deep_gemm", "flashinfer_trtllm", "cutlass"])
def test_wna16_moe_ignores_the_value(value: str) -> None:
    # oracle/int_wna16.py:87 select_wna16_moe_backend reads no --moe-backend, as 0.24.0's
    ctx = Context(PRESETS["h100"], VERSION, "int4_w4a16", expert_parallel=False)
    problem = check("moe_backend", value, ctx).problem()
    assert problem is not None
    assert problem.severity == "warning"
    assert "ignored for int4_w4a16" in problem.message


# ---------------------------------------------------------------- vllm serve
@pytest.mark.parametrize(
    ("args", "said"),
    [
        # engine/arg_utils.py: no --watermark, --prefill-schedule-interval,
        # --jit-monitor-verbose (0.24.0 adds them)
        (["--watermark", "0.01"], "unrecognized arguments"),
        (["--prefill-schedule-interval", "2"], "unrecognized arguments"),
        # config/parallel.py All2AllBackend: no deepep_v2
        (["--all2all-backend", "deepep_v2"], "invalid choice"),
        # config/kernel.py:122-137: no 'flydsl' MoE backend
        (["--moe-backend", "flydsl"], "flydsl"),
    ],
)
def test_serve_refuses_what_0240_added(args: list[str], said: str) -> None:
    options = _data("serve")["options"]
    newer = _data("serve", NEXT)["options"]
    assert {o["dest"] for o in options} < {o["dest"] for o in newer}
    launch = ["--", "vllm", "serve", "Qwen/Qwen3-8B", *args]
    result = run("resolve", "--device", "h100", "--vllm-version", VERSION, *launch)
    assert result.exit_code == 2
    assert said in result.stderr
    assert run("resolve", "--device", "h100", "--vllm-version", NEXT, *launch).exit_code == 0
