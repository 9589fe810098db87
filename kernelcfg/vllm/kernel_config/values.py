"""A kernel config as plain values: defaults, validation, the platform-default merge.

Resolution works on plain dicts (field name to value, the IR-op priority as a dict of
lists), the same shape ``KernelConfig.values()`` returns. Validation takes a fast
path for the plain shapes a command line produces (canonical strings, real booleans,
lists of strings) and hands everything else to the release's pydantic
``KernelConfig``, so that what is accepted and every error message are pydantic's.
pydantic is imported only on that second path.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kernelcfg.vllm.releases import FieldFacts, Release

__all__ = [
    "append_platform_defaults",
    "defaults",
    "fast_ir",
    "fast_value",
    "normalize_backend",
]

Values = dict[str, Any]
IrLists = dict[str, list[str]]


def normalize_backend(value: str) -> str:
    """vLLM's spelling rule for backend names: lower case, ``-`` to ``_``."""
    return value.lower().replace("-", "_")


def _default(facts: FieldFacts, release: Release) -> Any:
    if facts.kind == "ir_op_priority":
        return {op: [] for op in release.ir_ops}
    return copy.copy(facts.default)


def defaults(release: Release) -> Values:
    """A fresh ``KernelConfig()``'s values."""
    template = _TEMPLATES.get(release.version)
    if template is None:
        template = _TEMPLATES[release.version] = {
            f.name: _default(f, release) for f in release.kernel_fields
        }
    out = dict(template)
    if release.ir_field is not None:
        out[release.ir_field] = {op: [] for op in release.ir_ops}
    return out


_TEMPLATES: dict[str, Values] = {}


def _split(value: Any) -> list[str] | None:
    """An IR priority as vLLM's validator leaves it; ``None`` where pydantic must decide."""
    if isinstance(value, str) and type(value) is str:
        return value.replace(" ", "").split(",")
    if type(value) is list and all(type(v) is str for v in value):
        return list(value)
    return None


def fast_ir(release: Release, given: Mapping[str, Any]) -> IrLists | None:
    """The IR-op lists of ``given`` when plain values need no pydantic; else ``None``."""
    ops = release.ir_ops
    out: IrLists = {op: [] for op in ops}
    for op, value in given.items():
        if op not in out:
            return None
        lst = _split(value)
        if lst is None:
            return None
        out[op] = lst
    return out


def fast_value(release: Release, facts: FieldFacts, value: Any) -> tuple[bool, Any]:
    """``(True, value)`` when the plain path can decide, else ``(False, None)``."""
    judge = _FAST_BY_KIND.get(facts.kind)
    return judge(release, facts, value) if judge is not None else (False, None)


def _fast_bool(_release: Release, facts: FieldFacts, value: Any) -> tuple[bool, Any]:
    if type(value) is bool or (value is None and facts.nullable):
        return True, value
    return False, None


def _fast_choice(release: Release, facts: FieldFacts, value: Any) -> tuple[bool, Any]:
    if type(value) is not str:
        return False, None
    name = normalize_backend(value) if facts.name in release.normalized_fields else value
    return (name in release.choices(facts.name)), name


def _fast_choice_map(release: Release, facts: FieldFacts, value: Any) -> tuple[bool, Any]:
    if value is None:
        return True, None
    if type(value) is not dict or not value:
        return False, None
    allowed = release.choices(facts.name)
    ok = all(type(k) is str and type(v) is str and v in allowed for k, v in value.items())
    return ok, dict(value) if ok else None


def _fast_ir_value(release: Release, _facts: FieldFacts, value: Any) -> tuple[bool, Any]:
    if type(value) is not dict:
        return False, None
    lists = fast_ir(release, value)
    return lists is not None, lists


_FAST_BY_KIND: dict[str, Callable[[Release, FieldFacts, Any], tuple[bool, Any]]] = {
    "bool": _fast_bool,
    "choice": _fast_choice,
    "choice_map": _fast_choice_map,
    "ir_op_priority": _fast_ir_value,
}


def append_platform_defaults(
    lists: dict[str, list[str] | None], platform: Mapping[str, Iterable[str]]
) -> None:
    """vLLM's merge: a ``None`` list becomes the platform's; others get what they lack.

    Idempotent, as vLLM needs it to be (``set_platform_defaults`` may run twice).
    """
    for op, default in platform.items():
        current = lists.get(op)
        if current is None:
            lists[op] = list(default)
        elif not current:
            current.extend(default)
        else:
            current.extend(p for p in default if p not in current)
