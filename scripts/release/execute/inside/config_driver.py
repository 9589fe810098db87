"""Runs inside a release's throwaway venv: vLLM's own ``vllm.config.kernel`` on a set of
inputs -- ``KernelConfig(**kwargs)``, its hash (``compute_hash()``, or ``hash_config``
where the release has no ``compute_hash``), the hash factors it builds, the platform
classes' ``get_default_ir_op_priority``, ``KernelConfig.set_platform_defaults`` on
stand-in configs, ``bind_passthrough_all2all_backend`` and
``validate_flashinfer_moe_ep_model`` -- each result or exception recorded.

Reads the request (JSON, stdin; written by ``scripts/release/execute/config.py``), writes
``{"found", "schema", "ir_impls", "cases", "invalid", "platform"}`` (JSON, stdout).

Factors are captured by wrapping the hash helpers ``vllm.config.kernel`` imported
(``get_hash_factors`` / ``hash_factors``, or ``get_compile_factors``) with call-through
recorders; nothing vLLM computes is changed.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
import importlib
import importlib.machinery
import inspect
import json
import re
import typing
from pathlib import Path
from typing import Any

import simulate
from config_platform import run_platform, stub_modules

CONSTANTS = (
    "FLASHINFER_MOE_EP_CUTEDSL",
    "FLASHINFER_MOE_EP_DEEP_GEMM",
    "FLASHINFER_MOE_EP_BACKENDS",
    "PASSTHROUGH_ALL2ALL_BACKEND",
    "NATIVE_MEGA_MOE_BACKENDS",
    "MEGA_MOE_BACKENDS",
    "FLASHINFER_MOE_EP_ARCHITECTURES",
)


# ---------------------------------------------------------------- JSON
def plain(value: Any) -> Any:
    """A value as JSON: tuples as arrays, sets sorted, dataclass configs as dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    return value


def tagged(value: Any) -> tuple[Any, bool]:
    """``kwargs`` as the vectors encode them: (JSON, exact?) with tuples and non-string
    keys tagged."""
    if isinstance(value, tuple):
        inner = [tagged(v) for v in value]
        return {"__tuple__": [v for v, _ in inner]}, False
    if isinstance(value, list):
        inner = [tagged(v) for v in value]
        return [v for v, _ in inner], all(e for _, e in inner)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            items = [[k, tagged(v)[0]] for k, v in value.items()]
            return {"__dict_items__": items}, False
        inner_d = {k: tagged(v) for k, v in value.items()}
        return {k: v for k, (v, _) in inner_d.items()}, all(e for _, e in inner_d.values())
    return value, True


def error_of(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": type(exc).__name__,
        "type_module": type(exc).__module__,
        "message": str(exc),
        "repr": repr(exc),
    }
    if hasattr(exc, "errors") and hasattr(exc, "title"):
        out["title"] = exc.title
        out["error_count"] = exc.error_count()
        out["errors"] = [
            json.loads(json.dumps({k: v for k, v in e.items() if k != "url"}, default=repr))
            for e in exc.errors(include_url=False)
        ]
        out["message_no_url"] = re.sub(r"\n    For further information visit \S+", "", str(exc))
    return out


