"""Help pages and tables read cleanly at 80 columns (a CI log), ``-h`` is ``--help``
everywhere, and a bare ``kernelcfg`` prints its help alone."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys

import pytest

from tests.cli_helpers import run

COMMANDS = [
    [],
    ["resolve"],
    ["why"],
    ["versions"],
    ["diff"],
    ["scan"],
    ["lint-env"],
    ["backends"],
    ["explain"],
    ["schema"],
    ["fetch"],
    ["cache"],
    ["cache", "explain"],
]


def _words(text: str) -> list[str]:
    """The words of a help page, box drawing aside."""
    return re.sub(r"[│╭╮╰╯─┃┏┓┗┛━┡┩╇┳┻┼┬┴└┘┌┐├┤]", " ", text).split()


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "kernelcfg")
def test_help_fits_80_columns_with_no_word_split(command: list[str]) -> None:
    """At 80 columns no line is longer and every word is the word a wide terminal shows:
    a metavar or a name folded mid-word would be two other words."""
    narrow = run(*command, "--help", env={"COLUMNS": "80"}).stdout
    wide = run(*command, "--help", env={"COLUMNS": "400"}).stdout
    assert [line for line in narrow.splitlines() if len(line) > 80] == []
    assert sorted(_words(narrow)) == sorted(_words(wide))


def test_command_list_has_one_sentence_per_command() -> None:
    """No summary is broken mid-sentence by its docstring's own line breaks: each row's
    description, joined, ends its sentence, and is wrapped greedily (no line ends
    where the next line's first word would still fit)."""
    text = run("--help", env={"COLUMNS": "80"}).stdout
    panel = text[text.index("Commands") :]
    panel = panel[: panel.index("╰")]
    rows: dict[str, list[str]] = {}
    current = ""
    for line in panel.splitlines()[1:]:
        inner = line.strip("│ ").rstrip()
        if not inner or line.startswith("╰"):
            continue
        name, _, rest = inner.partition(" ")
        if line[2] != " ":
            current = name
            rows[current] = [rest.strip()]
        else:
            rows[current].append(inner.strip())
    assert "resolve" in rows
    assert "cache" in rows
    for name, lines in rows.items():
        assert " ".join(lines).endswith("."), name
        for line, after in itertools.pairwise(lines):
            assert len(line) + 1 + len(after.split()[0]) > 66, (name, lines)


@pytest.mark.parametrize(
    "args",
    [
        ["--device", "rtx-pro-6000", "--moe-backend", "aiter"],
        ["--device", "b200", "--", "vllm", "serve", "x", "--enable-expert-parallel", "-tp", "8"],
        ["--device", "h100", "--architecture", "DeepseekV3ForCausalLM"],
    ],
)
def test_resolve_table_fits_80_columns(args: list[str]) -> None:
    """No line over 80 (the hash line moves its hash under its label), the verdict on
    one line, and no field name split inside a word."""
    done = run("resolve", *args, "--format", "table", env={"COLUMNS": "80"})
    lines = done.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    assert not any(line.rstrip().endswith("NOT") for line in lines)
    assert any(line.rstrip().endswith(("valid", "NOT VALID")) for line in lines)
    names = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
    assert all(not name or re.fullmatch(r"[a-z_.0-9]+", name) for name in names), names
    assert re.search(r"^  [0-9a-f]{64}$", done.stdout, re.MULTILINE)


def test_rtx_pro_verdict_stays_whole() -> None:
    """A long device name wraps; ``NOT VALID`` stays together."""
    done = run(
        "resolve",
        "--device",
        "rtx-pro-6000",
        "--moe-backend",
        "aiter",
        "--format",
        "table",
        env={"COLUMNS": "80"},
    )
    assert "NOT VALID" in done.stdout.splitlines()[:3] or any(
        line.endswith("NOT VALID") for line in done.stdout.splitlines()[:3]
    )


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "kernelcfg")
def test_dash_h_is_help(command: list[str]) -> None:
    short = run(*command, "-h", env={"COLUMNS": "100"})
    long = run(*command, "--help", env={"COLUMNS": "100"})
    assert short.exit_code == 0
    assert short.stdout == long.stdout
    assert "Usage: kernelcfg" in short.stdout
    assert "NOT VALID" not in short.stdout


