"""One ``vllm serve`` line read the way the release's ``vllm serve`` reads it, start to
end: the words ordered as vLLM orders them, ``--config`` expanded (:mod:`.config_file`),
names rewritten and dotted keys gathered (:mod:`.preprocess`), then parsed
(:mod:`.parser`). A list of words that reads no file is read once per process.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from kernelcfg.base.answers import Answers
from kernelcfg.base.problems import Problem
from kernelcfg.flags.serve_line.preprocess import (
    Token,
    gather_dotted,
    order_serve_line,
    rewrite,
    token,
)
from kernelcfg.vllm.releases import Release

__all__ = ["parse", "read"]


def read(
    release: Release, head: list[str], serve: list[str] | None, notes: list[Problem]
) -> dict[str, Any]:
    """What the release's ``vllm serve`` makes of a line: ``head``, the words before
    ``vllm serve`` (kernelcfg's own options already taken out), and ``serve``, the words
    after it (``None``: the line has no ``vllm serve``), ordered, expanded and rewritten as
    vLLM's ``FlexibleArgumentParser`` does, then parsed. The options given, by ``dest``
    (``_origins``: where each came from; ``_earlier``: every occurrence of an option
    kernelcfg checks itself); the passes' warnings go to ``notes``."""
    tokens, insert_at = head, 0
    if serve is not None:
        tokens, insert_at = order_serve_line(serve, head)
    if "--config" in tokens or any(t.startswith("--config=") for t in tokens):
        from kernelcfg.flags.serve_line.config_file import expand_config  # only then

        tokens = expand_config(tokens, notes, insert_at=insert_at, serve=serve is not None)
        return _read(release, tokens, notes)
    return _read_again(release, tokens, notes)


def parse(release: Release, tokens: list[str]) -> dict[str, Any]:
    """What ``vllm serve`` makes of pre-processed ``tokens``: the given options by
    ``dest`` (``_origins`` says where each came from); one line on refusal. A plain line
    is read without argparse, anything else by it (both :mod:`.parser`, loaded with the
    first line that has words for it: a line of kernelcfg's options alone needs none)."""
    from kernelcfg.flags.serve_line.parser import options, read_plain, read_with_argparse

    serve = options(release)
    plain = read_plain(serve, tokens)
    if plain is not None:
        return plain
    return read_with_argparse(serve, release, tokens)


def _read(release: Release, tokens: list[str], notes: list[Problem]) -> dict[str, Any]:
    """What the release's ``vllm serve`` makes of the words, after vLLM's renaming and
    gathering passes (their warnings go to ``notes``)."""
    if any("_" in t or t.startswith(("-O", "--help=")) for t in tokens):
        tokens = rewrite(tokens)
    tokens = gather_dotted(tokens, notes)
    return parse(release, tokens) if tokens else {}


class _Read(NamedTuple):
    """What :func:`_read` made of a list of words that reads no file."""

    given: dict[str, Any]
    """Its answer (kept unchanged: each line gets a copy)."""
    notes: tuple[Problem, ...]
    """The warnings it wrote."""
    gathered: tuple[str, ...]
    """The options whose value is a gathered dotted value (a word carrying its parsed
    mapping, which each line gets its own copy of)."""
    lists: tuple[str, ...]
    """The options whose value is a list of plain values (``--served-model-name a b``),
    which each line gets its own copy of."""


_READS: Answers[tuple[object, ...], _Read] = Answers(8192)
""":func:`_read`'s answers by release and words. A batch repeats the same flags for
many targets and environments (kernelcfg's own options are not among the words):
``make bench``'s seven-device ``--matrix`` went from 13,700-14,500 to 15,700-16,400
results/s with it (``--jobs auto``; one process 8,600 -> 9,600)."""


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def _read_again(release: Release, tokens: list[str], notes: list[Problem]) -> dict[str, Any]:
    """:func:`_read` for words that read no file, answered once per distinct list."""
    key = (release, *tokens)
    found = _READS.find(key)
    if found is None:
        written: list[Problem] = []
        given = _read(release, tokens, written)
        notes += written
        kept = _keepable(given, written)
        if kept is not None:
            _READS.keep(key, kept)
        return given if kept is None else _fresh(kept)
    notes += found.notes
    return _fresh(found)


def _keepable(given: dict[str, Any], notes: list[Problem]) -> _Read | None:
    """``given`` as kept, or ``None`` where a value could be changed by its reader."""
    gathered, lists = [], []
    for dest, value in given.items():
        if type(value) is Token and isinstance(value.parsed, dict):
            gathered.append(dest)
        elif type(value) is list and all(type(v) in _IMMUTABLE for v in value):
            lists.append(dest)
        elif type(value) not in _IMMUTABLE and dest not in ("_origins", "_earlier"):
            return None
    return _Read(dict(given), tuple(notes), tuple(gathered), tuple(lists))


def _fresh(kept: _Read) -> dict[str, Any]:
    """A line's own copy of a kept answer (:func:`kernelcfg.flags.kernel_flags.apply`
    takes it apart)."""
    given = dict(kept.given)
    for dest in kept.gathered:
        word = given[dest]
        given[dest] = token(str(word), word.origin, copy.deepcopy(word.parsed))
    for dest in kept.lists:
        given[dest] = list(given[dest])
    return given
