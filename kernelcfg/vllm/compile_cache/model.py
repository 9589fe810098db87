"""What vLLM derives from a model's ``config.json`` for its config hash: the dtype, the
maximum length, the quantisation method, whether it is a mixture of experts or uses MLA,
and the ``hf_config`` text (transformers' ``to_json_string()`` of the loaded config).

The tables these rules read (field aliases, the length keys, the MLA model types, the
float16 refusals, the RoPE types whose factor is already applied) are release data of
``compile-config-X.Y.Z.json`` (``model_facts``), read from the wheel by
``scripts/release/compile_config.py``. The ``hf_config`` text needs transformers: it is
imported only here, only when asked, and only when installed; without it the text is
unknown (:data:`NO_TRANSFORMERS`). Importing it takes seconds where torch is installed,
so each text is kept on disk (``base.text_cache``), per transformers version and config.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from kernelcfg.base import text_cache
from kernelcfg.vllm.checkpoint import quantization_config_of, resolve_quant_method

__all__ = [
    "NO_TRANSFORMERS",
    "ConfigRefusedError",
    "HfText",
    "ModelFacts",
    "hf_text",
    "model_facts",
]

NO_TRANSFORMERS = "transformers is not installed (the model extra: pip install 'kernelcfg[model]')"
"""Why the ``hf_config`` text is unknown without transformers."""


class ConfigRefusedError(Exception):
    """vLLM refuses the launch while building its config: the exception it raises
    (``type``) and its message (the part kernelcfg can derive)."""

    def __init__(self, kind: str, message: str, where: str = "VllmConfig") -> None:
        """Record vLLM's exception type, message and the pydantic model wrapping it."""
        super().__init__(message)
        self.kind = kind
        """The exception vLLM raises: ``ValueError``, ``ValidationError`` …"""
        self.message = message
        """vLLM's message (inside a pydantic ``ValidationError``: the value error's text)."""
        self.where = where
        """The pydantic model that wraps it (``ModelConfig``, ``VllmConfig``)."""


@dataclass(frozen=True)
class ModelFacts:
    """The facts vLLM reads from the model's config before hashing."""

    dtype: str
    """``ModelConfig.dtype`` as vLLM hashes it (``torch.bfloat16``)."""
    max_model_len: int
    """``ModelConfig.max_model_len``."""
    quantization: str | None
    """``ModelConfig.quantization`` after ``_verify_quantization``."""
    quant_config: dict[str, Any] | None
    """The checkpoint's quantisation dict as vLLM normalises it (``None``: none)."""
    model_type: str | None
    """``hf_config.model_type``."""
    architecture: str | None
    """The first architecture."""
    num_experts: int
    """``get_num_experts()`` (0 for a dense model)."""
    use_mla: bool
    """``ModelConfig.use_mla``."""
    hidden_size: int | None
    """``get_hidden_size()``."""
    num_attention_heads: int | None
    """The total number of attention heads."""
    sliding_window: int | None
    """``CacheConfig.sliding_window``: the model's, when every layer slides."""

    @property
    def is_moe(self) -> bool:
        """``ModelConfig.is_moe``."""
        return self.num_experts > 0


