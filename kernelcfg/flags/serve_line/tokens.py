"""A word of a ``vllm serve`` line and where it came from: a plain word of the command
line stays a plain ``str``; a word from a ``--config`` file, or a gathered dotted value
(with its parsed mapping), is a :class:`Token` that carries its origin.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Token", "origin_of", "parsed_of", "token"]


class Token(str):
    """A word that came from a config file, or a gathered dotted value; plain words
    of the command line stay plain ``str`` (read with :func:`_origin`, :func:`_parsed`)."""

    origin: str
    parsed: Any


def token(text: str, origin: str = "flag", parsed: Any = None) -> str:
    if origin == "flag" and parsed is None:
        return text
    tok = Token(text)
    tok.origin = origin
    tok.parsed = parsed
    return tok


def origin_of(word: str) -> str:
    return word.origin if type(word) is Token else "flag"


def parsed_of(word: str) -> Any:
    return word.parsed if type(word) is Token else None
