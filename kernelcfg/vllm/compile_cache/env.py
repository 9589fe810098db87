"""The environment's part of vLLM's compile-cache key: ``envs.compile_factors()``.

vLLM reads every variable its ``vllm/envs.py`` declares, each through its own parser
(defaults included), leaves out the release's ignored set and any variable whose parser
raises (it logs a warning), adds the ``RAY_EXPERIMENTAL_NOSET_*`` variables as read, and
hashes the result with ``hash_factors`` after ``normalize_value`` (both in
:mod:`kernelcfg.vllm.kernel_config.hashing`).

The parsers are release data (``env-X.Y.Z.json``, written by
``scripts/release/compile_env.py`` from the wheel): each variable is one of :data:`KINDS`
with its parameters. Three defaults depend on more than the environment, given by
:class:`EnvInputs`: the torch version (``VLLM_USE_AOT_COMPILE``,
``VLLM_USE_MEGA_AOT_ARTIFACT``, ``VLLM_COMPILE_ON_ONE_RANK``; the release's pin unless
given), a ROCm build of torch (``VLLM_DBO_COMM_SMS``) and the platform
(``VLLM_COMPILE_ON_ONE_RANK``). ``VLLM_RUST_FRONTEND_PATH=auto`` names a file of the
installed vLLM package: without :attr:`EnvInputs.vllm_package_dir` it is unknown.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kernelcfg.base.errors import KernelcfgError
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config.hashing import digest, normalize_value

__all__ = [
    "KINDS",
    "EnvFactors",
    "EnvInputs",
    "UnknownEnvFactorError",
    "compute",
    "env_data",
    "env_factors",
    "env_hash",
    "env_value",
    "parse_raw",
]


class UnknownEnvFactorError(KernelcfgError):
    """A factor kernelcfg cannot compute from the environment and the inputs given."""


@dataclass(frozen=True)
class EnvInputs:
    """What, besides the environment, some defaults read."""

    torch_version: str | None = None
    """``torch.__version__`` of the install; ``None``: the version the release pins."""
    platform: str = "cuda"
    """vLLM's platform: ``cuda``, ``rocm`` (a ROCm build of torch), ``xpu``, ``cpu``, ``tpu``."""
    vllm_package_dir: str | None = None
    """The installed ``vllm`` package's folder (only ``VLLM_RUST_FRONTEND_PATH=auto`` reads it)."""


@dataclass(frozen=True)
class EnvFactors:
    """``envs.compile_factors()`` for one environment, and what vLLM left out."""

    factors: dict[str, Any]
    """Each hashed variable's normalised value, in vLLM's order (JSON values)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Variables vLLM leaves out because their parser raises, with the reason."""
    unknown: tuple[str, ...] = ()
    """Variables kernelcfg cannot compute here (their factor is absent)."""

    @property
    def hash(self) -> str | None:
        """vLLM's env hash; ``None`` while a factor is unknown."""
        return None if self.unknown else digest(self.factors)


def _split(entry: Mapping[str, Any], raw: str) -> list[str]:
    parts = raw.split(entry["sep"])
    return [p.strip() for p in parts if p.strip()] if entry["strip_items"] else parts


def _str(entry: Mapping[str, Any], raw: str) -> str:
    case = entry.get("case")
    text = raw.lower() if case == "lower" else raw.upper() if case == "upper" else raw
    return text or entry.get("empty") or text


def _bool_in(entry: Mapping[str, Any], raw: str) -> bool:
    text = raw.strip() if entry["strip"] else raw
    return (text.lower() if entry["lower"] else text) in entry["values"]


def _choice(entry: Mapping[str, Any], raw: str) -> str:
    """``env_with_choices``: the value as written, when it is one of the choices."""
    if not _allowed(entry, raw):
        raise ValueError(f"Invalid value '{raw}'. Valid options: {entry['choices']}.")
    return raw


def _allowed(entry: Mapping[str, Any], value: str) -> bool:
    if entry["case_sensitive"]:
        return value in entry["choices"]
    return value.lower() in [c.lower() for c in entry["choices"]]


def _choice_list(entry: Mapping[str, Any], raw: str) -> Any:
    """``env_list_with_choices`` (a list) / ``env_set_with_choices`` (a set)."""
    values = [v.strip() for v in raw.split(",") if v.strip()]
    if not values:
        return entry["default"]
    for value in values:
        if not _allowed(entry, value):
            raise ValueError(f"Invalid value '{value}'. Valid options: {entry['choices']}.")
    return set(values) if entry["kind"] == "choice_set" else values


def _json(_entry: Mapping[str, Any], raw: str) -> Any:
    """``maybe_convert_json_str_or_file``: a file's JSON when the value names one here."""
    if os.path.exists(raw):
        with open(raw, encoding="utf-8") as fh:
            return json.load(fh)
    return json.loads(raw)


