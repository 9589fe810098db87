"""Write kernelcfg's config-factor data for one vLLM release, from that release's wheel.

vLLM hashes its configuration into the compile-cache key: 0.29-0.33 with
``VllmConfig.compute_hash()`` (each sub-config's ``compute_hash()`` in a list, the list's
``str()`` digested), 0.34 with ``VllmConfig.compile_factors()`` (each sub-config's factor
dict, nested). This script reads ``vllm/config/*.py`` with ``ast`` (vLLM is never
imported) and writes ``kernelcfg/vllm/releases/compile-config-X.Y.Z.json``:

- ``parts``: the sub-configs ``VllmConfig`` hashes, in its order, with the attribute,
  the class and what stands for an absent one;
- ``configs``: per class, how its hash is made (``hash``: a kind of
  :data:`kernelcfg.vllm.compile_cache.config.HASH_KINDS` with its ignored set or its list of
  items) and every dataclass field with its default as vLLM's ``normalize_value`` makes
  it (``default``), or, where the default is not a constant, the expression (``unset``)
  for kernelcfg's rules to replace;
- ``constants``: the few class constants the rules read.

The derivations (what ``__post_init__``, ``create_engine_config`` and the platform change)
are kernelcfg's rules (:mod:`kernelcfg.vllm.compile_cache.rules`), written once; a hash method
whose source is not one of the shapes below stops the script.

Usage::

    pip download --no-deps -d /tmp/w vllm==0.34.0
    python scripts/release/compile_config.py /tmp/w/vllm-0.34.0-*.whl
    python scripts/release/compile_config.py WHEEL --check   # exit 1 when the file would change
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from wheel_source import RELEASES_DIR, Source, version_of, write_or_check

FORMAT = 1
CONFIG_DIR = "vllm/config"
ENUM_FILES = ("vllm/v1/attention/backends/registry.py",)
"""Files outside the config folder whose enums a default names."""

ELSEWHERE = {
    "KernelConfig": "kernelcfg.vllm.hashing (vllm-X.Y.Z.json)",
    "AttentionConfig": "kernelcfg.vllm.attention_config (attention-X.Y.Z.json)",
}
"""Classes whose hash kernelcfg already computes from other release data."""

OPTIONAL_PARTS = frozenset(
    {
        "engram_config",
        "lora_config",
        "speculative_config",
        "kv_transfer_config",
        "ec_transfer_config",
        "model_config.multimodal_config",
    }
)
"""Parts that are ``None`` unless a launch asks for them (kernelcfg reports them unknown
when one is present)."""


class UnclassifiedError(Exception):
    """A shape the script does not know (add it, or stop)."""


@dataclass
class _Class:
    """A class of the parsed sources, with its module and file tree."""

    module: str
    node: ast.ClassDef
    tree: ast.Module

    @property
    def fqn(self) -> str:
        """``module.Class``."""
        return f"{self.module}.{self.node.name}"


class Tree:
    """The classes and module constants of the config folder (and a few enum files)."""

    def __init__(self, source: Source) -> None:
        """Parse the folder's modules once."""
        self.classes: dict[str, _Class] = {}
        self.constants: dict[str, dict[str, ast.expr]] = {}
        files = [*source.python_files(CONFIG_DIR), *ENUM_FILES]
        for rel in files:
            module = rel.removesuffix(".py").replace("/", ".")
            tree = ast.parse(source.text(rel))
            consts: dict[str, ast.expr] = {}
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, _Class(module, node, tree))
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        consts[target.id] = node.value
                elif (
                    isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    and node.value is not None
                ):
                    consts[node.target.id] = node.value
            self.constants[module] = consts

    def cls(self, name: str) -> _Class:
        """The class ``name`` (stops when the sources have none)."""
        if name not in self.classes:
            raise UnclassifiedError(f"class {name} not found")
        return self.classes[name]


def _bases(c: _Class) -> list[str]:
    """The class's bases as written."""
    return [ast.unparse(b) for b in c.node.bases]


