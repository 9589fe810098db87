"""argparse's answer for a plain ``vllm serve`` line, read without argparse: every
option named exactly, values that do not start with ``-``, at most one positional, every
value accepted. Anything else is argparse's (:mod:`.parser`) to read and refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelcfg.flags.serve_line.parser import RAW_DESTS, ServeOptions

__all__ = ["read_plain"]

_SIMPLE_FLAGS = frozenset({"store_true", "store_false", "store_const", "boolean"})


def read_plain(serve: ServeOptions, tokens: list[str]) -> dict[str, Any] | None:
    """argparse's result for a plain line, without argparse's per-call walk over all
    ~330 options: every option named exactly, values that do not start with ``-`` (one,
    or a list for ``nargs="+"``: ``--served-model-name a b``), at most one positional,
    every value accepted. ``None`` for anything else, which argparse then reads (and
    refuses with its own message). It pays: 0.3 ms of each ``--batch`` line went to that
    walk (``make bench``); a line with ``--served-model-name`` 199 -> 86 µs."""
    given: dict[str, Any] = {}
    origins: dict[str, str] = {}
    earlier: dict[str, list[Any]] = {}
    i = 0
    while i < len(tokens):
        word = tokens[i]
        if not word.startswith("-"):
            if "model_tag" in given:
                return None
            given["model_tag"] = word
            i += 1
            continue
        raw = serve.exact.get(word.partition("=")[0])
        read = _plain_option(serve, raw, tokens, i) if raw is not None else None
        if read is None:
            return None
        value, origin, i = read
        dest = raw["dest"] if raw is not None else ""
        if dest in RAW_DESTS and raw is not None and raw["action"] == "store":
            earlier.setdefault(dest, []).append(value)
        given[dest] = value
        origins[dest] = getattr(origin, "origin", "flag")
        i += 1
    given["_origins"] = origins
    if earlier:
        given["_earlier"] = earlier
    return given


def _plain_option(
    serve: ServeOptions, raw: dict[str, Any], tokens: list[str], i: int
) -> tuple[Any, object, int] | None:
    """The value of the option at ``tokens[i]``, the word it came from and the index of
    its last word; ``None`` when argparse must read it."""
    word = tokens[i]
    name, eq, _ = word.partition("=")
    kind = raw["action"]
    if kind in _SIMPLE_FLAGS:
        if eq:
            return None
        value: Any = {
            "store_true": True,
            "store_false": False,
            "store_const": raw.get("const"),
        }.get(kind, name not in raw.get("negative", ()))
        return value, word, i
    read = _PLAIN_STORES.get(raw.get("nargs")) if kind == "store" else None
    return read(serve, raw, tokens, i) if read is not None else None


def _plain_one(
    serve: ServeOptions, raw: dict[str, Any], tokens: list[str], i: int
) -> tuple[Any, object, int] | None:
    """A single-valued option: its inline value (``--port=1``) or the next word."""
    word = tokens[i]
    _, eq, inline = word.partition("=")
    origin: object
    if eq:
        text, origin = inline, word
    elif i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
        i += 1
        text = origin = tokens[i]
    else:
        return None
    value = _plain_value(raw, serve.converters[raw["dest"]], text)
    return None if value is _REFUSED else (value, origin, i)


def _plain_list(
    serve: ServeOptions, raw: dict[str, Any], tokens: list[str], i: int
) -> tuple[Any, object, int] | None:
    """A ``nargs="+"`` option (``--served-model-name a b``): its inline value, or every
    following word up to the next option. A word that starts with ``-`` and is not an
    option named exactly may be a value to argparse (``-1``), which then reads the line."""
    word = tokens[i]
    _, eq, inline = word.partition("=")
    texts = [inline]
    end = i
    if not eq:
        while end + 1 < len(tokens) and not tokens[end + 1].startswith("-"):
            end += 1
        texts = tokens[i + 1 : end + 1]
        after = tokens[end + 1] if end + 1 < len(tokens) else None
        if not texts or (after is not None and after.partition("=")[0] not in serve.exact):
            return None
    convert = serve.converters[raw["dest"]]
    values = [_plain_value(raw, convert, text) for text in texts]
    return None if any(v is _REFUSED for v in values) else (values, word, end)


_REFUSED = object()


_PLAIN_STORES = {None: _plain_one, "+": _plain_list}
"""The ``store`` options the plain reader takes itself, by ``nargs``."""


def _plain_value(raw: dict[str, Any], convert: Callable[[str], Any] | None, text: str) -> Any:
    """The value argparse would store, or ``_REFUSED`` (argparse then says why)."""
    if raw["dest"] in RAW_DESTS:
        return text
    try:
        value = convert(text) if convert is not None else text
    except Exception:
        return _REFUSED
    choices = raw.get("choices")
    if choices is not None and value not in choices:
        return _REFUSED
    return value