def _json_loads(_entry: Mapping[str, Any], raw: str) -> Any:
    """``json.loads`` of the text itself (no file is read: vLLM 0.25.0's
    ``VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB``)."""
    return json.loads(raw)


def _bool_int(_entry: Mapping[str, Any], raw: str) -> bool:
    return bool(int(raw))


def _int(_entry: Mapping[str, Any], raw: str) -> int:
    return int(raw)


def _float(_entry: Mapping[str, Any], raw: str) -> float:
    return float(raw)


def _path(_entry: Mapping[str, Any], raw: str) -> str:
    return os.path.expanduser(raw)


def _as_written(_entry: Mapping[str, Any], raw: str) -> str:
    return raw


_PARSERS: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
    "str": _str,
    "bool_int": _bool_int,
    "bool_in": _bool_in,
    "bool_eq": lambda e, raw: (raw.lower() if e.get("lower") else raw) == e["value"],
    "bool_ne": lambda e, raw: raw != e["value"],
    "bool_contains": lambda e, raw: e["value"] in raw.lower(),
    "int": _int,
    "float": _float,
    "map": lambda e, raw: e["mapping"].get(raw.strip() if e["strip"] else raw),
    "choice": _choice,
    "choice_list": _choice_list,
    "choice_set": _choice_list,
    "split": _split,
    "json": _json,
    "json_loads": _json_loads,
    "path": _path,
    "rust_cli_path": _as_written,
}

KINDS = frozenset(_PARSERS)
"""The parser kinds of ``env-X.Y.Z.json``: how a set variable's text becomes its value."""


def parse_raw(entry: Mapping[str, Any], raw: str) -> Any:
    """A set variable's value by its kind (``ValueError`` where vLLM's parser raises)."""
    return _PARSERS[entry["kind"]](entry, raw)


@cache
def env_data(version: str) -> dict[str, Any]:
    """The release's ``env-X.Y.Z.json``."""
    data = releases.release_data("env", releases.parse_version(version))
    if data is None:
        raise UnknownEnvFactorError(f"no env-factor data for vLLM {version}")
    return data


_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_PEP440 = re.compile(
    r"v?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|c|rc|pre|preview)[-_.]?(\d*))?"
    r"(?:[-_.]?(?:post|rev|r)[-_.]?(\d*))?(?:[-_.]?dev[-_.]?(\d*))?(?:\+.*)?\Z",
    re.IGNORECASE,
)


