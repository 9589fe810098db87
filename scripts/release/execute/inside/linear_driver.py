"""Runs inside a release's throwaway venv: vLLM's own linear-kernel choice (the
``init_*_linear_kernel`` / ``choose_*_linear_kernel`` functions of
``vllm/model_executor/kernels/linear/``, and ``dispatch_unquantized_gemm`` for BF16
layers) executed per (target, install world, layer kind, ``--linear-backend`` value),
each result or exception recorded with the ordered candidate list and every check vLLM
made.

Reads the request (JSON, stdin; written by ``scripts/release/execute/linear.py``), writes
``{"found": ..., "records": [...]}`` (JSON, stdout). Functions, parameters and keys are
looked up in the installed release; a call it cannot make is a record ``not_run``.

How the outcome is read, without changing what vLLM decides:

- every kernel class's ``is_supported`` / ``can_implement`` / ``_supports_quant_scheme``
  / ``get_min_capability`` is wrapped to log its answer (outermost calls only);
- ``_resolve_backend_kernels`` (where it exists) is wrapped to read the list vLLM walks
  after Humming's reordering and the ``--linear-backend`` filter; the log restarts there;
- the chosen class's constructor raises a marker, so the choice is read at the moment
  vLLM instantiates it (construction needs a GPU and is not selection).
"""

from __future__ import annotations

import importlib
import inspect
import typing
from typing import Any

import simulate
import simulate_rocm

LINEAR = "vllm.model_executor.kernels.linear"
FORMATS = {
    "is_supported": "is_supported: {reason}",
    "can_implement": "can_implement: {reason}",
    "quant_scheme": "quantisation scheme not supported",
    "min_capability": "needs compute capability {min_cc}, device has {cc}",
    "not_evaluated": "not evaluated (disabled or skipped before its checks)",
}
"""Trial reasons, worded as real vLLM's vectors word them."""
METHODS = {
    "is_supported": "is_supported",
    "can_implement": "can_implement",
    "_supports_quant_scheme": "quant_scheme",
    "get_min_capability": "min_capability",
}


class Chosen(Exception):  # noqa: N818 - a marker, not an error
    def __init__(self, cls: type) -> None:
        super().__init__(cls.__name__)
        self.cls = cls


class Log:
    """The kernel classes' checks, wrapped: each outermost call, in order."""

    def __init__(self, module: Any) -> None:
        self.entries: list[tuple[str, str, Any]] | None = None
        self.candidates: list[str] | None = None
        self.depth = 0
        self.classes = _kernel_classes(module)
        done: set[tuple[type, str]] = set()
        for cls in self.classes:
            for klass in cls.__mro__:
                for method in METHODS:
                    if method in vars(klass) and (klass, method) not in done:
                        done.add((klass, method))
                        self._wrap(klass, method)
            self._trap_init(cls)
        resolve = getattr(module, "_resolve_backend_kernels", None)
        if resolve is not None:
            log = self

            def resolved(*args: Any, **kwargs: Any) -> Any:
                out = resolve(*args, **kwargs)
                log.candidates = [k.__name__ for k in out]
                log.entries = []
                return out

            module._resolve_backend_kernels = resolved

    def _wrap(self, klass: type, method: str) -> None:
        original = vars(klass)[method]
        func = getattr(original, "__func__", original)
        log = self

        def record(cls: type, out: Any) -> None:
            if log.entries is not None and log.depth == 0:
                log.entries.append((cls.__name__, METHODS[method], out))

        if isinstance(original, classmethod):

            def wrapped_cm(cls: type, *args: Any, **kwargs: Any) -> Any:
                log.depth += 1
                try:
                    out = func(cls, *args, **kwargs)
                finally:
                    log.depth -= 1
                record(cls, out)
                return out

            setattr(klass, method, classmethod(wrapped_cm))
        elif isinstance(original, staticmethod):

            def wrapped_sm(*args: Any, **kwargs: Any) -> Any:
                log.depth += 1
                try:
                    out = func(*args, **kwargs)
                finally:
                    log.depth -= 1
                record(klass, out)
                return out

            setattr(klass, method, staticmethod(wrapped_sm))

    @staticmethod
    def _trap_init(kernel: type) -> None:
        def trapped(self: Any, *args: Any, **kwargs: Any) -> None:
            raise Chosen(type(self))

        kernel.__init__ = trapped  # type: ignore[misc]


