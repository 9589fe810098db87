#!/usr/bin/env python
"""Dump the exact `vllm serve` argument parser of the installed vLLM as JSON.

Run INSIDE a venv that has vLLM installed (see README.md):

    python dump_serve_parser.py OUT.json

The parser is obtained the way `vllm serve` builds it: vLLM's CLI `main()`
(vllm/entrypoints/cli/main.py) is executed with VLLM_TARGET_DEVICE=cpu and
sys.argv = ["vllm", "serve"]; FlexibleArgumentParser.parse_args is intercepted
once, which hands over the top-level parser; the `serve` subparser is taken
from its _SubParsersAction.

Help texts of config-derived options are only filled in by vLLM when `--help`
is on the command line (arg_utils.NEEDS_HELP); putting `--help` in sys.argv
would also drop `--model`, so a second pass in a child process builds the
parser with NEEDS_HELP forced True (argv unchanged) and only its help strings
are used.  Everything else comes from the plain build.

Output: sorted keys, deterministic ordering (PYTHONHASHSEED is pinned to 0 by
re-exec, memory addresses are masked).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import hashlib
import inspect
import json
import math
import os
import re
import sys
import textwrap
import types

SCRIPT_VERSION = 2

JSON_TIP_MARKERS = ("Should either be a valid JSON string or JSON keys passed individually.",)

# Hand-written descriptions of the lambdas / closures vLLM uses as `type=`,
# keyed by the lambda's normalised source (ast.unparse).  Verified by reading
# the source of every release 0.29.0 - 0.34.0.
LAMBDA_DESCRIPTIONS = {
    "lambda s: s.lower().replace('-', '_')": (
        "lower-cases the value and replaces '-' by '_' (never raises); the "
        "result is then checked against `choices`"
    ),
    "lambda s: [int(device_id) if device_id.isdigit() else device_id for "
    "device_id in (part.strip() for part in s.split(','))]": (
        "splits on ',', strips each part, all-digit parts become int, others "
        "stay str (never raises; '' -> [''])"
    ),
}


DEPRECATION_RE = re.compile(
    r"(?i)\b(?:is|are|been|be|now) deprecated\b|\bdeprecated:|\[deprecated\]"
)


def _pin_hashseed() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


class _Captured(BaseException):
    def __init__(self, parser):
        super().__init__("captured")
        self.parser = parser


def _cpu_platform_for_old_releases():
    """vLLM 0.27.0 and older take the CPU platform only from a CPU build (its version
    string) or macOS, not from VLLM_TARGET_DEVICE=cpu: there the CPU plugin is made to
    answer, as it does from 0.28.0 on."""
    from vllm import platforms

    plugins = getattr(platforms, "builtin_platform_plugins", {})
    cpu = plugins.get("cpu")
    if cpu is not None and cpu() is None:
        plugins["cpu"] = lambda: "vllm.platforms.cpu.CpuPlatform"
        platforms._current_platform = None  # resolved again, as the CPU platform


def capture(force_help: bool = False):
    """Return (top_level_parser, serve_parser, serve_subcommand_instance)."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    _cpu_platform_for_old_releases()
    saved_argv = sys.argv
    sys.argv = ["vllm", "serve"]
    try:
        from vllm.engine import arg_utils
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        if force_help:
            arg_utils.NEEDS_HELP = True
            for name in ("_compute_kwargs", "get_kwargs"):
                fn = getattr(arg_utils, name, None)
                if hasattr(fn, "cache_clear"):
                    fn.cache_clear()

        import vllm.entrypoints.cli.main as cli_main

        orig = FlexibleArgumentParser.parse_args

        def grab(self, *_a, **_k):
            raise _Captured(self)

        FlexibleArgumentParser.parse_args = grab
        try:
            cli_main.main()
        except _Captured as c:
            top = c.parser
        else:  # pragma: no cover
            raise RuntimeError("main() returned without calling parse_args")
        finally:
            FlexibleArgumentParser.parse_args = orig
    finally:
        sys.argv = saved_argv

    sub_action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub_action.choices["serve"]
    from vllm.entrypoints.cli.serve import ServeSubcommand

    return top, serve, ServeSubcommand()


# ---------------------------------------------------------------- helpers
_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")


def _mask(s: str) -> str:
    return _ADDR.sub(" at 0x…", s)


def _qual(obj) -> str:
    mod = getattr(obj, "__module__", None) or "?"
    qn = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", repr(obj))
    return f"{mod}.{qn}"


