"""Write kernelcfg's env-factor data for one vLLM release, from that release's wheel.

vLLM hashes its environment into the compile-cache key with ``envs.compile_factors()``:
every variable of ``environment_variables`` (``vllm/envs.py``), read by its own parser,
defaults included, minus the ``ignored_factors`` set, plus the ``RAY_EXPERIMENTAL_NOSET_*``
variables as read. This script reads ``vllm/envs.py`` with ``ast`` (vLLM is never
imported) and writes ``kernelcfg/vllm/releases/env-X.Y.Z.json``: each variable's parser
kind (the closed set :data:`kernelcfg.vllm.compile_cache.env.KINDS`), its default, choices and
the ignored set, and the release's torch pin (``Requires-Dist: torch==``).

A parser the classifier cannot read mechanically is taken from :data:`OVERRIDES`, each
entry with the vLLM source it stands for; the script stops when that source changed.

Usage::

    pip download --no-deps -d /tmp/w vllm==0.34.0
    python scripts/release/compile_env.py /tmp/w/vllm-0.34.0-*.whl
    python scripts/release/compile_env.py WHEEL --check   # exit 1 when the file would change
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wheel_source import RELEASES_DIR, Source, version_of, write_or_check

from kernelcfg.vllm.compile_cache import env as compile_env
from kernelcfg.vllm.kernel_config.hashing import normalize_value

FORMAT = 1
ENVS = "vllm/envs.py"

_AOT = {"torch_at_least": "2.10.0"}
_NO_CACHE_OFF = {"not": {"var": "VLLM_DISABLE_COMPILE_CACHE"}}

OVERRIDES: dict[str, dict[str, Any]] = {
    # Named functions of vllm/envs.py, and lambdas whose default or reading the
    # classifier does not read. "source" is vLLM's text (ast.unparse of the value, or
    # of the named function's body for a function): the script stops when it changed.
    "VLLM_USE_AOT_COMPILE": {
        "source": "use_aot_compile",
        "function": (
            "default_value = '1' if is_torch_equal_or_newer('2.10.0') and (not "
            "disable_compile_cache()) else '0'\n"
            "return os.environ.get('VLLM_USE_AOT_COMPILE', default_value) == '1'"
        ),
        "entry": {
            "kind": "bool_eq",
            "value": "1",
            "default": False,
            "default_when": {"if": {"all": [_AOT, _NO_CACHE_OFF]}, "then": True},
        },
    },
    "VLLM_USE_MEGA_AOT_ARTIFACT": {
        "source": "use_mega_aot_artifact",
        "function": (
            "default_value = '1' if is_torch_equal_or_newer('2.12.0.dev') and "
            "use_aot_compile() else '0'\n"
            "return os.environ.get('VLLM_USE_MEGA_AOT_ARTIFACT', default_value) == '1'"
        ),
        "entry": {
            "kind": "bool_eq",
            "value": "1",
            "default": False,
            "default_when": {
                "if": {"all": [{"torch_at_least": "2.12.0.dev"}, {"var": "VLLM_USE_AOT_COMPILE"}]},
                "then": True,
            },
        },
    },
    "VLLM_COMPILE_ON_ONE_RANK": {
        "source": "compile_on_one_rank",
        "function": (
            "if not is_torch_equal_or_newer('2.14.0.dev'):\n    return False\n"
            "if not (current_platform.is_cuda_alike() or current_platform.is_xpu()):\n"
            "    return False\n"
            "return os.environ.get('VLLM_COMPILE_ON_ONE_RANK', '0') == '1'"
        ),
        "entry": {
            "kind": "bool_eq",
            "value": "1",
            "default": False,
            "only_when": {
                "all": [{"torch_at_least": "2.14.0.dev"}, {"platform_in": ["cuda", "rocm", "xpu"]}]
            },
        },
    },
    "VLLM_DISABLE_COMPILE_CACHE": {
        "source": "disable_compile_cache",
        "function": "return bool(int(os.getenv('VLLM_DISABLE_COMPILE_CACHE', '0')))",
        "entry": {"kind": "bool_int", "default": False},
    },
    "VLLM_PORT": {
        "source": "get_vllm_port",
        "entry": {"kind": "int", "default": None},
        "note": "int(value) when set (a URI is refused with its own message)",
    },
    "VLLM_DBO_COMM_SMS": {
        "source": (
            "lambda: int(os.getenv('VLLM_DBO_COMM_SMS', '64' if hasattr(__import__('torch')"
            ".version, 'hip') and __import__('torch').version.hip is not None else '20'))"
        ),
        "entry": {
            "kind": "int",
            "default": 20,
            "default_when": {"if": {"rocm_torch": True}, "then": 64},
        },
    },
    "VLLM_DP_RANK_LOCAL": {
        "source": (
            "lambda: int(os.getenv('VLLM_DP_RANK_LOCAL', sys.modules[__name__].VLLM_DP_RANK))"
        ),
        "entry": {"kind": "int", "default_var": "VLLM_DP_RANK"},
    },
    "VLLM_COMPUTE_NANS_IN_LOGITS": {
        "source": (
            "lambda: bool(int(os.getenv('VLLM_COMPUTE_NANS_IN_LOGITS', '0')) or "
            "int(os.getenv('VLLM_RAISE_ON_LOGIT_NANS', '0')))"
        ),
        "entry": {"kind": "bool_int", "default": False, "or_int": "VLLM_RAISE_ON_LOGIT_NANS"},
    },
    "VLLM_USE_PRECOMPILED": {
        "source": (
            "lambda: os.environ.get('VLLM_USE_PRECOMPILED', '').strip().lower() in "
            "('1', 'true') or bool(os.environ.get('VLLM_PRECOMPILED_WHEEL_LOCATION'))"
        ),
        "entry": {
            "kind": "bool_in",
            "strip": True,
            "lower": True,
            "values": ["1", "true"],
            "default": False,
            "or_nonempty": "VLLM_PRECOMPILED_WHEEL_LOCATION",
        },
    },
    "VLLM_RUST_FRONTEND_PATH": {
        "source": "lambda: _resolve_rust_cli_path()",
        "entry": {"kind": "rust_cli_path", "default": None},
        "note": "None unless VLLM_USE_RUST_FRONTEND or VLLM_USE_RUST_BENCH; 'auto' is the "
        "vllm-rs binary inside the installed vllm package",
        "older": [
            {
                # 0.26.0: _resolve_rust_frontend_path, switched on by the frontend only
                "source": "lambda: _resolve_rust_frontend_path()",
                "entry": {
                    "kind": "rust_cli_path",
                    "default": None,
                    "switches": ["VLLM_USE_RUST_FRONTEND"],
                },
            }
        ],
    },
    "VLLM_RPC_BASE_PATH": {
        "source": "lambda: os.getenv('VLLM_RPC_BASE_PATH', tempfile.gettempdir())",
        "entry": {"kind": "str", "default_from": "tempdir"},
    },
    "VLLM_DO_NOT_TRACK": {
        "source": (
            "lambda: (os.environ.get('VLLM_DO_NOT_TRACK', None) or "
            "os.environ.get('DO_NOT_TRACK', None) or '0') == '1'"
        ),
        "entry": {"kind": "bool_eq", "value": "1", "default": False, "or_var": "DO_NOT_TRACK"},
    },
    "VLLM_LOG_STATS_INTERVAL": {
        "source": (
            "lambda: val if (val := float(os.getenv('VLLM_LOG_STATS_INTERVAL', '10.'))) "
            "> 0.0 else 10.0"
        ),
        "entry": {"kind": "float", "default": 10.0, "positive_or": 10.0},
    },
    "VLLM_MAX_AUDIO_PREPROCESS_WORKERS": {
        "source": (
            "lambda: int(os.getenv('VLLM_MAX_AUDIO_PREPROCESS_WORKERS', "
            "str(max(1, min(os.cpu_count() or 1, 2)))))"
        ),
        "entry": {"kind": "int", "default_from": "cpu_count_up_to_2"},
    },
    "VLLM_TRITON_ATTN_USE_TD": {
        # 0.28.0 and older: the renamed variable stays registered; its parser warns
        # when it is set and returns None (a map that matches nothing: always None)
        "source": "lambda: _deprecated_triton_attn_use_td()",
        "entry": {"kind": "map", "mapping": {}, "strip": False, "default": None},
        "note": "renamed to VLLM_TRITON_USE_TD: a warning when set, the value always None",
    },
    "VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME": {
        "source": None,  # a generated name; its factory changed between releases
        "entry": {"kind": "str", "default_from": "generated"},
    },
}
"""Parsers read by hand, each with the vLLM source it was read from."""

_PATH_ROOTS = {"get_default_cache_root": "cache", "get_default_config_root": "config"}


class UnclassifiedError(Exception):
    """A parser shape the classifier does not know (add it, or an override)."""


def _const(node: ast.expr) -> Any:
    """A literal, or the few constant expressions vLLM writes (``str(256 * 1024)``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return str(_const(node.args[0]))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _const(node.left) * _const(node.right)
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise UnclassifiedError(ast.unparse(node)) from exc


def _is_dict(node: ast.expr) -> bool:
    return isinstance(node, ast.Dict)


def _is_environ(node: ast.expr) -> bool:
    return ast.unparse(node) == "os.environ"


def _reader(node: ast.expr) -> tuple[str, ast.expr | None] | None:
    """``os.getenv(N[, D])``, ``os.environ.get(N[, D])`` or ``os.environ[N]``."""
    if isinstance(node, ast.Subscript) and _is_environ(node.value):
        return _const(node.slice), None
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("os.getenv", "os.environ.get"):
        default = node.args[1] if len(node.args) > 1 else None
        return _const(node.args[0]), default
    return None


_METHODS = {"strip", "lower", "upper"}
_WRAPPERS = {
    "int": ["int"],
    "float": ["float"],
    "bool": ["bool"],
    "maybe_convert_int": ["int?"],
    "maybe_convert_bool": ["int?", "bool?"],
    "maybe_convert_json_str_or_file": ["json"],
    "json.loads": ["json_loads"],
}


def _call_step(node: ast.Call) -> tuple[ast.expr, list[Any]] | None:
    """A call on a read value: the inner expression and the steps it adds."""
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr in _METHODS and not node.args:
            return func.value, [func.attr]
        if func.attr == "split":
            return func.value, [["split", _const(node.args[0])]]
        if func.attr == "get" and _is_dict(func.value):
            return node.args[0], [["map", _const(func.value)]]
    dotted = ast.unparse(func)
    if dotted in _WRAPPERS:
        return node.args[0], list(_WRAPPERS[dotted])
    if dotted == "os.path.expanduser":
        return node.args[0], ["expanduser"]
    return None


def _pipeline(node: ast.expr) -> tuple[str, ast.expr | None, list[Any]]:
    """The variable read, its default expression, and the operations on the string."""
    found = _reader(node)
    if found is not None:
        return found[0], found[1], []
    step = _call_step(node) if isinstance(node, ast.Call) else None
    if step is not None:
        name, default, ops = _pipeline(step[0])
        return name, default, [*ops, *step[1]]
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(node)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
        name, default, ops = _pipeline(node.values[0])
        return name, default, [*ops, ["or", _const(node.values[1])]]
    if isinstance(node, ast.ListComp):
        return _split_strip(node)
    raise UnclassifiedError(ast.unparse(node))


def _compare(node: ast.Compare) -> tuple[str, ast.expr | None, list[Any]]:
    op, right = node.ops[0], node.comparators[0]
    if isinstance(op, ast.In) and isinstance(node.left, ast.Constant):
        name, default, ops = _pipeline(right)
        return name, default, [*ops, ["contains", node.left.value]]
    name, default, ops = _pipeline(node.left)
    word = {ast.In: "in", ast.Eq: "eq", ast.NotEq: "ne"}.get(type(op))
    if word is None:
        raise UnclassifiedError(ast.unparse(node))
    value = _const(right)
    return name, default, [*ops, [word, list(value) if word == "in" else value]]


def _split_strip(node: ast.ListComp) -> tuple[str, ast.expr | None, list[Any]]:
    text = ast.unparse(node)
    match = re.fullmatch(r"\[v\.strip\(\) for v in (.+)\.split\('(.)'\) if v\.strip\(\)\]", text)
    if not match:
        raise UnclassifiedError(text)
    inner = node.generators[0].iter
    assert isinstance(inner, ast.Call)
    assert isinstance(inner.func, ast.Attribute)
    name, default, ops = _pipeline(inner.func.value)
    return name, default, [*ops, ["split_strip", match.group(2)]]


def _kind(ops: list[Any]) -> dict[str, Any]:
    """A pipeline of string operations as one of kernelcfg's parser kinds."""
    words = [op if isinstance(op, str) else op[0] for op in ops]
    params = {op[0]: op[1] for op in ops if not isinstance(op, str)}
    shape = " ".join(words)
    flags = {"strip": "strip" in words, "lower": "lower" in words}
    table: dict[str, dict[str, Any]] = {
        "": {"kind": "str"},
        "lower": {"kind": "str", "case": "lower"},
        "upper": {"kind": "str", "case": "upper"},
        "lower or": {"kind": "str", "case": "lower", "empty": params.get("or")},
        "int bool": {"kind": "bool_int"},
        "int? bool?": {"kind": "bool_int"},
        "int": {"kind": "int"},
        "int int": {"kind": "int"},
        "int?": {"kind": "int"},
        "float": {"kind": "float"},
        "json": {"kind": "json"},
        "json_loads": {"kind": "json_loads"},
        "expanduser": {"kind": "path"},
        "strip map": {"kind": "map", "strip": True, "mapping": params.get("map")},
        "split": {"kind": "split", "sep": params.get("split"), "strip_items": False},
        "split_strip": {"kind": "split", "sep": params.get("split_strip"), "strip_items": True},
        "eq": {"kind": "bool_eq", "value": params.get("eq"), "lower": False},
        "lower eq": {"kind": "bool_eq", "value": params.get("eq"), "lower": True},
        "ne": {"kind": "bool_ne", "value": params.get("ne")},
        "lower contains bool": {"kind": "bool_contains", "value": params.get("contains")},
    }
    if shape in table:
        return dict(table[shape])
    if words and words[-1] == "in" and set(words[:-1]) <= {"strip", "lower"}:
        return {"kind": "bool_in", **flags, "values": params["in"]}
    raise UnclassifiedError(shape)


def _lambda_entry(name: str, body: ast.expr) -> dict[str, Any]:
    """A ``lambda:`` parser: ``X if N in os.environ else C``, or a pipeline on a read."""
    if isinstance(body, ast.IfExp) and isinstance(body.test, ast.Compare):
        test = body.test
        if _is_environ(test.comparators[0]) and _const(test.left) == name:
            present = isinstance(test.ops[0], ast.In)
            parsed, other = (body.body, body.orelse) if present else (body.orelse, body.body)
            read, _default, ops = _pipeline(parsed)
            return {**_kind(ops), "reads": read, "default": _const(other)}
    read, default, ops = _pipeline(body)
    entry = {**_kind(ops), "reads": read}
    if entry["kind"] == "path":
        return {**entry, **_path_default(default)}
    raw = None if default is None else _const(default)
    entry["default"] = compile_env.parse_raw(entry, raw) if raw is not None else _unset(entry)
    return entry


def _unset(entry: dict[str, Any]) -> Any:
    """The value of ``os.getenv(N)`` (no default) through the pipeline: None, except
    where the pipeline turns None into something else (none in vLLM's parsers)."""
    if entry["kind"] in ("str", "int", "bool_int", "json", "json_loads"):
        return None
    raise UnclassifiedError(f"{entry['kind']} without a default")


def _path_default(node: ast.expr | None) -> dict[str, Any]:
    """``os.path.join(get_default_cache_root(), 'vllm', ...)`` as a root and its parts."""
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "os.path.join"
        and isinstance(node.args[0], ast.Call)
        and ast.unparse(node.args[0].func) in _PATH_ROOTS
    ):
        root = _PATH_ROOTS[ast.unparse(node.args[0].func)]
        return {"default_root": root, "default_parts": [_const(a) for a in node.args[1:]]}
    raise UnclassifiedError(ast.unparse(node) if node is not None else "path without a default")


