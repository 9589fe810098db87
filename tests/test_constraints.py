"""Which backend values run where: every value of every field on Hopper, Blackwell,
SM12x, gfx942, gfx950 and CPU targets, against homes restated from vLLM's sources."""

from __future__ import annotations

import pytest

from kernelcfg.checks import constraints
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config import attention as attention_config
from kernelcfg.vllm.kernels.quantization import schemes_of_quantization

from .cli_helpers import run

DEVICES = ("h100", "b200", "rtx-pro-6000", "mi300x", "mi355x", "cpu")
GPUS = {"h100", "b200", "rtx-pro-6000", "mi300x", "mi355x"}
CUDA = {"h100", "b200", "rtx-pro-6000"}
ROCM = {"mi300x", "mi355x"}

# (field, value): (scheme to judge it with, where it runs, extra context)
HOMES: dict[tuple[str, str], tuple[str | None, set[str], dict[str, object]]] = {
    ("moe_backend", "triton"): ("unquantized", GPUS, {}),
    ("moe_backend", "batched_triton"): ("unquantized", GPUS, {}),
    ("moe_backend", "deep_gemm"): ("fp8_block", CUDA, {}),
    ("moe_backend", "deep_gemm_mega_moe"): (
        "mxfp4",
        {"b200"},
        {"ep": True, "arch": "DeepseekV4ForCausalLM"},
    ),
    ("moe_backend", "cutlass"): ("fp8_tensor", {"h100", "b200"}, {}),
    ("moe_backend", "flashinfer_trtllm"): ("nvfp4", {"b200"}, {}),
    ("moe_backend", "flashinfer_cutlass"): ("unquantized", CUDA, {}),
    ("moe_backend", "flashinfer_cutedsl"): ("nvfp4", {"b200"}, {}),
    ("moe_backend", "flashinfer_moe_ep_cutedsl"): ("nvfp4", {"b200"}, {"ep": True}),
    ("moe_backend", "flashinfer_b12x"): ("nvfp4", {"rtx-pro-6000"}, {}),
    ("moe_backend", "b12x"): ("nvfp4", {"rtx-pro-6000"}, {}),
    ("moe_backend", "flashinfer_moe_ep_mega_deep_gemm"): (
        "mxfp4",
        {"b200"},
        {"ep": True, "arch": "DeepseekV4ForCausalLM"},
    ),
    ("moe_backend", "marlin"): ("int4_w4a16", CUDA, {}),
    ("moe_backend", "humming"): ("int4_w4a16", CUDA, {}),
    ("moe_backend", "triton_unfused"): ("mxfp4", GPUS, {}),
    ("moe_backend", "aiter"): ("unquantized", ROCM, {}),
    ("moe_backend", "aiter_mega_moe"): (
        "mxfp4",
        {"mi355x"},
        {"ep": True, "arch": "DeepseekV4ForCausalLM", "a2a": "mori_low_latency"},
    ),
    ("moe_backend", "aiter_triton_mxfp4_bf16"): ("mxfp4", ROCM, {}),
    ("moe_backend", "aiter_triton_mxfp4_mxfp4"): ("mxfp4", set(), {}),
    ("moe_backend", "flydsl"): ("int4_w4a16", {"mi355x"}, {}),
    ("moe_backend", "hpc"): ("fp8_block", {"h100"}, {}),
    ("moe_backend", "emulation"): ("nvfp4", GPUS, {}),
    ("moe_backend", "rdna3"): ("int4_w4a16", set(), {}),
    ("linear_backend", "cutlass"): ("fp8_tensor", CUDA, {}),
    ("linear_backend", "flashinfer_cutlass"): ("nvfp4", {"b200", "rtx-pro-6000"}, {}),
    ("linear_backend", "flashinfer_cutedsl"): ("nvfp4", {"b200", "rtx-pro-6000"}, {}),
    ("linear_backend", "flashinfer_trtllm"): ("mxfp8", {"b200"}, {}),
    ("linear_backend", "flashinfer_cudnn"): ("nvfp4", {"b200", "rtx-pro-6000"}, {}),
    ("linear_backend", "flashinfer_b12x"): ("nvfp4", {"rtx-pro-6000"}, {}),
    ("linear_backend", "b12x"): ("fp8_block", {"rtx-pro-6000"}, {}),
    ("linear_backend", "marlin"): ("int4_w4a16", CUDA, {}),
    ("linear_backend", "humming"): ("int4_w4a16", CUDA, {}),
    ("linear_backend", "triton"): ("int8_w8a8", GPUS, {}),
    ("linear_backend", "deep_gemm"): ("fp8_block", CUDA, {}),
    ("linear_backend", "torch"): ("fp8_tensor", GPUS | {"cpu"}, {}),
    ("linear_backend", "aiter"): ("fp8_block", ROCM, {}),
    ("linear_backend", "machete"): ("int4_w4a16", {"h100"}, {}),
    ("linear_backend", "fbgemm"): ("nvfp4", CUDA, {}),
    ("linear_backend", "conch"): ("int4_w4a16", GPUS, {}),
    ("linear_backend", "exllama"): ("int4_w4a16", GPUS, {}),
    ("linear_backend", "emulation"): ("mxfp8", GPUS, {}),
    ("linear_backend", "xpu"): ("fp8_tensor", set(), {}),
    ("linear_backend", "xpu_woq"): ("w8a16_fp8", set(), {}),
    ("sparse_indexer_topk_backend", "deep_select"): (None, {"b200"}, {}),
    ("sparse_indexer_topk_backend", "cooperative"): (None, {"h100", "b200"}, {}),
    ("sparse_indexer_topk_backend", "persistent"): (None, CUDA, {}),
    ("sparse_indexer_topk_backend", "per_row"): (None, GPUS | {"cpu"}, {}),
    ("sparse_indexer_topk_backend", "flashinfer"): (None, CUDA, {}),
    ("sparse_indexer_topk_backend", "torch"): (None, GPUS | {"cpu"}, {}),
    ("sparse_indexer_topk_backend", "aiter"): (None, {"mi355x"}, {}),
}

