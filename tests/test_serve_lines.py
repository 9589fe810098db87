"""The ``vllm serve`` surface, per release: kernelcfg's parser decides as argparse over
vLLM's own parser does, and real published command lines resolve.

The reference here is a plain argparse parser built from the same release data with
the standard library's own actions (what vLLM's parser is), so every kernelcfg
refinement — raw kernel options, origins, messages — is checked against it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, NoReturn

import pytest

from kernelcfg.base.errors import ArgumentError
from kernelcfg.commands.pipeline import Failure, Request, resolve_args
from kernelcfg.flags import argv
from kernelcfg.flags.serve_line import read as serve_line
from kernelcfg.flags.serve_line.parser import options, read_plain
from kernelcfg.flags.serve_line.value_types import type_of
from kernelcfg.vllm import releases

from .cli_helpers import run

pytestmark = pytest.mark.cli


class _StopError(Exception):
    pass


class _Reference(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _StopError(message)


class _Bool(argparse.Action):
    def __init__(self, option_strings: Any, dest: str, **kw: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        del parser, values, option_string
        setattr(namespace, self.dest, True)


def reference(version: str) -> _Reference:
    """Stock argparse over the release's options: types and choices as vLLM's."""
    data = options(releases.load(version)).data
    parser = _Reference(add_help=False, allow_abbrev=True)
    for raw in data["options"]:
        kind = raw["action"]
        if kind in ("store_true", "store_false", "store_const", "boolean", "count", "help"):
            parser.add_argument(*raw["strings"], dest=raw["dest"], action=_Bool)
        else:
            kind_of = type_of(raw.get("type")) or str
            parser.add_argument(
                *raw["strings"],
                dest=raw["dest"],
                nargs=raw.get("nargs"),
                type=kind_of,
                choices=raw.get("choices"),
                action="append" if kind == "append" else "store",
            )
    parser.add_argument("model_tag", nargs="?")
    return parser


def accepted(parser: argparse.ArgumentParser, words: list[str]) -> bool:
    try:
        parser.parse_args(words)
    except _StopError:
        return False
    return True


def kernelcfg_accepts(version: str, words: list[str]) -> bool:
    """kernelcfg's whole reading of the words (its own checks of kernel options too)."""
    try:
        argv.parse(words, releases.load(version))
    except ArgumentError:
        return False
    return True


VERSIONS = releases.known_versions()


