"""Runs inside a release's throwaway venv, for ``config_driver.py``: the platform half --
each platform class's ``get_default_ir_op_priority``, ``KernelConfig.set_platform_defaults``
on stand-in configs (``current_platform`` the record's platform, through
``simulate.PROXY``), ``bind_passthrough_all2all_backend`` and
``validate_flashinfer_moe_ep_model``, each result or exception recorded.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import importlib.machinery
import json
import os
import sys
import types
from typing import Any

import simulate

ENV_NAMES = ("VLLM_USE_OINK_OPS", "VLLM_ROCM_USE_AITER", "VLLM_ROCM_USE_AITER_RMSNORM")
"""The variables the platform IR defaults read (cleared before each record)."""

STUBBED = (
    "vllm._C_stable_libtorch",
    "vllm_xpu_kernels",
    "vllm_xpu_kernels._C",
    "vllm_xpu_kernels._moe_C",
    "vllm_xpu_kernels._xpu_C",
)
"""Import-time native dependencies of the platform modules, stubbed empty (with a
module spec, so ``find_spec`` answers) -- as the real-vLLM vectors were made."""

PLATFORMS = {
    "Platform": ("vllm.platforms.interface", "Platform"),
    "UnspecifiedPlatform": ("vllm.platforms.interface", "UnspecifiedPlatform"),
    "CpuPlatform": ("vllm.platforms.cpu", "CpuPlatform"),
    "ZenCpuPlatform": ("vllm.platforms.zen_cpu", "ZenCpuPlatform"),
    "CudaPlatform": ("vllm.platforms.cuda", "NonNvmlCudaPlatform"),
    "XPUPlatform": ("vllm.platforms.xpu", "XPUPlatform"),
    "RocmPlatform": ("vllm.platforms.rocm", "RocmPlatform"),
}
"""The platform names of the vectors -> the class executed (``RocmPlatform``: the module
re-imported per gfx arch)."""


def stub_modules() -> None:
    for name in STUBBED:
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = module


def rocm_module(arch: str) -> Any:
    """``vllm.platforms.rocm`` imported afresh with ``torch.cuda`` reporting ``arch``."""
    import torch

    original = torch.cuda.get_device_properties
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(  # type: ignore[assignment]
        gcnArchName=arch, name=arch, major=9, minor=4, multi_processor_count=1, total_memory=1
    )
    try:
        sys.modules.pop("vllm.platforms.rocm", None)
        return importlib.import_module("vllm.platforms.rocm")
    finally:
        torch.cuda.get_device_properties = original  # type: ignore[assignment]


class Platforms:
    def __init__(self) -> None:
        self.rocm: dict[str, Any] = {}
        self.missing: dict[str, str] = {}

    def get(self, name: str, arch: str | None) -> Any:
        module_name, cls_name = PLATFORMS[name]
        if name == "RocmPlatform":
            if arch not in self.rocm:
                self.rocm[arch] = rocm_module(str(arch))
            return getattr(self.rocm[arch], cls_name)
        return getattr(importlib.import_module(module_name), cls_name)

    def flags(self, arch: str) -> dict[str, bool]:
        module = self.rocm.get(arch) or rocm_module(arch)
        self.rocm[arch] = module
        return {
            f: bool(getattr(module, f)()) for f in ("on_rdna4", "on_gfx90a") if hasattr(module, f)
        }


def set_env(env: dict[str, str]) -> None:
    for name in ENV_NAMES:
        os.environ.pop(name, None)
    os.environ.update(env)
    envs = importlib.import_module("vllm.envs")
    getter = getattr(envs, "__getattr__", None)
    if hasattr(getter, "cache_clear"):
        getter.cache_clear()


def enum_value(text: Any, enum: Any) -> Any:
    if isinstance(text, str) and "." in text:
        return getattr(enum, text.split(".", 1)[1])
    return text


def stand_in(case: dict[str, Any], all2all: str | None = None) -> Any:
    compilation = importlib.import_module("vllm.config.compilation")
    cc = case["compilation_config"]
    archs = case.get("model_architectures")
    ns = types.SimpleNamespace
    return ns(
        model_config=None if archs is None else ns(architectures=list(archs)),
        parallel_config=ns(all2all_backend=all2all or case.get("all2all_backend_in")),
        compilation_config=ns(
            backend=cc["backend"],
            mode=enum_value(cc["mode"], compilation.CompilationMode),
            cudagraph_mode=enum_value(cc["cudagraph_mode"], compilation.CUDAGraphMode),
        ),
    )


def ir_lists(ir: Any) -> dict[str, Any]:
    return {f.name: copy.deepcopy(getattr(ir, f.name)) for f in dataclasses.fields(ir)}


def default_record(platforms: Platforms, case: dict[str, Any]) -> dict[str, Any]:
    row = dict(case)
    cls = platforms.get(case["platform"], case.get("gcn_arch"))
    if case.get("gcn_arch"):
        row.update(platforms.flags(case["gcn_arch"]))
    set_env(case["env"])
    row["result"] = ir_lists(cls.get_default_ir_op_priority(stand_in(case)))
    row["executed"] = True
    return row


def defaults_record(
    kernel: Any, cap: Any, platforms: Platforms, case: dict[str, Any]
) -> dict[str, Any]:
    row = dict(case)
    cls = platforms.get(case["platform"], case.get("gcn_arch"))
    if case.get("gcn_arch"):
        row.update(platforms.flags(case["gcn_arch"]))
    set_env(case["env"])
    simulate.PROXY.set_target(cls())
    row["executed"] = True
    kwargs = dict(case["kernel_kwargs"])
    if case["user_ir_op_priority"] is not None:
        kwargs["ir_op_priority"] = copy.deepcopy(case["user_ir_op_priority"])
    try:
        cfg = kernel.KernelConfig(**kwargs)
    except Exception as exc:
        row["construct_error"] = {"type": type(exc).__name__, "message": str(exc)}
        return row
    if "None assigned" in (case.get("note") or ""):
        cfg.ir_op_priority.rms_norm = None
    row["ir_before"] = ir_lists(cfg.ir_op_priority)
    with contextlib.suppress(Exception):  # a None list or unknown provider: no hash
        row["hash_before"] = cap.digest(cfg)
    vc = stand_in(case)
    row["platform_default"] = ir_lists(cls.get_default_ir_op_priority(vc))
    try:
        cfg.set_platform_defaults(vc)
    except Exception as exc:
        row["error"] = {"type": type(exc).__name__, "message": str(exc)}
        row["ir_after_error"] = ir_lists(cfg.ir_op_priority)
        row["all2all_after_error"] = vc.parallel_config.all2all_backend
        return row
    row["ir_after_1"] = ir_lists(cfg.ir_op_priority)
    row["all2all_after_1"] = vc.parallel_config.all2all_backend
    cfg.set_platform_defaults(vc)
    row["ir_after_2"] = ir_lists(cfg.ir_op_priority)
    row["all2all_after_2"] = vc.parallel_config.all2all_backend
    row["idempotent"] = (row["ir_after_1"], row["all2all_after_1"]) == (
        row["ir_after_2"],
        row["all2all_after_2"],
    )
    row["hash_after"] = cap.digest(cfg)
    return row


def bind_record(kernel: Any, case: dict[str, Any]) -> dict[str, Any]:
    row = dict(case)
    pc = types.SimpleNamespace(all2all_backend=case["all2all_backend"])
    try:
        kernel.bind_passthrough_all2all_backend(case["moe_backend"], pc)
    except Exception as exc:
        row.update(ok=False, error={"type": type(exc).__name__, "message": str(exc)})
        row["all2all_after"] = pc.all2all_backend
        return row
    row.update(ok=True, all2all_after=pc.all2all_backend)
    try:
        kernel.bind_passthrough_all2all_backend(case["moe_backend"], pc)
        row.update(second_call_ok=True, all2all_after_second=pc.all2all_backend)
    except Exception as exc:
        row.update(
            second_call_ok=False, second_error={"type": type(exc).__name__, "message": str(exc)}
        )
    return row


def validate_record(kernel: Any, case: dict[str, Any]) -> dict[str, Any]:
    row = dict(case)
    try:
        kernel.validate_flashinfer_moe_ep_model(case["moe_backend"], case["architectures"])
    except Exception as exc:
        row.update(ok=False, error={"type": type(exc).__name__, "message": str(exc)})
        return row
    row["ok"] = True
    return row


def defaults_inputs(
    kernel: Any, cases: list[Any], adapt_variants: list[str]
) -> tuple[list[Any], list[Any]]:
    """The ``set_platform_defaults`` inputs this release can take (user IR lists of an
    adapted variant lose the ops it lacks, ``user_ir_adapted``), each once; the others
    with why."""
    ir_fields = {f.name for f in dataclasses.fields(kernel.IrOpPriorityConfig)}
    kernel_fields = {f.name for f in dataclasses.fields(kernel.KernelConfig)}
    rows, skipped, seen = [], [], set()
    for given in cases:
        case = dict(given)
        user = case["user_ir_op_priority"] or {}
        lacking = sorted(set(user) - ir_fields)
        why = None
        if lacking and case.get("user_ir_variant") in adapt_variants:
            case["user_ir_op_priority"] = {k: v for k, v in user.items() if k in ir_fields}
            case["user_ir_adapted"] = {"dropped_ops": lacking}
        elif lacking:
            why = "names an IR op this release's IrOpPriorityConfig lacks"
        if set(case["kernel_kwargs"]) - kernel_fields:
            why = "sets a KernelConfig field this release lacks"
        key = json.dumps(case, sort_keys=True)
        if why:
            skipped.append({"variant": case.get("user_ir_variant"), "value": user, "why": why})
        elif key not in seen:
            seen.add(key)
            rows.append(case)
    return rows, skipped


def run_platform(kernel: Any, cap: Any, request: dict[str, Any]) -> dict[str, Any]:
    platforms = Platforms()
    plat = request["platform"]
    out: dict[str, Any] = {"skipped": {}}
    out["default_ir_op_priority"] = [
        default_record(platforms, c) for c in plat["default_ir_op_priority"]
    ]
    inputs, skipped = defaults_inputs(
        kernel, plat["set_platform_defaults"], request["adapt_variants"]
    )
    rows = [defaults_record(kernel, cap, platforms, case) for case in inputs]
    out["set_platform_defaults"] = rows
    out["skipped"]["set_platform_defaults"] = skipped
    for section, fn in (
        ("bind_passthrough_all2all_backend", bind_record),
        ("validate_flashinfer_moe_ep_model", validate_record),
    ):
        if callable(getattr(kernel, section, None)):
            out[section] = [fn(kernel, c) for c in plat[section]]
        else:
            out[section] = []
            out["skipped"][section] = f"vllm.config.kernel.{section} does not exist in this release"
    out["rocm_arch_flags"] = {a: platforms.flags(a) for a in sorted(platforms.rocm)}
    out["platform_classes"] = {n: f"{PLATFORMS[n][0]}.{PLATFORMS[n][1]}" for n in PLATFORMS}
    out["get_default_ir_op_priority_defined_in"] = {
        n: defined_in(platforms.get(n, "gfx942"), "get_default_ir_op_priority") for n in PLATFORMS
    }
    set_env({})
    return out


def defined_in(cls: Any, attr: str) -> str:
    for klass in cls.__mro__:
        if attr in vars(klass):
            return f"{klass.__module__}.{klass.__qualname__}"
    return "?"