def _text_config(hf: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text config of a multimodal config.json, else the config itself."""
    text = hf.get("text_config")
    return text if isinstance(text, Mapping) else hf


def _first(cfg: Mapping[str, Any], names: list[str], default: Any = None) -> Any:
    """``getattr_iter``: the first of ``names`` the config holds (not ``None``)."""
    for name in names:
        if cfg.get(name) is not None:
            return cfg[name]
    return default


def _config_dtype(hf: Mapping[str, Any]) -> str:
    """``get_torch_dtype``: ``dtype`` (``torch_dtype`` in files written before
    transformers 5), the text config's, else float32 (no weights are read here)."""
    for cfg in (hf, _text_config(hf)):
        found = cfg.get("dtype", cfg.get("torch_dtype"))
        if isinstance(found, str):
            return "torch." + found.removeprefix("torch.")
    return "torch.float32"


def _dtype(
    facts: Mapping[str, Any], hf: Mapping[str, Any], given: str, supported: list[str]
) -> str:
    """``_get_and_verify_dtype``: ``--dtype`` (``auto``: the checkpoint's, downcast from
    float32 and moved to the platform's first supported dtype), refused where the model
    type refuses float16."""
    model_type = str(hf.get("model_type", ""))
    refused = facts["float16_unsupported_model_types"]
    config_dtype = _config_dtype(hf)
    text = given.lower()
    if text == "auto":
        allowed = [d for d in supported if not (model_type in refused and d == "torch.float16")]
        preferred = allowed[0]
        wanted = preferred if config_dtype == "torch.float32" else config_dtype
        dtype = wanted if wanted in allowed else preferred
    elif text in facts["str_dtypes"]:
        dtype = facts["str_dtypes"][text]
    else:
        raise ConfigRefusedError("ValidationError", f"Unknown dtype: {text!r}", "ModelConfig")
    if model_type in refused and dtype == "torch.float16":
        raise ConfigRefusedError(
            "ValidationError",
            f"The model type {model_type!r} does not support float16. "
            f"Reason: {refused[model_type]}",
            "ModelConfig",
        )
    return dtype


def _rope_parameters(hf: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The RoPE parameter sets (``rope_parameters``, or the legacy ``rope_scaling``)."""
    text = _text_config(hf)
    found = text.get("rope_parameters") or text.get("rope_scaling")
    if not isinstance(found, Mapping):
        return []
    nested = [v for v in found.values() if isinstance(v, Mapping)]
    if nested and all(isinstance(v, Mapping) for v in found.values()):
        return nested
    return [found]


def _derived_len(facts: Mapping[str, Any], text: Mapping[str, Any]) -> tuple[float, str | None]:
    """``derive_max_model_len_and_key``: the smallest of the length keys (Command-R's
    ``model_max_length`` wins)."""
    derived: float = float("inf")
    key = None
    for name in facts["max_len_keys"]:
        value = text.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            if value < derived:
                key = name
            derived = min(derived, value)
    if text.get("model_max_length"):
        key, derived = "model_max_length", text["model_max_length"]
    return derived, key


def _rope_scaled(facts: Mapping[str, Any], hf: Mapping[str, Any], derived: float) -> float:
    """The length times the RoPE factor, where the RoPE type has not applied it (Gemma 3
    has)."""
    ropes = _rope_parameters(hf)
    if not ropes or "gemma3" in str(hf.get("model_type", "")):
        return derived
    factor = 1.0
    for rope in ropes:
        if rope.get("rope_type", rope.get("type", "default")) not in facts["rope_types_unscaled"]:
            factor = rope.get("factor", factor)
    return derived * (1.0 if factor is None else factor)


def _max_model_len(facts: Mapping[str, Any], hf: Mapping[str, Any], given: int | None) -> int:
    """``_get_and_verify_max_len``: the model's length (``--max-model-len`` may not
    exceed it)."""
    text = _text_config(hf)
    derived, key = _derived_len(facts, text)
    if derived == float("inf"):
        if given is not None:
            return given
        derived = 2048
    derived = _rope_scaled(facts, hf, derived)
    if given is None or given == -1:
        ropes = _rope_parameters(hf)
        if any(r.get("rope_type", r.get("type")) == "longrope" for r in ropes):
            return int(text.get("original_max_position_embeddings", derived))
        return int(derived)
    limit = text.get("model_max_length")
    if given > derived and (limit is None or given > limit):
        raise ConfigRefusedError(
            "ValidationError",
            f"User-specified max_model_len ({given}) is greater than the derived "
            f"max_model_len ({key}={derived} or model_max_length={limit} in model's "
            "config.json).",
            "ModelConfig",
        )
    return int(given)


def _quantization(hf: Mapping[str, Any], given: str | None, kind: str) -> tuple[str | None, Any]:
    """``_verify_quantization``: the checkpoint's method (an override may claim it),
    refused where ``--quantization`` names another."""
    quant = quantization_config_of(hf)
    method, _why = resolve_quant_method(quant, given, hf.get("model_type"), kind)
    if method is None:
        named = str((quant or {}).get("quant_method") or "") or None
        raise ConfigRefusedError(
            "ValidationError",
            f"Quantization method specified in the model config ({named}) does not match "
            "the quantization method specified in the `quantization` argument "
            f"({given}).",
            "ModelConfig",
        )
    return (None if method == "unquantized" else method), quant


def _sliding_window(hf: Mapping[str, Any]) -> int | None:
    """``CacheConfig.sliding_window``: the model's window when it has no ``layer_types``
    or every layer slides (an interleaved model keeps ``None``)."""
    text = _text_config(hf)
    layers = text.get("layer_types")
    if layers is not None and not all(t == "sliding_attention" for t in layers):
        return None
    pattern = text.get("sliding_window_pattern", text.get("_sliding_window_pattern"))
    if layers is None and isinstance(pattern, int) and pattern > 1:
        return None  # interleaved: transformers writes layer_types from the pattern
    if text.get("use_sliding_window") is False:
        return None
    window = text.get("sliding_window")
    return window if isinstance(window, int) and window > 0 else None


def model_facts(
    facts: Mapping[str, Any],
    hf: Mapping[str, Any],
    options: Mapping[str, Any],
    platform: tuple[str, list[str]],
    *,
    mla_disabled: bool,
) -> ModelFacts:
    """The model facts vLLM derives from ``hf`` (config.json) for the launch's
    ``options``; raises :class:`ConfigRefusedError` where vLLM refuses."""
    kind, supported = platform
    text = _text_config(hf)
    aliases = facts["field_aliases"]
    dtype = _dtype(facts, hf, str(options.get("dtype") or "auto"), supported)
    max_len = _max_model_len(facts, hf, options.get("max_model_len"))
    method, quant = _quantization(hf, options.get("quantization"), kind)
    experts = _first(text, aliases["num_experts"], 0)
    if isinstance(experts, list):
        experts = experts[0] if experts else 0
    model_type = text.get("model_type")
    mla = (
        not mla_disabled
        and text.get("is_causal", True) is not False
        and model_type in facts["mla_model_types"]
    )
    archs = hf.get("architectures") or []
    return ModelFacts(
        dtype=dtype,
        max_model_len=max_len,
        quantization=method,
        quant_config=quant,
        model_type=hf.get("model_type"),
        architecture=archs[0] if archs else None,
        num_experts=int(experts or 0),
        use_mla=mla,
        hidden_size=text.get("hidden_size"),
        num_attention_heads=text.get("num_attention_heads"),
        sliding_window=_sliding_window(hf),
    )


@dataclass(frozen=True)
class HfText:
    """The ``hf_config`` text vLLM hashes, or why it is unknown."""

    text: str | None
    """transformers' ``to_json_string()`` of the loaded config; ``None`` when unknown."""
    transformers: str | None
    """The transformers version that wrote it (``None`` without transformers)."""
    unknown: str | None = None
    """Why the text is unknown."""


def _transformers() -> Any:
    """transformers, when installed (``None`` otherwise), imported with its own lines
    unsaid (``PyTorch was not found…``): kernelcfg's stderr carries kernelcfg's lines,
    and transformers says only its errors after."""
    import logging

    sink = io.StringIO()
    try:
        with _quiet(sink):
            import transformers
    except ImportError:
        return None
    root = logging.getLogger("transformers")  # its library root logger
    root.setLevel(logging.ERROR)  # what its set_verbosity_error() does
    for handler in root.handlers:  # its handler, made while stderr was the sink
        if isinstance(handler, logging.StreamHandler) and handler.stream is sink:
            handler.setStream(sys.stderr)
    return transformers


@contextlib.contextmanager
def _quiet(sink: io.StringIO | None = None) -> Iterator[None]:
    """No warning and no line on stderr (``sink`` takes them) from the code inside."""
    with warnings.catch_warnings(), contextlib.redirect_stderr(sink or io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def hf_text(
    hf: Mapping[str, Any],
    facts: ModelFacts,
    *,
    trust_remote_code: bool,
    vllm_classes: frozenset[str] = frozenset(),
) -> HfText:
    """``to_json_string()`` of the config vLLM loads from ``hf``, with the changes vLLM
    makes to it before hashing (the checkpoint's quantisation dict as normalised, an
    override's method, the attention-head counts compressed-tensors is given).
    Unknown without transformers, for remote code, and for the model types vLLM loads
    with its own config class (``vllm_classes``)."""
    version = _transformers_version()
    if version is None:
        return HfText(None, None, NO_TRANSFORMERS)
    why_not = _not_loaded(hf, trust_remote_code=trust_remote_code, vllm_classes=vllm_classes)
    if why_not is not None:
        return HfText(None, version, why_not)
    quant = _hashed_quant(hf, facts)
    key = json.dumps([hf, quant], sort_keys=True, default=str)
    question = f"transformers {version} " + key
    kept = text_cache.get("hf-text", question)
    if kept is not None and _json_object(kept):
        return HfText(kept, version, None)
    tf = _transformers()
    if tf is None:
        return HfText(None, None, NO_TRANSFORMERS)
    text, why = _loaded(tf, key)
    if text is not None and tf.__version__ == version:
        text_cache.put("hf-text", question, text)
    return HfText(text, tf.__version__, why)


def _not_loaded(
    hf: Mapping[str, Any], *, trust_remote_code: bool, vllm_classes: frozenset[str]
) -> str | None:
    """Why kernelcfg does not ask transformers for ``hf``'s text, or ``None``."""
    if hf.get("auto_map") and trust_remote_code:
        return "the model's remote configuration code"
    if hf.get("model_type") in vllm_classes or not hf.get("model_type"):
        return "vLLM's own config class for this model type"
    return _beyond_bounds(hf)


MAX_LAYERS = 4096
"""The most layers (any ``*layers`` count) a config handed to transformers may name:
transformers builds per-layer lists from them (10,000,000 layers took 42 s and 1.7 GiB),
and the largest released models have a few hundred."""
MAX_VALUES = 100_000
"""The most values (list items and mapping entries, all levels) of a config handed to
transformers."""


def _beyond_bounds(hf: Mapping[str, Any]) -> str | None:
    """Why ``hf`` is not handed to transformers (a layer count or a size no model has),
    or ``None``."""
    count = 0
    stack: list[Any] = [hf]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            count += len(value)
            for name, item in value.items():
                if _layer_count(name, item) and item > MAX_LAYERS:
                    return (
                        f"its {name!s:.60} is {item:,}; kernelcfg hands transformers at most "
                        f"{MAX_LAYERS:,} layers"
                    )
                stack.append(item)
        elif isinstance(value, list):
            count += len(value)
            stack.extend(value)
        if count > MAX_VALUES:
            return f"it holds more than {MAX_VALUES:,} values, more than any model's config"
    return None


def _layer_count(name: Any, value: Any) -> bool:
    """Whether ``name: value`` counts layers (``num_hidden_layers``, ``n_layer``…)."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and isinstance(name, str)
        and "layer" in name.lower()
    )


def _json_object(text: str) -> bool:
    """Whether a kept text is what ``to_json_string()`` writes: a JSON object."""
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


@cache
def _transformers_version() -> str | None:
    """The installed transformers' version, read without importing it (importing it
    takes seconds where torch is installed: it imports torch)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformers")
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=64)
def _loaded(tf: Any, key: str) -> tuple[str | None, str | None]:
    """The config's ``to_json_string()`` (``key``: the config.json and the hashed
    quantisation dict), made once per distinct config."""
    hf, quant = json.loads(key)
    try:
        with tempfile.TemporaryDirectory(prefix="kernelcfg-hf-") as folder:
            path = os.path.join(folder, "config.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(hf, fh, indent=2)
            try:
                with _quiet():
                    config = tf.AutoConfig.from_pretrained(folder, trust_remote_code=False)
            except Exception as exc:  # transformers checks each value with its own errors
                said = " ".join(str(exc).split())[:300]
                return None, f"transformers cannot load it ({type(exc).__name__}: {said})"
    except OSError as exc:  # the temporary folder: a full or read-only disk
        where = tempfile.gettempdir()
        return None, (
            f"the config.json cannot be written for transformers to load in {where} "
            f"({exc.strerror or type(exc).__name__}); set TMPDIR to a writable folder"
        )
    if quant is not None:
        config.quantization_config = quant
    return config.to_json_string(), None


def _hashed_quant(hf: Mapping[str, Any], facts: ModelFacts) -> dict[str, Any] | None:
    """The ``quantization_config`` dict as the loaded config holds it when hashed
    (normalised in place by ``_normalize_quantization_config``)."""
    if not isinstance(hf.get("quantization_config"), Mapping):
        return None
    quant = copy.deepcopy(quantization_config_of(hf) or {})
    method = quant["quant_method"]
    if facts.quantization == "gpt_oss_mxfp4" and method == "mxfp4":
        quant["quant_method"] = "gpt_oss_mxfp4"
    if method == "compressed-tensors" and "config_groups" in quant:
        text = _text_config(hf)
        heads = facts.num_attention_heads
        kv = _first(text, ["n_head_kv", "num_kv_heads", "num_key_value_heads"])
        quant["total_num_heads"] = heads
        quant["total_num_kv_heads"] = kv if kv is not None else heads
    return quant
