"""vLLM's ``FlexibleArgumentParser`` pre-processing, before argparse sees a word: the
first ``--model`` moves to the model position (with kernelcfg's part of the line after
it); in option names, ``_`` becomes ``-`` before the first ``.``; ``-O3``/``-O=3``/``-O 3``
become ``--optimization-level``; dotted keys (``--kernel-config.moe_backend=x``) are
gathered into one JSON value per option, appended last (so it replaces a whole-JSON
value). ``--config FILE`` is :mod:`.config_file`'s.

A plain word of the command line stays a plain ``str``; a word from a ``--config``
file, or a gathered dotted value (with its parsed mapping), is a :class:`Token` that
carries where it came from.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.errors import ArgumentError
from kernelcfg.base.problems import Problem

__all__ = [
    "Token",
    "dotted_value",
    "gather_dotted",
    "order_serve_line",
    "origin_of",
    "parsed_of",
    "rewrite",
    "token",
]


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


_CONFIG_TOKEN = re.compile(r"--config(=.+|$)")


_SERVED_NAME = re.compile(r"--served[-_]model[-_]name(=.+|$)")


_MODEL_TOKEN = re.compile(r"--model(=.+|$)")


def order_serve_line(serve: list[str], head: list[str]) -> tuple[list[str], int]:
    """The words after ``vllm serve`` as vLLM orders them (the first ``--model`` moved
    to the front), with kernelcfg's part inserted after the model; and how many words
    the model takes (0 or 1)."""
    serve = list(serve)
    for i, arg in enumerate(serve):
        if not _MODEL_TOKEN.fullmatch(arg):
            continue
        if arg == "--model":
            if i + 1 >= len(serve):
                raise ArgumentError(
                    "--model: expected one argument (vllm serve stops: IndexError)", field="model"
                )
            value = serve.pop(i + 1)
        else:
            value = arg.split("=", 1)[1]
        serve.pop(i)
        serve.insert(0, value)
        break
    if (
        serve
        and serve[0].startswith("-")
        and not any(_CONFIG_TOKEN.fullmatch(t) for t in serve)
        and any(_SERVED_NAME.fullmatch(t) for t in serve)
    ):
        raise ArgumentError(
            "`model` should be provided as the first positional argument when using "
            "`vllm serve`, i.e. `vllm serve <model> --<arg> <value>` (vllm serve stops: "
            "ValueError)",
            field="model",
        )
    model = 1 if serve and not serve[0].startswith("-") else 0
    return serve[:model] + head + serve[model:], model


def _dash_name(arg: str) -> str:
    """``--a_b.c_d=v`` to ``--a-b.c_d=v``: only the name before the first ``.``."""
    key, eq, value = arg.partition("=")
    head, dot, tail = key.partition(".")
    return head.replace("_", "-") + dot + tail + eq + value


def rewrite(tokens: list[str]) -> list[str]:
    """``_`` to ``-`` before the first ``.`` of ``--`` options; the ``-O`` forms."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        if arg.startswith("--help="):
            out.append(token("--help", origin_of(arg)))
        elif arg.startswith("--"):
            out.append(token(_dash_name(arg), origin_of(arg)) if "_" in arg else arg)
        elif arg.startswith("-O") and arg != "-O":
            value = arg[3:] if arg[2] == "=" else arg[2:]
            origin = origin_of(arg)
            out.extend([token("--optimization-level", origin), token(value, origin)])
        elif arg == "-O" and i + 1 < len(tokens) and tokens[i + 1] in ("0", "1", "2", "3"):
            out.append(token("--optimization-level", origin_of(arg)))
        elif arg == "-O":
            raise ArgumentError(
                "unrecognized arguments: -O"
                + (f" {tokens[i + 1]}" if i + 1 < len(tokens) else "")
                + " (with a space, -O takes only 0, 1, 2 or 3; write -O3 or "
                "--optimization-level 3)",
                field="optimization_level",
            )
        else:
            out.append(arg)
        i += 1
    return out


_JSON_WORDS = frozenset({"true", "false", "null", "NaN", "Infinity"})
"""The JSON values that start with a letter."""


