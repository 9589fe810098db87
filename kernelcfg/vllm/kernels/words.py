"""The condition words of the kernel-selection data (linear and MoE).

A condition is a mapping of words to values; it holds when every word does. The words
read the target under one install (:class:`Where`: platform kind, capability, ROCm
arch, the optional libraries installed, vLLM's switches, the host CPU's features) and
the layer being placed (a mapping of the features vLLM's checks read: its quantisation
keys, activation, parallel layout, ...). The data files name this module as the
meaning of their conditions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kernelcfg.targets.presets import capability_int, gfx_capability

__all__ = ["WORDS", "Where", "holds", "key_parts", "on_host", "where"]


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
    """The host CPU's features (AMX, Zen, the architecture)."""
    env_set: frozenset[str] = frozenset()
    """The environment variables explicitly set (vLLM's ``envs.is_set``)."""
    env_raw: Mapping[str, str] = field(default_factory=dict)
    """The raw values of the environment variables explicitly set."""
    device_name: str | None = None
    """The device name vLLM prints in reasons (``None``: not known)."""

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
            self.env_set,
            tuple(sorted(self.env_raw.items())),
            self.device_name,
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
    data (its ``installs``, ``env_defaults`` and ``host_features``: the host its
    reference vectors ran on; :func:`on_host` gives a target's own)."""
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
    named = {name: env[name] for name in data["env_defaults"] if name in env}
    return Where(
        kind,
        cc,
        gfx,
        libraries,
        switches,
        data.get("host_features", {}).get(kind, {}),
        env_set=frozenset(named),
        env_raw=named,
    )


def on_host(found: Where, features: Mapping[str, bool] | None) -> Where:
    """``found`` on a CPU target whose host features are known (``None``: the data's
    own, unchanged)."""
    return found if features is None else replace(found, features=features)


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


def _mod_attr(layer: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    """``name % layer[other] == 0`` for each pair (both ints, the divisor not 0)."""
    return all(
        isinstance(layer.get(name), int)
        and isinstance(layer.get(other), int)
        and layer[other] != 0
        and layer[name] % layer[other] == 0
        for name, other in wanted.items()
    )


def _env_value(w: Where, wanted: Mapping[str, list[str | None]]) -> bool:
    """The raw value, lower-cased (``None`` when not set), is in the list."""
    for name, values in wanted.items():
        raw = w.env_raw.get(name)
        if (raw.strip().lower() if raw is not None else None) not in values:
            return False
    return True


_KEY = re.compile(
    r"QuantKey\((?P<dtype>[^,]+),scale\((?P<sdtype>[^,]+),(?P<static>static|dynamic),"
    r"(?P<group>per_tensor|per_token|per_channel|GroupShape\(row=-?\d+, col=-?\d+\))\),"
    r"(?P<scale2>scale2\([^)]*\)+,)?(?P<sym>symmetric|asymmetric)\)$"
)
_GROUPS = {"per_tensor": (-1, -1), "per_token": (1, -1), "per_channel": (-1, 1)}


def key_parts(text: str | None) -> dict[str, Any] | None:
    """A QuantKey's ``str()`` (quant_utils.py:QuantKey.__str__) split into its parts:
    dtype, scale dtype, static, group (row, col), scale2 present, symmetric."""
    found = _KEY.match(text) if text else None
    if found is None:
        return None
    group = found["group"]
    shape = _GROUPS.get(group) or tuple(int(n) for n in re.findall(r"-?\d+", group))
    return {
        "dtype": found["dtype"],
        "scale_dtype": found["sdtype"],
        "scale_static": found["static"] == "static",
        "group": shape,
        "scale2": found["scale2"] is not None,
        "symmetric": found["sym"] == "symmetric",
    }


def _uint_bits(dtype: str, bounds: list[int]) -> bool:
    found = re.fullmatch(r"uint(\d+)(b\d+)?", dtype)
    return found is not None and bounds[0] <= int(found.group(1)) <= bounds[1]


def _dtype_ok(parts: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    if "dtype_in" not in spec:
        return True
    if parts["dtype"] in spec["dtype_in"]:
        return True
    return "or_dtype_uint_bits" in spec and _uint_bits(parts["dtype"], spec["or_dtype_uint_bits"])


def _group_ok(shape: tuple[int, int], spec: Mapping[str, Any]) -> bool:
    row, col = shape
    if row <= spec.get("group_row_gt", -2) or col <= spec.get("group_col_gt", -2):
        return False
    if "group" not in spec:
        return True
    named = {"per_channel": shape == (-1, 1), "row1_colpos": row == 1 and col > 0}
    return any(named[g] for g in spec["group"])


def _key_fits(parts: Mapping[str, Any] | None, spec: Mapping[str, Any]) -> bool:
    if parts is None:
        return False
    plain = ("symmetric", "scale_static", "scale_dtype")
    if any(name in spec and parts[name] != spec[name] for name in plain):
        return False
    if "scale2" in spec and parts["scale2"] != (spec["scale2"] is not None):
        return False
    return _dtype_ok(parts, spec) and _group_ok(parts["group"], spec)


def _key_match(layer: Mapping[str, Any], wanted: Mapping[str, Mapping[str, Any]]) -> bool:
    """Each named key (its ``str()`` in ``<role>_str``) is set and fits the spec."""
    return all(
        _key_fits(key_parts(layer.get(f"{role}_str")), spec) for role, spec in wanted.items()
    )


WORDS: dict[str, Callable[[Where, Mapping[str, Any], Any], bool]] = {
    # platform kind in / not in the list (cuda, rocm, cpu, xpu)
    "kind": lambda w, _, v: w.kind in _each(v),
    "kind_not": lambda w, _, v: w.kind not in _each(v),
    # capability major*10+minor (ROCm from the gfx arch); None never compares
    "cc_lt": lambda w, _, v: w.cc is not None and w.cc < v,
    "cc_ge": lambda w, _, v: w.cc is not None and w.cc >= v,
    "cc_in": lambda w, _, v: w.cc in v,
    "cc_not_in": lambda w, _, v: w.cc not in v,
    # capability family cc // 10 in / not in the list
    "major_in": lambda w, _, v: w.cc is not None and w.cc // 10 in v,
    "major_not_in": lambda w, _, v: not (w.cc is not None and w.cc // 10 in v),
    # ROCm gfx arch in / not in the list
    "gfx_in": lambda w, _, v: w.gfx in v,
    "gfx_not_in": lambda w, _, v: w.gfx not in v,
    # gfx arch starts with none of the prefixes
    "gfx_prefix_not": lambda w, _, v: not (w.gfx and any(w.gfx.startswith(p) for p in _each(v))),
    # gfx arch contains one of the substrings (vLLM's `"gfx9" in _GCN_ARCH`); False off ROCm
    "gfx_contains": lambda w, _, v: bool(w.gfx) and any(s in str(w.gfx) for s in _each(v)),
    # some / none of the listed optional libraries missing
    "missing": lambda w, _, v: not all(lib in w.libraries for lib in _each(v)),
    "has": lambda w, _, v: all(lib in w.libraries for lib in _each(v)),
    # every listed switch on / off (after the release's default)
    "env_on": lambda w, _, v: all(bool(w.env.get(n)) for n in _each(v)),
    "env_off": lambda w, _, v: not any(w.env.get(n) for n in _each(v)),
    # one of the listed env variables explicitly set, whatever its value (envs.is_set)
    "env_set": lambda w, _, v: any(n in w.env_set for n in _each(v)),
    # {VAR: [values]}: raw value lower-cased in the list; null in the list = not set
    "env_value": lambda w, _, v: _env_value(w, v),
    # a listed host CPU feature absent (amx_tile, amx_fp8, zen, macos); none off a CPU host
    "feature_off": lambda w, _, v: not all(w.features.get(f, False) for f in _each(v)),
    # CPU platform whose architecture (host feature x86 / arm / powerpc ...) is listed
    "cpu_arch_in": lambda w, _, v: w.kind == "cpu" and any(w.features.get(a) for a in v),
    # the listed aten ops absent from PyTorch: never (kernelcfg assumes a PyTorch with them)
    "torch_op_missing": lambda _w, _l, _v: False,
    # layer feature equal to / in the value, for every name (not_attr: not all of them)
    "attr": lambda _, layer, v: _attrs(layer, v),
    "not_attr": lambda _, layer, v: not _attrs(layer, v),
    # integer layer feature <, >=, divisible by the number
    "attr_lt": lambda _, layer, v: _compare(layer, v, lambda a, b: a < b),
    "attr_ge": lambda _, layer, v: _compare(layer, v, lambda a, b: a >= b),
    "attr_mod": lambda _, layer, v: _compare(layer, v, lambda a, b: a % b == 0),
    # {name: other}: layer[name] divisible by layer[other] (both ints, other not 0)
    "attr_mod_attr": lambda _, layer, v: _mod_attr(layer, v),
    # {weight_key|activation_key: spec}: the key is set and its parts fit the spec
    "key_match": lambda _, layer, v: _key_match(layer, v),
    # combinators: one of / all of the listed conditions, the negation of one
    "any": lambda w, layer, v: any(holds(c, w, layer) for c in v),
    "all": lambda w, layer, v: all(holds(c, w, layer) for c in v),
    "not": lambda w, layer, v: not holds(v, w, layer),
}
"""Each word: (target under an install, layer features, the word's value) -> holds."""


def holds(condition: Mapping[str, Any] | bool, where: Where, layer: Mapping[str, Any]) -> bool:
    """Whether every word of ``condition`` holds (a bare bool is itself)."""
    if isinstance(condition, bool):
        return condition
    return all(WORDS[word](where, layer, value) for word, value in condition.items())
