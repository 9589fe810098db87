"""Runs inside a release's throwaway venv: vLLM's own fused-MoE oracles
(``select_*_moe_backend`` in ``vllm/model_executor/layers/fused_moe/oracle/``) executed
per (target, install world, quantisation variant, model, parallel layout, backend
value), each result or exception recorded.

Reads the request (JSON, stdin; written by ``scripts/release/execute/moe.py``), writes
``{"found": ..., "records": [...]}`` (JSON, stdout). Every name it calls is looked up in
the installed release; a call it cannot make is a record with status ``not_run``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any

import simulate
import simulate_rocm

ORACLE_PACKAGE = "vllm.model_executor.layers.fused_moe.oracle"
CONFIG_MODULE = "vllm.model_executor.layers.fused_moe.config"


class _Rank0:
    rank_in_group = 0
    world_size = 1


def _import_all(package: str) -> list[str]:
    """Import every module of a package; the names that failed to import."""
    failed = []
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            failed.append(f"{info.name}: {type(exc).__name__}: {str(exc)[:120]}")
    return failed


class Trials:
    """Every experts class's ``is_supported_config`` wrapped: each check, in order."""

    def __init__(self) -> None:
        from vllm.model_executor.layers.fused_moe import modular_kernel as mk

        self.log: list[list[Any]] | None = None
        base = getattr(mk, "FusedMoEExperts", None) or mk.FusedMoEPermuteExpertsUnpermute
        seen: list[type] = []
        stack = [base]
        while stack:
            cls = stack.pop()
            if cls in seen:
                continue
            seen.append(cls)
            stack.extend(cls.__subclasses__())
            if "is_supported_config" in vars(cls):
                self._wrap(cls)

    def _wrap(self, cls: type) -> None:
        original = vars(cls)["is_supported_config"]
        func = getattr(original, "__func__", original)
        trials = self

        def is_supported_config(*args: Any, **kwargs: Any) -> Any:
            answer = func(*args, **kwargs)
            if trials.log is not None:
                checked = args[0] if args and isinstance(args[0], type) else cls
                ok, reason = answer
                trials.log.append([checked.__name__, "ok" if ok else "rejected", reason])
            return answer

        if isinstance(original, staticmethod):
            cls.is_supported_config = staticmethod(is_supported_config)
        elif isinstance(original, classmethod):
            cls.is_supported_config = classmethod(is_supported_config)
        else:
            cls.is_supported_config = is_supported_config


def _parallel(layout: str, found: dict[str, Any]) -> Any:
    """The layout as vLLM's ``FusedMoEParallelConfig.make`` builds it on rank 0."""
    config = importlib.import_module(CONFIG_MODULE)
    for name in ("get_dp_group", "get_pcp_group", "get_ep_group", "get_tp_group"):
        if hasattr(config, name):
            setattr(config, name, _Rank0)
    if hasattr(config, "get_tensor_model_parallel_rank"):
        config.get_tensor_model_parallel_rank = lambda: 0
    head, _, a2a = layout.partition("/")
    tp = 8 if head.startswith("TP8") else 1
    dp = 8 if head.startswith("DP8") else 1
    vllm_parallel = type(
        "ParallelConfigStandIn",
        (),
        {
            "enable_expert_parallel": "+EP" in head,
            "all2all_backend": a2a or "allgather_reducescatter",
            "enable_eplb": False,
            "mori_ep_v2": False,
            "enable_dbo": False,
            "data_parallel_size": dp,
            "tensor_parallel_size": tp,
        },
    )()
    make = config.FusedMoEParallelConfig.make
    params = inspect.signature(make).parameters
    sizes = {"tp_size_": tp, "dp_size_": dp, "pcp_size_": 1, "sp_size_": 1}
    kwargs = {k: v for k, v in sizes.items() if k in params}
    kwargs["vllm_parallel_config"] = vllm_parallel
    found.setdefault("parallel_make_params", list(params))
    return make(**kwargs)


def _moe_config(model: dict[str, Any], layout: str, value: str, found: dict[str, Any]) -> Any:
    import torch

    config = importlib.import_module(CONFIG_MODULE)
    parallel = _parallel(layout, found)
    activation_mod = importlib.import_module("vllm.model_executor.layers.fused_moe.activation")
    activation = getattr(activation_mod.MoEActivation, model["activation"])
    routing = config.get_routing_method_type(
        model["scoring"], model["top_k"], model["renormalize"], model["groups"], model["bias"]
    )
    fields = set(config.FusedMoEConfig.__dataclass_fields__)
    ep = parallel.ep_size
    kwargs: dict[str, Any] = {
        "num_experts": model["num_experts"],
        "experts_per_token": model["top_k"],
        "hidden_dim": model["hidden"],
        "intermediate_size": model["intermediate"],
        "num_local_experts": model["num_experts"] // ep,
        "num_logical_experts": model["num_experts"],
        "activation": activation,
        "device": "cuda",
        "routing_method": routing,
        "moe_parallel_config": parallel,
        "in_dtype": torch.bfloat16,
        "router_logits_dtype": getattr(torch, model.get("router_logits_dtype", "bfloat16")),
        "moe_backend": value,
        "has_bias": model["expert_bias"],
        "swiglu_limit": model.get("swiglu_limit"),
    }
    if "intermediate_size" not in fields:
        # 0.23.0: no intermediate_size field; the layer passes the TP shard
        # (fused_moe/layer.py:263-264 intermediate_size // tp_size)
        kwargs["intermediate_size_per_partition"] = model["intermediate"] // parallel.tp_size
    found.setdefault("moe_config_fields_not_set", sorted(fields - set(kwargs)))
    return config.FusedMoEConfig(**{k: v for k, v in kwargs.items() if k in fields})


