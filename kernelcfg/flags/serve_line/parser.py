"""The ``vllm serve`` argument parser of a release, rebuilt with argparse from its data.

vLLM's ``FlexibleArgumentParser`` is the standard library's argparse plus a
pre-processing pass (:mod:`.preprocess`). This module rebuilds the argparse part from
``releases/serve-X.Y.Z.json`` — every option string, its action, arity, type
(:mod:`.value_types`) and choices, in vLLM's order — so that prefix matching, ambiguity,
``--no-`` forms, arity, types, choices and "unrecognized arguments" decide exactly as
``vllm serve`` does. The options kernelcfg reads itself (:data:`RAW_DESTS`) keep their
raw text, for :mod:`kernelcfg.flags.kernel_flags` to check with kernelcfg's own
messages. A plain line (every option named exactly, values that do not start with
``-``) is read without argparse (:func:`read_plain`), with the same answer.

The parser is built once per release per process.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, NoReturn

from kernelcfg.base.bounded import shown
from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.base.secrets import hidden
from kernelcfg.flags.serve_line.value_types import type_of
from kernelcfg.vllm.releases import Release

__all__ = [
    "MAX_OPTIONS",
    "RAW_DESTS",
    "ServeOptions",
    "options",
    "read_plain",
    "read_with_argparse",
]

RAW_DESTS = frozenset(
    {
        "moe_backend",
        "linear_backend",
        "sparse_indexer_topk_backend",
        "all2all_backend",
        "data_parallel_size",
        "tensor_parallel_size",
        "optimization_level",
        "kernel_config",
        "ir_op_priority",
        "compilation_config",
    }
)
"""Options whose raw text kernelcfg checks itself (same decisions, its own messages)."""


class _RefusedError(Exception):
    """argparse's refusal, caught before it can print or exit."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _RefusedError(message)


# --- actions ----------------------------------------------------------------------


class _Origin(argparse.Action):
    """Every action records where (command line or config file) its value came from."""

    def _mark(self, namespace: argparse.Namespace, token: object) -> None:
        origins: dict[str, str] = namespace.__dict__.setdefault("_origins", {})
        origins[self.dest] = getattr(token, "origin", "flag")


class _Store(_Origin):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        del parser
        setattr(namespace, self.dest, values)
        self._mark(namespace, values if isinstance(values, str) else option_string)
        if self.dest in RAW_DESTS:  # vLLM checks every occurrence, not only the last
            earlier: dict[str, list[Any]] = namespace.__dict__.setdefault("_earlier", {})
            earlier.setdefault(self.dest, []).append(values)