def _choices_entry(node: ast.Call) -> dict[str, Any] | None:
    """``env_with_choices`` / ``env_list_with_choices`` / ``env_set_with_choices``."""
    func = ast.unparse(node.func)
    kinds = {
        "env_with_choices": "choice",
        "env_list_with_choices": "choice_list",
        "env_set_with_choices": "choice_set",
    }
    if func not in kinds:
        return None
    names = ["env_name", "default", "choices", "case_sensitive"]
    args: dict[str, Any] = {"case_sensitive": True}
    for key, value in zip(names, node.args, strict=False):
        args[key] = _const(value)
    for kw in node.keywords:
        args[str(kw.arg)] = _const(kw.value)
    entry = {
        "kind": kinds[func],
        "reads": args["env_name"],
        "choices": list(args["choices"]),
        "case_sensitive": args["case_sensitive"],
        "default": args["default"],
    }
    if func == "env_set_with_choices":
        entry["default"] = normalize_value(set(args["default"]))
    return entry


def _function_body(tree: ast.Module, name: str) -> str:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            body = [n for n in node.body if not isinstance(n, ast.ImportFrom)]
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]
            return "\n".join(ast.unparse(n) for n in body)
    raise UnclassifiedError(f"function {name} not found")


def _override(name: str, value: ast.expr, tree: ast.Module) -> dict[str, Any]:
    rule = OVERRIDES[name]
    text = ast.unparse(value)
    older = next((r for r in rule.get("older", ()) if r["source"] == text), None)
    if older is not None:  # an older release's parser, read by hand too
        return {**older["entry"], "reads": name, "override": True}
    if rule["source"] is not None and text != rule["source"]:
        expected = rule["source"]
        raise UnclassifiedError(f"{name}: the override expects {expected!r}, vLLM has {text!r}")
    if "function" in rule and _function_body(tree, text) != rule["function"]:
        raise UnclassifiedError(f"{name}: the body of {text} changed")
    return {**rule["entry"], "reads": name, "override": True}


