"""A model's ``config.json`` and the Hugging Face cache read as hostile input: every fact
kernelcfg reads has its JSON type or is one warning and absent (``flags.model_facts``),
what is kept is bounded, a broken cache entry says what is broken, and only the readers'
errors are "unusable input" (exit 2) — kernelcfg's own are bugs (exit 70).

In-process; the subprocess side is in test_robustness.py.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kernelcfg.base.answers import Answers
from kernelcfg.cli import app
from kernelcfg.commands import pipeline
from kernelcfg.engine.resolution import Resolution
from kernelcfg.flags import argv, hf_paths, model_facts

from .examples import examples


def _typed(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    kept, problems = model_facts.typed(data, "'/m/config.json'")
    assert {p.code for p in problems} <= {"model-config-value"}
    return kept, [p.message for p in problems]


@pytest.mark.parametrize(
    ("data", "key", "shown"),
    [
        ({"model_type": {}}, "model_type", "{}, not a string"),
        ({"architectures": 1.5}, "architectures", "1.5, not a list of names"),
        ({"architectures": [1, None]}, "architectures", "[1, null], not a list of names"),
        ({"num_experts": "8"}, "num_experts", '"8", not a whole number'),
        ({"num_attention_heads": True}, "num_attention_heads", "true, not a whole number"),
        ({"quantization_config": []}, "quantization_config", "[], not a mapping"),
        (
            {"quantization_config": {"quant_method": "awq", "bits": None}},
            "quantization_config.bits",
            "null, not a whole number",
        ),
        (
            {"quantization_config": {"quant_method": "awq", "bits": "four"}},
            "quantization_config.bits",
            '"four", not a whole number',
        ),
        (
            {"text_config": {"hidden_size": {"a": "b"}}},
            "text_config.hidden_size",
            '{"a": "b"}, not a whole number',
        ),
        (
            {"quantization_config": {"config_groups": {"g": {"weights": {"num_bits": "4"}}}}},
            "quantization_config.config_groups.g.weights.num_bits",
            '"4", not a whole number',
        ),
        (
            {"quantization_config": {"global_quant_config": {"weight": [{"dtype": 8}]}}},
            "quantization_config.global_quant_config.weight[0].dtype",
            "8, not a string",
        ),
    ],
)
def test_a_fact_of_the_wrong_type_is_one_warning_and_absent(
    data: dict[str, Any], key: str, shown: str
) -> None:
    kept, warnings = _typed(data)
    assert warnings == [f"'/m/config.json': \"{key}\" is {shown}; kernelcfg ignores it"]
    inner: Any = kept
    for part in key.replace("[0]", ".0").split(".")[:-1]:
        inner = inner[int(part)] if part.isdigit() else inner[part]
    assert key.rsplit(".", maxsplit=1)[-1] not in inner


def test_facts_of_their_type_and_unknown_keys_are_kept() -> None:
    data = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "head_dim": None,  # Hugging Face's None
        "kv_lora_rank": None,
        "swiglu_limit": 7,
        "vocab_size": "anything",  # not read by kernelcfg
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "config_groups": {
                "group_0": {
                    "targets": ["Linear"],
                    "weights": {"num_bits": 4, "dynamic": "local", "group_size": None},
                    "input_activations": None,  # weight-only
                }
            },
        },
    }
    assert _typed(data) == (data, [])


def test_architectures_and_names_are_bounded() -> None:
    kept, warnings = _typed(
        {"architectures": [f"A{i}" for i in range(100_000)], "model_type": "x" * 10_000}
    )
    assert kept["architectures"] == [f"A{i}" for i in range(model_facts.MAX_ARCHITECTURES)]
    assert len(kept["model_type"]) == model_facts.MAX_NAME
    assert warnings == [
        "'/m/config.json': \"architectures\" holds 100,000 names; kernelcfg keeps the first 16",
        "'/m/config.json': \"model_type\" is a name of 10,000 characters; kernelcfg keeps the "
        "first 200",
    ]


def test_warnings_are_bounded() -> None:
    groups = {f"g{i}": {"format": i} for i in range(1000)}
    _, warnings = _typed({"quantization_config": {"config_groups": groups}})
    assert len(warnings) == model_facts.MAX_WARNINGS + 1
    assert warnings[-1].endswith(
        "984 more values of the wrong type or size; kernelcfg ignored them too"
    )


# ------------------------------------------------------------- every mode, one line

BAD = {
    "architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "num_attention_heads": True,
    "quantization_config": {"quant_method": "awq", "bits": None, "group_size": 128},
}
WARNINGS = [
    '"num_attention_heads" is true, not a whole number; kernelcfg ignores it',
    '"quantization_config.bits" is null, not a whole number; kernelcfg ignores it',
]


def _invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), input=stdin, env={"KERNELCFG_DEVICE": "h100"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError("kernelcfg raised") from result.exception
    return result.exit_code, result.stdout, result.stderr


def _said(text: str, model: Path) -> list[str]:
    """The model-config-value warnings in ``text``, without the file's name."""
    where = f"'{model / 'config.json'}': "
    return [line.split(where, 1)[1].rstrip('",') for line in text.splitlines() if where in line]


