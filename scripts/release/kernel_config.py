"""Write kernelcfg's data file for one vLLM release, from that release's wheel.

The wheel is read as text (``ast`` over its sources, SHA-256 over the files that
define IR providers); vLLM is never imported. The facts that sit in code rather than
in declarations -- which platform prefers which IR provider, what a provider
accepts, the device rules -- live in the file's ``rules`` section, written by a
maintainer; this script carries that section over unchanged (from the file it
rewrites, or from ``--rules-from`` for a new release).

Usage::

    pip download --no-deps -d /tmp/w vllm==0.33.0
    python scripts/release/kernel_config.py /tmp/w/vllm-0.33.0-*.whl
    python scripts/release/kernel_config.py /tmp/w/vllm-0.34.0-*.whl --rules-from \\
        kernelcfg/vllm/releases/vllm-0.33.0.json
    python scripts/release/kernel_config.py WHEEL --check   # exit 1 when the file would change
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wheel_source import RELEASES_DIR, Source, release_text, version_of, write_or_check

FORMAT = 1
CHOICE_ALIASES = ("MoEBackend", "LinearBackend", "SparseIndexerTopkBackend")


def _const(node: ast.expr, names: dict[str, Any]) -> Any:
    """Evaluate the literal shapes vLLM's config module uses for its constants."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "frozenset"
        and node.args
    ):
        return frozenset(_const(node.args[0], names))
    if isinstance(node, ast.Set | ast.List | ast.Tuple):
        return [_const(e, names) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return frozenset(_const(node.left, names)) | frozenset(_const(node.right, names))
    raise ValueError(f"not a constant: {ast.unparse(node)}")


def _literal_choices(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Literal":
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [str(e.value) for e in elts if isinstance(e, ast.Constant)]
    return None


def _jsonable(value: Any) -> Any:
    if isinstance(value, frozenset | set):
        return sorted(value)
    return value


def _fields(cls: ast.ClassDef) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        entry: dict[str, Any] = {
            "name": stmt.target.id,
            "annotation": ast.unparse(stmt.annotation),
        }
        value = stmt.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) == "Field":
            for kw in value.keywords:
                if kw.arg == "default_factory":
                    entry["default_factory"] = ast.unparse(kw.value)
                elif kw.arg == "default":
                    entry["default"] = _const(kw.value, {})
                elif kw.arg == "min_length":
                    entry["min_length"] = _const(kw.value, {})
        elif value is not None:
            entry["default"] = _const(value, {})
        out.append(entry)
    return out


def _field_aliases(cls: ast.ClassDef, choices: dict[str, list[str]]) -> set[str]:
    """Literal aliases used by the class's field annotations beyond CHOICE_ALIASES
    (0.34.0: ``RDNAHybridW4A16PrefillDequantMode``)."""
    found: set[str] = set()
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign):
            for node in ast.walk(stmt.annotation):
                if isinstance(node, ast.Name) and node.id in choices:
                    found.add(node.id)
    return found - set(CHOICE_ALIASES)


def _validator_targets(cls: ast.ClassDef) -> dict[str, list[str]]:
    """Field names per validator method name."""
    found: dict[str, list[str]] = {}
    for stmt in cls.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        for deco in stmt.decorator_list:
            if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "field_validator":
                found[stmt.name] = [str(a.value) for a in deco.args if isinstance(a, ast.Constant)]
    return found


def _hash_method(cls: ast.ClassDef) -> ast.FunctionDef:
    """``compute_hash`` (vLLM up to 0.33.0) or ``compile_factors`` (0.34.0 on)."""
    for name in ("compute_hash", "compile_factors"):
        for s in cls.body:
            if isinstance(s, ast.FunctionDef) and s.name == name:
                return s
    raise ValueError(f"{cls.name} has neither compute_hash nor compile_factors")


def _hash_ignored(cls: ast.ClassDef) -> tuple[list[str], list[str]]:
    method = _hash_method(cls)
    always: list[str] = []
    when_none: list[str] = []
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "ignored_factors":
            always = sorted(_const(node.value, {}))
        if isinstance(node, ast.If) and "is None" in ast.unparse(node.test):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and ast.unparse(sub.func).endswith(".add"):
                    when_none.append(_const(sub.args[0], {}))
    return always, sorted(when_none)