# ---------------------------------------------------------------- capture
class Capture:
    """Call-through recorders around the hash helpers ``vllm.config.kernel`` uses."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.calls: list[tuple[str, Any, Any, Any]] = []
        utils = importlib.import_module("vllm.config.utils")
        self.scheme = (
            "compute_hash" if hasattr(kernel.KernelConfig, "compute_hash") else ("hash_config")
        )
        self.hash_config = getattr(utils, "hash_config", None)
        for name in ("get_hash_factors", "get_compile_factors"):
            if hasattr(kernel, name):
                self._wrap_factors(name)
        if hasattr(kernel, "hash_factors"):
            original = kernel.hash_factors

            def hash_factors(factors: Any) -> Any:
                self.calls.append(("hash", None, copy.deepcopy(plain(factors)), None))
                return original(factors)

            kernel.hash_factors = hash_factors

    def _wrap_factors(self, name: str) -> None:
        original = getattr(self.kernel, name)

        def factors(obj: Any, ignored: Any) -> Any:
            result = original(obj, ignored)
            self.calls.append(("factors", type(obj).__name__, sorted(ignored), plain(result)))
            return result

        setattr(self.kernel, name, factors)

    def digest(self, cfg: Any) -> str:
        self.calls = []
        if self.scheme == "compute_hash":
            return str(cfg.compute_hash())
        return str(self.hash_config(cfg))


def hash_record(cap: Capture, cfg: Any) -> dict[str, Any]:
    """The hash and the factors of one valid config, keyed as the vectors are."""
    out: dict[str, Any] = {"hash": cap.digest(cfg)}
    calls = cap.calls
    kernel_f = [c for c in calls if c[0] == "factors" and c[1] == "KernelConfig"]
    ir_f = [c for c in calls if c[0] == "factors" and c[1] == "IrOpPriorityConfig"]
    hashes = [c[2] for c in calls if c[0] == "hash"]
    if kernel_f:
        out["kernel_ignored_factors"] = kernel_f[-1][2]
    if cap.scheme == "compute_hash":
        out["kernel_get_hash_factors"] = kernel_f[-1][3]
        kernel_in = hashes[-1]
        out["kernel_hash_input"] = kernel_in
        out["kernel_hash_json"] = json.dumps(kernel_in, sort_keys=True)
        out["ir_get_hash_factors"] = ir_f[-1][3]
        ir_in = hashes[0]
        out["ir_hash_input"] = ir_in
        out["ir_hash_json"] = json.dumps(ir_in, sort_keys=True)
        out["ir_hash"] = hashlib.sha256(out["ir_hash_json"].encode()).hexdigest()
    else:
        kernel_in = plain(cfg.compile_factors())
        out["kernel_hash_input"] = kernel_in
        out["kernel_hash_json"] = json.dumps(kernel_in, sort_keys=True)
        out["ir_get_compile_factors"] = ir_f[-1][3]
    assert hashlib.sha256(out["kernel_hash_json"].encode()).hexdigest() == out["hash"]
    return out


# ---------------------------------------------------------------- schema and adaptation
def literal_args(tp: Any) -> list[str] | None:
    """The choices of a ``Literal`` annotation (inside ``dict[..]`` / ``| None`` too)."""
    if typing.get_origin(tp) is typing.Literal:
        return list(typing.get_args(tp))
    for arg in typing.get_args(tp):
        found = literal_args(arg)
        if found is not None:
            return found
    return None


def schema(kernel: Any) -> dict[str, Any]:
    def fields_of(cls: Any) -> list[dict[str, Any]]:
        out = []
        for f in dataclasses.fields(cls):
            row: dict[str, Any] = {"name": f.name, "type": str(f.type)}
            default = f.default
            factory = f.default_factory
            info = type(default).__name__ == "FieldInfo"
            if info:
                factory = default.default_factory or dataclasses.MISSING
                if default.metadata:
                    row["metadata"] = [repr(m) for m in default.metadata]
                default = default.default if factory is dataclasses.MISSING else None
            if factory is not dataclasses.MISSING:
                row["default_factory"] = getattr(factory, "__name__", "?")
            elif default is not dataclasses.MISSING:
                row["default"] = plain(default)
            out.append(row)
        return out

    hints = typing.get_type_hints(kernel.KernelConfig, include_extras=False)
    parallel = importlib.import_module("vllm.config.parallel")
    a2a = getattr(parallel, "All2AllBackend", None)
    out: dict[str, Any] = {
        "KernelConfig_fields": fields_of(kernel.KernelConfig),
        "KernelConfig_defaults_repr": repr(kernel.KernelConfig()),
        "IrOpPriorityConfig_fields": fields_of(kernel.IrOpPriorityConfig),
        "MoEBackend": literal_args(getattr(kernel, "MoEBackend", None)),
        "LinearBackend": literal_args(getattr(kernel, "LinearBackend", None)),
        "SparseIndexerTopkBackend": literal_args(getattr(kernel, "SparseIndexerTopkBackend", None)),
        "All2AllBackend": literal_args(a2a) if a2a is not None else None,
    }
    for name in CONSTANTS:
        value = getattr(kernel, name, None)
        out[name] = plain(value)
    out["field_choices"] = {n: literal_args(t) for n, t in hints.items() if literal_args(t)}
    out["functions"] = sorted(
        n
        for n in ("bind_passthrough_all2all_backend", "validate_flashinfer_moe_ep_model")
        if callable(getattr(kernel, n, None))
    )
    return out


def adapt(kwargs: dict[str, Any], kernel: Any, registry: dict[str, list[str]]) -> list[Any]:
    """Drop from ``kwargs`` (in place) what this release lacks: fields, Literal values,
    IR ops, IR providers. Returns what was dropped (path, value, why)."""
    fields = {f.name for f in dataclasses.fields(kernel.KernelConfig)}
    ir_fields = {f.name for f in dataclasses.fields(kernel.IrOpPriorityConfig)}
    hints = typing.get_type_hints(kernel.KernelConfig)
    dropped: list[dict[str, Any]] = []
    for key in list(kwargs):
        if key not in fields:
            dropped.append(
                {"path": key, "value": kwargs.pop(key), "why": "KernelConfig has no such field"}
            )
            continue
        choices = literal_args(hints[key])
        value = kwargs[key]
        if choices and isinstance(value, str):
            spelled = value.lower().replace("-", "_")
            if spelled not in choices and value not in choices:
                kwargs.pop(key)
                dropped.append(
                    {
                        "path": key,
                        "value": value,
                        "why": f"{spelled!r} is not a member of this release's Literal",
                    }
                )
        elif choices and isinstance(value, dict):
            for k in [
                k
                for k, v in value.items()
                if isinstance(v, str) and v.lower().replace("-", "_") not in choices
            ]:
                dropped.append(
                    {
                        "path": f"{key}.{k}",
                        "value": value.pop(k),
                        "why": "not a member of this release's Literal",
                    }
                )
    ir = kwargs.get("ir_op_priority")
    if isinstance(ir, dict):
        for op in list(ir):
            if op not in ir_fields:
                dropped.append(
                    {
                        "path": f"ir_op_priority.{op}",
                        "value": ir.pop(op),
                        "why": "IrOpPriorityConfig has no such field",
                    }
                )
                continue
            providers = ir[op]
            if isinstance(providers, list):
                unknown = [
                    p
                    for p in providers
                    if isinstance(p, str) and p.strip() and p not in registry.get(op, [])
                ]
                if unknown:
                    ir[op] = [p for p in providers if p not in unknown]
                    dropped.append(
                        {
                            "path": f"ir_op_priority.{op}",
                            "value": unknown,
                            "why": "no such provider registered in this release",
                        }
                    )
    return dropped


# ---------------------------------------------------------------- KernelConfig cases
def build(kernel: Any, case: dict[str, Any]) -> Any:
    kwargs = ast.literal_eval(case["kwargs_py"])
    via = case.get("ir_op_priority_via", "absent")
    if via == "instance":
        kwargs["ir_op_priority"] = kernel.IrOpPriorityConfig(**kwargs["ir_op_priority"])
    elif via == "with_default":
        kwargs["ir_op_priority"] = kernel.IrOpPriorityConfig.with_default(
            case["with_default_arg"], **kwargs["ir_op_priority"]
        )
    return kernel.KernelConfig(**kwargs)


def valid_case(kernel: Any, cap: Capture, case: dict[str, Any]) -> dict[str, Any]:
    cfg = build(kernel, case)
    out = {"normalized": plain(cfg), "repr": repr(cfg)}
    out.update(hash_record(cap, cfg))
    return out


def invalid_case(kernel: Any, cap: Capture, case: dict[str, Any]) -> dict[str, Any]:
    kwargs = ast.literal_eval(case["kwargs_py"])
    cls = kernel.KernelConfig if case["target"] == "KernelConfig" else kernel.IrOpPriorityConfig
    try:
        cfg = cls(**kwargs)
    except Exception as exc:
        return {"stage": "construct", "error": error_of(exc)}
    out: dict[str, Any] = {"normalized": plain(cfg)}
    try:
        if cls is kernel.KernelConfig:
            out["hash"] = cap.digest(cfg)
        else:
            out["hash"] = (
                cfg.compute_hash() if cap.scheme == "compute_hash" else cap.hash_config(cfg)
            )
    except Exception as exc:
        out["stage"] = cap.scheme
        out["error"] = error_of(exc)
        out.pop("hash", None)
        return out
    out["stage"] = "none"
    out["UNEXPECTED"] = "no exception raised"
    return out


def schema_cases(kernel: Any, registry: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Inputs the release's own schema suggests: every value of every Literal field, both
    values of every bool field, every registered IR provider of every op (alone, and all
    of them through ``with_default``)."""
    out: list[dict[str, Any]] = []

    def add(case_id: str, kwargs: dict[str, Any], via: str = "absent", **extra: Any) -> None:
        encoded, exact = tagged(kwargs)
        row = {
            "id": case_id,
            "kwargs": encoded,
            "kwargs_py": repr(kwargs),
            "kwargs_json_exact": exact,
        }
        out.append({**row, "ir_op_priority_via": via, **extra})

    hints = typing.get_type_hints(kernel.KernelConfig)
    for f in dataclasses.fields(kernel.KernelConfig):
        choices = literal_args(hints[f.name])
        if choices and typing.get_origin(hints[f.name]) is typing.Literal:
            for value in choices:
                add(f"schema:{f.name}:{value}", {f.name: value})
        elif hints[f.name] is bool:
            for flag in (True, False):
                add(f"schema:{f.name}:{flag}", {f.name: flag})
    ops = [f.name for f in dataclasses.fields(kernel.IrOpPriorityConfig)]
    for op in ops:
        for provider in registry.get(op, []):
            add(f"schema:ir:{op}:{provider}", {"ir_op_priority": {op: [provider]}}, "instance")
    every = {op: list(registry.get(op, [])) for op in ops}
    add("schema:ir:every_provider", {"ir_op_priority": every}, "dict")
    add(
        "schema:ir:with_default_native",
        {"ir_op_priority": {}},
        "with_default",
        with_default_arg=["native"],
    )
    return out