RELEASE = releases.load("0.33.0")


def test_homes_cover_every_value() -> None:
    for name in constraints.FIELDS:
        for value in RELEASE.choices(name):
            if value != "auto":
                assert (name, value) in HOMES, (name, value)


def _verdict(name: str, value: str, device: str) -> constraints.Verdict:
    scheme, _, extra = HOMES[(name, value)]
    arch = extra.get("arch", "Glm5NextForCausalLM" if name.startswith("sparse") else None)
    ctx = constraints.Context(
        PRESETS[device],
        RELEASE.version,
        scheme,
        env={"VLLM_ROCM_USE_AITER": "1"},
        architectures=(str(arch),) if arch else None,
        expert_parallel=bool(extra.get("ep")),
        all2all_backend=str(extra.get("a2a", "allgather_reducescatter")),
    )
    return constraints.check(name, value, ctx)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("name", "value"), sorted(HOMES), ids=[f"{n}={v}" for n, v in sorted(HOMES)]
)
def test_verdict_on_each_target(name: str, value: str, device: str) -> None:
    verdict = _verdict(name, value, device)
    home = HOMES[(name, value)][1]
    if name.startswith("sparse") and device == "cpu":
        assert verdict.status == "no-effect", verdict
        assert "no CPU code path reads" in verdict.reason, verdict
    elif device in home:
        assert verdict.status in ("runs", "depends"), verdict
        assert verdict.status == "runs" or verdict.unknowns, verdict
    else:
        expected = ("cannot-run", "falls-back") if name == "linear_backend" else ("cannot-run",)
        assert verdict.status in expected, verdict
        target = PRESETS[device]
        names_requirement = any(
            word in verdict.reason for word in ("runs on", "needs", "serves", "has no")
        )
        assert names_requirement, verdict.reason
        shown = target.gfx_arch or (target.capability or "").replace(".", "") or target.kind
        assert shown in verdict.reason, verdict.reason


def test_issue_example_message() -> None:
    verdict = _verdict("sparse_indexer_topk_backend", "deep_select", "h100")
    assert verdict.reason == "'deep_select' needs SM100 or SM103; NVIDIA H100 80GB HBM3 is SM90"


def test_unknowns_are_warnings_that_name_them() -> None:
    ctx = constraints.Context(PRESETS["b200"], RELEASE.version, None, expert_parallel=True)
    verdict = constraints.check("moe_backend", "flashinfer_moe_ep_cutedsl", ctx)
    assert verdict.status == "depends"
    assert any("quantisation" in u for u in verdict.unknowns)
    assert any("NVSHMEM" in u for u in verdict.unknowns)
    no_env = constraints.Context(PRESETS["mi355x"], RELEASE.version, "unquantized")
    aiter = constraints.check("moe_backend", "aiter", no_env)
    assert aiter.status == "depends"
    assert "VLLM_ROCM_USE_AITER=1" in aiter.reason


def test_only_what_fails_for_every_scheme_is_an_error() -> None:
    ctx = constraints.Context(PRESETS["h100"], RELEASE.version, None)
    assert constraints.check("moe_backend", "flashinfer_cutlass", ctx).status == "depends"
    assert constraints.check("moe_backend", "flashinfer_trtllm", ctx).status == "cannot-run"
    fp8 = constraints.Context(
        PRESETS["b200"], RELEASE.version, None, possible=schemes_of_quantization("fp8")
    )
    assert constraints.check("moe_backend", "flashinfer_b12x", fp8).status == "cannot-run"
    assert constraints.check("moe_backend", "flashinfer_cutlass", fp8).status == "depends"


def test_sparse_values_have_no_effect_without_a_dsa_model() -> None:
    ctx = constraints.Context(
        PRESETS["h100"], RELEASE.version, None, architectures=("LlamaForCausalLM",)
    )
    assert (
        constraints.check("sparse_indexer_topk_backend", "deep_select", ctx).status == "no-effect"
    )
    rocm = constraints.Context(
        PRESETS["mi355x"], RELEASE.version, None, architectures=("DeepseekV32ForCausalLM",)
    )
    assert constraints.check("sparse_indexer_topk_backend", "aiter", rocm).status == "no-effect"