def _keys(names: list[str | None]) -> list[Any]:
    quant_utils = importlib.import_module(
        "vllm.model_executor.layers.quantization.utils.quant_utils"
    )
    return [None if n is None else getattr(quant_utils, n) for n in names]


def _call(variant: dict[str, Any], moe_config: Any) -> tuple[Any, Any]:
    module = importlib.import_module(f"{ORACLE_PACKAGE}.{variant['module']}")
    select = getattr(module, variant["function"])
    params = inspect.signature(select).parameters
    args = [moe_config]
    kwargs = dict(variant.get("args", {}))
    weight, activation = _keys([variant.get("weight_key"), variant.get("activation_key")])
    if "weight_key" in params:
        kwargs["weight_key"] = weight
    if "activation_key" in params:
        kwargs["activation_key"] = activation
    kwargs = {k: v for k, v in kwargs.items() if k in params}
    return select(*args, **kwargs)


def _outcome(variant: dict[str, Any], moe_config_fn: Any, trials: Trials) -> dict[str, Any]:
    trials.log = []
    try:
        moe_config = moe_config_fn()
    except Exception as exc:
        return {"status": "config_error", "error": f"{type(exc).__name__}: {str(exc)[:400]}"}
    try:
        backend, experts = _call(variant, moe_config)
    except Exception as exc:
        return {
            "status": "error",
            "error": f"{type(exc).__name__}: {str(exc)[:400]}",
            "trials": trials.log,
        }
    finally:
        log, trials.log = trials.log, None
    name = getattr(backend, "name", str(backend))
    return {
        "status": "no_kernel" if experts is None else "selected",
        "backend": f"{type(backend).__name__}.{name}",
        "experts": getattr(experts, "__name__", None),
        "trials": log,
    }


def _values() -> list[str]:
    kernel = importlib.import_module("vllm.config.kernel")
    literal = getattr(kernel, "MoEBackend", None)
    return list(typing.get_args(literal)) if literal is not None else ["auto"]


def run(request: dict[str, Any]) -> dict[str, Any]:
    simulate.install_proxy()
    facts = simulate_rocm.first_target(request["targets"])
    found: dict[str, Any] = {"import_failures": _import_all(ORACLE_PACKAGE)}
    found["import_failures"] += (
        _import_all("vllm.model_executor.layers.fused_moe.experts")
        if importlib.util.find_spec("vllm.model_executor.layers.fused_moe.experts")
        else []
    )
    worlds = simulate.Worlds()
    trials = Trials()
    values = _values()
    found["moe_backend_values"] = values
    found["oracles"] = sorted(
        f"{m.name}.{f}"
        for m in pkgutil.iter_modules(importlib.import_module(ORACLE_PACKAGE).__path__)
        for f in vars(importlib.import_module(f"{ORACLE_PACKAGE}.{m.name}"))
        if f.startswith("select_") and f.endswith("_backend")
    )
    records = []
    each = simulate_rocm.each_world(request["targets"], request["worlds"], worlds, facts)
    for target, world, _libs in each:
        for vname, variant in request["variants"].items():
            if f"{variant['module']}.{variant['function']}" not in found["oracles"]:
                records.append(
                    [
                        target,
                        vname,
                        None,
                        None,
                        world,
                        "auto",
                        {"status": "not_run", "error": "no such oracle in this release"},
                    ]
                )
                continue
            for model_name in variant["models"]:
                model = request["models"][model_name]
                with simulate.model_context(model["model_type"]):
                    for layout in request["layouts"]:
                        asked = (
                            values
                            if layout in request["explicit_layouts"]
                            and model_name == variant["models"][0]
                            else ["auto"]
                        )
                        for value in asked:
                            out = _outcome(
                                variant,
                                lambda m=model, lay=layout, v=value: _moe_config(m, lay, v, found),
                                trials,
                            )
                            records.append([target, vname, model_name, layout, world, value, out])
    found["probes"] = worlds.describe()
    if facts is not None:
        found["rocm_facts"] = facts.describe()
    return {"found": found, "records": records}


if __name__ == "__main__":
    simulate.serve(run)