class _Const(_Origin):
    def __init__(self, option_strings: Sequence[str], dest: str, const: Any, **kw: Any):
        super().__init__(option_strings, dest, nargs=0, const=const, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        del parser, values
        setattr(namespace, self.dest, self.const)
        self._mark(namespace, option_string)


class _Boolean(_Origin):
    """``--x`` / ``--no-x`` (and, from vLLM 0.33.0, ``--enable-x`` / ``--disable-x``)."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, negative: frozenset[str], **kw: Any
    ):
        super().__init__(option_strings, dest, nargs=0, **kw)
        self.negative = negative

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        del parser, values
        setattr(namespace, self.dest, option_string not in self.negative)
        self._mark(namespace, option_string)


class _Append(_Origin):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        del parser
        items = list(getattr(namespace, self.dest, None) or [])
        items.append(values)
        setattr(namespace, self.dest, items)
        self._mark(namespace, option_string)


class _Count(_Origin):
    def __init__(self, option_strings: Sequence[str], dest: str, **kw: Any):
        super().__init__(option_strings, dest, nargs=0, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        del parser, values
        setattr(namespace, self.dest, (getattr(namespace, self.dest, None) or 0) + 1)
        self._mark(namespace, option_string)


class _Help(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, **kw: Any):
        super().__init__(option_strings, dest, nargs=0, **kw)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        del parser, namespace, values
        raise _RefusedError(f"{option_string}: vllm serve would print its help and exit, not serve")


_LORA_FIELDS = frozenset({"name", "path", "base_model_name"})


class _Lora(_Origin):
    """``--lora-modules``: ``name=path`` items, or JSON objects of LoRAModulePath."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        modules = []
        for item in values:
            if item in (None, "", "None"):
                continue
            if "=" in item and "," not in item:
                name, path = item.split("=", 1)
                modules.append({"name": name, "path": path})
                continue
            try:
                found = json.loads(item)
            except (ValueError, RecursionError):
                parser.error(f"Invalid JSON format for --lora-modules: {shown(item)}")
            if (
                not isinstance(found, dict)
                or not {"name", "path"} <= set(found)
                or (set(found) - _LORA_FIELDS)
            ):
                parser.error(f"Invalid fields for --lora-modules: {shown(item)}")
            modules.append(found)
        setattr(namespace, self.dest, modules)
        self._mark(namespace, option_string)


# --- the parser -------------------------------------------------------------------


class ServeOptions:
    """One release's ``vllm serve`` options and the argparse parser built from them."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.strings: frozenset[str] = frozenset(s for o in data["options"] for s in o["strings"])
        """Every option string ``vllm serve`` registers in this release."""
        self.by_dest: dict[str, dict[str, Any]] = {o["dest"]: o for o in data["options"]}
        """Each option by its destination (``moe_backend`` …)."""
        self.exact: dict[str, dict[str, Any]] = {
            string: o for o in data["options"] for string in o["strings"]
        }
        """Each option string's option, for the plain-line fast path."""
        self.converters: dict[str, Callable[[str], Any] | None] = {
            o["dest"]: None if o["dest"] in RAW_DESTS else type_of(o.get("type"), o.get("fields"))
            for o in data["options"]
        }
        """Each option's type callable (``None``: kept as text), for argparse and the
        fast path alike."""
        self._parser: _Parser | None = None

    def fields(self, dest: str) -> dict[str, Any] | None:
        """The field names (nested) of a config-dataclass option that refuses unknown
        keys; ``None`` when unknown or not such an option."""
        raw = self.by_dest.get(dest)
        found: dict[str, Any] | None = raw.get("fields") if raw else None
        return found

    def flag(self, dest: str) -> str:
        """The option string messages name ``dest`` by (its first)."""
        raw = self.by_dest.get(dest)
        if raw is None:
            return "--" + dest.replace("_", "-")
        found: str = raw.get("names", raw["strings"])[0]
        return found

    @property
    def parser(self) -> _Parser:
        """The argparse parser (built on first use)."""
        if self._parser is None:
            self._parser = self._build()
        return self._parser

    def _build(self) -> _Parser:
        parser = _Parser(prog=self.data["prog"], add_help=False, allow_abbrev=True)
        for raw in self.data["options"]:
            action = _action(raw, self.converters[raw["dest"]])
            parser._add_action(action)
            action.option_strings = raw.get("names", raw["strings"])
        positional = self.data["positional"]
        parser.add_argument(
            positional["dest"], nargs=positional["nargs"], default=argparse.SUPPRESS
        )
        return parser


def _action(raw: dict[str, Any], convert: Callable[[str], Any] | None) -> argparse.Action:
    kind, dest, strings = raw["action"], raw["dest"], raw["strings"]
    common: dict[str, Any] = {"default": argparse.SUPPRESS}
    if kind in ("store_true", "store_false", "store_const"):
        const = {"store_true": True, "store_false": False}.get(kind, raw.get("const"))
        return _Const(strings, dest, const, **common)
    if kind == "boolean":
        return _Boolean(strings, dest, frozenset(raw.get("negative", ())), **common)
    if kind in ("count", "help"):
        bare: type[argparse.Action] = _Count if kind == "count" else _Help
        return bare(strings, dest, **common)
    kwargs: dict[str, Any] = {
        **common,
        "nargs": raw.get("nargs"),
        "const": raw.get("const"),
        "type": convert,
        "choices": None if dest in RAW_DESTS else raw.get("choices"),
    }
    cls = {"store": _Store, "append": _Append, "lora": _Lora}[kind]
    return cls(strings, dest, **kwargs)


@cache
def options(release: Release) -> ServeOptions:
    """The ``vllm serve`` options of ``release`` (read once per process)."""
    from kernelcfg.vllm.releases import data_file

    return ServeOptions(data_file(f"serve-{release.version}.json"))


# --- a plain line, read without argparse ----------------------------------------


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


# --- argparse --------------------------------------------------------------------


MAX_OPTIONS = 1000
"""The most option words a line read by argparse may hold: argparse looks ahead over
every option at each one (10,000 unknown options took 10 s)."""


def read_with_argparse(serve: ServeOptions, release: Release, tokens: list[str]) -> dict[str, Any]:
    """What argparse, set up as the release's ``vllm serve``, makes of pre-processed
    ``tokens``: the given options by ``dest`` (``_origins`` says where each came from);
    one line on refusal."""
    given = sum(1 for token in tokens if token[:1] == "-")
    if given > MAX_OPTIONS:
        raise ArgumentError(
            f"{given:,} options on one line; kernelcfg reads at most {MAX_OPTIONS:,} where "
            "vllm serve's own parser must read the line (its time grows with their square)"
        )
    try:
        namespace = serve.parser.parse_args(tokens)
    except _RefusedError as exc:
        message = hidden(str(exc), [t for t in tokens if _from_config(t)])
        raise ArgumentError(_explain(serve, release, message), field=_field(message)) from None
    return vars(namespace)


_UNRECOGNIZED = "unrecognized arguments: "


def _from_config(token: str) -> bool:
    """Whether a word is a value read from a ``--config`` file (never shown in a line)."""
    return str(getattr(token, "origin", "")).startswith("config file") and token[:1] != "-"


def _elsewhere(release: Release, name: str) -> str:
    """``; NAME exists in vLLM …`` when other releases have the option, else ``""``."""
    from kernelcfg.vllm import releases

    having = releases.versions_where(
        lambda r: r.version != release.version and name in options(r).strings
    )
    if not having:
        return ""
    return f"; {name} exists in vLLM {', '.join(having)}; you are resolving for {release.version}"


_CHOICE = re.compile(r"^argument (\S+): invalid choice: (.*?) \(choose from (.*)\)$", re.S)


def _field(message: str) -> str | None:
    match = re.match(r"argument (\S+?)[:/]", message)
    if match:
        return match.group(1)
    if message.startswith(_UNRECOGNIZED):
        return message[len(_UNRECOGNIZED) :].split(" ", 1)[0]
    return None


def _explain(serve: ServeOptions, release: Release, message: str) -> str:
    """argparse's refusal, with the closest real option or choice where one is near."""
    first = message.splitlines()[0] if message else message
    where = f"vllm serve {release.version}"
    if first.startswith(_UNRECOGNIZED):
        words = first[len(_UNRECOGNIZED) :].split(" ")
        options_given = [w.split("=", 1)[0] for w in words if w.startswith("-")]
        hint = ""
        if options_given:
            hint = _elsewhere(release, options_given[0])
            near = closest(options_given[0], sorted(s for s in serve.strings if s.startswith("--")))
            if near and not hint:
                hint = f"; did you mean {near!r}?"
        return (
            f"unrecognized arguments: {shown(' '.join(words), 200)} ({where} has no such "
            f"option or takes no more positional words; it exits 2){hint}"
        )
    match = _CHOICE.match(first)
    if match:
        flag, value, allowed = match.groups()
        choices = [c.strip().strip("'") for c in allowed.split(",")]
        near = closest(value.strip("'"), choices)
        hint = f" (did you mean {near!r}?)" if near else ""
        return f"argument {flag}: invalid choice {value}; allowed: {', '.join(choices)}{hint}"
    if "\n" in message:
        return f"{first} ({' '.join(line.strip() for line in message.splitlines()[1:3])})"
    return first