def test_older_release_rules() -> None:
    old = constraints.Context(PRESETS["h100"], "0.32.0", "unquantized")
    assert constraints.check("moe_backend", "marlin", old).status == "cannot-run"
    new = constraints.Context(PRESETS["h100"], "0.33.0", "unquantized")
    assert constraints.check("moe_backend", "marlin", new).status == "falls-back"


def test_resolve_reports_constraints() -> None:
    refused = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--sparse-indexer-topk-backend",
        "deep_select",
    )
    assert refused.exit_code == 1
    codes = [p["code"] for p in refused.json()["problems"]]
    assert "backend-cannot-run" in codes
    warned = run("resolve", "--device", "mi300x", "--format", "json", "--linear-backend", "cutlass")
    assert warned.exit_code == 0
    assert "chooses automatically" in warned.stderr
    per_quant = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--kernel-config.linear_backend_per_quant.nvfp4=marlin",
    )
    assert "never looked up" in per_quant.stderr


def test_quantization_from_a_local_model(tmp_path: object) -> None:
    from pathlib import Path

    model = Path(str(tmp_path)) / "m"
    model.mkdir()
    (model / "config.json").write_text(
        '{"architectures": ["X"], "num_local_experts": 8, "quantization_config": '
        '{"quant_method": "fp8", "weight_block_size": [128, 128]}}'
    )
    result = run(
        "resolve",
        "--device",
        "b200",
        "--format",
        "json",
        "--moe-backend",
        "hpc",
        "--hf-config-path",
        str(model),
    )
    assert result.exit_code == 1
    assert "'hpc' needs SM90" in result.stderr


def test_backends_and_explain_commands() -> None:
    flags = ["backends", "--device", "b200", "--quantization", "fp8", "--format", "json"]
    pip = run(*flags).json()  # the default install, judged: FlashInfer's kernels absent
    assert (pip["install"], pip["install_source"]) == ("pip", "default")
    assert {
        b["verdict"]
        for b in pip["backends"]
        if (b["field"], b["value"]) == ("moe_backend", "flashinfer_trtllm")
    } == {"cannot-run"}
    data = run(*flags, "--install", "image").json()
    verdicts = {(b["field"], b["value"]): b["verdict"] for b in data["backends"]}
    assert verdicts[("moe_backend", "flashinfer_trtllm")] == "runs"
    assert verdicts[("moe_backend", "aiter")] == "cannot-run"
    kernel = {k: v for k, v in verdicts.items() if k[0] != "attention_backend"}
    assert len(kernel) == sum(len(RELEASE.choices(f)) for f in constraints.FIELDS)
    attention = attention_config.facts(data["vllm_version"])
    assert attention is not None
    assert len(verdicts) - len(kernel) == len(attention.backends)
    explained = run("explain", "moe_backend=flashinfer_moe_ep_cutedsl", "--format", "json").json()
    assert explained["value_releases"] == "since vLLM 0.32.0"
    assert explained["requirements"]["expert_parallel"] == "required"
    assert "flashinfer_moe_ep.py" in explained["source"]
    field = run("explain", "monokernel", "--format", "json").json()
    assert field["releases"] == "since vLLM 0.33.0"
    assert field["hashed"] == {v: True for v in releases.known_versions() if v >= "0.33.0"}
    bad = run("explain", "moe_backend=flashinfer_trtlm")
    assert bad.exit_code == 2
    assert "did you mean 'flashinfer_trtllm'" in bad.stderr


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
@pytest.mark.parametrize("device", ["h100", "b200", "rtx-pro-6000"])
def test_deep_gemm_mega_moe_without_a_quantisation_is_no_error(device: str, version: str) -> None:
    """vLLM's Muse-Spark MegaMoE path (BF16/NVFP4) checks neither the GPU nor expert
    parallelism (0.33.0 and 0.34.0 alike): with the model unknown, vLLM does not certainly
    refuse. It warns nowhere: a model whose code does not implement the value is refused
    at load (no MoE oracle maps the name)."""
    verdict = constraints.check(
        "moe_backend", "deep_gemm_mega_moe", constraints.Context(PRESETS[device], version)
    )
    assert verdict.status != "cannot-run", verdict.reason
    assert "only warns" not in verdict.reason
    listed = constraints.Context(
        PRESETS["h100"], version, "mxfp4", architectures=("DeepseekV4ForCausalLM",)
    )
    assert constraints.check("moe_backend", "deep_gemm_mega_moe", listed).status == "cannot-run"
    other = constraints.Context(
        PRESETS["b200"], version, architectures=("Qwen3MoeForCausalLM",), expert_parallel=True
    )
    refused = constraints.check("moe_backend", "deep_gemm_mega_moe", other)
    assert refused.status == "cannot-run", refused.reason
    rule = releases.data_file("constraints.json")["fields"]["moe_backend"]["values"]
    assert rule["deep_gemm_mega_moe"]["unlisted_refusal"] in refused.reason
