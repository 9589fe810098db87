"""What a user writes never steers the output: no rich markup read, no terminal escape
passed through, no line a CI runner would take for a workflow command, no traceback.

User-derived text reaches the output through flags, environment values, a model's
``config.json``, a folder's name, batch ids and saved JSON. Each test feeds such text
through the commands and formats that show it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .cli_helpers import Run, run
from .examples import examples

pytestmark = pytest.mark.cli

HOSTILE = (
    "\n::error::forged",
    "\r\n::warning title=x::forged",
    "[/x]",
    "[bold]b[/bold]",
    "[link=https://example.invalid]l[/link]",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\u2028::notice::forged",
    "\x85",
    ":thumbs_up:",
    "%0A::error::forged",
    "::add-mask::x",
)
"""Fragments that an attacker (or a careless config) puts in a value."""

_ANNOTATION = re.compile(
    r"::(error|warning|notice) (file=[^,:]*,)?(line=\d+,)?(col=\d+,)?title=[^:]*::"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def assert_safe(done: Run, *, annotations: bool = False) -> None:
    """The run ended with a verdict, and no output line is a forged workflow command or
    carries a raw control character."""
    assert done.exit_code in (0, 1, 2), (done.exit_code, done.stderr[-2000:])
    for stream in (done.stdout, done.stderr):
        assert not _CONTROL.search(stream.replace("\n", "").replace("\t", "")), stream[-2000:]
        for line in stream.split("\n"):
            if not line.lstrip().startswith("::"):
                continue
            assert annotations, line
            assert stream is done.stdout, line
            assert _ANNOTATION.match(line), line
    assert "MarkupError" not in done.stderr


def model_folder(root: Path, values: dict[str, Any]) -> Path:
    """A model folder whose ``config.json`` holds ``values`` over a small dense model."""
    folder = root / "model"
    folder.mkdir(exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 2,
        "torch_dtype": "bfloat16",
        **values,
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


FORMATS = ("table", "json", "yaml", "env", "args", "github", "junit", "sarif")

fragments = st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3).map("x".join)


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=fragments, fmt=st.sampled_from(FORMATS))
def test_model_facts_never_steer_resolve_output(tmp_path: Path, text: str, fmt: str) -> None:
    folder = model_folder(
        tmp_path,
        {
            "architectures": [f"Llama{text}"],
            "quantization_config": {"quant_method": f"fp8{text}", "weight_block_size": [128, 128]},
        },
    )
    done = run("resolve", "--device", "h100", "--format", fmt, "--", "vllm", "serve", str(folder))
    assert_safe(done, annotations=fmt == "github")


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=fragments, command=st.sampled_from(["why", "scan", "lint-env", "diff", "batch"]))
def test_user_text_never_steers_other_commands(tmp_path: Path, text: str, command: str) -> None:
    folder = model_folder(tmp_path, {"architectures": [f"Llama{text}"]})
    for fmt in (
        ("table", "json", "github")
        if command in ("scan", "lint-env", "batch")
        else ("table", "json")
    ):
        done = _run_command(command, fmt, text, folder, tmp_path)
        assert_safe(done, annotations=fmt == "github")


def _run_command(command: str, fmt: str, text: str, folder: Path, root: Path) -> Run:
    """``command`` in ``fmt`` over inputs that carry ``text``."""
    if command == "why":
        return run(
            "why",
            "attention",
            "--format",
            fmt,
            "--device",
            "h100",
            "--",
            "vllm",
            "serve",
            str(folder),
        )
    if command == "scan":
        script = root / f"serve{text.replace('/', '_')[:40]}.sh"
        script.write_text(f"vllm serve {folder} --moe-backend '{text}'\n", encoding="utf-8")
        return run("scan", "--device", "h100", "--format", fmt, str(script))
    if command == "lint-env":
        env_file = root / "vllm.env"
        env_file.write_text(f"VLLM_ATTENTION_BACKEND={json.dumps(text)}\n", encoding="utf-8")
        return run("lint-env", "--format", fmt, "--env-file", str(env_file))
    if command == "diff":
        saved = run("resolve", "--device", "h100", "--format", "json").json()
        saved["kernel_config"]["ir_op_priority"] = {text: [text, "native"]}
        saved["hash_factors"][text] = text
        saved["hash"] = "0" * 64
        path = root / "saved.json"
        path.write_text(json.dumps(saved), encoding="utf-8")
        other = root / "other.json"
        other.write_text(json.dumps(run("resolve", "--device", "h100", "--format", "json").json()))
        return run("diff", "--format", fmt, str(path), str(other))
    line = json.dumps({"id": text, "argv": ["--device", "h100", "-cc.backend", text]})
    return run("resolve", "--batch", "-", "--format", fmt, stdin=line + "\n")


@pytest.mark.parametrize(
    "flags",
    [
        ["-cc.backend=[/x]"],
        ["--vllm-version", "0.33", "--ir-op-priority.rms_norm=[/x]"],
        ["--vllm-version", "0.33", "--ir-op-priority.rms_norm=[bold]a[/bold],native"],
        ["--architecture", "[/x]\x1b[2J"],
    ],
)
def test_markup_in_flags_is_shown_as_written(flags: list[str]) -> None:
    done = run("resolve", "--device", "h100", "--format", "table", *flags)
    assert_safe(done)


def test_a_table_value_in_brackets_is_shown_whole() -> None:
    # rich read "[b12x]" in a reason as a style tag and dropped it from the table.
    done = run("backends", "--device", "b200", "--quantization", "fp8")
    assert "vllm[b12x]" in done.stdout


def test_zero_columns_still_shows_the_table() -> None:
    done = run("resolve", "--device", "h100", "--format", "table", env={"COLUMNS": "0"})
    assert "moe_backend" in done.stdout
    assert "hash" in done.stdout


@pytest.mark.parametrize("columns", ["-5", "abc", "99999999999"])
def test_unusable_columns_are_taken_as_unset(columns: str) -> None:
    done = run("resolve", "--device", "h100", "--format", "table", env={"COLUMNS": columns})
    assert done.exit_code == 0
    assert "moe_backend" in done.stdout


def test_a_wrapped_value_never_starts_a_line_with_a_workflow_command() -> None:
    name = "x" * 70 + " ::error::forged"
    done = run("resolve", "--device", "h100", "--architecture", name, "--format", "table")
    assert_safe(done)
    assert "forged" in done.stdout


def test_yaml_keeps_each_value_on_its_line() -> None:
    done = run("resolve", "--device", "h100", "--format", "yaml", "--architecture", "A\n::error::x")
    assert '"A\\n::error::x"' in done.stdout
    assert_safe(done)
