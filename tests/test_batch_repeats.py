"""A batch line whose words recur is made once, and nothing a reader sees changes: the
JSON lines equal those made line by line, and a line that reads a file (``--config``,
the model's config.json) is read again each time it recurs."""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.base.answers import SMALL, Answers, small
from kernelcfg.commands import pipeline
from kernelcfg.flags import argv
from kernelcfg.flags.serve_line.preprocess import token
from kernelcfg.flags.serve_line.read import _READS, _fresh
from kernelcfg.output import parallel, render
from kernelcfg.vllm import releases

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "docs" / "examples" / "deepseek-r1"

REPEATED = [
    ["--device", "h100", "--moe-backend", "triton"],
    ["--device", "mi300x", "--moe-backend", "deep_gemm", "--linear-backend", "cutlass"],
    ["--device", "b200", "--moe-backend", "nonsense"],
    ["--device", "cpu", "-O3", "--ir-op-priority.rms_norm=native"],
    ["--moe-backend", "triton"],
]


def _one_by_one(raws: list[str], matrix: list[dict[str, str]]) -> list[str]:
    """Each line resolved and rendered on its own (the path without kept lines)."""
    out = []
    request = pipeline.Request(serve_is_vllms=True, want_compile_cache=True)  # as json_lines
    for line in pipeline.batch(raws, matrix=matrix, request=request):
        code = render.exit_code_under(line.result, strict=False, never=False)
        extra: dict[str, Any] = {"id": line.id, "exit_code": code}
        if matrix:
            extra["matrix"] = line.cell
        out.append(render.json_line(line.result, extra))
    return out


def _made(lines: Any, matrix: list[dict[str, str]] = (), jobs: int = 1) -> list[str]:  # type: ignore[assignment]
    chunks = parallel.json_lines(lines, [], matrix, jobs=jobs, strict=False, never=False)
    return b"".join(c.data for c in chunks).decode().splitlines()


@pytest.mark.parametrize("matrix", [[], [{"device": "a100"}, {"device": "l40s"}]])
def test_repeated_lines_read_as_lines_made_one_by_one(matrix: list[dict[str, str]]) -> None:
    raws = [json.dumps({"id": f"n{i}", "argv": REPEATED[i % 5]}) for i in range(40)]
    raws += [json.dumps(REPEATED[i % 5]) for i in range(10)]  # no id: the line number
    assert _made(raws, matrix) == _one_by_one(raws, matrix)


@pytest.mark.slow
def test_repeated_lines_in_workers_read_as_lines_made_one_by_one() -> None:
    raws = [json.dumps({"id": i, "argv": REPEATED[i % 5]}) for i in range(3 * parallel.CHUNK)]
    assert _made(raws, jobs=2) == _one_by_one(raws, [])


def _rewriting(first: str, then: Any, again: str) -> Iterator[str]:
    """``first``, then (after it was made) ``then()`` runs, then ``again``."""
    yield first
    then()
    yield again


