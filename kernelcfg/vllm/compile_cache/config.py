"""The configuration's part of vLLM's compile-cache key: every sub-config's hash (and,
from 0.34.0, its factor dict) and the whole config hash, for one launch.

- 0.29-0.33: ``VllmConfig.compute_hash()``: each sub-config's ``compute_hash()`` (a
  SHA-256 of its factor dict, or an MD5 of ``str()`` of a short list) in a list with
  vLLM's version, ``'None'`` for an absent one; the MD5 of that list's ``str()``, cut to
  10 hex digits.
- 0.34: ``VllmConfig.compile_factors()``: each sub-config's factor dict, nested, with
  the version; its hash is ``hash_factors`` (:func:`kernelcfg.vllm.kernel_config.hashing.digest`).

Which fields each config hashes, its defaults and how it hashes are release data
(``compile-config-X.Y.Z.json``, from ``scripts/release/compile_config.py``); the values
vLLM derives at start-up are the rules of :mod:`kernelcfg.vllm.compile_cache.rules` and
:mod:`kernelcfg.vllm.compile_cache.graph`; the kernel and attention configs are
kernelcfg's own (:mod:`kernelcfg.vllm.kernel_config.hashing`,
:mod:`kernelcfg.vllm.kernel_config.attention`). The model
config's ``hf_config`` needs transformers (an optional import): without it, or without
the model's ``config.json``, the model config is reported unknown, and so is the whole
hash, while every other part stays exact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kernelcfg.targets.presets import Target
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache.model import ConfigRefusedError, hf_text
from kernelcfg.vllm.compile_cache.rules import run
from kernelcfg.vllm.compile_cache.state import UNSET, Build, Launch, config_data
from kernelcfg.vllm.inputs import Inputs
from kernelcfg.vllm.kernel_config import attention as attention_facts
from kernelcfg.vllm.kernel_config.hashing import digest, kernel_hash, normalize_value

__all__ = [
    "HASH_KINDS",
    "CompileConfig",
    "ConfigPart",
    "ConfigRefusal",
    "compile_config",
    "config_data",
]

HASH_KINDS = frozenset({"fields", "empty", "str_list", "elsewhere", "unknown"})
"""How a config class hashes itself, as ``compile-config-X.Y.Z.json`` names it:
``fields`` (every field not ignored), ``empty`` (``{}``), ``str_list`` (MD5 of ``str()``
of a list of fields), ``elsewhere`` (the kernel and attention configs, hashed by
kernelcfg's own modules), ``unknown`` (a config kernelcfg does not model)."""


@dataclass(frozen=True)
class ConfigPart:
    """One sub-config of ``VllmConfig``: what vLLM digests for it, and the digest."""

    factors: Any
    """What is digested: the factor dict (0.34.0: ``compile_factors()``; before: the
    ``get_hash_factors`` dict, or the list an MD5 is taken of); ``None`` when unknown."""
    hash: str | None
    """Its hash as vLLM computes it; ``None`` when unknown."""
    unknown: str | None = None
    """Why it is unknown (``None``: known)."""


@dataclass(frozen=True)
class CompileConfig:
    """The config part of one launch's compile-cache key."""

    version: str
    """The vLLM release."""
    parts: dict[str, ConfigPart]
    """Each sub-config, keyed by ``VllmConfig``'s attribute name (``model_config``,
    ``cache_config`` …; ``additional_config`` is the dict itself), in vLLM's order."""
    config_hash: str | None
    """The whole config hash; ``None`` while a part is unknown."""
    config_factors: dict[str, Any] | None = None
    """0.34.0 on: ``VllmConfig.compile_factors()``, the nested factor tree (``None``
    before, or while a part is unknown)."""
    transformers: str | None = None
    """The transformers version that wrote the model's ``hf_config`` text."""
    resolved: dict[str, Any] = field(default_factory=dict)
    """A few values vLLM derived (dtype, max_model_len, block size, capture sizes …)."""

    @property
    def unknown(self) -> list[str]:
        """The unknown parts, as ``attribute: reason``."""
        return [f"{name}: {part.unknown}" for name, part in self.parts.items() if part.unknown]


@dataclass(frozen=True)
class ConfigRefusal:
    """vLLM refuses the launch while building its config."""

    kind: str
    """The exception vLLM raises (``ValueError``, ``ValidationError``)."""
    message: str
    """vLLM's reason."""
    model: str = ""
    """The pydantic model a ``ValidationError`` names (``VllmConfig``, ``ModelConfig``)."""

    @property
    def text(self) -> str:
        """The message as vLLM words it, up to the parts kernelcfg cannot know (the
        arguments pydantic quotes)."""
        if self.kind != "ValidationError":
            return self.message
        return f"1 validation error for {self.model}\n  Value error, {self.message}"


def _options(inputs: Inputs) -> dict[str, Any]:
    """The launch's options as ``create_engine_config`` reads them."""
    options = dict(inputs.options)
    options.update(
        tensor_parallel_size=inputs.tensor_parallel_size,
        data_parallel_size=inputs.data_parallel_size,
        enable_expert_parallel=inputs.enable_expert_parallel,
        optimization_level=inputs.optimization_level,
        enforce_eager=inputs.enforce_eager,
        all2all_backend_resolved=inputs.all2all_backend,
    )
    return options


def compile_config(
    release: releases.Release,
    target: Target,
    inputs: Inputs,
    *,
    kernel_config: Mapping[str, Any] | None,
    attention_config: Mapping[str, Any] | None = None,
    use_transformers: bool = True,
) -> CompileConfig | ConfigRefusal:
    """The config part of the compile-cache key for ``inputs`` on ``target``, as
    ``release`` computes it.

    ``inputs``: the launch as :func:`kernelcfg.flags.argv.parse` reads it (its options,
    environment, install and the model's ``hf_config``: ``None`` makes every part that
    reads the model unknown). ``kernel_config``: the resolved kernel config
    (``Resolution.kernel_config``; ``None``: the kernel part is unknown).
    ``attention_config``: the attention config's values (``Resolution.attention.config``;
    ``None``: the release's defaults). ``use_transformers``: load the model's config with
    transformers, when installed, for the model part's ``hf_config`` text (``False``: the
    model part is unknown). Returns the parts and hashes, or vLLM's refusal.
    """
    data = config_data(release.version)
    launch = Launch(_options(inputs), inputs.env, inputs.hf_config, inputs.install, kernel_config)
    build = Build(data, target, launch)
    try:
        run(build)
    except ConfigRefusedError as exc:
        return ConfigRefusal(exc.kind, exc.message, exc.where)
    text = _hf_text(build, use_transformers)
    parts = _parts(release, build, kernel_config, attention_config, text)
    return _whole(data, build, parts, text)


def _hf_text(build: Build, use_transformers: bool) -> Any:
    """The model part's ``hf_config`` text (``None`` without a model)."""
    if build.model is None or build.hf is None:
        return None
    if not use_transformers:
        from kernelcfg.vllm.compile_cache.model import HfText

        return HfText(None, None, "transformers not used")
    trust = bool(build.options.get("trust_remote_code"))
    classes = frozenset(build.data.get("vllm_config_classes", ()))
    return hf_text(build.hf, build.model, trust_remote_code=trust, vllm_classes=classes)


def _parts(
    release: releases.Release,
    build: Build,
    kernel: Mapping[str, Any] | None,
    attention: Mapping[str, Any] | None,
    text: Any,
) -> dict[str, ConfigPart]:
    """Every part ``VllmConfig`` hashes, by attribute (optional parts only when the launch adds
    them: then unknown)."""
    data = build.data
    out: dict[str, ConfigPart] = {}
    for part in data["parts"]:
        attr = part["attribute"]
        if attr is None or attr == "additional_config":
            continue
        if part.get("optional"):
            if attr in build.unknown:
                out[attr] = ConfigPart(None, None, build.unknown[attr])
            continue
        cls = part["class"]
        if attr == "kernel_config":
            out[attr] = _kernel(release, kernel)
        elif attr == "attention_config":
            out[attr] = _attention(release, build, attention)
        else:
            out[attr] = _config(build, cls, attr, text)
    return out


def _kernel(release: releases.Release, kernel: Mapping[str, Any] | None) -> ConfigPart:
    """The kernel config's part: kernelcfg's own kernel hash."""
    if kernel is None:
        return ConfigPart(None, None, "the kernel config (vLLM refuses it)")
    factors, found = kernel_hash(release, kernel)
    return ConfigPart(factors, found)


def _attention(
    release: releases.Release, build: Build, values: Mapping[str, Any] | None
) -> ConfigPart:
    """The attention config's part, with the workspace factor ``__post_init__`` sets."""
    found = attention_facts.facts(release.version)
    if found is None:
        return ConfigPart(None, None, "no attention facts for this release")
    if "attention_config" in build.unknown:
        return ConfigPart(None, None, build.unknown["attention_config"])
    vals = dict(found.defaults if values is None else values)
    after = build.values.get("AttentionConfig", {}).get("sparse_mla_prefill_workspace_factor")
    if vals.get("sparse_mla_prefill_workspace_factor") is None and after is not None:
        vals["sparse_mla_prefill_workspace_factor"] = after
    factors = attention_facts.factors(found, vals)
    return ConfigPart(factors, digest(factors))


def _config(build: Build, cls: str, attr: str, text: Any) -> ConfigPart:
    """One config class's part, as its release data says it hashes."""
    entry = build.data["configs"][cls]
    how = entry["hash"]
    kind = how["kind"]
    why = build.unknown.get(attr)
    values = dict(build.values[cls])
    if cls == "ModelConfig":
        values, why = _model_values(values, text, why)
    if why is not None:
        return ConfigPart(None, None, why)
    if kind == "empty":
        return ConfigPart({}, digest({}))
    if kind == "str_list":
        items = [values[name] for name in how["items"]]
        return ConfigPart(items, hashlib.md5(_py_str(items).encode()).hexdigest())
    if kind != "fields":
        return ConfigPart(None, None, how.get("why", kind))
    try:
        factors = _factors(build, cls, values)
    except LookupError as exc:
        return ConfigPart(None, None, f"{exc.args[0]} (no rule derives it)")
    return ConfigPart(factors, digest(factors))


def _model_values(
    values: dict[str, Any], text: Any, why: str | None
) -> tuple[dict[str, Any], str | None]:
    """The model config's values with the ``hf_config`` text, or why it is unknown."""
    if why is not None:
        return values, why
    if text is None or text.text is None:
        return values, text.unknown if text is not None else "no config.json for the model"
    values["hf_config"] = values["hf_text_config"] = text.text
    return values, None


def _factors(build: Build, cls: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``get_compile_factors`` (``get_hash_factors``): every field not ignored, as
    ``normalize_value`` makes it; nested configs as their own factors (0.34) or hash
    (a ``sub_hashes`` field before)."""
    how = build.data["configs"][cls]["hash"]
    ignored = set(how.get("ignored", ()))
    only = how.get("only")
    out: dict[str, Any] = {}
    for f in build.data["configs"][cls]["fields"]:
        name = f["name"]
        if (only is not None and name not in only) or (only is None and name in ignored):
            continue
        out[name] = _value(build, cls, name, values[name], f)
    for name in how.get("sub_hashes", ()):
        nested = _nested_class(build, cls, name)
        out[name] = digest(_factors(build, nested, values[name]))
    return out


def _nested_class(build: Build, cls: str, name: str) -> str:
    """The config class a nested field holds."""
    for f in build.data["configs"][cls]["fields"]:
        if f["name"] == name:
            if "nested" in f:
                return str(f["nested"])
            default = f.get("default")
            if isinstance(default, list) and isinstance(default[0], str):
                return default[0].rsplit(".", 1)[-1]
    raise LookupError(f"{cls}.{name}")


def _value(build: Build, cls: str, name: str, value: Any, entry: Mapping[str, Any]) -> Any:
    """One field's value as ``normalize_value`` makes it (nested configs as their factors)."""
    if value is UNSET:
        raise LookupError(f"{cls}.{name}")
    if "nested" in entry:
        return _factors(build, entry["nested"], value)
    if cls == "CompilationConfig" and name == "cudagraph_mode" and isinstance(value, str):
        enum = build.data["enums"]["CUDAGraphMode"]
        return [enum["fqn"], enum["members"][value]]
    return normalize_value(value)


def _py_str(value: Any) -> str:
    """``str()`` of a list of plain values, as Python writes it."""
    if isinstance(value, list):
        return "[" + ", ".join(_py_str(v) for v in value) + "]"
    return repr(value)


def _whole(
    data: Mapping[str, Any], build: Build, parts: dict[str, ConfigPart], text: Any
) -> CompileConfig:
    """The whole hash: 0.34.0 the digest of the factor tree, before the MD5 of the list of part
    hashes."""
    version = data["vllm_version"]
    version_of = getattr(text, "transformers", None)
    resolved = _resolved(build)
    if data["scheme"] == "compile_factors":
        tree, known = _tree(data, parts)
        known = known and "additional_config" not in build.unknown
        whole = digest(tree) if known else None
        parts["additional_config"] = ConfigPart({}, None)
        return CompileConfig(version, parts, whole, tree if known else None, version_of, resolved)
    items: list[Any] = [version]
    known = "additional_config" not in build.unknown
    for part in data["parts"]:
        attr = part["attribute"]
        if attr == "additional_config":
            items.append("None")
            continue
        if part.get("optional") and attr not in parts:
            if part["absent"] != "skipped":
                items.append(part["absent"])
            continue
        found = parts[attr]
        known = known and found.hash is not None
        items.append(found.hash)
    parts["additional_config"] = ConfigPart({}, None)
    whole = hashlib.md5(_py_str([items]).encode()).hexdigest()[:10] if known else None
    return CompileConfig(version, parts, whole, None, version_of, resolved)


def _tree(data: Mapping[str, Any], parts: dict[str, ConfigPart]) -> tuple[dict[str, Any], bool]:
    """``VllmConfig.compile_factors()``: each part's factors by its key, absent optional
    parts as ``{}``, the version; whether every part is known."""
    tree: dict[str, Any] = {}
    known = True
    for part in data["parts"]:
        key, attr = part["key"], part["attribute"]
        if key == "version":
            tree[key] = data["vllm_version"]
        elif key in ("multimodal", "additional"):
            continue
        elif part.get("optional") and attr not in parts:
            tree[key] = {}
        else:
            found = parts[attr]
            known = known and found.factors is not None
            tree[key] = found.factors
    return tree, known


def _resolved(build: Build) -> dict[str, Any]:
    """A few values vLLM derived, for people reading the result."""
    m = build.model
    cc = build.cc
    out: dict[str, Any] = {
        "block_size": build.values["CacheConfig"]["block_size"],
        "cache_dtype": build.values["CacheConfig"]["cache_dtype"],
        "max_num_batched_tokens": build.values["SchedulerConfig"]["max_num_batched_tokens"],
        "max_num_seqs": build.values["SchedulerConfig"]["max_num_seqs"],
        "compilation_mode": cc["mode"],
        "cudagraph_mode": cc["cudagraph_mode"],
        "max_cudagraph_capture_size": cc["max_cudagraph_capture_size"],
    }
    if m is not None:
        out.update(dtype=m.dtype, max_model_len=m.max_model_len, quantization=m.quantization)
    return out