def _enum_kind(c: _Class) -> str | None:
    """``int`` (IntEnum: hashed as its int), ``str`` (StrEnum / str mixin: as its text),
    ``enum`` (tagged with its class) or ``None`` (not an enum)."""
    bases = _bases(c)
    if any(b.endswith("IntEnum") for b in bases):
        return "int"
    if any(b.endswith("StrEnum") for b in bases) or ("str" in bases and len(bases) > 1):
        return "str"
    if any(b.endswith("Enum") for b in bases):
        return "enum"
    return None


_BINOPS: dict[type[ast.operator], Any] = {
    ast.Mult: lambda a, b: a * b,
    ast.Pow: lambda a, b: a**b,
    ast.Sub: lambda a, b: a - b,
    ast.Add: lambda a, b: a + b,
}
"""The arithmetic the config modules write in their constants."""


class Unset(Exception):  # noqa: N818 (a signal, not a failure)
    """A default that is not a constant: the field is left to kernelcfg's rules."""


class Nested(Exception):  # noqa: N818 (a signal, not a failure)
    """A default that is another config, hashed by its own ``compile_factors``."""


class Evaluator:
    """Evaluates a field default the way vLLM builds it, then normalises it the way the
    release's ``normalize_value`` does (``nested``: 0.34's nested ``compile_factors``)."""

    def __init__(self, tree: Tree, *, nested: bool) -> None:
        """An evaluator over ``tree`` for a release that nests (0.34) or not."""
        self.tree = tree
        self.nested = nested

    def member(self, cls_name: str, attr: str) -> Any:
        """An enum member's value as the hash writes it, or a class constant."""
        if cls_name not in self.tree.classes:
            raise Unset(f"{cls_name}.{attr}")
        c = self.tree.cls(cls_name)
        kind = _enum_kind(c)
        for node in c.node.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == attr
            ):
                raw = self._enum_value(c, node.value)
                if kind == "enum":
                    return [c.fqn, raw]
                if kind in ("int", "str"):
                    return raw
                return raw  # a class constant
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == attr
                and node.value is not None
                and kind is None
            ):
                return self.const(c, node.value)
        raise Unset(f"{cls_name}.{attr}")

    def _enum_value(self, c: _Class, node: ast.expr) -> Any:
        """An enum member's raw value (a tuple of members as a list of values)."""
        if isinstance(node, ast.Tuple):
            return [self._enum_value(c, e) for e in node.elts]
        if isinstance(node, ast.Name):  # another member of the same enum
            for inner in c.node.body:
                if (
                    isinstance(inner, ast.Assign)
                    and isinstance(inner.targets[0], ast.Name)
                    and inner.targets[0].id == node.id
                ):
                    return self._enum_value(c, inner.value)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("auto"):
            raise Unset("enum.auto()")
        return self.const(c, node)

    def const(self, c: _Class, node: ast.expr) -> Any:
        """A constant expression in class ``c``'s module."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.const(c, e) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.const(c, node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](self.const(c, node.left), self.const(c, node.right))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return self.member(node.value.id, node.attr)
        if isinstance(node, ast.Name):
            return self._name(c, node.id)
        raise Unset(ast.unparse(node))

    def _name(self, c: _Class, name: str) -> Any:
        """A module constant of ``c``'s module, or a constant of ``c``'s own body."""
        consts = self.tree.constants.get(c.module, {})
        if name in consts:
            return self.const(c, consts[name])
        for inner in c.node.body:
            if (
                isinstance(inner, ast.AnnAssign)
                and isinstance(inner.target, ast.Name)
                and inner.target.id == name
                and inner.value is not None
            ):
                return self.const(c, inner.value)
        raise Unset(name)

    def factory(self, c: _Class, node: ast.expr) -> Any:
        """``default_factory=…``: ``list``/``dict``/``set``, a config class, a constant lambda."""
        text = ast.unparse(node)
        if text in ("list", "tuple"):
            return []
        if text in ("dict", "set", "Counter"):
            return []
        if isinstance(node, ast.Lambda):
            return self.const(c, node.body)
        if isinstance(node, ast.Name) and node.id in self.tree.classes:
            return self.instance(node.id)
        raise Unset(f"default_factory={text}")

    def instance(self, cls_name: str) -> Any:
        """A default-built instance of a config class, normalised."""
        c = self.tree.cls(cls_name)
        items = {}
        for f in fields_of(c):
            items[f.name] = self.default(c, f)
        if self.nested and has_method(c, "compile_factors"):
            raise Nested(cls_name)
        return [c.fqn, sorted([[k, v] for k, v in items.items()])]

    def default(self, c: _Class, f: Field) -> Any:
        """The field's default, normalised; :class:`Unset` when it is not a constant."""
        if f.factory is not None:
            return self.factory(c, f.factory)
        if f.value is None:
            raise Unset("no default")
        value = self.const(c, f.value)
        kinds = {a.strip() for a in f.annotation.split("|")} - {"None"}
        if kinds == {"float"} and isinstance(value, int) and not isinstance(value, bool):
            return float(value)  # pydantic makes a float of it when it is passed
        return value