def version_order(text: str) -> tuple[Any, ...]:
    """A PEP 440 version as a sortable key (``packaging.version`` order; local part
    dropped, which never changes ``>=`` against a target without one)."""
    match = _PEP440.fullmatch(text.strip())
    if match is None:
        raise UnknownEnvFactorError(f"cannot read the torch version {text!r}")
    release_s, pre_l, pre_n, post_n, dev_n = match.groups()
    parts = [int(p) for p in release_s.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    dev = (1, 0) if dev_n is None else (0, int(dev_n or 0))
    if pre_l is not None:
        pre: tuple[int, ...] = (1, _PRE[pre_l.lower()], int(pre_n or 0))
    else:
        pre = (0,) if dev_n is not None and post_n is None else (2,)
    post = (0,) if post_n is None else (1, int(post_n or 0))
    return (tuple(parts), pre, post, dev)


class _Reader:
    """One evaluation of a release's parsers over one environment."""

    def __init__(self, data: Mapping[str, Any], environ: Mapping[str, str], inputs: EnvInputs):
        self.variables: Mapping[str, Any] = data["variables"]
        self.environ = environ
        self.inputs = inputs
        self.torch = version_order(inputs.torch_version or data["torch_pin"])

    def condition(self, cond: Mapping[str, Any]) -> bool:
        """A named condition of the data (``torch_at_least``, ``var``, ``all`` …)."""
        if "all" in cond:
            return all(self.condition(c) for c in cond["all"])
        if "not" in cond:
            return not self.condition(cond["not"])
        if "var" in cond:
            return bool(self.value(cond["var"]))
        if "torch_at_least" in cond:
            return bool(self.torch >= version_order(cond["torch_at_least"]))
        if "rocm_torch" in cond:
            return (self.inputs.platform == "rocm") is bool(cond["rocm_torch"])
        if "platform_in" in cond:
            return self.inputs.platform in tuple(cond["platform_in"])
        raise KeyError(f"unknown condition {sorted(cond)}")

    def default(self, entry: Mapping[str, Any]) -> Any:
        """The value when the variable is unset (computed first, as vLLM's ``getenv``
        argument is)."""
        if "default_var" in entry:
            return self.value(entry["default_var"])
        if "default_root" in entry:
            return self._path_default(entry)
        if "default_from" in entry:
            return None
        when = entry.get("default_when")
        if when is not None and self.condition(when["if"]):
            return when["then"]
        return entry["default"]

    def _path_default(self, entry: Mapping[str, Any]) -> str:
        xdg = "XDG_CACHE_HOME" if entry["default_root"] == "cache" else "XDG_CONFIG_HOME"
        home = self.environ.get("HOME", "~")
        root = self.environ.get(xdg, os.path.join(home, f".{entry['default_root']}"))
        return os.path.expanduser(os.path.join(root, *entry["default_parts"]))

    def value(self, name: str) -> Any:
        """The variable's value as vLLM's parser returns it (raises where it raises)."""
        entry = self.variables[name]
        only = entry.get("only_when")
        if only is not None and not self.condition(only):
            return entry["default"]
        if entry["kind"] == "rust_cli_path":
            return self._rust_cli_path(name, entry)
        default = self.default(entry)
        raw = self.environ.get(entry.get("reads", name))
        if "or_var" in entry:
            raw = raw or self.environ.get(entry["or_var"]) or None
        if raw is None:
            if "default_from" in entry:
                raise UnknownEnvFactorError(f"{name}: its default is {entry['default_from']}")
            value = default
        else:
            value = parse_raw(entry, raw)
        return self._extra(entry, value)

    def _extra(self, entry: Mapping[str, Any], value: Any) -> Any:
        """The second reading a few parsers add (``or`` another variable …)."""
        if "or_int" in entry and not value:
            return bool(int(self.environ.get(entry["or_int"], "0")))
        if "or_nonempty" in entry and not value:
            return bool(self.environ.get(entry["or_nonempty"]))
        if "positive_or" in entry and not value > 0.0:
            return entry["positive_or"]
        return value

    def _rust_cli_path(self, name: str, entry: Mapping[str, Any]) -> str | None:
        """``_resolve_rust_cli_path``: the vllm-rs binary, only when the Rust frontend
        (or its benchmark) is switched on (``switches``: the variables that do, where
        a release has fewer)."""
        env = self.environ
        switches = entry.get("switches", ("VLLM_USE_RUST_FRONTEND", "VLLM_USE_RUST_BENCH"))
        use = any(bool(int(env.get(s, "0"))) for s in switches)
        raw = env.get(name, "auto")
        if not use:
            return None
        if raw.lower() not in ("auto", "1", "true"):
            return raw
        if self.inputs.vllm_package_dir is None:
            raise UnknownEnvFactorError(
                f"{name}: the vllm-rs binary of the installed vllm package (give its folder)"
            )
        return os.path.join(self.inputs.vllm_package_dir, "vllm-rs")


def compute(
    version: str, environ: Mapping[str, str], inputs: EnvInputs | None = None
) -> EnvFactors:
    """``envs.compile_factors()`` of release ``version`` for ``environ``: the factors,
    the variables vLLM skips (their parser raises) and those kernelcfg cannot know."""
    data = env_data(version)
    reader = _Reader(data, environ, inputs or EnvInputs())
    ignored = frozenset(data["ignored"])
    factors: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    unknown: list[str] = []
    for name in data["variables"]:
        if name in ignored:
            continue
        try:
            factors[name] = normalize_value(reader.value(name))
        except UnknownEnvFactorError:
            unknown.append(name)
        except (ValueError, TypeError, OSError, RecursionError) as exc:
            skipped[name] = f"{type(exc).__name__}: {exc}"
    for name in data["hashed_as_read"]:
        factors[name] = environ.get(name)
    return EnvFactors(factors, skipped, tuple(unknown))


def env_value(
    version: str, environ: Mapping[str, str], name: str, inputs: EnvInputs | None = None
) -> Any:
    """One variable as release ``version``'s ``envs`` reads it (its default when unset;
    also when its parser raises, where vLLM would stop on the first read)."""
    data = env_data(version)
    reader = _Reader(data, environ, inputs or EnvInputs())
    try:
        return reader.value(name)
    except (ValueError, TypeError, OSError, UnknownEnvFactorError):
        return reader.default(data["variables"][name])


def env_factors(
    version: str, environ: Mapping[str, str], inputs: EnvInputs | None = None
) -> dict[str, Any]:
    """The factors vLLM ``version`` hashes for ``environ`` (JSON values)."""
    return compute(version, environ, inputs).factors


def env_hash(version: str, environ: Mapping[str, str], inputs: EnvInputs | None = None) -> str:
    """vLLM's env hash (``hash_factors(envs.compile_factors())``) for ``environ``."""
    found = compute(version, environ, inputs)
    if found.unknown:
        raise UnknownEnvFactorError(
            f"the env hash needs {', '.join(found.unknown)}", code="unknown_env_factor"
        )
    return digest(found.factors)