def _hash_scheme(cls: ast.ClassDef) -> str:
    """How the release hashes its kernel config (kernelcfg.vllm.kernel_config.hashing.SCHEMES):

    - ``compute_hash`` (0.29.0-0.33.0): ``KernelConfig.compute_hash()`` digests the
      fields with ``ir_op_priority`` replaced by the hex sub-hash of
      ``IrOpPriorityConfig.compute_hash()``;
    - ``hash_config`` (0.34.0 on): ``hash_config(cfg)`` digests
      ``cfg.compile_factors()``, where ``ir_op_priority`` (while the release has it) is
      a nested factor dict: its lists plus ``_impls``.
    """
    method = _hash_method(cls)
    if method.name == "compute_hash":
        return "compute_hash"
    for node in ast.walk(method):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(
            "ir_op_priority.compute_hash"
        ):
            raise ValueError("compile_factors with an IR sub-hash: a scheme not modelled")
    return "hash_config"


def kernel_facts(src: Source) -> dict[str, Any]:
    tree = ast.parse(src.text("vllm/config/kernel.py"))
    names: dict[str, Any] = {}
    choices: dict[str, list[str]] = {}
    classes: dict[str, ast.ClassDef] = {}
    functions: dict[str, ast.FunctionDef] = {}
    for stmt in tree.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and value is not None:
            literal = _literal_choices(value)
            if literal is not None:
                choices[target.id] = literal
                continue
            with contextlib.suppress(ValueError, KeyError):
                names[target.id] = _const(value, names)
        elif isinstance(stmt, ast.ClassDef):
            classes[stmt.name] = stmt
        elif isinstance(stmt, ast.FunctionDef):
            functions[stmt.name] = stmt

    kernel = classes["KernelConfig"]
    validators = _validator_targets(kernel)
    normalized = sorted(
        f for m, fs in validators.items() if m.startswith("_normalize_") for f in fs
    )
    ignored, ignored_when_none = _hash_ignored(kernel)
    hash_scheme = _hash_scheme(kernel)

    model_check: list[str] | None = None
    if "validate_flashinfer_moe_ep_model" in functions:
        test = next(
            s.test
            for s in functions["validate_flashinfer_moe_ep_model"].body
            if isinstance(s, ast.If)
        )
        assert isinstance(test, ast.Compare)
        checked = _const(test.comparators[0], names)
        model_check = sorted(checked) if isinstance(checked, frozenset) else [checked]

    constants = {
        k: _jsonable(v) for k, v in names.items() if k.isupper() and isinstance(v, str | frozenset)
    }
    return {
        "kernel_config": {
            "fields": _fields(kernel),
            "normalized": normalized,
            "skip_none_validation": sorted(validators.get("_skip_none_validation", [])),
            "hash_ignored": ignored,
            "hash_ignored_when_none": ignored_when_none,
            "hash_scheme": hash_scheme,
        },
        "ir_op_priority": {"fields": _fields(classes["IrOpPriorityConfig"])},
        "choices": {
            alias: choices[alias]
            for alias in (*CHOICE_ALIASES, *sorted(_field_aliases(kernel, choices)))
            if alias in choices
        },
        "constants": dict(sorted(constants.items())),
        "functions": {
            "bind_passthrough_all2all_backend": ("bind_passthrough_all2all_backend" in functions),
            "validate_flashinfer_moe_ep_model": model_check,
        },
    }


def all2all_choices(src: Source) -> list[str]:
    tree = ast.parse(src.text("vllm/config/parallel.py"))
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "All2AllBackend":
            found = _literal_choices(stmt.value)
            if found is not None:
                return found
    raise ValueError("All2AllBackend not found in vllm/config/parallel.py")


def _file_uuid(src: Source, rel: str) -> str:
    return hashlib.sha256(src.text(rel).encode("utf-8")).hexdigest()


def ir_facts(src: Source) -> dict[str, Any]:
    """IR ops (native implementations) and every provider registered for them."""
    ops: dict[str, dict[str, Any]] = {}
    for rel in src.python_files("vllm/ir/ops"):
        tree = ast.parse(src.text(rel))
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and any(
                ast.unparse(d).startswith("register_op") for d in stmt.decorator_list
            ):
                ops[stmt.name] = {
                    "providers": {"native": {"file": rel, "uuid": _file_uuid(src, rel)}}
                }
    for rel in src.python_files("vllm/kernels"):
        tree = ast.parse(src.text(rel))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if not isinstance(deco, ast.Call):
                    continue
                match = re.fullmatch(r"ir\.ops\.(\w+)\.register_impl", ast.unparse(deco.func))
                if match and deco.args and isinstance(deco.args[0], ast.Constant):
                    provider = deco.args[0].value
                    ops[match.group(1)]["providers"][provider] = {
                        "file": rel,
                        "uuid": _file_uuid(src, rel),
                    }
    return {
        op: {"providers": dict(sorted(entry["providers"].items()))}
        for op, entry in sorted(ops.items())
    }


