"""Attention through the command line: the flags as vLLM reads them, the pick, the hash,
the problems and the formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .cli_helpers import run
from .conftest import golden

pytestmark = pytest.mark.cli

V33 = ("--vllm-version", "0.33")
GPT_OSS: dict[str, Any] = next(
    f["hf_config"]
    for f in golden("0.33.0", "attention-picks")["meta"]["features"]
    if f["id"] == "mha.h64.bf16.kv-auto.sinks"
)


@pytest.fixture
def gpt_oss(tmp_path: Path) -> str:
    (tmp_path / "config.json").write_text(json.dumps(GPT_OSS))
    return str(tmp_path)


def resolve(*args: str) -> tuple[int, dict[str, Any]]:
    out = run("resolve", *V33, "--format", "json", *args)
    return out.exit_code, out.json()


def messages(data: dict[str, Any]) -> str:
    return " | ".join(p["message"] for p in data["problems"])


def test_backend_names_are_case_insensitive_and_hash_alike() -> None:
    _, upper = resolve("--attention-backend", "FLASH_ATTN", "--device", "h100")
    _, lower = resolve("--attention-backend", "flash_attn", "--device", "h100")
    assert upper["attention_config"]["backend"] == "FLASH_ATTN"
    assert upper["attention_hash"] == lower["attention_hash"]
    _, auto = resolve("--attention-backend", "auto", "--device", "h100")
    _, plain = resolve("--device", "h100")
    assert auto["attention_hash"] == plain["attention_hash"] != upper["attention_hash"]


def test_unknown_backend_is_refused_at_engine_build_with_a_suggestion() -> None:
    code, data = resolve("--attention-backend", "flash_atn", "--device", "h100")
    assert code == 1
    assert "Unknown attention backend: 'FLASH_ATN'" in messages(data)
    assert "did you mean 'FLASH_ATTN'?" in messages(data)


def test_attention_config_is_validated_while_reading() -> None:
    code, data = resolve("-ac.flash_attn_version=5", "--device", "h100")
    assert code == 2
    assert "flash_attn_version" in messages(data)
    code, data = resolve("--attention-config.backend=nope", "--device", "h100")
    assert code == 2
    assert "Unknown attention backend" in messages(data)


def test_both_spellings_of_the_backend_are_refused_together() -> None:
    code, data = resolve("-ac.backend=FLASHINFER", "--attention-backend", "FLASH_ATTN")
    assert code == 1
    assert "mutually exclusive" in messages(data)


def test_msa_alias_through_attention_config_only_picks_the_decode_kernel() -> None:
    _, via_config = resolve("-ac.backend=CUTLASS_MSA", "--device", "b200")
    assert via_config["attention_config"]["backend"] is None
    assert via_config["attention_config"]["minimax_m3_msa_decode_backend"] == "cutlass"
    _, via_flag = resolve("--attention-backend", "CUTLASS_MSA", "--device", "b200")
    assert via_flag["attention_config"]["backend"] == "CUTLASS_MSA"


def test_unknown_kv_cache_dtype_is_refused() -> None:
    code, data = resolve("--kv-cache-dtype", "fp9", "--device", "h100")
    assert code == 1
    assert "did you mean 'fp8'?" in messages(data)


def test_gpt_oss_on_rtx_pro_6000_gets_triton_with_pip_and_flashinfer_in_the_image(
    gpt_oss: str,
) -> None:
    code, data = resolve("--hf-config-path", gpt_oss, "--device", "rtx-pro-6000")
    picked = data["selection"]["attention"]
    assert code == 0
    assert (picked["backend"], picked["kernel"]) == ("TRITON_ATTN", "TritonAttentionBackend")
    assert [c["verdict"] for c in picked["candidates"]] == ["refused", "refused", "ok"]
    assert picked["candidates"][1]["reason"] == "attention sinks not supported"
    assert picked["by_install"]["image"] == "FLASHINFER"
    _, image = resolve(
        "--hf-config-path", gpt_oss, "--device", "rtx-pro-6000", "--install", "image"
    )
    assert image["selection"]["attention"]["backend"] == "FLASHINFER"


def test_flashinfer_forced_with_sinks_says_that_it_needs_the_image(gpt_oss: str) -> None:
    """Under pip, the default install, judged as if named: an error naming the image."""
    args = ("--hf-config-path", gpt_oss, "--device", "rtx-pro-6000", "--attention-backend")
    code, data = resolve(*args, "FLASHINFER")
    assert code == 1
    assert data["selection"]["attention"]["status"] == "error"
    assert "--install image or all" in messages(data)
    assert run("resolve", *V33, *args, "FLASHINFER", "--strict").exit_code == 1


def test_mla_backend_on_the_wrong_architecture_is_an_error_naming_the_need() -> None:
    code, data = resolve(
        "--architecture",
        "DeepseekV3ForCausalLM",
        "--device",
        "h100",
        "--attention-backend",
        "FLASHINFER_MLA",
    )
    assert code == 1
    assert "FLASHINFER_MLA needs SM10x" in messages(data)
    assert "(SM90)" in messages(data)


def test_without_the_model_the_pick_depends_and_nothing_fails() -> None:
    code, data = resolve("--architecture", "Qwen3ForCausalLM", "--device", "l40s")
    assert code == 0
    assert data["selection"]["attention"]["status"] == "depends"
    assert "head size" in data["selection"]["attention"]["message"]


def test_cpu_ignores_an_explicit_backend() -> None:
    code, data = resolve(
        "--architecture", "Qwen3ForCausalLM", "--device", "cpu", "--attention-backend", "FLASHINFER"
    )
    assert code == 0
    assert data["selection"]["attention"]["backend"] == "CPU_ATTN"
    assert "is ignored on" in messages(data)


def test_nothing_asked_means_no_selection() -> None:
    _, data = resolve("--device", "h100")
    assert data["selection"] is None
    assert len(data["attention_hash"]) == 64


def test_034_knows_its_new_backends() -> None:
    base = ("resolve", "--vllm-version", "0.34", "--attention-backend", "FLASHINFER_TS")
    data = run(*base, "--device", "b200", "--format", "json").json()
    assert data["attention_config"]["backend"] == "FLASHINFER_TS"
    assert data["selection"]["attention"]["status"] == "depends"
    assert data["selection"]["attention"]["kernel"] == "FlashInferTSBackend"
    hopper = run(*base, "--device", "h100")
    assert hopper.exit_code == 1
    assert "FLASHINFER_TS needs SM100 or SM103 or SM107" in hopper.stderr
    older = run("resolve", *V33, "--attention-backend", "FLASHINFER_TS", "--device", "b200")
    assert older.exit_code == 1


def test_retired_attention_variable_is_explained_with_its_flag() -> None:
    out = run(
        "resolve",
        *V33,
        "--device",
        "h100",
        "--format",
        "json",
        env={"VLLM_ATTENTION_BACKEND": "FLASHINFER"},
    )
    problem = next(p for p in out.json()["problems"] if p["field"] == "VLLM_ATTENTION_BACKEND")
    assert problem["severity"] == "warning"
    assert "use --attention-backend FLASHINFER instead" in problem["message"]


def test_table_env_and_args_carry_attention(gpt_oss: str) -> None:
    base = ("resolve", *V33, "--hf-config-path", gpt_oss, "--device", "rtx-pro-6000")
    table = run(*base, "--explain-sources").stdout
    assert "attention TRITON_ATTN" in table
    assert "2. FLASHINFER refused: attention sinks not supported" in table
    assert "attention hash" in table
    env = run(*base, "--format", "env").stdout
    assert "KERNELCFG_ATTENTION_BACKEND=TRITON_ATTN" in env
    args = run(*base, "-ac.flash_attn_version=2", "--format", "args").stdout
    assert "--attention-config" in args
    assert "flash_attn_version" in args


def test_batch_lines_match_the_single_resolution(gpt_oss: str) -> None:
    line = json.dumps(["--hf-config-path", gpt_oss, "--device", "rtx-pro-6000"])
    batch = run("resolve", *V33, "--batch", "-", stdin=line + "\n").stdout
    single = run(
        "resolve", *V33, "--hf-config-path", gpt_oss, "--device", "rtx-pro-6000", "--format", "json"
    ).json()
    got = json.loads(batch.splitlines()[0])
    for key in ("attention_config", "attention_hash", "selection"):
        assert got[key] == single[key]


def test_explain_attention_backend_value() -> None:
    out = run("explain", "attention_backend=flashinfer_mla", "--format", "json")
    data = out.json()
    assert out.exit_code == 0
    assert data["value"] == "FLASHINFER_MLA"
    assert data["requirements"]["capability"] == "SM10x"
    assert data["example"].startswith("kernelcfg resolve --device b200")
    assert run("explain", "attention_backend=flashinfer_ml").exit_code == 2


def test_backends_judges_every_attention_backend() -> None:
    out = run(
        "backends",
        *V33,
        "--device",
        "h100",
        "--architecture",
        "DeepseekV3ForCausalLM",
        "--format",
        "json",
    )
    verdicts = {
        v["value"]: v["verdict"]
        for v in out.json()["backends"]
        if v["field"] == "attention_backend"
    }
    assert verdicts["FLASHINFER_MLA"] == "cannot-run"
    assert verdicts["ROCM_ATTN"] == "cannot-run"
    assert verdicts["FLASH_ATTN_MLA"] in ("runs", "depends")


def test_diff_names_attention_differences() -> None:
    out = run(
        "diff",
        *V33,
        "--device",
        "h100",
        "--a",
        "--attention-backend FLASH_ATTN",
        "--b",
        "-ac.flash_attn_version=3",
        "--format",
        "json",
    )
    data = out.json()
    assert out.exit_code == 1
    assert data["same_hash"] is True
    assert data["same_attention_hash"] is False
    assert [d["field"] for d in data["attention_differences"]] == ["backend", "flash_attn_version"]
    same = run("diff", *V33, "--device", "h100", "--a", "--attention-backend auto", "--b", "-O2")
    assert same.exit_code == 0


def test_table_gives_the_indexer_topk_pick_per_rows(tmp_path: Path) -> None:
    spec = next(
        f
        for f in golden("0.33.0", "attention-picks")["meta"]["features"]
        if f["id"] == "mla.h576.bf16.kv-fp8.dsa.nh16"
    )
    (tmp_path / "config.json").write_text(json.dumps(spec["hf_config"]))
    table = run("resolve", *V33, "--hf-config-path", str(tmp_path), "--device", "h100").stdout
    said = " ".join(table.split())  # the console wraps at its width
    assert "cooperative (1-64 rows), persistent (65+ rows); index_topk 2048" in said


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('{"backend": 5}', "backend: Input should be a valid string"),
        ('{"hisparse_config": {"device_buffer_size": 0}}', "device_buffer_size"),
        ('{"backend_per_kind": {"nope": "FLASH_ATTN"}}', "Unknown KV cache group kind"),
        ('{"mla_prefill_backend": "nope"}', "Unknown MLA prefill backend"),
        ('{"minimax_m3_indexer_cp": true, "indexer_kv_dtype": "mxfp4"}', "requires a bf16"),
        ('{"tokenspeed_mla_min_split_kv": 1e400}', "finite number"),
    ],
)
def test_bad_attention_config_values_are_one_line_exit_2(value: str, says: str) -> None:
    out = run("resolve", *V33, "--device", "h100", "-ac", value)
    assert out.exit_code == 2
    assert says in out.stderr
    assert out.stderr.startswith("error: argument --attention-config")


def test_why_attention_in_words(gpt_oss: str) -> None:
    out = run("why", "attention", *V33, "--device", "rtx-pro-6000", "--hf-config-path", gpt_oss)
    assert out.exit_code == 0
    assert "2. FLASHINFER — passed over: attention sinks not supported" in out.stdout
    assert "3. TRITON_ATTN — taken" in out.stdout
    assert "image → FLASHINFER" in out.stdout
    data = run(
        "why",
        "attention",
        *V33,
        "--device",
        "rtx-pro-6000",
        "--hf-config-path",
        gpt_oss,
        "--format",
        "json",
    ).json()
    assert (data["field"], data["backend"]) == ("attention", "TRITON_ATTN")


def test_why_without_anything_to_walk_teaches() -> None:
    out = run("why", "linear_backend", "--device", "h100")
    assert out.exit_code == 2
    assert "--quant-scheme" in out.stderr
    assert run("why", "moe", "--device", "h100").exit_code == 2


def test_why_exits_1_when_vllm_finds_nothing() -> None:
    out = run("why", "linear", *V33, "--device", "mi300x", "--quant-scheme", "nvfp4_w4a16")
    assert out.exit_code == 1