@dataclass
class Field:
    """One dataclass field of a config class, as written."""

    name: str
    value: ast.expr | None
    factory: ast.expr | None
    line: int
    annotation: str = ""


def _field_call(node: ast.expr | None) -> tuple[ast.expr | None, ast.expr | None]:
    """``(default, default_factory)`` of ``field(…)``/``Field(…)``, or the value itself."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("field", "Field"):
        kwargs = {kw.arg: kw.value for kw in node.keywords}
        if node.args:
            kwargs.setdefault("default", node.args[0])
        return kwargs.get("default"), kwargs.get("default_factory")
    return node, None


def fields_of(c: _Class) -> list[Field]:
    """The dataclass fields in declaration order (``ClassVar`` and ``InitVar`` left out)."""
    out: list[Field] = []
    for node in c.node.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        ann = ast.unparse(node.annotation)
        if ann.startswith(("ClassVar", "InitVar")):
            continue
        value, factory = _field_call(node.value)
        if value is not None and ast.unparse(value) == "MISSING":
            value = None
        out.append(Field(node.target.id, value, factory, node.lineno, ann))
    return out


def has_method(c: _Class, name: str) -> bool:
    """Whether the class defines the method itself."""
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in c.node.body)


def _method(c: _Class, name: str) -> ast.FunctionDef:
    """The class's own method ``name``."""
    for node in c.node.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise UnclassifiedError(f"{c.node.name}.{name} not found")


def _body(fn: ast.FunctionDef) -> list[ast.stmt]:
    """A function's statements without its docstring and imports."""
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return [n for n in body if not isinstance(n, ast.ImportFrom)]


def _ignored(body: list[ast.stmt]) -> tuple[list[str], list[ast.stmt]]:
    """The literal ``ignored_factors`` set and the statements after it."""
    if (
        body
        and isinstance(body[0], ast.Assign)
        and ast.unparse(body[0].targets[0]) == "ignored_factors"
    ):
        value = body[0].value
        assert isinstance(value, ast.Set)
        return sorted(ast.literal_eval(e) for e in value.elts), body[1:]
    return [], body


_FIELDS_SHAPES = {
    "return get_compile_factors(self, ignored_factors)",
    "return get_compile_factors(self, set())",
    "return get_compile_factors(self, ignored_factors=set())",
    "factors = get_hash_factors(self, ignored_factors)\nreturn hash_factors(factors)",
    "factors = get_hash_factors(self, set())\nreturn hash_factors(factors)",
    "return hash_factors(get_hash_factors(self, set()))",
    "factors = get_hash_factors(self, ignored_factors=set())\n"
    "hash_str = hash_factors(factors)\nreturn hash_str",
}
"""A hash over every field not ignored (``fields``)."""

_LIST = re.compile(
    r"factors: list\[Any\] = \[\]\n((?:factors\.append\(self\.\w+\)\n)*)"
    r"hash_str = (?:safe_hash|hashlib\.md5)\(str\(factors\)\.encode\(\), "
    r"usedforsecurity=False\)\.hexdigest\(\)\nreturn hash_str"
)
"""md5 of ``str()`` of a list of field values (``str_list``)."""