def class_fields(src: Source, rel: str, name: str) -> list[str]:
    """The field names of a dataclass-style class, in declaration order."""
    tree = ast.parse(src.text(rel))
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return [
                s.target.id
                for s in stmt.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            ]
    raise ValueError(f"class {name} not found in {rel}")


def module_constant(src: Source, rel: str, name: str) -> Any:
    """A module-level constant of a vLLM source file (sets as sorted lists)."""
    tree = ast.parse(src.text(rel))
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == name:
            return _jsonable(_const(stmt.value, {}))
    raise ValueError(f"{name} not found in {rel}")


def breakable_architectures(src: Source) -> Any:
    """The architectures that turn breakable CUDA graphs on by default: the module
    constant ``DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES`` (0.29.0 on), else (0.28.0 and
    older) the tuple ``VllmConfig.__post_init__`` tests the model's architectures
    against, in the ``if`` that sets ``VLLM_USE_BREAKABLE_CUDAGRAPH``."""
    rel = "vllm/config/vllm.py"
    try:
        return module_constant(src, rel, "DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES")
    except ValueError:
        pass
    for node in ast.walk(ast.parse(src.text(rel))):
        if not isinstance(node, ast.If) or "VLLM_USE_BREAKABLE_CUDAGRAPH" not in ast.unparse(
            node.test
        ):
            continue
        for inner in ast.walk(node.test):
            if isinstance(inner, ast.Compare) and isinstance(inner.ops[0], ast.In):
                found = inner.comparators[0]
                if isinstance(found, ast.Tuple | ast.Set | ast.List):
                    return sorted(_jsonable(_const(found, {})))
    raise ValueError(f"no default breakable CUDA-graph architectures found in {rel}")


def _assigned_dict(tree: ast.AST, name: str) -> ast.Dict | None:
    """The dict literal assigned (plainly or with an annotation) to ``name``."""
    for node in ast.walk(tree):
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Dict):
            return value
    return None


def env_names(src: Source) -> list[str]:
    found = _assigned_dict(ast.parse(src.text("vllm/envs.py")), "environment_variables")
    if found is None:
        raise ValueError("environment_variables not found in vllm/envs.py")
    return sorted(str(k.value) for k in found.keys if isinstance(k, ast.Constant))


def removed_envs(src: Source) -> dict[str, str]:
    """``removed_environment_variables`` of ``vllm/envs.py`` (0.34.0 on): name to the
    migration hint. Setting one is a hard error at engine start-up
    (``Platform.validate_environ``: ``f"{env} has been removed. {hint}"``), whatever
    ``--fail-on-environ-validation`` says. Empty before 0.34.0."""
    found = _assigned_dict(ast.parse(src.text("vllm/envs.py")), "removed_environment_variables")
    if found is None:
        return {}
    return {
        str(_const(k, {})): str(_const(v, {}))
        for k, v in zip(found.keys, found.values, strict=True)
        if k is not None
    }


def build(path: Path, rules: dict[str, Any]) -> dict[str, Any]:
    src = Source(path)
    facts = kernel_facts(src)
    facts["choices"]["All2AllBackend"] = all2all_choices(src)
    return {
        "format": FORMAT,
        "vllm_version": version_of(src, path),
        **facts,
        "ir_ops": ir_facts(src),
        "engine_args": sorted(
            f
            for f in class_fields(src, "vllm/engine/arg_utils.py", "EngineArgs")
            if not f.startswith("_")
        ),
        "compilation_fields": class_fields(src, "vllm/config/compilation.py", "CompilationConfig"),
        "breakable_cudagraph_architectures": breakable_architectures(src),
        "envs": env_names(src),
        **({"envs_removed": found} if (found := removed_envs(src)) else {}),
        "rules": rules,
    }


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="a vllm wheel, or its unpacked folder")
    parser.add_argument("--rules-from", type=Path, help="take the rules section from here")
    parser.add_argument("--out", type=Path, help="where to write (default: the releases dir)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)

    version = version_of(Source(args.wheel), args.wheel)
    out: Path = args.out or RELEASES_DIR / f"vllm-{version}.json"
    rules_file: Path | None = args.rules_from or (out if out.exists() else None)
    rules = json.loads(release_text(rules_file))["rules"] if rules_file else {}
    return write_or_check(out, dumps(build(args.wheel, rules)), check=args.check)


if __name__ == "__main__":
    sys.exit(main())