def schema_invalid(kernel: Any) -> list[dict[str, Any]]:
    """Doubtful inputs the release's own schema suggests, refused or accepted as the
    release decides (stage ``none`` then): ``None`` and a word for each bool field (the
    skip-``None`` validators), ``None`` and an unknown name for each Literal field (its
    message lists the release's choices)."""
    out: list[dict[str, Any]] = []
    hints = typing.get_type_hints(kernel.KernelConfig)
    for f in dataclasses.fields(kernel.KernelConfig):
        tp = hints[f.name]
        if typing.get_origin(tp) is typing.Literal:
            values: list[Any] = [None, "not_a_backend"]
        elif tp is bool:
            values = [None, "maybe"]
        else:
            continue
        for value in values:
            kwargs = {f.name: value}
            out.append(
                {
                    "id": f"schema:{f.name}:{value!r}",
                    "target": "KernelConfig",
                    "kwargs": kwargs,
                    "kwargs_py": repr(kwargs),
                    "kwargs_json_exact": True,
                    "note": "from the release's schema: refused or accepted as it decides",
                }
            )
    return out


def run_cases(
    kernel: Any, cap: Capture, request: dict[str, Any], registry: dict[str, list[str]]
) -> dict[str, Any]:
    cases, skipped, rejected = [], [], []
    for case in request["cases"] + schema_cases(kernel, registry):
        kwargs = ast.literal_eval(case["kwargs_py"])
        dropped = adapt(kwargs, kernel, registry)
        row = {k: v for k, v in case.items() if k not in ("generator_kwargs_py", "dropped_before")}
        if dropped:
            original = ast.literal_eval(case["kwargs_py"])
            if (
                not case["id"].startswith("rand:")
                and case["id"] not in request["adapt_anchors"]
                and original
            ):
                skipped.append(
                    {"id": case["id"], "kwargs_py": case["kwargs_py"], "dropped": dropped}
                )
                continue
            row["kwargs_py"] = repr(kwargs)
            row["kwargs"], row["kwargs_json_exact"] = tagged(kwargs)
        all_dropped = [*case.get("dropped_before", []), *dropped]
        if all_dropped:
            row["kwargs_adaptation"] = {
                "generator_kwargs_py": case.get("generator_kwargs_py", case["kwargs_py"]),
                "dropped": all_dropped,
            }
        try:
            row.update(valid_case(kernel, cap, row))
        except Exception as exc:
            rejected.append(
                {"id": case["id"], "kwargs_py": row["kwargs_py"], "error": error_of(exc)}
            )
            continue
        cases.append(row)
    invalid = []
    for case in request["invalid"] + schema_invalid(kernel):
        row = dict(case)
        row.update(invalid_case(kernel, cap, case))
        if row["id"].startswith("schema:"):
            row.pop("UNEXPECTED", None)
        invalid.append(row)
    return {"cases": cases, "invalid": invalid, "anchors_skipped": skipped, "rejected": rejected}