def _surface(version: str) -> list[list[str]]:
    """Every boolean with and without --no-, a wrong choice for each choice option,
    a missing value for each valued option, a prefix of each long option."""
    data = options(releases.load(version)).data
    own = ("help", "lora")  # vLLM's custom actions: kernelcfg's emulation is tested apart
    strings = sorted(
        s
        for o in data["options"]
        if o["action"] not in own
        for s in o["strings"]
        if s.startswith("--")
    )
    lines: list[list[str]] = []
    for raw in data["options"]:
        if raw["action"] in own:
            continue
        for s in raw["strings"]:
            if raw["action"] == "boolean":
                lines += [[s], [f"{s}=1"]]
            elif raw["action"] not in ("store_true", "store_false", "count", "store_const"):
                lines.append([s])  # a missing value
                lines.append(["m", s, "--port"])  # a missing value mid-line
        if raw.get("choices"):
            lines.append([raw["strings"][0], "not-a-choice"])
    for s in strings:
        for cut in (len(s) - 1, max(3, len(s) // 2)):
            lines.append([s[:cut], "1"])
    return lines


@pytest.mark.parametrize("version", VERSIONS)
def test_same_decisions_as_argparse(version: str) -> None:
    parser = reference(version)
    lines = _surface(version)
    assert len(lines) > 500
    differ = [w for w in lines if accepted(parser, w) != kernelcfg_accepts(version, w)]
    assert differ == []


def test_negative_forms_set_false() -> None:
    release = releases.load("0.33")
    assert serve_line.parse(release, ["--no-enforce-eager"])["enforce_eager"] is False
    assert (
        serve_line.parse(release, ["--disable-expert-parallel"])["enable_expert_parallel"] is False
    )
    assert serve_line.parse(release, ["--no-enable-lora"])["enable_lora"] is False
    old = releases.load("0.32")
    with pytest.raises(ArgumentError):
        serve_line.parse(old, ["--disable-expert-parallel"])


PUBLISHED = json.loads((Path(__file__).parent / "data" / "published-serve-lines.json").read_text())


@pytest.mark.parametrize("line", PUBLISHED["lines"], ids=[x["id"] for x in PUBLISHED["lines"]])
def test_published_lines_resolve(line: dict[str, Any]) -> None:
    env = [f"--env={k}={v}" for k, v in line.get("env", {}).items()]
    result = resolve_args(
        ["--device", line["device"], *env, "--", *line["argv"]], Request(environ={})
    )
    assert not isinstance(result, Failure), result.problem.message
    assert result.exit_code() in (0, 1), [p.message for p in result.problems]
    assert result.kernel_config is not None
    for field, value in line.get("expect", {}).items():
        if field == "all2all_backend" and value in ("naive", "pplx"):  # removed: vLLM falls back
            value = "allgather_reducescatter"  # noqa: PLW2901
            assert any(p.code == "all2all-backend-removed" for p in result.problems)
        if field in result.kernel_config:
            assert result.kernel_config[field] == value, field
        else:
            assert result.parallel[field] == value, field


def test_pasted_line_with_format_json_after_it() -> None:
    result = run(
        "resolve",
        "--device",
        "h100",
        "--",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        "--trust-remote-code",
        "--tensor-parallel-size",
        "2",
        "--format",
        "json",
        env={"HF_HUB_CACHE": "/nonexistent"},
    )
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["parallel_config"]["tensor_parallel_size"] == 2
    assert data["model"]["id"] == "Qwen/Qwen3-8B"


@pytest.mark.parametrize(
    ("words", "needle"),
    [
        (["--no-such-flag", "1"], "unrecognized arguments"),
        (["--linear-backend-per-quant", "x"], "unrecognized arguments"),
        (["--max-model-len", "4096 tokens"], "invalid"),
        (["--gpu-memory-utilization", "x"], "cannot be converted"),
        (["--max-num-batched-tokens", "1.5K"], "Decimals are not allowed"),
        (["--trust-remote-code=True"], "ignored explicit argument"),
        (["m", "stray"], "unrecognized arguments: 'stray'"),
        (["--max-num", "8"], "ambiguous option"),
        (["--dtype", "halff"], "did you mean 'half'"),
    ],
)
def test_vllm_refusals_exit_2(words: list[str], needle: str) -> None:
    result = run("resolve", "--device", "h100", "--format", "json", "--", "vllm", "serve", *words)
    assert result.exit_code == 2
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_human_readable_sizes_as_vllm() -> None:
    release = releases.load("0.33")
    got = serve_line.parse(release, ["--max-num-batched-tokens", "8k", "--max-model-len", "1K"])
    assert got["max_num_batched_tokens"] == 8000
    assert got["max_model_len"] == 1024


def test_model_read_from_the_hugging_face_cache(tmp_path: Path) -> None:
    snap = tmp_path / "models--org--moe" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (tmp_path / "models--org--moe" / "refs").mkdir()
    (tmp_path / "models--org--moe" / "refs" / "main").write_text("abc")
    (snap / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
            }
        )
    )
    result = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--",
        "vllm",
        "serve",
        "org/moe",
        env={"HF_HUB_CACHE": str(tmp_path)},
    )
    model = result.json()["model"]
    assert model["architectures"] == ["DeepseekV3ForCausalLM"]
    assert model["quantization"] == "fp8"
    assert model["source"] == "Hugging Face cache"
    env = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "env",
        "--",
        "vllm",
        "serve",
        "org/moe",
        env={"HF_HUB_CACHE": str(tmp_path)},
    )
    assert "KERNELCFG_MODEL_SOURCE='Hugging Face cache'" in env.stdout


def test_a_batch_lines_environment_never_names_the_hugging_face_cache(tmp_path: Path) -> None:
    """A line's own ``env`` (``--env HF_HUB_CACHE=…``) is vLLM's container's: the cache
    kernelcfg reads is the caller's (this process's environment) alone."""
    for cache, arch in (("theirs", "Qwen3MoeForCausalLM"), ("ours", "LlamaForCausalLM")):
        snap = tmp_path / cache / "models--org--m" / "snapshots" / "abc"
        snap.mkdir(parents=True)
        (snap / "config.json").write_text(json.dumps({"architectures": [arch]}))
    theirs = f"HF_HUB_CACHE={tmp_path / 'theirs'}"
    lines = [
        {"env": [theirs], "argv": ["vllm", "serve", "org/m"]},
        {"argv": ["vllm", "serve", "org/m"]},
        {"argv": ["--env", theirs, "vllm", "serve", "org/m"]},
    ]
    (tmp_path / "lines.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    done = run(
        "resolve",
        "--device",
        "h100",
        "--batch",
        str(tmp_path / "lines.jsonl"),
        env={"HF_HUB_CACHE": str(tmp_path / "ours")},
    )
    found = [json.loads(out)["model"]["architectures"] for out in done.stdout.splitlines()]
    assert found == [["LlamaForCausalLM"]] * 3


_JSON_ON_H100 = ("resolve", "--device", "h100", "--format", "json")


def test_the_hugging_face_cache_is_found_again_when_the_environment_changes(
    tmp_path: Path,
) -> None:
    """The cache folder is worked out once per set of variables, not once per process:
    runs in one process under other variables (``HF_HUB_CACHE``, ``HF_HOME``) read their
    own cache."""
    archs = {"one": "DeepseekV3ForCausalLM", "two": "Qwen3MoeForCausalLM"}
    for cache, arch in archs.items():
        snap = tmp_path / cache / "hub" / "models--org--m" / "snapshots" / "abc"
        snap.mkdir(parents=True)
        (snap / "config.json").write_text(json.dumps({"architectures": [arch]}))
    found = []
    for env in (
        {"HF_HUB_CACHE": str(tmp_path / "one" / "hub")},
        {"HF_HOME": str(tmp_path / "two")},
        {"HF_HUB_CACHE": str(tmp_path / "one" / "hub")},
        {"HF_HOME": str(tmp_path / "nowhere")},
    ):
        done = run(*_JSON_ON_H100, "--", "vllm", "serve", "org/m", env=env)
        found.append(done.json()["model"]["architectures"])
    assert found == [[archs["one"]], [archs["two"]], [archs["one"]], None]


