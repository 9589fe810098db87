"""vLLM's ``AttentionConfig``, per release: read from the flags as vLLM reads them, hashed.

``--attention-config``/``-ac`` is a pydantic-validated JSON value (refused while the
arguments are read, exit 2); ``--attention-backend`` is a plain string that
``EngineArgs.create_engine_config`` turns into the enum (refused there, exit 1); both
naming a backend is refused there too. The facts (the backend enum with its class
paths, the fields with their defaults, choices and bounds) come from the release's
``attention-X.Y.Z.json``, written by ``scripts/release/attention_config.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from kernelcfg.base import bounded
from kernelcfg.base.errors import ArgumentError, EngineError, closest
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config import hashing
from kernelcfg.vllm.kernel_config.validation import validated

__all__ = [
    "MSA_ALIASES",
    "AttentionFacts",
    "backend_name",
    "build",
    "factors",
    "facts",
]

MSA_ALIASES = {"CUTLASS_MSA": "cutlass", "TRITON_MSA": "triton"}
"""``AttentionConfig.__post_init__``: these backends only pick MiniMax-M3's sparse
decode kernel (``minimax_m3_msa_decode_backend``) and leave ``backend`` on auto."""

_INDEXER_CP_DTYPES = ("auto", "bf16", "fp8", "fp8_e4m3")
"""The ``indexer_kv_dtype`` values ``minimax_m3_indexer_cp`` accepts (a CP indexer exists)."""


@dataclass(frozen=True)
class AttentionFacts:
    """What one release declares about attention configuration."""

    version: str
    """The release."""
    backends: dict[str, str | None]
    """``AttentionBackendEnum``: member name to default class path."""
    prefill_backends: dict[str, str | None]
    """``MLAPrefillBackendEnum``: member name to class path."""
    fields: tuple[dict[str, Any], ...]
    """``AttentionConfig``'s fields in order: name, annotation, default, choices, bounds."""
    hisparse_fields: tuple[dict[str, Any], ...]
    """``HiSparseConfig``'s fields (empty where the release has none)."""
    kinds: tuple[str, ...]
    """The KV-cache group kinds ``backend_per_kind`` accepts."""
    cache_dtypes: tuple[str, ...]
    """The ``--kv-cache-dtype`` values."""
    hashed_as: dict[str, str]
    """The fully qualified names vLLM's hash gives the enums and the nested config."""

    @property
    def defaults(self) -> dict[str, Any]:
        """Every field's default (``dict`` for ``backend_per_kind``)."""
        return {f["name"]: _default(f) for f in self.fields}


def _default(spec: Mapping[str, Any]) -> Any:
    if "default_factory" in spec:
        return {} if spec["default_factory"] == "dict" else None
    return spec.get("default")


@cache
def facts(version: str) -> AttentionFacts | None:
    """The release's attention facts; ``None`` when kernelcfg has none for it."""
    data = releases.release_data("attention", version)
    if data is None:
        return None
    return AttentionFacts(
        version=version,
        backends=dict(data["backends"]),
        prefill_backends=dict(data["mla_prefill_backends"]),
        fields=tuple(data["config_fields"]),
        hisparse_fields=tuple(data["hisparse_fields"]),
        kinds=tuple(data["kv_cache_spec_kinds"]),
        cache_dtypes=tuple(data["cache_dtypes"]),
        hashed_as=dict(data["hashed_as"]),
    )


def _enum_lookup(members: Mapping[str, Any], what: str, value: str) -> str:
    """``Enum[value.upper()]`` with the message vLLM's enum metaclass raises."""
    name = value.upper()
    if name not in members:
        hint = closest(value, members)
        raise ValueError(
            f"Unknown {what}: {bounded.shown(name)}. Valid options are: {', '.join(members)}"
            + (f" (did you mean {hint!r}?)" if hint else "")
        )
    return name


def backend_name(found: AttentionFacts, value: str) -> str | None:
    """``AttentionConfig.validate_backend_before``: ``auto`` is ``None``, any other name
    is looked up case-insensitively; raises ``ValueError`` with vLLM's message."""
    if value.lower() == "auto":
        return None
    return _enum_lookup(found.backends, "attention backend", value)


def _before(found: AttentionFacts, name: str) -> Callable[[Any], Any] | None:
    """The ``mode="before"`` validator vLLM declares for a field, if any."""
    if name == "backend":
        return lambda v: backend_name(found, v) if isinstance(v, str) else v
    if name == "mla_prefill_backend":
        return lambda v: (
            _enum_lookup(found.prefill_backends, "MLA prefill backend", v)
            if isinstance(v, str)
            else v
        )
    if name == "backend_per_kind":
        return lambda v: _per_kind(found, v)
    return None