SPECIAL: dict[str, dict[str, Any]] = {
    # Shapes kernelcfg reads by hand, each with the source it stands for (the script
    # stops when that source changed). "hash" is what the data says.
    "ModelConfig": {
        "sources": [
            "factors = get_compile_factors(self, ignored_factors)\nif self.multimodal_config:\n"
            "    factors['language_model_only'] = self.multimodal_config.language_model_only",
            "factors = get_hash_factors(self, ignored_factors)\nif self.multimodal_config:\n"
            "    factors['language_model_only'] = self.multimodal_config.language_model_only",
        ],
        "hash": {"kind": "fields", "multimodal_extra": True},
    },
    "CompilationConfig": {
        "sources": [
            "factors = get_hash_factors(self, ignored_factors)\n"
            "factors['pass_config'] = self.pass_config.compute_hash()\n"
            "factors['dynamic_shapes_config'] = self.dynamic_shapes_config.compute_hash()\n"
            "return hash_factors(factors)"
        ],
        "hash": {"kind": "fields", "sub_hashes": ["pass_config", "dynamic_shapes_config"]},
    },
    "AuxOutputConfig": {
        "sources": [
            "return hash_factors({'enable_return_routed_experts': "
            "self.enable_return_routed_experts})"
        ],
        "hash": {"kind": "fields", "only": ["enable_return_routed_experts"]},
    },
    "LoRAConfig": {"sources": None, "hash": {"kind": "unknown", "why": "LoRA"}},
    "SpeculativeConfig": {
        "sources": None,
        "hash": {"kind": "unknown", "why": "speculative decoding"},
    },
    "MultiModalConfig": {"sources": None, "hash": {"kind": "unknown", "why": "a multimodal model"}},
}


def hash_of(c: _Class, method: str) -> dict[str, Any]:
    """How the class hashes itself (``compile_factors`` or ``compute_hash``)."""
    name = c.node.name
    if name in ELSEWHERE:
        return {"kind": "elsewhere", "in": ELSEWHERE[name]}
    fn = _method(c, method)
    ignored, rest = _ignored(_body(fn))
    text = "\n".join(ast.unparse(n) for n in rest)
    if text == "return {}":
        return {"kind": "empty", "line": fn.lineno}
    if text in _FIELDS_SHAPES:
        return {"kind": "fields", "ignored": ignored, "line": fn.lineno}
    if name in SPECIAL:
        rule = SPECIAL[name]
        if rule["sources"] is not None and not any(text.startswith(s) for s in rule["sources"]):
            raise UnclassifiedError(f"{name}.{method} changed:\n{text}")
        return {**rule["hash"], "ignored": ignored, "line": fn.lineno}
    if text.startswith("ignored_factors.add(") or "linear_backend_per_quant" in text:
        raise UnclassifiedError(f"{name}.{method}: {text}")
    match = _LIST.fullmatch(text)
    if match:
        items = re.findall(r"factors\.append\(self\.(\w+)\)", match.group(1))
        return {"kind": "str_list", "items": items, "line": fn.lineno}
    raise UnclassifiedError(f"{name}.{method}:\n{text}")


def _annotation_class(ann: str, tree: Tree) -> str | None:
    """The config class an annotation names (``X | None``), if any."""
    for part in ann.replace(" ", "").split("|"):
        if part in tree.classes:
            return part
    return None


