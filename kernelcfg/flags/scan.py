"""The ``vllm serve`` command lines written in a repository's files.

Shell scripts, Dockerfiles, Makefiles, Markdown and YAML (Kubernetes manifests,
compose files, CI workflows) hold ``vllm serve …`` lines; this finds each one with its
file and line number, joins backslash continuations, and splits it as a shell would.
A YAML ``command:``/``args:`` list is read as one command line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from kernelcfg.base import bounded

__all__ = ["Found", "lines_in"]

_START = re.compile(r"\bvllm\s+serve\b")
_YAML_LIST = re.compile(r"^\s*(?:command|args)\s*:\s*(\[.*\])\s*$")


@dataclass(frozen=True)
class Found:
    """One ``vllm serve`` command line in a file."""

    path: str
    """The file."""
    line: int
    """The 1-based line it starts on."""
    argv: list[str]
    """``vllm serve …`` split into words (shell quoting honoured)."""


def lines_in(path: str) -> Iterator[Found]:
    """Every ``vllm serve`` command line in ``path``."""
    text = bounded.read_text(path, "file")
    raw = text.splitlines()
    i = 0
    while i < len(raw):
        number, line = i + 1, raw[i]
        i += 1
        listed = _YAML_LIST.match(line)
        if listed and _START.search(listed.group(1).replace('", "', " ").replace("', '", " ")):
            words = _yaml_words(listed.group(1))
            if words:
                yield Found(path, number, _from_vllm(words))
            continue
        match = _START.search(line)
        if not match:
            continue
        command = line[match.start() :]
        while command.rstrip().endswith("\\") and i < len(raw):
            command = command.rstrip()[:-1] + " " + raw[i].strip()
            i += 1
        words = _split(command)
        if words:
            yield Found(path, number, words)


def _yaml_words(flow: str) -> list[str]:
    import yaml

    try:
        value = yaml.safe_load(flow)
    except yaml.YAMLError:
        return []
    if not isinstance(value, list):
        return []
    words = [str(v) for v in value]
    if len(words) == 3 and words[:2] in (["sh", "-c"], ["bash", "-c"]):
        start = _START.search(words[2])
        return _split(words[2][start.start() :]) if start else []
    return words


def _from_vllm(words: list[str]) -> list[str]:
    for k in range(len(words) - 1):
        if words[k].endswith("vllm") and words[k + 1] == "serve":
            return ["vllm", *words[k + 1 :]]
    return words


def _split(command: str) -> list[str]:
    """Shell words of a command, up to the end of that command (``&&``, ``;``, ``|``, ``#``)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = []
        for word in lexer:
            if word and set(word) <= set(";&|"):
                break
            words.append(word)
    except ValueError:
        return []
    return words
