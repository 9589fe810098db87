"""``KernelConfig`` and ``IrOpPriorityConfig``, built from a release's data.

The classes are pydantic dataclasses that forbid unknown fields, with the fields,
defaults, choice lists and validators of the release they are built for, and
vLLM's names for their methods. Build them with :func:`config_classes`; they are
cached per release.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic import ConfigDict, Field, field_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from kernelcfg.vllm.kernel_config import hashing, values
from kernelcfg.vllm.releases import FieldFacts, Release

if TYPE_CHECKING:
    from kernelcfg.vllm.context import ResolutionContext

__all__ = [
    "ConfigClasses",
    "IrOpPriorityBase",
    "KernelConfigBase",
    "config_classes",
]

_FORBID = ConfigDict(extra="forbid")


class IrOpPriorityBase:
    """Methods shared by every release's ``IrOpPriorityConfig``."""

    release: ClassVar[Release]
    if TYPE_CHECKING:

        def __init__(self, **kwargs: Any) -> None: ...

    def op_lists(self) -> dict[str, list[str]]:
        """Each op's priority list, in field order."""
        return {op: getattr(self, op) for op in self.release.ir_ops}

    def hash_factors(self) -> dict[str, Any]:
        """What vLLM hashes: each op's list, and ``_impls`` with provider uuids."""
        return hashing.ir_factors(self.release, self.op_lists())

    def compute_hash(self) -> str:
        """The IR-op sub-hash vLLM puts into ``KernelConfig``'s factors."""
        return hashing.ir_hash(self.release, self.op_lists())

    @classmethod
    def with_default(cls, default: list[str], /, **kwargs: Any) -> IrOpPriorityBase:
        """Build one where every op not given in ``kwargs`` gets a copy of ``default``."""
        for op in cls.release.ir_ops:
            if op not in kwargs:
                kwargs[op] = list(default)
        return cls(**kwargs)

    def set_default(self) -> None:
        """Make these lists the dispatch priority of every op, permanently."""
        from kernelcfg.vllm.kernel_config.ir import registry

        for op, lst in self.op_lists().items():
            registry(self.release).op(op).set_default(lst)

    @contextlib.contextmanager
    def set_priority(self) -> Iterator[None]:
        """Make these lists the dispatch priority of every op inside the block."""
        from kernelcfg.vllm.kernel_config.ir import registry

        with contextlib.ExitStack() as stack:
            for op, lst in self.op_lists().items():
                stack.enter_context(registry(self.release).op(op).set_priority(lst))
            yield


class KernelConfigBase:
    """Methods shared by every release's ``KernelConfig``."""

    release: ClassVar[Release]
    if TYPE_CHECKING:
        ir_op_priority: IrOpPriorityBase
        moe_backend: str

        def __init__(self, **kwargs: Any) -> None: ...

    def values(self) -> dict[str, Any]:
        """Every field's value, the IR-op priority as a plain dict of lists."""
        out: dict[str, Any] = {}
        for facts in self.release.kernel_fields:
            value = getattr(self, facts.name)
            if facts.kind == "ir_op_priority":
                value = {
                    op: list(v) if v is not None else None for op, v in value.op_lists().items()
                }
            elif isinstance(value, dict):
                value = dict(value)
            out[facts.name] = value
        return out

    def ignored_factors(self) -> set[str]:
        """The fields ``compute_hash`` leaves out, for this instance."""
        return hashing.ignored_factors(self.release, self.values())

    def hash_factors(self) -> dict[str, Any]:
        """Exactly what vLLM's ``KernelConfig.compute_hash`` digests."""
        return hashing.kernel_factors(self.release, self.values())

    def compute_hash(self) -> str:
        """The kernel-config hash vLLM computes for this kernel config: its
        ``compute_hash()`` up to 0.33.0, ``hash_config(config)`` from 0.34.0."""
        return hashing.kernel_hash(self.release, self.values())[1]

    def set_platform_defaults(self, ctx: ResolutionContext) -> None:
        """Apply the platform's defaults as vLLM's start-up does (idempotent).

        Checks the DeepSeek-V4-only backend against the model's architectures,
        binds the passthrough all2all backend where the release has that rule, and
        appends the platform's IR-op defaults missing from each list.
        """
        from kernelcfg.vllm.kernel_config import rules

        lists: dict[str, list[str] | None] = dict(self.ir_op_priority.op_lists())
        rules.set_platform_defaults(self.release, self.moe_backend, lists, ctx)
        for op, lst in lists.items():
            if getattr(self.ir_op_priority, op) is None:
                setattr(self.ir_op_priority, op, lst)