# ---------------------------------------------------------------- IR providers
def ir_impls() -> tuple[dict[str, Any], dict[str, list[str]]]:
    from vllm.ir.op import IrOp

    site = Path(importlib.import_module("vllm").__file__).resolve().parent.parent
    out: dict[str, Any] = {}
    registry: dict[str, list[str]] = {}
    for op, ir_op in sorted(IrOp.registry.items()):
        registry[op] = list(ir_op.impls)
        providers = {}
        for provider, impl in ir_op.impls.items():
            path = Path(inspect.getfile(impl.impl_fn)).resolve()
            data = path.read_bytes()
            providers[provider] = {
                "uuid": impl.uuid(),
                "file": str(path.relative_to(site)),
                "file_sha256_bytes": hashlib.sha256(data).hexdigest(),
                "file_size": len(data),
                "impl_fn": f"{impl.impl_fn.__module__}.{impl.impl_fn.__qualname__}",
                "supported_on_oracle_host": bool(getattr(impl, "supported", False)),
            }
        out[op] = {"registration_order": list(ir_op.impls), "providers": providers}
    return out, registry


def run(request: dict[str, Any]) -> dict[str, Any]:
    stub_modules()
    simulate.install_proxy()
    interface = importlib.import_module("vllm.platforms.interface")
    simulate.PROXY.set_target(interface.UnspecifiedPlatform())
    kernel = importlib.import_module("vllm.config.kernel")
    from vllm.ir.op import IrOp

    before = {k: list(v.impls) for k, v in IrOp.registry.items()}
    interface.UnspecifiedPlatform.import_ir_kernels()
    impls, registry = ir_impls()
    cap = Capture(kernel)
    found = {
        "hash_scheme": cap.scheme,
        "registry_before_import_ir_kernels": before,
        "registry_after": registry,
        "compute_hash_imports_ir_kernels": "import_ir_kernels"
        in inspect.getsource(
            kernel.IrOpPriorityConfig.compute_hash
            if cap.scheme == "compute_hash"
            else kernel.IrOpPriorityConfig.compile_factors
        ),
        "vllm_version": importlib.import_module("vllm").__version__,
    }
    out: dict[str, Any] = {"found": found, "schema": schema(kernel), "ir_impls": impls}
    out.update(run_cases(kernel, cap, request, registry))
    simulate.PROXY.set_target(interface.UnspecifiedPlatform())
    out["platform"] = run_platform(kernel, cap, request)
    return out


if __name__ == "__main__":
    simulate.serve(run)