def test_a_config_file_is_read_again_when_its_line_recurs(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("moe-backend: triton\n")
    line = json.dumps(["--device", "h100", "--config", str(config)])
    made = _made(_rewriting(line, lambda: config.write_text("moe-backend: cutlass\n"), line))
    backends = [json.loads(m)["kernel_config"]["moe_backend"] for m in made]
    assert backends == ["triton", "cutlass"]


def test_a_model_config_is_read_again_when_its_line_recurs(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(MODEL, model)
    line = json.dumps(["--device", "h100", "--hf-config-path", str(model)])

    def other_model() -> None:
        data = json.loads((model / "config.json").read_text())
        data["architectures"] = ["Qwen3MoeForCausalLM"]
        (model / "config.json").write_text(json.dumps(data) + "\n" * 7)  # new size and mtime

    made = _made(_rewriting(line, other_model, line))
    archs = [json.loads(m)["model"]["architectures"] for m in made]
    assert archs == [["DeepseekV3ForCausalLM"], ["Qwen3MoeForCausalLM"]]


def test_what_is_kept_is_only_lines_that_read_no_file() -> None:
    request = pipeline.Request()
    plain = ("--device", "h100", "--moe-backend", "triton")
    assert pipeline.repeatable(plain, pipeline.resolve_words(plain, request))
    for words in [
        ("--device", "h100", "--config", "/nonexistent.yaml"),
        ("--device", "h100", "--hf-config-path", str(MODEL)),
        ("--device", "h100", "vllm", "serve", "org/not-cached-here"),
        ("--device", "h100", "--moe-backend", "no-such-backend"),
    ]:
        assert not pipeline.repeatable(words, pipeline.resolve_words(words, request)), words


def test_kept_lines_are_bounded() -> None:
    kept: Answers[int, int] = Answers(3)
    for i in range(10):
        kept.keep(i, i)
    assert [kept.find(i) for i in range(5)] == [0, 1, 2, None, None]


def test_no_question_with_more_text_than_its_memo_allows_is_kept() -> None:
    """Every memo bounds the text of its questions (strings, also inside tuples), so no
    memo can hold gigabytes of a batch's long words, whichever keeps them."""
    kept: Answers[object, int] = Answers(10, text=8)
    questions = [
        ("a" * 8,),
        ("a" * 9,),
        (1, ("abcd", ("efgh",))),
        (1, ("abcd", ("efghi",))),
        token("x" * 9, "config file"),  # a str subclass counts as text too
    ]
    for number, question in enumerate(questions):
        assert kept.get(question, functools.partial(int, number)) == number  # answered
    assert [kept.find(q) for q in questions] == [0, None, 2, None, None]
    assert small(("a" * SMALL,))
    assert not small(("a" * SMALL, "b"))


def _policy() -> parallel._Policy:
    return parallel._Policy(pipeline.Request(), (), ({},), False, False)


def test_a_long_line_is_made_but_not_kept() -> None:
    """A line of more than SMALL characters is made as any other, and not kept: a batch
    of mebibyte lines must not fill the memory."""
    name = "m" * (SMALL + 1)
    long_words = ("--device", "h100", "--served-model-name", name)
    short_words = ("--device", "h100", "--served-model-name", "m")
    policy = _policy()
    for words in (long_words, short_words):
        parallel._render([(1, json.dumps(list(words)))], policy)
    assert policy.made.find(long_words) is None
    assert policy.made.find(short_words) is not None
    assert not small(long_words)


def test_words_read_once_are_read_alike_again() -> None:
    """The flags of a line whose words recur (for another target or environment) are
    read once; each line still gets inputs of its own, equal to a first reading."""
    release = releases.load(None)
    words = ["--moe-backend", "triton", "--kernel-config.ir_op_priority.rms_norm=native", "-O3"]
    _READS._kept.clear()
    first, _ = argv.parse(["--device", "h100", *words], release)
    assert _READS.find((release, *words)) is not None  # --device is not among them
    first.kernel_config["ir_op_priority"]["rms_norm"] = ["changed by its reader"]
    again, _ = argv.parse(["--device", "b200", *words], release)
    _READS._kept.clear()
    fresh, _ = argv.parse(["--device", "b200", *words], release)
    assert again == fresh
    assert again.kernel_config == {"ir_op_priority": {"rms_norm": "native"}}


def test_words_with_a_long_value_are_not_kept() -> None:
    release = releases.load(None)
    _READS._kept.clear()
    words = ["--moe-backend", "triton", "--served-model-name", "m" * (SMALL + 1)]
    argv.parse(words, release)
    assert _READS.find((release, *words)) is None


def test_a_context_with_a_long_environment_value_is_not_kept() -> None:
    """Verdicts are kept per context, unless its key holds more than SMALL characters
    of the user's words (here an environment value that a rule reads)."""
    from kernelcfg.checks.verdicts import Context, _env_names
    from kernelcfg.targets.presets import resolve_target

    target = resolve_target(device="mi300x")
    name = _env_names()[0]
    for value, kept in (("long" * SMALL, False), ("short, for this test", True)):
        Context(target, "0.34.0", env={name: value}).verdicts[("asked",)] = None  # type: ignore[assignment]
        again = Context(target, "0.34.0", env={name: value}).verdicts
        assert (("asked",) in again) is kept


def test_list_values_are_kept_and_each_line_gets_its_own() -> None:
    release = releases.load(None)
    words = ["--served-model-name", "a", "b", "--moe-backend", "triton"]
    _READS._kept.clear()
    argv.parse(["--device", "h100", *words], release)
    kept = _READS.find((release, *words))
    assert kept is not None
    assert kept.lists == ("served_model_name",)
    _fresh(kept)["served_model_name"].append("changed by its reader")
    assert _fresh(kept)["served_model_name"] == ["a", "b"]