def _vllm_relpath(path: str | None) -> str | None:
    if not path:
        return None
    i = path.rfind("/vllm/")
    return path[i + 1 :] if i >= 0 else os.path.basename(path)


def _source_location(fn) -> str | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return f"{_vllm_relpath(code.co_filename)}:{code.co_firstlineno}"


def _lambda_source(fn) -> str | None:
    """Normalised source text of a lambda (ast.unparse of the Lambda node)."""
    try:
        lines, _start = inspect.findsource(fn)
    except (OSError, TypeError):
        return None
    code = fn.__code__
    # take the enclosing statement: grow the window until it parses
    first = code.co_firstlineno - 1
    for end in range(first + 1, min(len(lines), first + 40) + 1):
        for begin in range(first, max(-1, first - 40), -1):
            chunk = textwrap.dedent("".join(lines[begin:end]))
            try:
                tree = ast.parse(chunk)
            except SyntaxError:
                continue
            lams = [
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.Lambda) and n.lineno + begin == code.co_firstlineno
            ]
            if len(lams) == 1:
                return ast.unparse(lams[0])
            if len(lams) > 1:
                # several lambdas on one line: match by argument names
                argn = code.co_varnames[: code.co_argcount]
                lams = [lm for lm in lams if tuple(a.arg for a in lm.args.args) == argn]
                if lams:
                    return ast.unparse(lams[0])
    return None


def describe_type(t):
    """Stable, descriptive string for an argparse `type` callable."""
    if t is None:
        return None
    for kind, describe in _DESCRIBERS:
        if isinstance(t, kind):
            return describe(t)
    return f"instance of {_qual(type(t))}" if callable(t) else _mask(repr(t))


def _describe_class(t):
    return t.__name__ if t.__module__ == "builtins" else _qual(t)


def _describe_partial(t):
    parts = [describe_type(t.func)]
    parts += [_describe_value(a) for a in t.args]
    parts += [f"{k}={_describe_value(v)}" for k, v in sorted(t.keywords.items())]
    return f"functools.partial({', '.join(parts)})"


def _describe_method(t):
    return f"{_qual(t.__func__)} (bound to {type(t.__self__).__name__})"


def _describe_function(t):
    """A plain function: a lambda's source, a closure with what it closed over."""
    if t.__name__ == "<lambda>":
        src = _lambda_source(t)
        return src or f"{_qual(t)} (source not found)"
    qn = t.__qualname__
    closure, dflt = {}, {}
    with contextlib.suppress(TypeError, ValueError):
        closure.update(inspect.getclosurevars(t).nonlocals)
    if t.__defaults__:
        names = t.__code__.co_varnames[: t.__code__.co_argcount]
        for n, d in zip(names[-len(t.__defaults__) :], t.__defaults__, strict=True):
            dflt[n] = d
    if t.__kwdefaults__:
        dflt.update(t.__kwdefaults__)
    if "<locals>" in qn and closure:
        outer = qn.split(".<locals>.")[0]
        factory = getattr(sys.modules.get(t.__module__), outer, None)
        if factory is not None and "." not in outer:
            try:
                params = list(inspect.signature(factory).parameters)
            except (TypeError, ValueError):
                params = []
            if params and set(closure) <= set(params):
                args = ", ".join(describe_value_bound(closure[p]) for p in params if p in closure)
                return f"{t.__module__}.{outer}({args})"
    if "<locals>" in qn:
        bound = {**closure, **dflt}
        args = ", ".join(f"{k}={describe_value_bound(v)}" for k, v in sorted(bound.items()))
        return f"{t.__module__}.<locals>.{t.__name__}({args})"
    return f"{t.__module__}.{qn}"


_DESCRIBERS = (
    (type, _describe_class),
    (functools.partial, _describe_partial),
    (types.MethodType, _describe_method),
    (types.BuiltinFunctionType, _qual),
    (types.FunctionType, _describe_function),
)
"""How each kind of ``type`` callable is described, tried in this order."""


def describe_value_bound(v):
    if callable(v):
        return describe_type(v)
    return _describe_value(v)


def _describe_value(v):
    if isinstance(v, type) or callable(v):
        return describe_type(v)
    return _mask(repr(v))