def _kernel_classes(module: Any) -> list[type]:
    """Every kernel class the module names: its lists, its backend map, its imports."""
    found: dict[str, type] = {}

    def add(value: Any) -> None:
        if isinstance(value, type) and hasattr(value, "can_implement"):
            found.setdefault(f"{value.__module__}.{value.__qualname__}", value)
        elif isinstance(value, dict):
            for item in value.values():
                add(item)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                add(item)

    for value in vars(module).values():
        add(value)
    return list(found.values())


def _capability() -> int | None:
    cc = simulate.PROXY.get_device_capability()
    return None if cc is None else cc[0] * 10 + cc[1]


def _trials(
    entries: list[tuple[str, str, Any]], chosen: str | None, classes: dict[str, type]
) -> list[list[Any]]:
    """Per kernel, in the order vLLM checked them: ok, or rejected with the reason."""
    order: list[str] = []
    by: dict[str, list[tuple[str, Any]]] = {}
    for name, stage, out in entries:
        if name not in by:
            order.append(name)
            by[name] = []
        by[name].append((stage, out))
    cc = _capability()
    trials = []
    for name in order:
        reason = None
        for stage, out in by[name]:
            if stage in ("is_supported", "can_implement") and not out[0]:
                reason = FORMATS[stage].format(reason=out[1])
                break
            if stage == "quant_scheme" and not out:
                reason = FORMATS["quant_scheme"]
                break
            if stage == "min_capability" and cc is not None and out > cc:
                reason = FORMATS["min_capability"].format(min_cc=out, cc=cc)
                break
        trials.append([name, "rejected" if reason or name != chosen else "ok", reason])
        if name == chosen and reason is None:
            break
    return trials


def _platform_list(module: Any, first: str, value: str, call: str) -> list[str] | None:
    """For a chooser that walks its ``_POSSIBLE_*`` list without
    ``_resolve_backend_kernels``: the list for the platform that starts with the first
    kernel checked (narrowed to ``value``'s kernels, as the chooser narrows it). Where
    several lists start with it (0.24.0: Marlin heads both the FP8 and the W8A16 FP8
    list on CUDA), the one the chooser ``call`` names (``init_wfp8_a16_linear_kernel``:
    ``_POSSIBLE_WFP8A16_KERNELS``), the longest name matching; else the first."""
    enum = simulate.PROXY._enum
    found: list[tuple[str, list[Any]]] = []
    for name, table in vars(module).items():
        if not (name.startswith("_POSSIBLE_") and isinstance(table, dict)):
            continue
        listed = table.get(enum) or []
        if listed and listed[0].__name__ == first:
            found.append((name, listed))
    if not found:
        return None
    spelled = call.upper().replace("_", "")
    named = [
        f for f in found if f[0][len("_POSSIBLE_") : -len("_KERNELS")].replace("_", "") in spelled
    ]
    listed = max(named, key=lambda f: len(f[0]))[1] if len(found) > 1 and named else found[0][1]
    narrowed = getattr(module, "_LINEAR_BACKEND_KERNEL_MAP", {}).get(value)
    if narrowed:
        listed = [k for k in listed if k in narrowed] or listed
    return [k.__name__ for k in listed]


def _keys(names: dict[str, str | None]) -> dict[str, Any]:
    quant_utils = importlib.import_module(
        "vllm.model_executor.layers.quantization.utils.quant_utils"
    )
    return {k: None if v is None else getattr(quant_utils, v) for k, v in names.items()}


def _call(module: Any, layer: dict[str, Any], value: str) -> Any:
    """vLLM's chooser for one layer kind, called as the quantisation method calls it."""
    import torch

    call = layer["call"]
    args = dict(layer.get("args", {}))
    args.update(_keys(layer.get("keys", {})))
    for name in ("input_dtype", "out_dtype", "params_dtype"):
        if name in args:
            args[name] = getattr(torch, args[name])
    if "weight_shape" in args:
        args["weight_shape"] = tuple(args["weight_shape"])
    if call == "dispatch_unquantized_gemm":
        utils = importlib.import_module("vllm.model_executor.layers.utils")
        fn = utils.dispatch_unquantized_gemm
        params = inspect.signature(fn).parameters
        return fn(linear_backend=value) if "linear_backend" in params else fn()
    fn = getattr(module, call)
    if call == "choose_mp_linear_kernel":
        mp = importlib.import_module(f"{LINEAR}.mixed_precision.MPLinearKernel")
        scalar_types = importlib.import_module("vllm.scalar_type").scalar_types
        shape = tuple(layer["shape"])
        config = {
            "full_weight_shape": shape,
            "partition_weight_shape": shape,
            "weight_type": getattr(scalar_types, layer["weight_type"]),
            "act_type": getattr(torch, layer["act_type"]),
            "group_size": layer["group_size"],
            "zero_points": layer["zero_points"],
        }
        if layer.get("out_type"):
            config["out_type"] = getattr(torch, layer["out_type"])
        fields = inspect.signature(mp.MPLinearLayerConfig).parameters
        config = {k: v for k, v in config.items() if k in fields}
        if "has_g_idx" in fields:
            config["has_g_idx"] = False
        return fn(mp.MPLinearLayerConfig(**config))
    params = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in args.items() if k in params})


