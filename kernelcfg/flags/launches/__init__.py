"""The vLLM launches written in a repository's files, each with where it stands.

One reader per kind of file (:mod:`.dockerfile`, :mod:`.yaml_files`, :mod:`.markdown`,
:mod:`.python_files`, and shell for the rest), all answering the same thing: a
:class:`Found` per launch (``vllm serve …``, or the old entry point ``python -m
vllm.entrypoints.openai.api_server …``) with its line and column, its argv from
``vllm serve`` on, the environment it sets, and the words only the run can fill in.
Lines are counted as editors and GitHub count them: at ``\\n`` only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePath

from kernelcfg.base import bounded
from kernelcfg.flags.launches.words import MARKER, Found

__all__ = ["MARKER", "Found", "kind_of", "launches_in", "launches_in_text"]


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


def launches_in(path: str) -> Iterator[Found]:
    """Every launch written in the file at ``path`` (read with kernelcfg's file limits)."""
    text = bounded.read_text(path, "file")
    yield from launches_in_text(text, path, kind_of(path))


def launches_in_text(text: str, path: str, kind: str) -> Iterator[Found]:
    """Every launch in ``text`` read as a file of ``kind``."""
    if not MARKER.search(text) and kind != "dockerfile":
        return
    if kind == "dockerfile":
        from kernelcfg.flags.launches.dockerfile import launches

        yield from launches(text, path)
    elif kind == "yaml":
        from kernelcfg.flags.launches.yaml_files import launches

        yield from launches(text, path)
    elif kind == "markdown":
        from kernelcfg.flags.launches.markdown import launches

        yield from launches(text, path)
    elif kind == "python":
        from kernelcfg.flags.launches.python_files import launches

        yield from launches(text, path)
    else:
        from kernelcfg.flags.launches import scripts

        yield from scripts.launches(text, path)
