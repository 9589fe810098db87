"""The vLLM launches written in a repository's files, each with where it stands.

One reader per kind of file (:mod:`.dockerfile`, :mod:`.yaml_files`, :mod:`.markdown`,
:mod:`.python_files`, and shell for the rest), all answering the same thing: a
:class:`Found` per launch (``vllm serve …``, the old entry point ``python -m
vllm.entrypoints.openai.api_server …``, or the arguments of an image whose entry point
is vLLM's server, :mod:`.images`) with its line and column, its argv from ``vllm serve``
on, the environment it sets, the words only the run can fill in, and notes on how it was
read; and a :class:`Notice` for a part a reader could not read. Lines are counted as
editors and GitHub count them: at ``\\n`` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePath

from kernelcfg.base import bounded
from kernelcfg.flags.launches import images
from kernelcfg.flags.launches.images import Images
from kernelcfg.flags.launches.words import Found, Note, Notice

__all__ = [
    "KINDS",
    "Found",
    "Images",
    "Note",
    "Notice",
    "kind_of",
    "kind_of_text",
    "launches_in",
    "launches_in_text",
    "read",
    "read_text",
]

KINDS = ("dockerfile", "yaml", "markdown", "python", "shell")
"""The kinds of file there is a reader for."""


def kind_of(path: str) -> str:
    """The reader a file gets, by its name: dockerfile, yaml, markdown, python or shell."""
    name = PurePath(path).name.lower()
    stem = name.partition(".")[0]
    if stem in ("dockerfile", "containerfile") or name.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    suffix = PurePath(name).suffix
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix in (".md", ".markdown", ".mdx"):
        return "markdown"
    if suffix == ".py":
        return "python"
    return "shell"


_FROM = re.compile(r"^\s*FROM\s+\S", re.IGNORECASE | re.MULTILINE)
_FENCE = re.compile(r"^\s*(?:```|~~~)", re.MULTILINE)
_YAML_KEY = re.compile(r"^(?:apiVersion|kind|services|jobs|on|spec|version):", re.MULTILINE)
_PYTHON = re.compile(r"^(?:import \w|from [\w.]+ import )", re.MULTILINE)


def kind_of_text(text: str) -> str:
    """The reader a text without a name gets (standard input), by what it holds: a
    Dockerfile (a ``FROM`` line before the rest), Markdown (a fence), YAML (a manifest's,
    compose's or a workflow's top-level key), Python (an import), else shell."""
    head = text[:65536]
    first = next((ln for ln in head.split("\n") if ln.strip() and not ln.startswith("#")), "")
    if _FROM.match(first):
        return "dockerfile"
    if _FENCE.search(head):
        return "markdown"
    if _YAML_KEY.search(head) or head.startswith("---"):
        return "yaml"
    if _PYTHON.search(head):
        return "python"
    return "shell"


def launches_in(path: str) -> Iterator[Found]:
    """Every launch written in the file at ``path`` (read with kernelcfg's file limits)."""
    for item in read(path):
        if isinstance(item, Found):
            yield item


def read(path: str, kind: str | None = None) -> Iterator[Found | Notice]:
    """Every launch in the file at ``path``, and a notice for each part not read."""
    text = bounded.read_text(path, "file")
    yield from read_text(text, path, kind or kind_of(path))


def launches_in_text(text: str, path: str, kind: str) -> Iterator[Found]:
    """Every launch in ``text`` read as a file of ``kind``."""
    for item in read_text(text, path, kind):
        if isinstance(item, Found):
            yield item


def read_text(text: str, path: str, kind: str) -> Iterator[Found | Notice]:
    """Every launch in ``text`` read as a file of ``kind``, and a notice for each part
    not read."""
    if kind != "dockerfile" and not _may_hold_launch(text, kind):
        return
    yield from _reader(kind)(text, path)


def _reader(kind: str) -> Callable[[str, str], Iterable[Found | Notice]]:
    """The reader of a kind of file (imported when first needed)."""
    if kind == "dockerfile":
        from kernelcfg.flags.launches import dockerfile

        return dockerfile.launches
    if kind == "yaml":
        from kernelcfg.flags.launches import yaml_files

        return yaml_files.launches
    if kind == "markdown":
        from kernelcfg.flags.launches import markdown

        return markdown.launches
    if kind == "python":
        from kernelcfg.flags.launches import python_files

        return python_files.launches
    from kernelcfg.flags.launches import scripts

    return scripts.launches


def _may_hold_launch(text: str, kind: str) -> bool:
    """Whether ``text`` may hold a launch: it names vLLM or one of the images, or (YAML)
    builds an image whose Dockerfile may start vLLM."""
    if images.marker().search(text):
        return True
    return kind == "yaml" and "build:" in text
