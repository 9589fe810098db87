"""``selection.moe_backend`` end to end: a model's config.json and a ``vllm serve`` line's
parallel flags, through the checkpoint reader and the resolve, against vLLM 0.33.0's and
0.34.0's own picks (golden/vllm-X.Y.Z/auto-picks-moe.json) for the formats a config.json
names, with exit 1 wherever vLLM fails to start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands import pipeline

from .cli_helpers import run

pytestmark = pytest.mark.golden

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ("0.33.0", "0.34.0")
"""The releases with executed MoE picks."""
GOLDEN = {
    version: json.loads(
        (
            Path(__file__).resolve().parent / "golden" / f"vllm-{version}" / "auto-picks-moe.json"
        ).read_text()
    )
    for version in RELEASES
}
SHAPES = GOLDEN["0.33.0"]["meta"]["moe_models"]
"""The golden model shapes (the same in both releases)."""

# Golden installs kernelcfg names (the golden's `full` world has harness conventions of its
# own, see test_moe_golden.py; it is left out here).
INSTALL = {"bare": "minimal", "wheel": "pip", "docker": "image"}
DEVICE = {"xpu": "intel-max-1550"}  # the golden's XPU is this preset


def _qwen3(shape: dict[str, Any]) -> dict[str, Any]:
    return {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "hidden_size": shape["model_dim"],
        "moe_intermediate_size": shape["moe_intermediate"],
        "num_experts": shape["num_experts"],
        "num_experts_per_tok": shape["top_k"],
        "norm_topk_prob": True,
        "torch_dtype": "bfloat16",
    }


def _gpt_oss(shape: dict[str, Any]) -> dict[str, Any]:
    return {
        "architectures": ["GptOssForCausalLM"],
        "model_type": "gpt_oss",
        "hidden_size": shape["model_dim"],
        "intermediate_size": shape["moe_intermediate"],
        "num_local_experts": shape["num_experts"],
        "num_experts_per_tok": shape["top_k"],
        "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "mxfp4"},
    }


def _configs() -> dict[tuple[str, str], dict[str, Any]]:
    """(golden variant, golden model) -> a config.json that is that checkpoint: the
    checkpoint reader's cases of the golden model shapes (Qwen3-235B, DeepSeek-R1), the
    example DeepSeek-R1, and gpt-oss. GPTQ/AWQ are left out: a real ``vllm serve`` falls
    back to MoeWNA16 where Marlin cannot serve the layer, which the golden does not."""
    from .test_moe_checkpoint import CASES as READER_CASES

    out = {
        ("fp8_block/fp8_config", "deepseek_v3"): json.loads(
            (ROOT / "docs" / "examples" / "deepseek-r1" / "config.json").read_text()
        ),
        ("unquantized/bf16", "qwen3_moe"): _qwen3(SHAPES["qwen3_moe"]),
        ("mxfp4/gpt_oss", "gpt_oss"): _gpt_oss(SHAPES["gpt_oss"]),
    }
    shapes = {"qwen3_moe": (4096, 128), "deepseek_v3": (7168, 256)}
    for _, config, flag, _, _, variant in READER_CASES:
        model = config.get("model_type")
        if flag or variant is None or model not in shapes or variant.startswith("int4_w4a16/"):
            continue
        experts = config.get("num_experts") or config.get("n_routed_experts")
        if (config.get("hidden_size"), experts) == shapes[model]:
            out.setdefault((variant, model), config)
    return out


CONFIGS = _configs()


def _layout_flags(layout: str) -> list[str]:
    flags = {"TP1": [], "TP8": ["-tp", "8"], "DP8": ["-dp", "8"]}.get(layout)
    if flags is not None:
        return flags
    if layout == "TP8+EP":
        return ["-tp", "8", "--enable-expert-parallel"]
    backend = layout.split("/", 1)[1]
    return ["-dp", "8", "--enable-expert-parallel", "--all2all-backend", backend]


def _cases(version: str) -> list[tuple[str, str, str, str, str]]:
    cases = []
    for target, by_variant in GOLDEN[version]["moe"]["index"].items():
        for (variant, model), _ in CONFIGS.items():
            for layout, worlds in by_variant.get(variant, {}).get(model, {}).items():
                cases += [(target, variant, model, layout, w) for w in worlds if w in INSTALL]
    return cases


CASES = {version: _cases(version) for version in RELEASES}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], str]:
    out = {}
    for (variant, model), config in CONFIGS.items():
        folder = tmp_path_factory.mktemp(model)
        (folder / "config.json").write_text(json.dumps(config))
        out[(variant, model)] = str(folder)
    return out


@pytest.mark.parametrize("version", RELEASES)
def test_the_grid_is_wide(version: str) -> None:
    assert len(CONFIGS) >= 12
    assert len(CASES[version]) > 2000
    assert {c[0] for c in CASES[version]} >= {"h100", "b200", "mi300x", "cpu", "xpu"}


@pytest.mark.parametrize("version", RELEASES)
def test_resolve_picks_what_vllm_picks(version: str, folders: dict[tuple[str, str], str]) -> None:
    """Status, backend and experts class as vLLM's; exit 1 wherever vLLM raises or finds
    no kernel (its FP8 methods then fail to load the weights), the install being named."""
    picks = GOLDEN[version]["moe"]
    wrong = []
    for target, variant, model, layout, world in CASES[version]:
        want = picks["outcomes"][picks["index"][target][variant][model][layout][world]]
        argv = [
            "--vllm-version",
            version,
            "--device",
            DEVICE.get(target, target),
            "--install",
            INSTALL[world],
            "--hf-config-path",
            folders[(variant, model)],
            *_layout_flags(layout),
        ]
        result = pipeline.resolve_args(argv)
        assert not isinstance(result, pipeline.Failure), (argv, result)
        got = result.selection["moe_backend"]
        backend = (want.get("backend") or "").split(".")[-1] or None
        if (got["status"], got["backend"], got["kernel"]) != (
            want["status"],
            backend if want["status"] == "selected" else got["backend"],
            want.get("experts"),
        ) or (want["status"] != "selected" and result.exit_code() != 1):
            wrong.append((target, variant, model, layout, world, got["status"], got["kernel"]))
    assert wrong == []


def test_why_answers_why_not_deepgemm() -> None:
    config = str(ROOT / "docs" / "examples" / "deepseek-r1")
    flags = ["--vllm-version", "0.33", "--device", "h100", "--hf-config-path", config]
    out = run("why", "moe", *flags, "-tp", "8")
    assert out.exit_code == 0, out.stderr
    assert ": TRITON (TritonExperts)" in out.stdout.splitlines()[0]
    assert "vLLM moves TRITON: on Hopper, block FP8 prefers Triton without expert" in out.stdout
    assert "  DEEPGEMM (TritonOrDeepGemmExperts): yes" in out.stdout
    assert "To ask for it by name: --moe-backend triton" in out.stdout
    with_ep = run("why", "moe", *flags, "-tp", "8", "--enable-expert-parallel", "--format", "json")
    data = with_ep.json()
    assert data["moved"][-1]["backend"] == "FLASHINFER_CUTLASS"
    assert data["candidates"][0]["verdict"] == "refused"  # no FlashInfer kernels with pip


def test_no_kernel_is_an_error_with_the_installs_that_work(tmp_path: Path) -> None:
    """gpt-oss MXFP4 on an RX 7900 XTX: vLLM raises with nothing optional installed."""
    (tmp_path / "config.json").write_text(json.dumps(_gpt_oss(SHAPES["gpt_oss"])))
    flags = ["--vllm-version", "0.33", "--device", "rx-7900-xtx", "--hf-config-path", str(tmp_path)]
    statuses = {}
    for install in ("minimal", "pip", "image", "all"):
        result = pipeline.resolve_args([*flags, "--install", install])
        assert not isinstance(result, pipeline.Failure)
        statuses[install] = result.selection["moe_backend"]["status"]
        problems = [p for p in result.problems if p.code == "moe-no-kernel"]
        assert bool(problems) == (statuses[install] == "error")
    assert "selected" in statuses.values() or "error" in statuses.values()


@pytest.mark.parametrize("version", ["0.29", "0.30", "0.31", "0.32", "0.33", "0.34"])
def test_no_fp8_moe_kernel_on_cpu_fails_to_load(tmp_path: Path, version: str) -> None:
    """Per-tensor FP8 experts on a CPU: vLLM's FP8 oracle returns NONE off CUDA and ROCm
    (0.34.0 oracle/fp8.py:509-514) instead of raising, and the FP8 method then asserts an
    experts class while loading the weights (quantization/fp8.py:703): an error under
    every install, exit 1, though the selection's status stays vLLM's ``no_kernel``."""
    config = CONFIGS[("fp8_tensor/fp8_config.static", "qwen3_moe")]
    (tmp_path / "config.json").write_text(json.dumps(config))
    flags = ["--vllm-version", version, "--device", "cpu", "--hf-config-path", str(tmp_path)]
    result = pipeline.resolve_args(flags)
    assert not isinstance(result, pipeline.Failure)
    assert result.selection["moe_backend"]["status"] == "no_kernel"
    problem = next(p for p in result.problems if p.code == "moe-no-kernel")
    assert problem.severity == "error"
    assert problem.message.startswith("MoE layers on cpu: under every install vLLM raises")
    assert problem.message.endswith("(AssertionError: assert self.experts_cls is not None)")
    assert result.exit_code() == 1


def test_why_says_a_cpu_fp8_moe_layer_fails_to_load(tmp_path: Path) -> None:
    config = CONFIGS[("fp8_tensor/fp8_config.static", "qwen3_moe")]
    (tmp_path / "config.json").write_text(json.dumps(config))
    flags = ["--vllm-version", "0.34", "--device", "cpu", "--hf-config-path", str(tmp_path)]
    out = run("why", "moe", *flags)
    assert out.exit_code == 1, out.stderr
    assert out.stdout.splitlines()[-1] == "error: vLLM raises under every install"


def test_a_dense_model_has_no_moe_selection(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})
    )
    result = pipeline.resolve_args(["--device", "h100", "--hf-config-path", str(tmp_path)])
    assert not isinstance(result, pipeline.Failure)
    assert "moe_backend" not in result.selection


def test_an_explicit_backend_has_no_auto_walk() -> None:
    config = str(ROOT / "docs" / "examples" / "deepseek-r1")
    result = pipeline.resolve_args(
        ["--device", "h100", "--hf-config-path", config, "--moe-backend", "triton"]
    )
    assert not isinstance(result, pipeline.Failure)
    assert "moe_backend" not in result.selection


def test_a_changed_config_json_is_read_again(tmp_path: Path) -> None:
    """The process keeps a parsed config.json only while the file is unchanged."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_qwen3(SHAPES["qwen3_moe"])))
    argv = ["--vllm-version", "0.33", "--device", "h100", "--hf-config-path", str(tmp_path)]
    first = pipeline.resolve_args(argv)
    path.write_text(json.dumps(_gpt_oss(SHAPES["gpt_oss"])))
    second = pipeline.resolve_args(argv)
    assert not isinstance(first, pipeline.Failure)
    assert not isinstance(second, pipeline.Failure)
    assert first.inputs is not None
    assert second.inputs is not None
    assert first.inputs.architectures == ["Qwen3MoeForCausalLM"]
    assert second.inputs.architectures == ["GptOssForCausalLM"]
    assert second.selection["moe_backend"]["variant"] == "mxfp4/gpt_oss"


