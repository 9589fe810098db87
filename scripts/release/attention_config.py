"""Write kernelcfg's attention data file for one vLLM release, from that release's wheel.

What is declared in vLLM's source is read here with ``ast`` (vLLM is never imported):
the ``AttentionBackendEnum`` and ``MLAPrefillBackendEnum`` members with their class
paths, the ``AttentionConfig`` (and ``HiSparseConfig``) fields with their defaults,
choices and bounds, the KV-cache group kinds ``backend_per_kind`` accepts and the
``--kv-cache-dtype`` values. What each backend supports and how a platform walks its
candidates sit in code, not declarations: they live in ``selector-X.Y.Z.json``,
written by a maintainer from the source.

Usage::

    python scripts/release/attention_config.py /tmp/w/vllm-0.33.0-*.whl  # attention-0.33.0.json
    python scripts/release/attention_config.py WHEEL --check   # exit 1 if it would change
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wheel_source import RELEASES_DIR, Source, version_of, write_or_check

FORMAT = 1
_REGISTRY = "vllm/v1/attention/backends/registry.py"
_PREFILL = "vllm/v1/attention/backends/mla/prefill/registry.py"
_CONFIG = "vllm/config/attention.py"
_KINDS = "vllm/v1/kv_cache_interface.py"
_CACHE = "vllm/config/cache.py"


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise LookupError(f"class {name} not found")


def enum_members(src: Source, rel: str, name: str) -> list[list[str | None]]:
    """``[member, value]`` of a string enum, in declaration order (``None``: a member
    with no default class, such as ``CUSTOM``)."""
    out: list[list[str | None]] = []
    for stmt in _class(ast.parse(src.text(rel)), name).body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str | None)
        ):
            out.append([stmt.targets[0].id, stmt.value.value])
    return out


def _literal(node: ast.expr, aliases: dict[str, list[Any]]) -> list[Any] | None:
    """The choices of ``Literal[...]`` (or an alias of one) inside an annotation."""
    if isinstance(node, ast.Name) and node.id in aliases:
        return aliases[node.id]
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Literal":
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [e.value for e in elts if isinstance(e, ast.Constant)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _literal(node.left, aliases) or _literal(node.right, aliases)
    return None


def _aliases(tree: ast.Module) -> dict[str, list[Any]]:
    """Module-level ``Name = Literal[...]`` aliases."""
    found: dict[str, list[Any]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            choices = _literal(node.value, {})
            if choices is not None:
                found[node.targets[0].id] = choices
    return found


def _default(node: ast.expr | None, entry: dict[str, Any]) -> None:
    if node is None:
        return
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("Field", "field"):
        for kw in node.keywords:
            if kw.arg == "default_factory":
                entry["default_factory"] = ast.unparse(kw.value)
            elif kw.arg == "default":
                entry["default"] = ast.literal_eval(kw.value)
            elif kw.arg in ("ge", "gt", "le", "lt"):
                entry[kw.arg] = ast.literal_eval(kw.value)
        return
    entry["default"] = ast.literal_eval(node)


def config_fields(src: Source, name: str) -> list[dict[str, Any]]:
    """A config class's fields: name, annotation, default, choices and bounds."""
    tree = ast.parse(src.text(_CONFIG))
    aliases = _aliases(tree)
    out: list[dict[str, Any]] = []
    body = _class(tree, name).body
    for index, stmt in enumerate(body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        entry: dict[str, Any] = {
            "name": stmt.target.id,
            "annotation": ast.unparse(stmt.annotation),
        }
        choices = _literal(stmt.annotation, aliases)
        if choices is not None and not entry["annotation"].endswith("| str"):
            entry["choices"] = choices
        _default(stmt.value, entry)
        after = body[index + 1] if index + 1 < len(body) else None
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            entry["doc"] = " ".join(str(after.value.value).split())
        out.append(entry)
    return out


def _dotted(rel: str, name: str) -> str:
    """The fully qualified name vLLM's hash gives a class defined in ``rel``."""
    return rel.removesuffix(".py").replace("/", ".") + "." + name


def build(path: Path) -> dict[str, Any]:
    src = Source(path)
    kinds = enum_members(src, _KINDS, "KVCacheSpecKind")
    cache_aliases = _aliases(ast.parse(src.text(_CACHE)))
    hisparse = "class HiSparseConfig" in src.text(_CONFIG)
    return {
        "format": FORMAT,
        "vllm_version": version_of(src, path),
        "hashed_as": {
            "AttentionBackendEnum": _dotted(_REGISTRY, "AttentionBackendEnum"),
            "MLAPrefillBackendEnum": _dotted(_PREFILL, "MLAPrefillBackendEnum"),
            "HiSparseConfig": _dotted(_CONFIG, "HiSparseConfig"),
        },
        "backends": enum_members(src, _REGISTRY, "AttentionBackendEnum"),
        "mla_prefill_backends": enum_members(src, _PREFILL, "MLAPrefillBackendEnum"),
        "config_fields": config_fields(src, "AttentionConfig"),
        "hisparse_fields": config_fields(src, "HiSparseConfig") if hisparse else [],
        "kv_cache_spec_kinds": [value for _, value in kinds],
        "cache_dtypes": cache_aliases["CacheDType"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="a vllm wheel, or its unpacked folder")
    parser.add_argument("--out", type=Path, help="where to write (default: the releases dir)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    data = build(args.wheel)
    out: Path = args.out or RELEASES_DIR / f"attention-{data['vllm_version']}.json"
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    return write_or_check(out, text, check=args.check)


if __name__ == "__main__":
    sys.exit(main())