def _parts(tree: Tree, method: str) -> list[dict[str, Any]]:
    """The sub-configs ``VllmConfig`` hashes, in its order."""
    vllm = tree.cls("VllmConfig")
    annotations = {
        n.target.id: ast.unparse(n.annotation)
        for n in vllm.node.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    fn = _method(vllm, method)
    text = ast.unparse(fn)
    parts: list[dict[str, Any]] = []
    if method == "compile_factors":
        for key, attr in re.findall(r"'(\w+)': get_factors\(self\.(\w+)\)", text):
            parts.append({"key": key, "attribute": attr})
        parts.append({"key": "version", "attribute": None})
        parts.append({"key": "multimodal", "attribute": "model_config.multimodal_config"})
        parts.append({"key": "additional", "attribute": "additional_config"})
    else:
        seen: set[str] = set()
        for attr in re.findall(r"self\.(\w+(?:\.multimodal_config)?)\.compute_hash\(\)", text):
            if attr not in seen:
                seen.add(attr)
                parts.append({"attribute": attr})
        parts.append({"attribute": "additional_config"})
    for part in parts:
        attr = part["attribute"]
        if attr is None or attr == "additional_config":
            continue
        head = attr.split(".")[-1]
        if head == "multimodal_config":
            part["class"] = "MultiModalConfig"
        else:
            cls = _annotation_class(annotations[head], tree)
            if cls is None:
                raise UnclassifiedError(f"VllmConfig.{head}: {annotations[head]}")
            part["class"] = cls
        if attr in OPTIONAL_PARTS:
            part["optional"] = True
    if method == "compute_hash":
        _absent_words(fn, parts)
    return parts


def _absent_words(fn: ast.FunctionDef, parts: list[dict[str, Any]]) -> None:
    """0.29-0.33: what the list holds for an absent part: ``absent`` is the value
    appended instead (``'None'``, ``None``), or ``"skipped"`` (nothing appended);
    ``"always"`` where the part is appended unconditionally."""
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    by_attr: dict[str, Any] = {}
    for node in ast.walk(fn):
        text = ast.unparse(node)
        match = re.fullmatch(r"vllm_factors\.append\(self\.([\w.]+)\.compute_hash\(\)\)", text)
        if not isinstance(node, ast.Expr) or not match:
            continue
        by_attr.setdefault(match.group(1), _absent_of(node, parents, match.group(1)))
    inline = re.findall(
        r"vllm_factors\.append\(self\.(\w+)\.compute_hash\(\) if self\.\w+ is not None "
        r"else (.+?)\)",
        ast.unparse(fn),
    )
    for attr, word in inline:
        by_attr[attr] = ast.literal_eval(word)
    for part in parts:
        attr = part["attribute"]
        part["absent"] = "None" if attr == "additional_config" else by_attr[attr]


def _absent_of(node: ast.AST, parents: dict[ast.AST, ast.AST], attr: str) -> Any:
    """The ``else`` branch of the ``if`` that guards ``node`` on ``self.<attr>``."""
    up = parents.get(node)
    while up is not None and not isinstance(up, ast.FunctionDef):
        if isinstance(up, ast.If) and f"self.{attr}" in ast.unparse(up.test):
            if not up.orelse:
                return "skipped"
            found = re.fullmatch(r"vllm_factors\.append\((.+)\)", ast.unparse(up.orelse[0]))
            return ast.literal_eval(found.group(1)) if found else "skipped"
        up = parents.get(up)
    return "always"


def config_entry(tree: Tree, name: str, method: str, *, nested: bool) -> dict[str, Any]:
    """One class: its hash and its fields' defaults."""
    c = tree.cls(name)
    ev = Evaluator(tree, nested=nested)
    entry: dict[str, Any] = {"module": c.module, "line": c.node.lineno, "hash": hash_of(c, method)}
    out = []
    for f in fields_of(c):
        item: dict[str, Any] = {"name": f.name}
        try:
            item["default"] = ev.default(c, f)
        except Unset as why:
            item["unset"] = str(why)
        except Nested as inner:
            item["nested"] = str(inner)
        out.append(item)
    entry["fields"] = out
    consts = class_constants(c, ev)
    if consts:
        entry["constants"] = consts
    return entry


def class_constants(c: _Class, ev: Evaluator) -> dict[str, Any]:
    """The class's ``ClassVar`` constants that are literals (``DEFAULT_BLOCK_SIZE`` …)."""
    out: dict[str, Any] = {}
    for node in c.node.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and ast.unparse(node.annotation).startswith("ClassVar")
            and node.value is not None
        ):
            try:
                out[node.target.id] = ev.const(c, node.value)
            except Unset:
                continue
    return out


def _nested_classes(tree: Tree, name: str) -> list[str]:
    """Config classes built by a field's ``default_factory`` (hashed inside their owner)."""
    found = []
    for f in fields_of(tree.cls(name)):
        if isinstance(f.factory, ast.Name) and f.factory.id in tree.classes:
            found.append(f.factory.id)
    return found


ENUMS = ("CUDAGraphMode", "CompilationMode")
"""Enums whose members the rules name (their values as the hash writes them)."""


