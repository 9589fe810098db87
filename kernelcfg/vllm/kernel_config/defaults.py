"""The platform's IR-op priority defaults, as each release computes them.

vLLM's ``Platform.get_default_ir_op_priority`` decides, per op, which providers are
tried first on the target, from the compilation settings, a few environment flags and
the GPU's architecture. Each release states its table as data (``rules.ir_defaults``);
this module evaluates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from kernelcfg.targets.presets import Target
from kernelcfg.vllm.context import ResolutionContext
from kernelcfg.vllm.kernel_config.conditions import evaluate
from kernelcfg.vllm.releases import Release

__all__ = ["default_ir_op_priority", "env_flag"]


def env_flag(release: Release, name: str, env: Mapping[str, str]) -> bool:
    """A boolean environment variable read as the release's ``vllm/envs.py`` reads it."""
    spec = release.rules["env_flags"][name]
    raw = env.get(name, spec["default"])
    return raw.lower() in spec["true"]


def _atoms(
    release: Release, target: Target, inductor: bool, cudagraph: bool, env: Mapping[str, str]
) -> dict[str, bool]:
    atoms = {"inductor": inductor, "cudagraph": cudagraph}
    for name in release.rules.get("env_flags", {}):
        atoms[f"env.{name}"] = env_flag(release, name, env)
    arch = target.gfx_arch or ""
    for flag, needles in release.rules.get("rocm_arch_flags", {}).items():
        atoms[f"arch.{flag}"] = any(n in arch for n in needles)
    cap = target.capability_int
    atoms["sm100+"] = cap is not None and cap >= 100
    return atoms


def default_ir_op_priority(
    release: Release, ctx: ResolutionContext
) -> Mapping[str, tuple[str, ...]]:
    """The platform's IR-op priority lists, as the release computes them (cached: the
    same tuples for every line with the same target, compilation and flags)."""
    comp = ctx.compilation
    flags = release.rules.get("env_flags", ())
    env = tuple((name, ctx.env[name]) for name in flags if name in ctx.env) if ctx.env else ()
    return _defaults(release, ctx.target, comp.using_inductor, comp.cudagraph_mode != "NONE", env)


@cache
def _defaults(
    release: Release,
    target: Target,
    inductor: bool,
    cudagraph: bool,
    env: tuple[tuple[str, str], ...],
) -> dict[str, tuple[str, ...]]:
    """Cached per (release, target, compilation, env flags): batch lines repeat them."""
    table = release.rules["ir_defaults"]
    per_op = table.get(target.kind, table["base"])
    atoms = _atoms(release, target, inductor, cudagraph, dict(env))
    out: dict[str, tuple[str, ...]] = {}
    for op in release.ir_ops:
        entries = per_op.get(op, per_op.get("*", table["base"]["*"]))
        out[op] = tuple(
            entry[0] for entry in entries if len(entry) == 1 or evaluate(entry[1], atoms)
        )
    return out