def _per_kind(found: AttentionFacts, value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    parsed: dict[str, Any] = {}
    for kind, backend in value.items():
        if kind not in found.kinds:
            raise ValueError(
                f"Unknown KV cache group kind {bounded.shown(kind)} in backend_per_kind. "
                f"Valid kinds are: {', '.join(sorted(found.kinds))}."
            )
        parsed[kind] = (
            _enum_lookup(found.backends, "attention backend", backend)
            if isinstance(backend, str)
            else backend
        )
    return parsed


def _annotation(spec: Mapping[str, Any]) -> Any:
    """The Python type pydantic validates a field's value against."""
    text: str = spec["annotation"]
    optional = text.endswith("| None")
    if "choices" in spec:
        base: Any = Literal[tuple(spec["choices"])]
    elif text.startswith("dict["):
        base = dict[str, str]
    elif text.startswith(("int", "bool")):
        base = int if text.startswith("int") else bool
    else:  # an enum given by name, or an open string
        base = str
    return base | None if optional else base


@cache
def _model(version: str) -> Any:
    """A pydantic model of the release's ``AttentionConfig`` (built only when ``-ac`` is
    given: pydantic stays off the plain path)."""
    from typing import Annotated

    from pydantic import BeforeValidator, ConfigDict, Field, create_model

    found = facts(version)
    assert found is not None

    def field(spec: Mapping[str, Any]) -> tuple[Any, Any]:
        kind = _annotation(spec)
        before = _before(found, spec["name"])
        if before is not None:
            kind = Annotated[kind, BeforeValidator(before)]
        bounds = {k: spec[k] for k in ("ge", "gt", "le", "lt") if k in spec}
        return kind, Field(default=_default(spec), **bounds)

    forbid = ConfigDict(extra="forbid")
    hisparse = create_model(
        "HiSparseConfig",
        __config__=forbid,
        **{s["name"]: field(s) for s in found.hisparse_fields},  # type: ignore[call-overload]
    )
    specs = {s["name"]: field(s) for s in found.fields}
    if "hisparse_config" in specs:
        specs["hisparse_config"] = (hisparse | None, None)
    return create_model("AttentionConfig", __config__=forbid, **specs)  # type: ignore[call-overload]


def _post_init(values: dict[str, Any]) -> dict[str, Any]:
    """``AttentionConfig.__post_init__``: the MSA aliases, the CP indexer's dtype check."""
    alias = MSA_ALIASES.get(values.get("backend") or "")
    if alias is not None:
        values["minimax_m3_msa_decode_backend"] = alias
        values["backend"] = None
    if values.get("minimax_m3_indexer_cp") and values["indexer_kv_dtype"] not in (
        _INDEXER_CP_DTYPES
    ):
        raise ValueError(
            "minimax_m3_indexer_cp requires a bf16 or fp8 e4m3 index cache (indexer_kv_dtype "
            f"'auto', 'bf16', 'fp8' or 'fp8_e4m3'), got {values['indexer_kv_dtype']!r}"
        )
    return values


def from_json(found: AttentionFacts, mapping: Mapping[str, Any], flag: str) -> dict[str, Any]:
    """``--attention-config``'s value as vLLM's parser validates it; one ``ArgumentError``
    line (exit 2) when it refuses."""

    def check() -> dict[str, Any]:
        values = _model(found.version)(**mapping).model_dump()
        try:
            return _post_init(values)
        except ValueError as exc:  # __post_init__'s own refusal: pydantic reports it too
            raise ArgumentError(f"argument {flag}: {exc}", field="attention_config") from None

    def explain(err: Any) -> str:
        loc = ".".join(str(p) for p in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        return f"{loc}: {message}, got {bounded.shown(err['input'])}"

    result: dict[str, Any] = validated(flag, check, explain)
    return result


def build(
    found: AttentionFacts, backend_flag: str | None, mapping: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The attention config ``create_engine_config`` builds: ``-ac`` (validated), then
    ``--attention-backend``; raises :class:`EngineError` where vLLM refuses there."""
    values = from_json(found, mapping, "--attention-config") if mapping else found.defaults
    if backend_flag is None:
        return values
    if values["backend"] is not None:
        raise EngineError(
            "attention_backend and attention_config.backend are mutually exclusive: give "
            "--attention-backend or -ac.backend, not both (vLLM refuses at engine build)",
            field="attention_backend",
        )
    try:
        values["backend"] = backend_name(found, backend_flag)
    except ValueError as exc:
        raise EngineError(f"--attention-backend: {exc}", field="attention_backend") from None
    return values


def factors(found: AttentionFacts, values: Mapping[str, Any]) -> dict[str, Any]:
    """What vLLM hashes for an attention config: every field, enums as ``[enum class,
    default class path]``, the nested HiSparse config as ``[class, sorted fields]``."""
    enum = found.hashed_as["AttentionBackendEnum"]

    def backend(name: str | None) -> Any:
        return None if name is None else [enum, found.backends[name]]

    out: dict[str, Any] = {}
    for spec in found.fields:
        name = spec["name"]
        value = values[name]
        if name == "backend":
            out[name] = backend(value)
        elif name == "backend_per_kind":
            out[name] = sorted([k, backend(v)] for k, v in value.items())
        elif name == "mla_prefill_backend" and value is not None:
            path = found.prefill_backends[value]
            out[name] = [found.hashed_as["MLAPrefillBackendEnum"], path]
        elif name == "hisparse_config" and value is not None:
            items = sorted([k, hashing.normalize_value(v)] for k, v in value.items())
            out[name] = [found.hashed_as["HiSparseConfig"], items]
        else:
            out[name] = hashing.normalize_value(value)
    return out
