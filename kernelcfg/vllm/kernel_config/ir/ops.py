"""IR ops and their providers on a target, with vLLM's priority filtering.

Which providers exist comes from the release's data; whether one is *supported*
depends on the target (vLLM decides it once, when the kernels are imported). Setting a
priority filters it as vLLM does: an unregistered name is refused, unsupported
providers are skipped, the list stops at the first provider that takes every
argument (``native``), and ``native`` is appended when no such provider was listed.
This module does not import torch; :meth:`IrOp.dispatch` does, when called.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kernelcfg.targets.presets import Target, capability_int, detect
from kernelcfg.vllm.releases import Release

__all__ = ["IrOp", "Provider", "Registry", "registry"]


@dataclass(frozen=True)
class Provider:
    """One implementation of an IR op."""

    name: str
    """The provider's name (``native``, ``vllm_c``, ...)."""
    uuid: str
    """SHA-256 of the vLLM source file that defines it."""
    file: str
    """That file, relative to the wheel's root."""
    supported: bool
    """Whether it is available on the registry's target."""
    args_rule: str | None
    """The name of its argument rule; ``None`` takes every argument."""
    why_not: str | None = None
    """Why it is unavailable, when it is."""
    needs: str | None = None
    """A runtime need kernelcfg cannot check offline (a package, a plugin)."""


def _support(rules: dict[str, Any], target: Target) -> tuple[bool, str | None]:
    platforms = rules.get("platforms")
    if platforms is not None and target.kind not in platforms:
        return False, f"runs on {', '.join(platforms)}, not {target.kind}"
    minimum = rules.get("min_capability")
    if minimum is not None:
        have = target.capability_int
        if have is None or have < capability_int(minimum):
            return (
                False,
                f"needs compute capability {minimum} or newer, target has {target.capability}",
            )
    return True, None


class IrOp:
    """One IR op: its providers on a target and its current dispatch priority."""

    def __init__(self, name: str, providers: dict[str, Provider]) -> None:
        self.name = name
        self.impls = providers
        self._priority: list[Provider] = []
        self._chains: dict[tuple[str, ...], list[str]] = {}

    def filter_priority(self, priority: Sequence[str]) -> list[Provider]:
        """vLLM's filtering of a priority list (see the module docstring)."""
        from kernelcfg.base.errors import UnknownProviderError

        for name in priority:
            if name not in self.impls:
                raise UnknownProviderError(self.name, name, self.impls)
        chosen: list[Provider] = []
        for name in priority:
            impl = self.impls[name]
            if not impl.supported:
                continue
            chosen.append(impl)
            if impl.args_rule is None:
                return chosen
        chosen.append(self.impls["native"])
        return chosen

    def chain(self, priority: Sequence[str]) -> list[str]:
        """The providers dispatch would try, in order, for this priority."""
        key = tuple(priority)
        found = self._chains.get(key)
        if found is None:
            found = self._chains[key] = [p.name for p in self.filter_priority(priority)]
        return list(found)

    def get_priority(self) -> list[str]:
        """The current (filtered) dispatch priority."""
        return [p.name for p in self._priority]

    def set_default(self, priority: Sequence[str]) -> None:
        """Set the dispatch priority for good."""
        self._priority = self.filter_priority(priority)

    @contextlib.contextmanager
    def set_priority(self, priority: Sequence[str]) -> Iterator[None]:
        """Set the dispatch priority inside the block."""
        old = self._priority
        try:
            self._priority = self.filter_priority(priority)
            yield
        finally:
            self._priority = old

    def dispatch(self, *args: Any, **kwargs: Any) -> str:
        """The provider that would run for these arguments (needs torch)."""
        from kernelcfg.vllm.kernel_config.ir.native import NATIVE
        from kernelcfg.vllm.kernel_config.ir.predicates import PREDICATES

        if not self._priority:
            return "native"
        bound = inspect.signature(NATIVE[self.name]).bind(*args, **kwargs)
        bound.apply_defaults()
        for impl in self._priority:
            if impl.args_rule is None or PREDICATES[impl.args_rule](dict(bound.arguments)):
                return impl.name
        return "native"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the op with its native implementation (the one kernelcfg has)."""
        from kernelcfg.vllm.kernel_config.ir.native import NATIVE

        return NATIVE[self.name](*args, **kwargs)


class Registry:
    """Every IR op of a release, on one target."""

    def __init__(self, release: Release, target: Target) -> None:
        self.release = release
        self.target = target
        rules = release.rules.get("ir_providers", {})
        self._ops: dict[str, IrOp] = {}
        for op in release.ir_ops:
            providers: dict[str, Provider] = {}
            for name, facts in release.providers(op).items():
                provider_rules = rules.get(name, {"platforms": None, "args": None})
                ok, why = _support(provider_rules, target)
                providers[name] = Provider(
                    name=name,
                    uuid=facts["uuid"],
                    file=facts["file"],
                    supported=ok,
                    args_rule=provider_rules.get("args"),
                    why_not=why,
                    needs=provider_rules.get("needs"),
                )
            self._ops[op] = IrOp(op, providers)

    def op(self, name: str) -> IrOp:
        """The op called ``name``."""
        return self._ops[name]

    @property
    def ops(self) -> dict[str, IrOp]:
        """Every op, by name."""
        return dict(self._ops)


_REGISTRIES: dict[tuple[str, Target], Registry] = {}


def registry(release: Release, target: Target | None = None) -> Registry:
    """The registry of ``release`` on ``target`` (this machine when not given)."""
    chosen = target if target is not None else detect()
    key = (release.version, chosen)
    if key not in _REGISTRIES:
        _REGISTRIES[key] = Registry(release, chosen)
    return _REGISTRIES[key]
