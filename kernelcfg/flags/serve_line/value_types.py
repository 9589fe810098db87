"""vLLM's type callables of ``vllm serve`` options, rebuilt: the same accept and refuse
decisions (``8k``, ``auto``, JSON objects, a config dataclass's known keys), named in
``serve-X.Y.Z.json`` by a type code (:func:`type_of`).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

from kernelcfg.base.bounded import shown
from kernelcfg.base.errors import closest

__all__ = [
    "device_ids",
    "expand_human_numbers",
    "human_readable_int",
    "human_readable_int_or_auto",
    "lower_dash",
    "reasoning_parser",
    "type_of",
    "union_dict_and_str",
    "unknown_key",
]

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")


_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(value: str) -> int:
    """``8k`` is 8000, ``8K`` 8192; a decimal with a binary suffix is refused."""
    value = value.strip()
    match = _HUMAN.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        try:
            return int(number) * _BINARY[suffix]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Decimals are not allowed with binary suffixes like {suffix}. Did you mean "
                f"to use {number}{suffix.lower()} instead?"
            ) from None
    return int(value)


def human_readable_int_or_auto(value: str) -> int:
    """As :func:`human_readable_int`, plus ``-1`` or ``auto`` (any case) for -1."""
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)


def _parse_type(inner: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse_type(value: str) -> Any:
        try:
            return inner(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"Value {value} cannot be converted to {getattr(inner, '__name__', inner)}."
            ) from None

    return parse_type


def _optional_type(inner: Callable[[str], Any]) -> Callable[[str], Any]:
    parse = _parse_type(inner)

    def optional_type(value: str) -> Any:
        if value in ("", "None"):
            return None
        return parse(value)

    return optional_type


_OBJECT = re.compile(r"(?s)^\s*{.*}\s*$")


def union_dict_and_str(value: str) -> Any:
    """A JSON object when the text looks like one, else the text itself."""
    if not _OBJECT.match(value):
        return value
    return _optional_type(json.loads)(value)


def reasoning_parser(value: str) -> str:
    """``none`` in any case means no reasoning parser."""
    return "" if value.lower() == "none" else value


def lower_dash(value: str) -> str:
    """vLLM's backend spelling rule: lower case, ``-`` to ``_``."""
    return value.lower().replace("-", "_")


def device_ids(value: str) -> list[int | str]:
    """Comma-separated ids; all-digit ones become integers."""
    parts = (p.strip() for p in value.split(","))
    return [int(p) if p.isdigit() else p for p in parts]


_HUMAN_IN_JSON = re.compile(r'"(?:[^"\\]|\\.)*"|\b(\d+(?:\.\d+)?[kKmMgGtT])\b')


def expand_human_numbers(text: str) -> str:
    """Unquoted ``8k``/``1K`` tokens of JSON text as integers, as vLLM's config
    options read them before validation."""

    def one(match: re.Match[str]) -> str:
        token = match.group(1)
        return match.group(0) if token is None else str(human_readable_int(token))

    return _HUMAN_IN_JSON.sub(one, text)


def unknown_key(value: dict[str, Any], fields: dict[str, Any], path: str = "") -> str | None:
    """The first key of ``value`` (nested where the fields are known) that the config
    dataclass does not have, with the closest field; ``None`` when all are known."""
    for key, item in value.items():
        if key not in fields:
            near = closest(str(key), list(fields))
            hint = f" (did you mean {near!r}?)" if near else ""
            return f"{path + str(key)!r} is not a field of it{hint}"
        sub = fields[key]
        if isinstance(sub, dict) and isinstance(item, dict):
            found = unknown_key(item, sub, f"{path}{key}.")
            if found:
                return found
    return None


def _dataclass(fields: dict[str, Any] | None) -> Callable[[str], dict[str, Any]]:
    """A config-dataclass option: a JSON object whose keys the dataclass has (its values
    are vLLM's to check)."""

    def parse_dataclass(value: str) -> dict[str, Any]:
        try:
            found = json.loads(expand_human_numbers(value))
        except (ValueError, RecursionError):
            raise argparse.ArgumentTypeError(f"invalid JSON: {shown(value)}") from None
        if not isinstance(found, dict):
            raise argparse.ArgumentTypeError(f"expected a JSON object, got {shown(value)}")
        problem = unknown_key(found, fields) if fields is not None else None
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return found

    return parse_dataclass


_BASE_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "json": json.loads,
    "human_readable_int": human_readable_int,
    "human_readable_int_or_auto": human_readable_int_or_auto,
    "union_dict_and_str": union_dict_and_str,
    "reasoning_parser": reasoning_parser,
    "lower_dash": lower_dash,
    "device_ids": device_ids,
}


def type_of(code: str | None, fields: dict[str, Any] | None = None) -> Callable[[str], Any] | None:
    if code is None:
        return None
    if code.startswith("optional:"):
        inner = type_of(code.removeprefix("optional:"), fields)
        assert inner is not None
        return _optional_type(inner)
    if code.startswith("parse:"):
        inner = type_of(code.removeprefix("parse:"), fields)
        assert inner is not None
        return _parse_type(inner)
    if code.startswith("dataclass:"):
        return _dataclass(fields)
    return _BASE_TYPES[code]