def _lambda_or_closure_info(t):
    """Extra info for lambdas / closures: source location and description."""
    out = {}
    fn = t
    if isinstance(t, functools.partial):
        fn = t.func
    if isinstance(fn, types.FunctionType) and (
        fn.__name__ == "<lambda>" or "<locals>" in fn.__qualname__
    ):
        out["type_source_location"] = _source_location(fn)
        if fn.__name__ == "<lambda>":
            src = _lambda_source(fn)
            out["type_description"] = LAMBDA_DESCRIPTIONS.get(
                src, "UNDESCRIBED lambda - read the source location"
            )
    return out


def _uses_json(t, depth=0) -> bool:
    """Does the type callable (transitively) decode JSON?"""
    if t is None or depth > 5:
        return False
    if t is json.loads:
        return True
    if isinstance(t, functools.partial):
        return _uses_json(t.func, depth + 1) or any(_uses_json(a, depth + 1) for a in t.args)
    if isinstance(t, types.FunctionType):
        return _function_uses_json(t, depth)
    return False


def _function_uses_json(t, depth):
    if t.__name__ in ("parse_dataclass", "union_dict_and_str"):
        return True
    try:
        cv = inspect.getclosurevars(t)
    except (TypeError, ValueError):
        return False
    vals = list(cv.nonlocals.values())
    if t.__defaults__:
        vals += list(t.__defaults__)
    return any(
        v is json.loads
        or (callable(v) and _uses_json(v, depth + 1))
        or (isinstance(v, type) and _is_config_class(v))
        for v in vals
    )


def _dataclass_of(t, depth=0):
    """The config dataclass a parse_dataclass type (maybe inside optional_type) builds."""
    if t is None or depth > 4 or not isinstance(t, types.FunctionType):
        return None
    try:
        nonlocals = dict(inspect.getclosurevars(t).nonlocals)
    except (TypeError, ValueError):
        nonlocals = {}
    if t.__defaults__:
        names = t.__code__.co_varnames[: t.__code__.co_argcount]
        nonlocals.update(zip(names[-len(t.__defaults__) :], t.__defaults__, strict=True))
    nonlocals.update(t.__kwdefaults__ or {})
    if t.__name__ == "parse_dataclass":
        cls = nonlocals.get("cls")
        return cls if isinstance(cls, type) else None
    for value in nonlocals.values():
        found = _dataclass_of(value, depth + 1)
        if found is not None:
            return found
    return None


def _forbids_extra(cls) -> bool:
    config = getattr(cls, "__pydantic_config__", None) or {}
    return config.get("extra") == "forbid"


def _dataclass_fields(cls, depth=0):
    """The field names of a config dataclass that refuses unknown keys, nested for
    fields that are such dataclasses themselves; None where unknown keys pass."""
    import dataclasses
    import typing

    if cls is None or depth > 4 or not dataclasses.is_dataclass(cls) or not _forbids_extra(cls):
        return None
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable annotations: names only
        hints = {}
    out = {}
    for field in dataclasses.fields(cls):
        kind = hints.get(field.name)
        inner = [a for a in typing.get_args(kind) if a is not type(None)] if kind else []
        target = kind if isinstance(kind, type) else (inner[0] if len(inner) == 1 else None)
        sub = _dataclass_fields(target, depth + 1) if isinstance(target, type) else None
        out[field.name] = sub
    return out


def _is_config_class(c) -> bool:
    import dataclasses

    return dataclasses.is_dataclass(c) or hasattr(c, "model_validate_json")


def _jsonable(v):
    """(value, is_repr) - JSON value if exactly representable, else repr."""

    def ok(x):
        if x is None or isinstance(x, (bool, str)):
            return True
        if isinstance(x, int) and not isinstance(x, bool):
            return type(x) is int
        if isinstance(x, float):
            return type(x) is float and not math.isnan(x) and x not in (float("inf"), float("-inf"))
        if type(x) is list:
            return all(ok(i) for i in x)
        if type(x) is dict:
            return all(type(k) is str and ok(i) for k, i in x.items())
        return False

    if ok(v):
        return v, False
    if isinstance(v, (set, frozenset)):
        try:
            return _mask(f"{type(v).__name__}({sorted(v)!r})"), True
        except TypeError:
            pass
    return _mask(repr(v)), True


def _choice_str(c):
    if c is None or isinstance(c, (bool, int, float, str)):
        return c
    return _mask(repr(c))


def _argparse_base(cls) -> str:
    for k in cls.__mro__:
        if k.__module__ == "argparse":
            return k.__name__
    return "?"