def enum_members(tree: Tree, name: str) -> dict[str, Any]:
    """``{member: value}`` of an enum, and how the hash writes a member."""
    c = tree.cls(name)
    ev = Evaluator(tree, nested=False)
    members = {}
    for node in c.node.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            members[node.targets[0].id] = ev._enum_value(c, node.value)
    return {"fqn": c.fqn, "hashed_as": _enum_kind(c), "members": members}


_LITERALS: dict[str, tuple[str, str, str]] = {
    # name: (file, function or "" for module level, variable or "tuple in <attr>")
    "field_aliases": ("vllm/transformers_utils/config.py", "", "CONFIG_FIELD_ALIASES"),
    "float16_unsupported_model_types": (
        "vllm/config/model.py",
        "",
        "_FLOAT16_NOT_SUPPORTED_MODELS",
    ),
    "str_dtypes": ("vllm/config/model.py", "", "_STR_DTYPE_TO_TORCH_DTYPE"),
    "max_len_keys": (
        "vllm/transformers_utils/model_arch_config_convertor.py",
        "derive_max_model_len_and_key",
        "possible_keys",
    ),
}
"""Literal tables of the release the model rules read, and where each is written."""


def _literal(node: ast.expr) -> Any:
    """A literal, with ``torch.X`` dtypes as their text."""
    if isinstance(node, ast.Attribute) and ast.unparse(node).startswith("torch."):
        return ast.unparse(node)
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e) for e in node.elts]
    return ast.literal_eval(node)


def _assigned(tree: ast.AST, name: str) -> ast.expr:
    """The value first assigned to ``name`` in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            assert node.value is not None
            return node.value
    raise UnclassifiedError(f"{name} not found")


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    """The function ``name`` anywhere in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise UnclassifiedError(f"function {name} not found")


def model_facts(source: Source) -> dict[str, Any]:
    """The literal tables the model rules read (aliases, dtypes, length keys, MLA types)."""
    out: dict[str, Any] = {}
    for key, (rel, function, variable) in _LITERALS.items():
        tree: ast.AST = ast.parse(source.text(rel))
        if function:
            tree = _function(tree, function)  # type: ignore[arg-type]
        out[key] = _literal(_assigned(tree, variable))
    convertor = ast.parse(source.text("vllm/transformers_utils/model_arch_config_convertor.py"))
    mla = _function(convertor, "is_deepseek_mla")
    tuples = [n for n in ast.walk(mla) if isinstance(n, ast.Tuple) and len(n.elts) > 3]
    out["mla_model_types"] = _literal(tuples[0])
    model = ast.parse(source.text("vllm/config/model.py"))
    verify = _function(model, "_get_and_verify_max_len")
    unscaled = [n for n in ast.walk(verify) if isinstance(n, ast.Tuple) and len(n.elts) > 3]
    out["rope_types_unscaled"] = _literal(unscaled[0])
    return out


def engine_args(source: Source, tree: Tree) -> dict[str, Any]:
    """Each ``EngineArgs`` field whose default is a config field (``X.f`` or
    ``get_field(X, "f")``): that owner, and whether ``create_engine_config`` passes
    the value on as given (``f=self.<arg>``)."""
    text = source.text("vllm/engine/arg_utils.py")
    module = ast.parse(text)
    engine = next(n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "EngineArgs")
    passed: set[tuple[str, str, str]] = set()
    for node in ast.walk(engine):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for kw in node.keywords:
                if kw.arg and ast.unparse(kw.value) == f"self.{kw.arg}":
                    passed.add((node.func.id, kw.arg, kw.arg))
    out: dict[str, Any] = {}
    for node in engine.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        owner = _owner(node.value)
        if owner is None or owner[0] not in tree.classes:
            continue
        cls, field = owner
        out[node.target.id] = {
            "owner": [cls, field],
            "passed": (cls, field, node.target.id) in passed,
        }
    return out