def dotted_value(text: str) -> Any:
    """A dotted option's value as vLLM reads it: JSON, else a human-readable integer,
    else the text. A word that starts with an ASCII letter and is not one of JSON's
    words is neither (neither ``json.loads`` nor ``int`` reads it), so it is the text
    at once: two exceptions saved on most dotted values (``…rms_norm=vllm_c``)."""
    head = text.lstrip(" \t\n\r")[:1]
    if head.isascii() and head.isalpha() and text.strip(" \t\n\r") not in _JSON_WORDS:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    except (RecursionError, ValueError) as exc:
        raise ArgumentError(
            f"dotted value {bounded.shown(text)}: unusable JSON ({bounded.reason(exc)})"
        ) from None
    from argparse import ArgumentTypeError  # only for a value JSON does not read

    from kernelcfg.flags.serve_line.value_types import human_readable_int

    try:
        return human_readable_int(text)
    except (ValueError, OverflowError, ArgumentTypeError):
        return text


def _merge(into: dict[str, Any], new: dict[str, Any], path: str, dupes: list[str]) -> None:
    for key, value in new.items():
        here = f"{path}.{key}"
        if key in into and isinstance(into[key], dict) and isinstance(value, dict):
            _merge(into[key], value, here, dupes)
        elif key in into and isinstance(into[key], list) and isinstance(value, list):
            into[key] = into[key] + value
        else:
            if key in into:
                dupes.append(here)
            into[key] = value


def _warn_duplicates(dupes: list[str], notes: list[Problem]) -> None:
    """vLLM's one-line warning about keys given more than once."""
    if dupes:
        notes.append(
            Problem(
                "warning",
                "duplicate-keys",
                None,
                f"Found duplicate keys {', '.join(dict.fromkeys(dupes))}: the last value wins",
            )
        )


def gather_dotted(tokens: list[str], notes: list[Problem]) -> list[str]:
    """Gather ``--opt.a.b=v`` into one JSON value per option, placed last."""
    if not any("." in t for t in tokens):  # the common case: only repeats to warn about
        names = [t.partition("=")[0] for t in tokens if t.startswith("--")]
        if len(set(names)) != len(names):
            seen_once: set[str] = set()
            repeated: list[str] = []
            for name in names:
                if name in seen_once:
                    repeated.append(name)
                seen_once.add(name)
            _warn_duplicates(repeated, notes)
        return tokens
    gathered: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    dupes: list[str] = []
    seen: set[str] = set()
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        if arg.startswith("--") and "." not in arg:
            name = arg.split("=", 1)[0]
            if name in seen:
                dupes.append(name)
            seen.add(name)
        dotted = _dotted(tokens, i) if "." in arg and arg.startswith("-") else None
        if dotted is None:
            out.append(arg)
            i += 1
            continue
        key_path, value_text, i = dotted
        key, nested = _nest(key_path, value_text)
        _merge(gathered.setdefault(key, {}), nested, key, dupes)
        origins.setdefault(key, origin_of(arg))
    _warn_duplicates(dupes, notes)
    for key, value in gathered.items():
        out.append(token(key, origins[key]))
        out.append(token(json.dumps(value), origins[key], parsed=value))
    return out


def _dotted(tokens: list[str], i: int) -> tuple[str, str, int] | None:
    """The key path and value text of a dotted option at ``tokens[i]`` (vLLM's rule:
    ``-0.5`` counts too, and eats a word), with the index after it; ``None`` when the
    word is not one (``--opt=a.b``)."""
    arg = tokens[i]
    if "=" in arg:
        key_path, value_text = arg.split("=", 1)
        return (key_path, value_text, i + 1) if "." in key_path else None
    if i + 1 >= len(tokens):
        raise ArgumentError(f"argument {arg}: expected one argument", field=arg)
    return arg, str(tokens[i + 1]), i + 2


def _nest(key_path: str, value_text: str) -> tuple[str, dict[str, Any]]:
    """``--opt.a.b+=x,y`` to ``("--opt", {"a": {"b": ["x", "y"]}})``."""
    value: Any
    if key_path.endswith("+"):
        key_path = key_path[:-1]
        value = value_text.split(",")
    else:
        value = dotted_value(value_text)
    key, *keys = key_path.split(".")
    nested: dict[str, Any] = {}
    cursor = nested
    for k in keys[:-1]:
        cursor[k] = {}
        cursor = cursor[k]
    cursor[keys[-1]] = value
    return key, nested