def _help_first_line(h):
    if h is None:
        return None
    if h == argparse.SUPPRESS:
        return "==SUPPRESS=="
    # first paragraph, whitespace collapsed to one line (vLLM's own
    # summary_line rule); docstring help texts wrap mid-sentence, so the
    # literal first line is often a fragment.
    s = h.strip().split("\n\n", 1)[0]
    return " ".join(s.split())


def _groups_of(parser):
    g = {}
    for grp in parser._action_groups:
        for a in grp._group_actions:
            g[id(a)] = grp.title
    return g


def _registered_strings(parser):
    per = {}
    for s, a in parser._option_string_actions.items():
        per.setdefault(id(a), []).append(s)
    return per


def _action_key(a):
    return (a.dest, tuple(a.option_strings))


def describe_action(a, parser, groups, regs, help_lookup):
    t = a.type
    ent = {
        "dest": a.dest,
        "option_strings": regs.get(id(a), list(a.option_strings)),
        "visible_option_strings": list(a.option_strings),
        "action": type(a).__name__,
        "action_module": type(a).__module__,
        "action_argparse_base": _argparse_base(type(a)),
        "nargs": a.nargs,
        "const": _jsonable(a.const)[0],
        "type": describe_type(t),
        "type_qualname": (_qual(t) if isinstance(t, (types.FunctionType, type)) else None),
        "choices": None,
        "choices_container": None,
        "required": bool(a.required),
        "metavar": list(a.metavar) if isinstance(a.metavar, tuple) else a.metavar,
        "group": groups.get(id(a)),
    }
    # option strings that store False.  EnableDisableAction (0.33+) keeps its
    # own set (--no-enable-x, --disable-x, ...); plain BooleanOptionalAction
    # (argparse 3.11) stores `not option_string.startswith('--no-')`.
    neg = getattr(a, "negative_option_strings", None)
    if neg is not None:
        ent["negative_option_strings"] = sorted(neg)
    elif isinstance(a, argparse.BooleanOptionalAction):
        ent["negative_option_strings"] = sorted(
            o for o in ent["option_strings"] if o.startswith("--no-")
        )
    else:
        ent["negative_option_strings"] = None
    ent.update(_lambda_or_closure_info(t))
    if a.choices is not None:
        ent["choices_container"] = type(a.choices).__name__
        try:
            ent["choices"] = [_choice_str(c) for c in a.choices]
        except TypeError:
            ent["choices"] = _mask(repr(a.choices))
    d, is_repr = _jsonable(a.default)
    ent["default"] = d
    ent["default_is_repr"] = is_repr
    ent["default_type"] = type(a.default).__name__
    h = a.help
    full_help = help_lookup.get(_action_key(a), h)
    ent["help"] = _help_first_line(full_help)
    dep_attr = getattr(a, "deprecated", None)  # argparse >= 3.13
    dep_set = a in getattr(parser, "_deprecated", ())
    ent["deprecated"] = bool(dep_attr) or dep_set
    m = DEPRECATION_RE.search(full_help or "")
    ent["deprecated_in_help"] = bool(m)
    if m:
        sentences = re.split(r"(?<=[.!?])\s+", " ".join((full_help or "").split()))
        ent["deprecation_note"] = next(
            (x for x in sentences if DEPRECATION_RE.search(x)), m.group(0)
        )
    ent["json_tip_in_help"] = any(m in (h or "") for m in JSON_TIP_MARKERS)
    uses_json = _uses_json(t)
    # LoRAParserAction decodes JSON itself (items that are not name=path)
    action_json = type(a).__name__ == "LoRAParserAction"
    ent["type_decodes_json"] = uses_json
    ent["takes_json"] = bool(uses_json or action_json)
    ent["dataclass_fields"] = _dataclass_fields(_dataclass_of(a.type))
    ent["dotted_probe"] = _dotted_probe(a)
    return ent


def _dotted_probe(a):
    """What happens to `--opt.k v`: FlexibleArgumentParser rewrites it (for
    ANY option) into `--opt '{"k": v}'`.  Probe what this option does with
    the JSON object text '{}'."""
    if a.nargs == 0:
        return "no-value: the JSON text becomes a stray positional"
    t = a.type
    text = "{}"
    try:
        v = t(text) if t is not None else text
    except Exception as e:
        return f"type refuses: {type(e).__name__}"
    if a.choices is not None:
        try:
            inside = v in a.choices
        except TypeError:
            inside = False
        if not inside:
            return f"type gives {type(v).__name__}, refused by choices"
    return f"accepted as {type(v).__name__}"