def _owner(node: ast.expr | None) -> tuple[str, str] | None:
    """``(class, field)`` of a default written ``X.f`` or ``get_field(X, "f")``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "get_field" and len(node.args) == 2:
        cls, field = node.args
        if isinstance(cls, ast.Name) and isinstance(field, ast.Constant):
            return cls.id, str(field.value)
    return None


def level_passes(source: Source) -> dict[str, Any]:
    """Per optimisation level, the ``compilation_config`` defaults of
    ``OPTIMIZATION_LEVEL_0N`` other than the CUDA-graph mode (that one is in
    ``vllm-X.Y.Z.json``): a constant, or ``{"rule": name}`` for a named function of
    ``vllm/config/vllm.py`` that kernelcfg's rules implement."""
    module = ast.parse(source.text("vllm/config/vllm.py"))
    consts = {
        t.id: n.value
        for n in module.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    out: dict[str, Any] = {}
    for level in range(4):
        table = consts[f"OPTIMIZATION_LEVEL_0{level}"]
        assert isinstance(table, ast.Dict)
        out[str(level)] = _level_value(_literal_dict(table)["compilation_config"], consts)
    return out


def _literal_dict(node: ast.Dict) -> dict[str, ast.expr]:
    """A dict literal's keys (literals) to their value nodes."""
    return {ast.literal_eval(k): v for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]


def _level_value(node: ast.expr, consts: dict[str, ast.expr]) -> Any:
    """A level table's value: a literal, or ``{"rule": name}`` for a function."""
    if isinstance(node, ast.Dict):
        return {
            k: _level_value(v, consts)
            for k, v in _literal_dict(node).items()
            if k != "cudagraph_mode"
        }
    if isinstance(node, ast.Name):
        if node.id in consts:
            return _literal(consts[node.id])
        return {"rule": node.id}
    return _literal(node)


_TORCH_NAMES = {"torch.half": "torch.float16", "torch.float": "torch.float32"}


def quant_act_dtypes(source: Source) -> dict[str, list[str]]:
    """Per quantisation method, the activation dtypes its config class accepts
    (``get_supported_act_dtypes``, inherited where the class does not define it)."""
    folder = "vllm/model_executor/layers/quantization"
    classes: dict[str, ast.ClassDef] = {}
    for rel in source.python_files(folder):
        for node in ast.parse(source.text(rel)).body:
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, node)
    init = ast.parse(source.text(f"{folder}/__init__.py"))
    table = _assigned(init, "method_to_config")
    assert isinstance(table, ast.Dict)
    out: dict[str, list[str]] = {}
    for key, value in zip(table.keys, table.values, strict=True):
        if not isinstance(value, ast.Name) or value.id not in classes:
            continue
        found = _act_dtypes(classes, value.id)
        if found is not None:
            out[ast.literal_eval(key)] = found  # type: ignore[arg-type]
    return out


def _act_dtypes(classes: dict[str, ast.ClassDef], name: str) -> list[str] | None:
    """The dtypes a quantisation config class (or a base) returns."""
    node = classes.get(name)
    if node is None:
        return None
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "get_supported_act_dtypes":
            ret = item.body[-1]
            if isinstance(ret, ast.Return) and isinstance(ret.value, ast.List):
                return [_TORCH_NAMES.get(ast.unparse(e), ast.unparse(e)) for e in ret.value.elts]
            return None
    for base in node.bases:
        found = _act_dtypes(classes, ast.unparse(base))
        if found is not None:
            return found
    return None


def batch_invariant_shapes(source: Source) -> dict[str, list[list[int]]]:
    """Per device family, the ``(N, K)`` matmul shapes with tuned batch-invariant
    configs (``_BATCH_INVARIANT_MATMUL_TUNED_CONFIGS``)."""
    rel = "vllm/model_executor/determinism/batch_invariant_configs.py"
    if not source.exists(rel):
        return {}
    table = _assigned(ast.parse(source.text(rel)), "_BATCH_INVARIANT_MATMUL_TUNED_CONFIGS")
    assert isinstance(table, ast.Dict)
    out: dict[str, list[list[int]]] = {}
    for key, value in zip(table.keys, table.values, strict=True):
        assert isinstance(value, ast.Dict)
        out[ast.literal_eval(key)] = [list(ast.literal_eval(k)) for k in value.keys]  # type: ignore[arg-type]
    return out


