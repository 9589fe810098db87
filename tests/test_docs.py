"""The console examples of the README and docs print what the docs say they print: an
example ending ``> /dev/null`` shows its stderr, any other its stdout, and then prints
nothing on stderr (a terminal would show it between the lines the docs show)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "ci.md", ROOT / "docs" / "index.md"]


def _examples() -> list[tuple[str, list[str], int | None]]:
    """(command, expected output lines, expected exit code) for each ``$ kernelcfg``."""
    out: list[tuple[str, list[str], int | None]] = []
    blocks = [
        b for doc in DOCS for b in re.findall(r"```console\n(.*?)```", doc.read_text(), flags=re.S)
    ]
    for block in blocks:
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("$ ") and "kernelcfg " in lines[i] and "echo" not in lines[i]:
                command = lines[i][2:]
                expected: list[str] = []
                i += 1
                while i < len(lines) and not lines[i].startswith("$ "):
                    expected.append(lines[i])
                    i += 1
                code = None
                if i < len(lines) and lines[i] == "$ echo $?":
                    code = int(lines[i + 1])
                    i += 2
                out.append((command, expected, code))
            else:
                i += 1
    return out


EXAMPLES = _examples()


def test_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize(("command", "expected", "code"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_readme_example(command: str, expected: list[str], code: int | None) -> None:
    command, _, grep = command.partition(" | grep -E ")
    silenced = command.endswith("> /dev/null")
    words = shlex.split(command.removesuffix("> /dev/null"))
    env = {"COLUMNS": "80"}  # every example is printed at 80 columns, as in a CI log
    while "=" in words[0]:
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    result = run(*words[1:], env=env)
    shown = (result.stderr if silenced else result.stdout).splitlines()  # byte for byte
    if grep:
        pattern = re.compile(shlex.split(grep)[0])
        shown = [line for line in shown if pattern.search(line)]
    assert shown == expected
    if not silenced:  # what the docs show is all a terminal shows: stderr too
        assert result.stderr == "", result.stderr
    if code is not None:
        assert result.exit_code == code


def test_command_reference_is_current() -> None:
    """docs/reference.md is what Typer writes from the app today (``make docs``)."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts" / "docs"))
    try:
        import reference_docs
    finally:
        sys.path.remove(str(ROOT / "scripts" / "docs"))
    assert reference_docs.reference() == (ROOT / "docs" / "reference.md").read_text()


@pytest.mark.parametrize(
    ("doc", "phrase"),
    [
        ("README.md", r"It knows vLLM (\S+) to (\S+)\b"),
        ("docs/index.md", r"\((\S+) to (\S+); `kernelcfg versions` lists them\)"),
        ("docs/moe.md", r"Releases: vLLM (\S+) to (\S+), every release kernelcfg knows"),
    ],
)
def test_the_docs_name_the_releases_kernelcfg_knows(doc: str, phrase: str) -> None:
    """A release added (or dropped) shows in the sentences that name the range."""
    from kernelcfg.vllm import releases

    text = (ROOT / doc).read_text(encoding="utf-8")
    found = re.search(phrase, re.sub(r"\s+", " ", text))
    assert found, doc
    known = releases.known_versions()
    assert (found.group(1), found.group(2).rstrip(".,")) == (known[0], known[-1])