def dump(force_help_lookup):
    import importlib.metadata

    top, serve, cmd = capture()
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    groups = _groups_of(serve)
    regs = _registered_strings(serve)

    options, positionals = [], []
    for a in serve._actions:
        ent = describe_action(a, serve, groups, regs, force_help_lookup)
        (options if a.option_strings else positionals).append(ent)

    def pinfo(p):
        return {
            "class": type(p).__name__,
            "class_module": type(p).__module__,
            "prog": p.prog,
            "usage": p.usage,
            "allow_abbrev": p.allow_abbrev,
            "prefix_chars": p.prefix_chars,
            "fromfile_prefix_chars": p.fromfile_prefix_chars,
            "exit_on_error": getattr(p, "exit_on_error", None),
            "add_help": p.add_help,
            "conflict_handler": p.conflict_handler,
            "argument_default": p.argument_default,
            "formatter_class": _qual(p.formatter_class),
            "action_registry_overrides": {
                str(k): _qual(v)
                for k, v in sorted(
                    ((k, v) for k, v in p._registries["action"].items()),
                    key=lambda kv: str(kv[0]),
                )
                # keep only non-argparse entries (argparse's own registry maps
                # None/'store'/... to its classes)
                if not (isinstance(v, type) and v.__module__ == "argparse")
            },
        }

    overridden = sorted(
        n
        for n, v in vars(FlexibleArgumentParser).items()
        if callable(v) and hasattr(argparse.ArgumentParser, n)
    )
    added = sorted(
        n
        for n, v in vars(FlexibleArgumentParser).items()
        if (callable(v) or isinstance(v, (staticmethod, classmethod)))
        and not hasattr(argparse.ArgumentParser, n)
        and not n.startswith("__")
    )
    src = inspect.getsource(FlexibleArgumentParser)
    pa_src = inspect.getsource(FlexibleArgumentParser.parse_args)

    sub_action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    parser_doc = pinfo(serve)
    parser_doc.update(
        {
            "flexible_overrides": overridden,
            "flexible_added_methods": added,
            "flexible_source_sha256": hashlib.sha256(src.encode()).hexdigest(),
            "flexible_parse_args_sha256": hashlib.sha256(pa_src.encode()).hexdigest(),
            "flexible_source_location": _vllm_relpath(
                inspect.getsourcefile(FlexibleArgumentParser)
            ),
            "flexible_notes": _flexible_notes(pa_src, src),
            "deprecated_mechanism": (
                "Python < 3.13: FlexibleArgumentParser.add_argument pops "
                "`deprecated=` and keeps the action in parser._deprecated; "
                "parse_known_args logs \"argument '<dest>' is deprecated\" "
                "(warning_once) when the parsed value != default. No parse "
                "failure."
                if sys.version_info < (3, 13)
                else "native argparse `deprecated`"
            ),
            "top_level": pinfo(top),
            "subcommands": sorted(sub_action.choices),
            "serve_validate": _qual(type(cmd).validate),
        }
    )

    return {
        "script_version": SCRIPT_VERSION,
        "vllm_version": importlib.metadata.version("vllm"),
        "python_version": ".".join(map(str, sys.version_info[:3])),
        "platform": _platform_name(),
        "env": {"VLLM_TARGET_DEVICE": os.environ.get("VLLM_TARGET_DEVICE")},
        "parser": parser_doc,
        "options": options,
        "positionals": positionals,
        "mutually_exclusive_groups": [
            {
                "required": g.required,
                "dests": [a.dest for a in g._group_actions],
                "option_strings": [list(a.option_strings) for a in g._group_actions],
            }
            for g in serve._mutually_exclusive_groups
        ],
        "counts": {
            "actions": len(serve._actions),
            "options": len(options),
            "positionals": len(positionals),
            "option_strings": len(serve._option_string_actions),
            "takes_json": sum(o["takes_json"] for o in options),
        },
        "takes_json_rule": (
            "FlexibleArgumentParser.parse_args rewrites EVERY argv token that "
            "starts with '-' and contains '.' in its key (`--a.b.c v`, "
            "`--a.b=v`, `-cc.x=v`, `--a.l+ v1,v2`) into `--a '<json object>'` "
            "appended at the end of argv, without looking at the option. "
            "It only works for options whose `type` decodes a JSON object: "
            "parse_dataclass (config dataclass fields), parse_type(json.loads), "
            "optional_type(json.loads), union_dict_and_str, json.loads "
            "(takes_json=true; LoRAParserAction also decodes JSON items). "
            "For other options the JSON text reaches their type as a string "
            "(see dotted_probe)."
        ),
    }