def vllm_config_classes(source: Source) -> list[str]:
    """The model types vLLM loads with its own config class (``_CONFIG_REGISTRY``):
    transformers alone does not make their ``hf_config``."""
    tree = ast.parse(source.text("vllm/transformers_utils/config.py"))
    value = _assigned(tree, "_CONFIG_REGISTRY")
    assert isinstance(value, ast.Call)
    return sorted(str(kw.arg) for kw in value.keywords if kw.arg)


def model_hooks(source: Source) -> list[str]:
    """The architectures with a config hook (``MODELS_CONFIG_MAP``)."""
    tree = ast.parse(source.text("vllm/model_executor/models/config.py"))
    table = _assigned(tree, "MODELS_CONFIG_MAP")
    assert isinstance(table, ast.Dict)
    return sorted(ast.literal_eval(k) for k in table.keys)  # type: ignore[arg-type]


def build(wheel: Path) -> dict[str, Any]:
    """The release's config-factor data."""
    source = Source(wheel)
    version = version_of(source, wheel)
    tree = Tree(source)
    method = (
        "compile_factors"
        if has_method(tree.cls("VllmConfig"), "compile_factors")
        else ("compute_hash")
    )
    nested = method == "compile_factors"
    parts = _parts(tree, method)
    names = [p["class"] for p in parts if "class" in p]
    for name in [n for n in names if n not in ELSEWHERE]:
        for inner in _nested_classes(tree, name):
            if inner not in names and has_method(tree.cls(inner), method):
                names.append(inner)
    configs = {n: config_entry(tree, n, method, nested=nested) for n in names}
    return {
        "format": FORMAT,
        "vllm_version": version,
        "source": f"{CONFIG_DIR}/*.py (VllmConfig.{method} and each config's)",
        "scheme": method,
        "parts": parts,
        "configs": configs,
        "enums": {n: enum_members(tree, n) for n in ENUMS},
        "levels": level_passes(source),
        "model_facts": model_facts(source),
        "model_hooks": model_hooks(source),
        "vllm_config_classes": vllm_config_classes(source),
        "quant_act_dtypes": quant_act_dtypes(source),
        "batch_invariant_shapes": batch_invariant_shapes(source),
        "engine_args": engine_args(source, tree),
    }


def dumps(data: dict[str, Any]) -> str:
    """The file's text: one field a line, so a diff between releases reads well."""
    lines = ["{"]
    head = {k: v for k, v in data.items() if k not in ("configs", "parts", "engine_args")}
    for key, value in head.items():
        lines.append(f" {json.dumps(key)}: {json.dumps(value)},")
    lines.append(' "parts": [')
    for i, part in enumerate(data["parts"]):
        comma = "," if i < len(data["parts"]) - 1 else ""
        lines.append(f"  {json.dumps(part)}{comma}")
    lines.append(" ],")
    lines.append(' "configs": {')
    items = list(data["configs"].items())
    for i, (name, entry) in enumerate(items):
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "module": {json.dumps(entry["module"])}, "line": {entry["line"]},')
        lines.append(f'   "hash": {json.dumps(entry["hash"])},')
        if "constants" in entry:
            lines.append(f'   "constants": {json.dumps(entry["constants"])},')
        lines.append('   "fields": [')
        for j, f in enumerate(entry["fields"]):
            comma = "," if j < len(entry["fields"]) - 1 else ""
            lines.append(f"    {json.dumps(f)}{comma}")
        lines.append("   ]")
        lines.append("  }" + ("," if i < len(items) - 1 else ""))
    lines.append(" },")
    lines.append(' "engine_args": {')
    args = list(data["engine_args"].items())
    for i, (name, entry) in enumerate(args):
        comma = "," if i < len(args) - 1 else ""
        lines.append(f"  {json.dumps(name)}: {json.dumps(entry)}{comma}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    """Write the file, or say whether it would change."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("wheel", type=Path, help="a vllm wheel, or its unpacked folder")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file would change")
    parser.add_argument("--out", type=Path, help="where to write (default: the releases dir)")
    args = parser.parse_args()
    data = build(args.wheel)
    out: Path = args.out or RELEASES_DIR / f"compile-config-{data['vllm_version']}.json"
    return write_or_check(out, dumps(data), check=args.check)


if __name__ == "__main__":
    sys.exit(main())