def classify(name: str, value: ast.expr, tree: ast.Module) -> dict[str, Any]:
    """One variable's parser as a kind and its parameters."""
    if name in OVERRIDES:
        try:
            return _override(name, value, tree)
        except UnclassifiedError:
            # an older release reads the variable plainly (0.27.0's
            # VLLM_COMPUTE_NANS_IN_LOGITS has no VLLM_RAISE_ON_LOGIT_NANS yet): the
            # classifier takes it when it can, else the override's mismatch stands
            try:
                return _mechanical(name, value)
            except UnclassifiedError:
                pass
            raise
    return _mechanical(name, value)


def _mechanical(name: str, value: ast.expr) -> dict[str, Any]:
    """A parser the classifier reads from its shape."""
    getter = _deprecated_getter(value)
    if getter is not None:
        return _mechanical(name, getter)
    if isinstance(value, ast.Call):
        found = _choices_entry(value)
        if found is not None:
            return found
    if isinstance(value, ast.Lambda):
        return _lambda_entry(name, value.body)
    raise UnclassifiedError(ast.unparse(value))


def _deprecated_getter(value: ast.expr) -> ast.expr | None:
    """The getter ``deprecated_env(name, removal, replacement, getter)`` wraps (0.23.0's
    ``vllm/envs.py``): it warns when the variable is set and returns the getter's value
    unchanged, so the variable reads as its getter does."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "deprecated_env"
        and len(value.args) == 4
    ):
        return value.args[3]
    return None


def _literal_set(tree: ast.Module, function: str, target: str) -> list[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Assign, ast.AnnAssign)):
                    targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                    if any(getattr(t, "id", None) == target for t in targets):
                        assert inner.value is not None
                        return [_const(e) for e in inner.value.elts]  # type: ignore[attr-defined]
    raise UnclassifiedError(f"{function}.{target} not found")


def _declared(tree: ast.Module) -> ast.Dict:
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == (
            "environment_variables"
        ):
            assert isinstance(node.value, ast.Dict)
            return node.value
    raise UnclassifiedError("environment_variables not found")


def _torch_pin(source: Source, wheel: Path, version: str) -> str:
    """``Requires-Dist: torch==X`` of the wheel's metadata."""
    meta = source.text(f"vllm-{version}.dist-info/METADATA")
    match = re.search(r"^Requires-Dist: torch==([^\s;]+)", meta, re.MULTILINE)
    if not match:
        raise UnclassifiedError(f"no torch pin in {wheel}")
    return match.group(1)