def _outcome(module: Any, log: Log, layer: dict[str, Any], value: str) -> dict[str, Any]:
    log.entries, log.candidates = [], None
    chosen: str | None = None
    error = None
    try:
        out = _call(module, layer, value)
        chosen = out.__name__ if isinstance(out, type) else getattr(out, "__name__", None)
        if chosen is None:
            chosen = type(out).__name__
    except Chosen as picked:
        chosen = picked.cls.__name__
    except Exception as exc:
        error = f"{type(exc).__name__}: {' | '.join(str(exc).splitlines())[:400]}"
    finally:
        entries, candidates = log.entries or [], log.candidates
        log.entries = None
    if layer["call"] == "dispatch_unquantized_gemm":
        if error:
            return {"status": "error", "error": error}
        return {"status": "selected", "kernel": chosen, "candidates": [], "trials": []}
    classes = {c.__name__: c for c in log.classes}
    if candidates is None and entries:
        candidates = _platform_list(module, entries[0][0], value, layer["call"])
    forced = candidates is None and chosen is not None
    if forced:
        candidates = [chosen]
        trials = [[chosen, "ok", None]]
    else:
        trials = _trials(entries, chosen, classes)
    result: dict[str, Any] = {
        "status": "error" if error else "selected",
        "kernel": None if error else chosen,
        "candidates": candidates or [],
        "trials": trials,
    }
    if forced:
        result["forced"] = True
    if error:
        result["error"] = error
    return result


def _values() -> list[str]:
    kernel = importlib.import_module("vllm.config.kernel")
    literal = getattr(kernel, "LinearBackend", None)
    return list(typing.get_args(literal)) if literal is not None else ["auto"]


def _configs(values: list[str]) -> dict[str, Any]:
    """One vLLM config per ``--linear-backend`` value (a ``KernelConfig`` field where the
    release has one)."""
    from vllm.config import KernelConfig

    fields = getattr(KernelConfig, "__dataclass_fields__", {}) or getattr(
        KernelConfig, "model_fields", {}
    )
    out = {}
    for value in values:
        if "linear_backend" in fields:
            out[value] = {"kernel_config": KernelConfig(linear_backend=value)}
        else:
            out[value] = {}
    return out


def run(request: dict[str, Any]) -> dict[str, Any]:
    simulate.install_proxy()
    facts = simulate_rocm.first_target(request["targets"])
    module = importlib.import_module(LINEAR)
    found: dict[str, Any] = {
        "choosers": sorted(
            n
            for n in vars(module)
            if (n.startswith(("init_", "choose_")) and n.endswith("_kernel"))
        )
    }
    worlds = simulate.Worlds()
    log = Log(module)
    values = _values()
    found["linear_backend_values"] = values
    found["backend_kernels"] = {
        value: sorted(k.__name__ for k in kernels)
        for value, kernels in getattr(module, "_LINEAR_BACKEND_KERNEL_MAP", {}).items()
    }
    found["kernel_classes"] = len(log.classes)
    configs = _configs(values)
    constants = simulate.ImportTimeConstants()
    found["import_time_constants"] = constants.describe()
    records = []
    each = simulate_rocm.each_world(request["targets"], request["worlds"], worlds, facts)
    for target, world, libs in each:
        found["submodules"] = simulate.stand_in_submodules(libs)
        constants.refresh()
        explicit = world in request["explicit_worlds"]
        for value in values if explicit else ["auto"]:
            with simulate.model_context("llama", **configs[value]):
                for lname, layer in request["layers"].items():
                    call = layer["call"]
                    if call != "dispatch_unquantized_gemm" and not hasattr(module, call):
                        out = {"status": "not_run", "error": f"no {call} in this release"}
                    else:
                        out = _outcome(module, log, layer, value)
                    records.append([target, lname, world, value, out])
    found["probes"] = worlds.describe()
    if facts is not None:
        found["rocm_facts"] = facts.describe()
    return {"found": found, "records": records}


if __name__ == "__main__":
    simulate.serve(run)