def test_dash_h_after_double_dash_stays_vllms() -> None:
    """In a pasted ``vllm serve`` line, ``-h`` is vLLM's (which would print its help)."""
    done = run("resolve", "--device", "h100", "--", "vllm", "serve", "m", "-h")
    assert done.exit_code == 2
    assert "-h" in done.stderr


@pytest.mark.parametrize("args", [[], ["cache"]])
def test_bare_command_prints_help_alone(args: list[str]) -> None:
    """The help on stdout, nothing on stderr (no empty ``error:`` line), exit 2 as
    click's ``no_args_is_help`` gives."""
    done = subprocess.run(
        [sys.executable, "-m", "kernelcfg", *args],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "80"},
    )
    assert done.returncode == 2
    assert "Usage: python -m kernelcfg" in done.stdout
    assert done.stderr == ""


def test_no_color_is_documented_and_works() -> None:
    from pathlib import Path

    assert "NO_COLOR" in run("--help", env={"COLUMNS": "200"}).stdout
    assert "NO_COLOR" in (Path(__file__).parents[1] / "docs" / "cli.md").read_text()
    args = ("resolve", "--device", "h100", "--format", "table")
    coloured = run(*args, env={"FORCE_COLOR": "1", "COLUMNS": "200"}).stdout
    plain = run(*args, env={"FORCE_COLOR": "1", "NO_COLOR": "1", "COLUMNS": "200"}).stdout
    assert "\x1b[32m" in coloured
    assert "\x1b[32m" not in plain


def test_explain_prose_fits_80_columns() -> None:
    """``explain FIELD``'s prose wraps at 80 columns; only the EXAMPLE command, kept whole
    to copy, may be longer."""
    from kernelcfg.vllm import releases

    fields = releases.data_file(f"vllm-{releases.known_versions()[-1]}.json")["kernel_config"]
    for field in (f["name"] for f in fields["fields"]):
        done = run("explain", field)
        assert done.exit_code == 0, field
        long = [ln for ln in done.stdout.splitlines() if len(ln) > 80]
        assert [ln for ln in long if not ln.startswith("EXAMPLE: ")] == [], field


@pytest.mark.parametrize("columns", [80, 90, 200])
def test_kernel_config_values_and_sources_stay_whole(columns: int) -> None:
    """Whatever the width, every value and every word of its source is shown whole:
    where four columns would split one (``flashinfer_trtllm`` beside the longest field
    name at 80), the source goes under its value."""
    args = ["resolve", "--device", "b200", "--moe-backend", "flashinfer_trtllm"]
    data = run(*args, "--format", "json").json()
    done = run(*args, "--format", "table", env={"COLUMNS": str(columns)})
    lines = done.stdout.splitlines()
    assert [line for line in lines if len(line) > columns] == []
    table = done.stdout[done.stdout.index("kernel config") : done.stdout.index("\nengine")]
    words = set(_words(table))
    for name, value in data["kernel_config"].items():
        if name != "ir_op_priority":
            assert json.dumps(value) in words, (name, value)
    assert {"platform", "default", "-O2", "flag"} <= words


@pytest.mark.parametrize("device", ["b200", "mi300x", "xeon-spr"])
@pytest.mark.parametrize("columns", [80, 200])
def test_backends_reasons_stay_whole(device: str, columns: int) -> None:
    """Every word of every reason (module paths, ``flashinfer_moe_ep_mega_deep_gemm``)
    shows whole: where three columns would split one, each value's verdict and reason go
    on lines of their own."""
    data = run("backends", "--device", device, "--format", "json").json()
    done = run("backends", "--device", device, env={"COLUMNS": str(columns)})
    assert [line for line in done.stdout.splitlines() if len(line) > columns] == []
    shown = set(_words(done.stdout))
    for verdict in data["backends"]:
        for word in verdict["reason"].split():
            assert word in shown, (verdict["value"], word)