@pytest.mark.parametrize(
    ("flags", "install", "warned"),
    [
        (["-dp", "8", "--all2all-backend", "deepep_low_latency"], "pip", True),
        (["-dp", "8", "--all2all-backend", "deepep_low_latency"], "image", False),
        (["-dp", "8", "--enable-expert-parallel", "--all2all-backend", "deepep_v2"], "pip", True),
        (["-tp", "8", "--all2all-backend", "deepep_low_latency"], "pip", False),  # no DP
        (["-dp", "8", "--all2all-backend", "allgather_reducescatter"], "pip", False),
    ],
)
def test_an_all2all_backend_needs_its_library(flags: list[str], install: str, warned: bool) -> None:
    """With data parallel, an MoE model's expert-parallel group builds the all2all
    manager, which asserts its library at start-up (all2all.py: has_deep_ep)."""
    config = str(ROOT / "docs" / "examples" / "deepseek-r1")
    argv = ["--device", "h100", "--hf-config-path", config, "--install", install, *flags]
    result = pipeline.resolve_args(argv)
    assert not isinstance(result, pipeline.Failure)
    found = [p for p in result.problems if p.code == "all2all-library-missing"]
    assert bool(found) == warned
    if warned:  # vLLM stops at start-up: an error under the install judged
        assert found[0].severity == "error"
        assert "with --install image or all it is" in found[0].message


def test_a_dense_model_needs_no_all2all_library(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})
    )
    argv = ["--device", "h100", "--hf-config-path", str(tmp_path), "-dp", "8"]
    result = pipeline.resolve_args([*argv, "--all2all-backend", "deepep_low_latency"])
    assert not isinstance(result, pipeline.Failure)
    assert not [p for p in result.problems if p.code == "all2all-library-missing"]