@dataclasses.dataclass(frozen=True)
class ConfigClasses:
    """The two config classes of one release."""

    KernelConfig: type[KernelConfigBase]
    """That release's ``KernelConfig``."""
    IrOpPriorityConfig: type[IrOpPriorityBase]
    """That release's ``IrOpPriorityConfig``."""


def _to_list_str(cls: type, value: Any) -> Any:
    """vLLM's rule: a string is split on commas once spaces are gone; all strings."""
    del cls
    if isinstance(value, str):
        value = value.replace(" ", "").split(",")
    if not all(isinstance(v, str) for v in value):
        raise AssertionError()
    return value


def _normalize_backend(cls: type, value: Any) -> Any:
    del cls
    return values.normalize_backend(value) if isinstance(value, str) else value


def _skip_none(cls: type, value: Any, handler: Callable[[Any], Any]) -> Any:
    del cls
    if value is None:
        return value
    return handler(value)


def _literal(names: tuple[str, ...]) -> Any:
    return Literal[names]


def _namespace(release: Release, name: str) -> dict[str, Any]:
    """The class body every generated config class starts from."""
    return {
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": release.rules.get("docs", {}).get(name, ""),
        "release": release,
    }


def _build_ir_class(release: Release) -> type[IrOpPriorityBase]:
    annotations: dict[str, Any] = {}
    namespace = _namespace(release, "IrOpPriorityConfig")
    ir_docs = release.rules.get("docs", {}).get("ir_ops", {})
    for op in release.ir_ops:
        annotations[op] = list[str]
        namespace[op] = Field(default_factory=list, description=ir_docs.get(op, ""))
    namespace["__annotations__"] = annotations
    namespace["_to_list_str"] = field_validator("*", mode="before")(classmethod(_to_list_str))
    cls = type("IrOpPriorityConfig", (IrOpPriorityBase,), namespace)
    return cast(type[IrOpPriorityBase], pydantic_dataclass(cls, config=_FORBID))


def _field_spec(
    release: Release, facts: FieldFacts, ir_cls: type[IrOpPriorityBase]
) -> tuple[Any, Any]:
    """The annotation and default of one ``KernelConfig`` field."""
    if facts.kind == "ir_op_priority":
        return ir_cls, Field(default_factory=ir_cls, description=facts.doc)
    if facts.kind == "bool":
        return bool, Field(default=facts.default, description=facts.doc)
    assert facts.choices is not None
    literal = _literal(release.choices(facts.choices))
    if facts.kind == "choice_map":
        return dict[str, literal] | None, Field(  # type: ignore[valid-type]
            default=facts.default, min_length=facts.min_length, description=facts.doc
        )
    return literal, Field(default=facts.default, description=facts.doc)


def _build_kernel_class(release: Release, ir_cls: type[IrOpPriorityBase]) -> type[KernelConfigBase]:
    annotations: dict[str, Any] = {}
    namespace = _namespace(release, "KernelConfig")
    for facts in release.kernel_fields:
        annotations[facts.name], namespace[facts.name] = _field_spec(release, facts, ir_cls)
    namespace["__annotations__"] = annotations
    normalized = sorted(release.normalized_fields)
    if normalized:
        namespace["_normalize_backends"] = field_validator(*normalized, mode="before")(
            classmethod(_normalize_backend)
        )
    nullable = [f.name for f in release.kernel_fields if f.kind == "bool" and f.nullable]
    if nullable:
        namespace["_skip_none_validation"] = field_validator(*nullable, mode="wrap")(
            classmethod(_skip_none)
        )
    if release.hash_scheme == "hash_config":  # the method exists where vLLM has it
        namespace["compile_factors"] = _compile_factors
    cls = type("KernelConfig", (KernelConfigBase,), namespace)
    return cast(type[KernelConfigBase], pydantic_dataclass(cls, config=_FORBID))


def _compile_factors(self: KernelConfigBase) -> dict[str, Any]:
    """``KernelConfig.compile_factors()`` (vLLM 0.34.0 on): what ``hash_config``
    digests, and the value under ``kernel`` in vLLM's compile-cache key."""
    return self.hash_factors()


@cache
def config_classes(release: Release) -> ConfigClasses:
    """``KernelConfig`` and ``IrOpPriorityConfig`` for ``release`` (built once)."""
    ir_cls = _build_ir_class(release)
    return ConfigClasses(_build_kernel_class(release, ir_cls), ir_cls)