def test_every_mode_gives_the_same_warnings(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(BAD))
    serve = ["--", "vllm", "serve", str(tmp_path)]
    code, _, err = _invoke("resolve", *serve)
    assert (code, _said(err, tmp_path)) == (0, WARNINGS)
    code, out, _ = _invoke("resolve", "--batch", "-", stdin=json.dumps(serve[1:]) + "\n")
    line = json.loads(out)
    assert line["exit_code"] == 0
    assert [p["message"].split(": ", 1)[1] for p in line["problems"][:2]] == WARNINGS
    code, _, err = _invoke("why", "moe", *serve)
    assert (code, _said(err, tmp_path)) == (0, WARNINGS)
    (tmp_path / "serve.sh").write_text(f"vllm serve {tmp_path}\n")
    code, out, _ = _invoke("scan", str(tmp_path / "serve.sh"))
    assert (code, _said(out, tmp_path)) == (0, WARNINGS)


# ------------------------------------------------------------ the property test

MODELS: list[dict[str, Any]] = [
    {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v32",
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "index_topk": 2048,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "n_group": 8,
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "norm_topk_prob": True,
        "torch_dtype": "bfloat16",
    },
    {
        "architectures": ["Llama4ForConditionalGeneration"],
        "model_type": "llama4",
        "text_config": {
            "model_type": "llama4_text",
            "hidden_size": 5120,
            "num_attention_heads": 40,
            "head_dim": 128,
            "intermediate_size": 8192,
            "num_local_experts": 16,
            "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 1,
            "torch_dtype": "bfloat16",
        },
    },
    {
        "architectures": ["GptOssForCausalLM"],
        "model_type": "gpt_oss",
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_local_experts": 128,
        "num_experts_per_tok": 4,
        "swiglu_limit": 7.0,
    },
]
_ARGS = {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "dynamic": True}
QUANTS: list[dict[str, Any]] = [
    {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False},
    {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    {"quant_method": "auto-round", "data_type": "int", "bits": 4, "packing_format": "gptq"},
    {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4"}},
    {
        "quant_method": "modelopt_mixed",
        "quantized_layers": {"model.layers.1.mlp.experts": {"quant_algo": "FP8"}},
    },
    {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "group_0": {"targets": ["Linear"], "weights": _ARGS, "input_activations": _ARGS}
        },
    },
    {
        "quant_method": "quark",
        "global_quant_config": {"weight": {"dtype": "fp4", "qscheme": "per_group"}},
        "layer_quant_config": {
            "*experts*": {"weight": [{"dtype": "fp8_e4m3"}], "input_tensors": None}
        },
    },
]
JSON_VALUES: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 4, 1.5, "", "8", "x" * 300, [], {}]),
    st.lists(st.sampled_from([1, None, "a", {}]), max_size=3),
    st.dictionaries(st.sampled_from(["a", "quant_algo", "dtype"]), st.integers(), max_size=2),
)
"""Values of every JSON type (and a name too long), for any key."""


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path inside a config (list items included)."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    found = []
    for key, inner in items:
        found.append((*prefix, key))
        if isinstance(inner, dict | list):
            found += _paths(inner, (*prefix, key))
    return found


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A real-looking config.json with a few of its facts given values of any type."""
    config: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(MODELS)))
    config["quantization_config"] = copy.deepcopy(draw(st.sampled_from(QUANTS)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(config)))
        inner = config
        for key in path[:-1]:
            inner = inner[key]
        inner[path[-1]] = draw(JSON_VALUES)
    return config


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated(), st.sampled_from(["h100", "b200", "mi300x", "cpu"]))
def test_any_value_of_any_fact_is_never_a_crash(config: dict[str, Any], device: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(config))
        code, out, err = _invoke(
            "resolve",
            "--device",
            device,
            "--format",
            "json",
            "--",
            "vllm",
            "serve",
            tmp,
            "-tp",
            "2",
        )
    assert code in (0, 1), (code, err[-2000:])
    assert "Traceback" not in err
    for problem in json.loads(out)["problems"]:
        assert problem["code"] != "unusable-input"
        if problem["code"] == "model-config-value":
            assert problem["message"].startswith(f"'{tmp}/config.json': ")


# ------------------------------------------------------------ the cache

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}


def _cache(hub: Path, config: str | None = json.dumps(LLAMA)) -> Path:
    """A model's cache folder laid out as huggingface_hub lays it out (the snapshot's
    file a link into ../../blobs)."""
    folder = hub / "models--org--m"
    (folder / "blobs").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "snapshots" / "abc123").mkdir(parents=True)
    (folder / "refs" / "main").write_text("abc123")
    if config is not None:
        (folder / "blobs" / "f00").write_text(config)
        (folder / "snapshots" / "abc123" / "config.json").symlink_to("../../blobs/f00")
    return folder


def _read_cached(hub: Path, monkeypatch: pytest.MonkeyPatch) -> Resolution:
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    result = pipeline.resolve_args(["--device", "h100", "--", "vllm", "serve", "org/m"])
    assert isinstance(result, Resolution)
    return result


def test_a_real_cache_entry_is_read_through_its_blob_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cache(tmp_path)
    result = _read_cached(tmp_path, monkeypatch)
    assert result.inputs is not None
    assert result.inputs.architectures == ["LlamaForCausalLM"]
    assert result.inputs.model_source == "Hugging Face cache"


def _break(folder: Path, how: str) -> None:
    config = folder / "snapshots" / "abc123" / "config.json"
    if how == "dev-zero":
        config.unlink()
        config.symlink_to("/dev/zero")
    elif how == "outside":
        (folder.parent / "elsewhere.json").write_text(json.dumps(LLAMA))
        config.unlink()
        config.symlink_to("../../../elsewhere.json")
    elif how == "folder":
        config.unlink()
        config.mkdir()
    elif how == "snapshots-file":
        for path in (config, config.parent, folder / "refs" / "main", folder / "refs"):
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
        (folder / "snapshots").rmdir()
        (folder / "snapshots").write_text("")
    else:
        (folder / "refs" / "main").write_bytes(
            {"nul": b"\0abc", "huge": b"a" * 3_000_000, "dots": b"..", "up": b"../../x"}[how]
        )


@pytest.mark.parametrize(
    ("how", "said"),
    [
        (
            "dev-zero",
            "snapshots/abc123/config.json leads to '/dev/zero', outside the model's folder",
        ),
        ("outside", "snapshots/abc123/config.json leads to '"),
        ("folder", "snapshots/abc123/config.json: it is a directory"),
        ("snapshots-file", "snapshots: Not a directory"),
        ("nul", r"refs/main holds '\x00abc', not a revision"),
        ("huge", "refs/main is 3,000,000 bytes long, not a revision"),
        ("dots", "refs/main holds '..', not a revision"),
        ("up", "refs/main holds '../../x', not a revision"),
    ],
)
def test_a_broken_cache_entry_says_what_is_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, said: str
) -> None:
    folder = _cache(tmp_path)
    (folder / "config.json").write_text(json.dumps(LLAMA))  # what `..` would have read
    _break(folder, how)
    result = _read_cached(tmp_path, monkeypatch)
    assert result.inputs is not None
    assert result.inputs.architectures is None
    notes = [p for p in result.problems if p.field == "model"]
    assert [p.code for p in notes] == ["model-cache-broken"]
    assert f"'org/m' is in the Hugging Face cache ('{folder}') but broken: {said}" in (
        notes[0].message
    )


def test_no_home_folder_is_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """``HOME`` unset for a user without a passwd entry: expanduser keeps the ``~``."""
    import pwd

    def no_entry(uid: int) -> Any:
        raise KeyError(uid)

    for name in ("HOME", "HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.setattr(hf_paths, "_HUB_CACHES", Answers(8))
    result = pipeline.resolve_args(["--device", "h100", "--", "vllm", "serve", "org/m"])
    assert isinstance(result, Resolution)
    notes = [p for p in result.problems if p.code == "hub-cache-unknown"]
    assert len(notes) == 1
    assert notes[0].message.startswith(
        "HOME '~/.cache' starts with '~' (HOME is unset and this user has no home folder)"
    )


# ------------------------------------------------ whose ValueError is "unusable input"


def test_a_value_error_of_kernelcfg_itself_is_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def planted(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("planted")

    monkeypatch.setattr(pipeline, "resolve", planted)
    failed = pipeline.resolve_words(["--device", "h100"], pipeline.Request())
    assert isinstance(failed, pipeline.Failure)
    assert (failed.problem.code, failed.problem.exit_code) == ("internal-error", 70)
    monkeypatch.undo()
    monkeypatch.setattr(argv, "parse", planted)
    with pytest.raises(ValueError, match="planted"):
        pipeline.resolve_args(["--device", "h100"])


def test_a_reader_error_is_still_unusable_input() -> None:
    result = pipeline.resolve_words(["--config", "/nonexistent/c.yaml"], pipeline.Request())
    assert isinstance(result, pipeline.Failure)
    assert result.problem.exit_code == 2