def build(wheel: Path) -> dict[str, Any]:
    """The release's env-factor data."""
    source = Source(wheel)
    version = version_of(source, wheel)
    tree = ast.parse(source.text(ENVS))
    variables: dict[str, Any] = {}
    for key, value in zip(_declared(tree).keys, _declared(tree).values, strict=True):
        assert isinstance(key, ast.Constant)
        assert isinstance(key.value, str)
        entry = classify(key.value, value, tree)
        read = entry.pop("reads")
        if read != key.value:
            entry["reads"] = read
        variables[key.value] = {**entry, "line": key.lineno}
    return {
        "format": FORMAT,
        "vllm_version": version,
        "source": f"{ENVS} (environment_variables, compile_factors)",
        "torch_pin": _torch_pin(source, wheel, version),
        "ignored": sorted(_literal_set(tree, "compile_factors", "ignored_factors")),
        "hashed_as_read": _literal_set(tree, "compile_factors", "ray_noset_env_vars"),
        "variables": variables,
    }


def dumps(data: dict[str, Any]) -> str:
    """The file's text: one variable a line, so a diff between releases reads well."""
    head = {k: v for k, v in data.items() if k != "variables"}
    lines = [json.dumps(head, indent=1)[:-2] + ","]
    lines.append(' "variables": {')
    items = list(data["variables"].items())
    for i, (name, entry) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"  {json.dumps(name)}: {json.dumps(entry, sort_keys=True)}{comma}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("wheel", type=Path, help="a vllm wheel, or its unpacked folder")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file would change")
    parser.add_argument("--out", type=Path, help="where to write (default: the releases dir)")
    args = parser.parse_args()
    data = build(args.wheel)
    out: Path = args.out or RELEASES_DIR / f"env-{data['vllm_version']}.json"
    return write_or_check(out, dumps(data), check=args.check)


if __name__ == "__main__":
    sys.exit(main())