@pytest.mark.parametrize(
    ("words", "code"),
    [
        (["--attention-config.nope=1"], 2),
        (["-ac", '{"backend": "FLASHINFER", "bogus": 1}'], 2),
        (["-cc.pass_config.nope=true"], 2),
        (["--compilation-config", '{"use_inductor": false}'], 2),
        (["--attention-config.backend=FLASHINFER"], 0),
        (["-cc.pass_config.fuse_norm_quant=true"], 0),
        (["--eplb-config.window_size=1k"], 0),
    ],
)
def test_config_options_refuse_keys_their_dataclass_lacks(words: list[str], code: int) -> None:
    result = run(
        "resolve",
        "--device",
        "h100",
        "--vllm-version",
        "0.34",
        "--format",
        "json",
        "--",
        "vllm",
        "serve",
        "m",
        *words,
    )
    assert result.exit_code == code, result.stderr
    if code == 2:
        assert (
            "is not a field of it" in result.stderr or "unknown compilation-config" in result.stderr
        )


def test_published_lines_vllm_refuses_for_their_config_keys() -> None:
    line = [
        "vllm",
        "serve",
        "MiniMaxAI/MiniMax-M2.7",
        "--tensor-parallel-size",
        "4",
        "--compilation-config",
        '{"mode":3,"pass_config":{"fuse_minimax_qk_norm":true}}',
    ]
    result = run("resolve", "--device", "h200", "--format", "json", "--", *line)
    assert result.exit_code == 2
    assert "'pass_config.fuse_minimax_qk_norm' is not a field" in result.stderr


REFUSED = json.loads(
    (Path(__file__).parent / "data" / "published-serve-lines-refused.json").read_text()
)


@pytest.mark.parametrize("line", REFUSED["lines"], ids=[x["id"] for x in REFUSED["lines"]])
def test_published_lines_vllm_034_refuses(line: dict[str, Any]) -> None:
    result = resolve_args(
        ["--device", line["device"], "--vllm-version", "0.34", "--", *line["argv"]],
        Request(environ={}),
    )
    assert isinstance(result, Failure), line["id"]
    assert result.problem.exit_code == 2


def _dotted_value_as_vllm(text: str) -> object:
    """vLLM's rule for a dotted option's value, written out: JSON, else a human-readable
    integer, else the text."""
    import json as json_mod

    from kernelcfg.flags.serve_line.value_types import human_readable_int

    try:
        return json_mod.loads(text)
    except json_mod.JSONDecodeError:
        pass
    try:
        return human_readable_int(text)
    except (ValueError, OverflowError, argparse.ArgumentTypeError):
        return text


@pytest.mark.parametrize(
    "text",
    [
        "vllm_c",
        "native",
        "true",
        "True",
        " null ",
        "NaN",
        "-Infinity",
        "Infinity",
        "inf",
        "1k",
        "8K",
        "1.5k",
        "-1",
        "nullx",
        "",
        " ",
        "\u2003x",
        "\u0663",
        "[1, 2]",
        '"q"',
        "x y",
    ],
)
def test_dotted_values_read_as_vllm_reads_them(text: str) -> None:
    import math

    from kernelcfg.flags.serve_line.preprocess import dotted_value

    found, expected = dotted_value(text), _dotted_value_as_vllm(text)
    assert type(found) is type(expected)
    if isinstance(found, float) and math.isnan(found):
        assert math.isnan(expected)  # type: ignore[arg-type]
    else:
        assert found == expected


_LIST_WORDS = [
    "m",
    "a",
    "b c",
    "-1",
    "-",
    "--port",
    "8000",
    "--served-model-name",
    "--served-model-name=x",
    "--api-key",
    "--enforce-eager",
    "--max-num-seqs",
    "--nonsense",
]


@pytest.mark.parametrize("version", VERSIONS)
def test_list_options_read_as_argparse_reads_them(version: str) -> None:
    """The plain reader takes ``nargs="+"`` options (``--served-model-name a b``) itself
    only where argparse reads the same: every line it reads, argparse reads alike."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from .examples import examples

    serve = options(releases.load(version))

    @settings(max_examples=examples(400), deadline=None)
    @given(st.lists(st.sampled_from(_LIST_WORDS), max_size=8))
    def check(words: list[str]) -> None:
        plain = read_plain(serve, ["m", *words])
        if plain is None:
            return
        plain.pop("_earlier", None)
        parsed = vars(serve.parser.parse_args(["m", *words]))
        assert parsed.pop("_origins", {}) == plain.pop("_origins")
        assert parsed == plain

    check()
    read = read_plain(serve, ["m", "--served-model-name", "a", "b", "--port", "1"])
    assert read is not None
    assert read["served_model_name"] == ["a", "b"]
