"""The condition words of the kernel-selection data (linear and MoE).

A condition is a mapping of words to values; it holds when every word does. The words
read the target under one install (:class:`Where`: platform kind, capability, ROCm
arch, the optional libraries installed, vLLM's switches, the host CPU's features) and
the layer being placed (a mapping of the features vLLM's checks read: its quantisation
keys, activation, parallel layout, ...). The data files name this module as the
meaning of their conditions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kernelcfg.targets.presets import capability_int, gfx_capability

__all__ = ["WORDS", "Where", "holds", "where"]


@dataclass(frozen=True)
class Where:
    """The target and install as a kernel selection sees them."""

    kind: str
    """cuda, rocm, cpu or xpu."""
    cc: int | None
    """The capability as vLLM's ``to_int()`` (ROCm: from the gfx arch)."""
    gfx: str | None
    """ROCm's gfx arch."""
    libraries: frozenset[str]
    """The optional libraries installed."""
    env: Mapping[str, bool]
    """The switches vLLM reads, with the release's defaults."""
    features: Mapping[str, bool]
    """The host CPU's features (AMX, Zen)."""

    @property
    def key(self) -> tuple[Any, ...]:
        """Everything a walk reads, hashable."""
        return (
            self.kind,
            self.cc,
            self.gfx,
            self.libraries,
            tuple(sorted(self.env.items())),
            tuple(sorted(self.features.items())),
        )


def where(
    data: Mapping[str, Any],
    kind: str,
    capability: str | None,
    gfx: str | None,
    install: str,
    env: Mapping[str, str],
) -> Where:
    """The target under one install, with the engine's environment, as the selection
    data (its ``installs``, ``env_defaults`` and ``host_features``) describes it."""
    cc: int | None = None
    if kind == "cuda" and capability:
        cc = capability_int(capability)
    elif kind == "rocm" and gfx:
        found = gfx_capability(gfx)
        cc = None if found is None else found[0] * 10 + found[1]
    switches = dict(data["env_defaults"])
    for name in switches:
        if name in env:
            switches[name] = env[name].strip().lower() in ("1", "true")
    libraries = frozenset(data["installs"].get(kind, {}).get(install, ()))
    return Where(kind, cc, gfx, libraries, switches, data.get("host_features", {}).get(kind, {}))


def _each(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _attrs(layer: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(
        layer.get(name) in value if isinstance(value, list) else layer.get(name) == value
        for name, value in wanted.items()
    )


def _compare(
    layer: Mapping[str, Any], wanted: Mapping[str, Any], test: Callable[[Any, Any], bool]
) -> bool:
    return all(
        isinstance(layer.get(name), int) and test(layer[name], bound)
        for name, bound in wanted.items()
    )


WORDS: dict[str, Callable[[Where, Mapping[str, Any], Any], bool]] = {
    "kind": lambda w, _, v: w.kind in _each(v),
    "kind_not": lambda w, _, v: w.kind not in _each(v),
    "cc_lt": lambda w, _, v: w.cc is not None and w.cc < v,
    "cc_ge": lambda w, _, v: w.cc is not None and w.cc >= v,
    "cc_in": lambda w, _, v: w.cc in v,
    "cc_not_in": lambda w, _, v: w.cc not in v,
    "major_in": lambda w, _, v: w.cc is not None and w.cc // 10 in v,
    "major_not_in": lambda w, _, v: not (w.cc is not None and w.cc // 10 in v),
    "gfx_in": lambda w, _, v: w.gfx in v,
    "gfx_not_in": lambda w, _, v: w.gfx not in v,
    "gfx_prefix_not": lambda w, _, v: not (w.gfx and any(w.gfx.startswith(p) for p in _each(v))),
    "missing": lambda w, _, v: not all(lib in w.libraries for lib in _each(v)),
    "has": lambda w, _, v: all(lib in w.libraries for lib in _each(v)),
    "env_on": lambda w, _, v: bool(w.env.get(v)),
    "env_off": lambda w, _, v: not w.env.get(v),
    "feature_off": lambda w, _, v: not w.features.get(v, False),
    "attr": lambda _, layer, v: _attrs(layer, v),
    "not_attr": lambda _, layer, v: not _attrs(layer, v),
    "attr_lt": lambda _, layer, v: _compare(layer, v, lambda a, b: a < b),
    "attr_ge": lambda _, layer, v: _compare(layer, v, lambda a, b: a >= b),
    "attr_mod": lambda _, layer, v: _compare(layer, v, lambda a, b: a % b == 0),
    "any": lambda w, layer, v: any(holds(c, w, layer) for c in v),
    "not": lambda w, layer, v: not holds(v, w, layer),
}
"""Each word: (target under an install, layer features, the word's value) -> holds."""


def holds(condition: Mapping[str, Any], where: Where, layer: Mapping[str, Any]) -> bool:
    """Whether every word of ``condition`` holds."""
    return all(WORDS[word](where, layer, value) for word, value in condition.items())