def _platform_name():
    try:
        from vllm.platforms import current_platform

        return type(current_platform).__name__
    except Exception as e:
        return f"error: {e!r}"


def _flexible_notes(pa_src: str, src: str) -> list[str]:
    notes = []

    def has(s):
        return s in pa_src

    notes.append(
        "parse_args pre-processes argv of the TOP-LEVEL parser only (the serve "
        "subparser is reached through _SubParsersAction -> parse_known_args, "
        "which is not pre-processed again)."
    )
    if has('"--model"') or has("--model(=") or has("^--model"):
        notes.append(
            "`serve`: the first `--model X` / `--model=X` is removed and X moved "
            "to the model position (right after 'serve'); a warning is logged."
        )
    if "served[-_]model[-_]name" in pa_src:
        notes.append(
            "`serve`: if args[1] starts with '-', no --config token and a "
            "--served-model-name/--served_model_name token is present -> "
            "ValueError (model must be first positional)."
        )
    if has('"--config" in args'):
        notes.append(
            "`--config FILE` (exact token, not --config=FILE) is expanded "
            "from YAML by _pull_args_from_config before anything else."
        )
    if has("_search_keyword") or has("--help="):
        notes.append("`--help=KEY` becomes `--help` with a search keyword.")
    if has('replace("_", "-")'):
        notes.append(
            "In every token starting with '--', '_' -> '-' in the key part "
            "(up to the first '.' and before '='), also after a bare '--'."
        )
    if has('"-O"') or has("-O"):
        notes.append(
            "`-O<x>` / `-O=<x>` -> `--optimization-level <x>`; a bare `-O` "
            "followed by 0/1/2/3 -> `--optimization-level`."
        )
    if has("json.loads(value_str)"):
        notes.append(
            "Dotted keys: any token starting with '-' whose key contains '.' "
            "is removed (with its value token when no '=') and merged into a "
            "nested dict per base option, re-appended at the END of argv as "
            "`--opt '<json>'`. value: json.loads, else "
            + ("human_readable_int, else " if "human_readable_int(value_str)" in pa_src else "")
            + "the raw string. A trailing '+' on the key appends "
            "value.split(',') to a list."
        )
    if "error(self, message" in src and "--task" in src:
        notes.append(
            "error(): for `vllm serve` an 'unrecognized arguments:' message "
            "mentioning --task gets a Hint paragraph appended."
        )
    if "EnableDisableAction" in src:
        notes.append(
            "BooleanOptionalAction is registered to EnableDisableAction: "
            "--enable-x also gets --disable-x (and --no-enable-x / "
            "--no-disable-x stay registered but hidden from help)."
        )
    if "deprecated" in src:
        notes.append("add_argument(deprecated=...) emulated on Python < 3.13 (warning only).")
    return notes


def _help_pass():
    """Child process: build with NEEDS_HELP forced, print help texts."""
    _top, serve, _cmd = capture(force_help=True)
    out = []
    for a in serve._actions:
        out.append([a.dest, list(a.option_strings), a.help])
    sys.stdout.write("\n@@HELP@@" + json.dumps(out))


def main():
    _pin_hashseed()
    if len(sys.argv) >= 2 and sys.argv[1] == "--help-pass":
        _help_pass()
        return
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    import subprocess

    r = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--help-pass"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="0"),
        check=False,
    )
    if r.returncode != 0 or "@@HELP@@" not in r.stdout:
        sys.stderr.write(r.stderr[-5000:])
        raise SystemExit("help pass failed")
    helps = json.loads(r.stdout.split("@@HELP@@", 1)[1])
    lookup = {(d, tuple(o)): h for d, o, h in helps}
    doc = dump(lookup)
    # sanity: the help build has the same actions
    plain = {
        (o["dest"], tuple(o["visible_option_strings"])) for o in doc["options"] + doc["positionals"]
    }
    if plain != set(lookup):
        doc["help_pass_mismatch"] = sorted(map(str, plain.symmetric_difference(set(lookup))))
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
