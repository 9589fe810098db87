"""From a command line to a :class:`Resolution`: choose the release and the target,
read the flags, resolve. Also the ``--batch`` loop, which returns data lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelcfg import argv as argv_mod
from kernelcfg import releases
from kernelcfg.errors import KernelcfgError
from kernelcfg.inputs import Inputs
from kernelcfg.platforms import Target, resolve_target
from kernelcfg.problems import Problem
from kernelcfg.resolution import Resolution, resolve

__all__ = ["Failure", "Request", "batch", "engine_env", "prepare", "resolve_args"]

ENV_PREFIXES = ("VLLM_",)
ENV_NAMES = ("TORCH_COMPILE_DISABLE",)


def engine_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (default: this process's) that vLLM would read."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


@dataclass
class Request:
    """Context that applies to every resolution of a run (the CLI's own options)."""

    vllm_version: str | None = None
    """The release; default ``KERNELCFG_VLLM_VERSION``, else the newest."""
    device: str | None = None
    """A device preset."""
    platform: str | None = None
    """A platform kind."""
    capability: str | None = None
    """A CUDA compute capability."""
    gfx_arch: str | None = None
    """A ROCm gfx architecture."""
    architectures: list[str] = field(default_factory=list)
    """Model architectures (``--architecture``)."""
    env: dict[str, str] = field(default_factory=dict)
    """``--env`` pairs; they win over the process's environment."""
    environ: Mapping[str, str] | None = None
    """The process environment to read (default: ``os.environ``)."""
    _engine_env: dict[str, str] | None = field(default=None, repr=False)

    @property
    def process_environ(self) -> Mapping[str, str]:
        """``environ``, or this process's environment when none was given."""
        return os.environ if self.environ is None else self.environ

    def engine_env(self) -> dict[str, str]:
        """The engine-relevant variables of the environment, read once."""
        if self._engine_env is None:
            self._engine_env = engine_env(self.process_environ)
        return dict(self._engine_env)


@dataclass
class Failure:
    """A command line that could not be resolved at all (unusable input)."""

    problem: Problem
    """What was wrong."""
    release: releases.Release | None = None
    """The release, when it was known."""
    target: Target | None = None
    """The target, when it was known."""


def prepare(
    args: Sequence[str], request: Request | None = None
) -> tuple[releases.Release, Target, Inputs]:
    """Choose the release and the target and read the flags; raises on unusable input."""
    req = request or Request()
    environ = req.process_environ
    release = releases.load(_version(args, req, environ))
    env = req.engine_env()
    env.update(req.env)
    inputs, line = argv_mod.parse(args, release, env=env, context=argv_mod.ContextOptions())
    inputs.env.update(line.env)
    if line.quant_scheme:
        inputs.quant_scheme = line.quant_scheme
        inputs.sources["quant_scheme"] = "flag"
    archs = line.architectures or req.architectures
    if archs:
        inputs.architectures = list(archs)
        inputs.sources["architectures"] = "flag"
    named = any((line.device, line.platform, line.capability, line.gfx_arch))
    return release, _target(line if named else req, environ), inputs


def _version(args: Sequence[str], req: Request, environ: Mapping[str, str]) -> str | None:
    """The release a line asks for: its own flag, the run's, then the environment."""
    return argv_mod.split_version(args) or req.vllm_version or environ.get("KERNELCFG_VLLM_VERSION")


def _target(
    named: Request | argv_mod.ContextOptions,
    environ: Mapping[str, str],
    *,
    allow_detection: bool = True,
) -> Target:
    """The target named by a request's or a line's target options."""
    return resolve_target(
        device=named.device,
        kind=named.platform,
        capability=named.capability,
        gfx_arch=named.gfx_arch,
        environ=environ,
        allow_detection=allow_detection,
    )


def resolve_args(args: Sequence[str], request: Request | None = None) -> Resolution | Failure:
    """Resolve one command line of vLLM flags under ``request``'s context."""
    try:
        release, target, inputs = prepare(args, request)
    except KernelcfgError as exc:
        return Failure(Problem.from_error(exc), *_known_context(args, request or Request()))
    return resolve(inputs, target, release)


def _known_context(
    args: Sequence[str], req: Request
) -> tuple[releases.Release | None, Target | None]:
    """The release and target of a line that could not be read, as far as they are known."""
    environ = req.process_environ
    try:
        release = releases.load(_version(args, req, environ))
    except KernelcfgError:
        return None, None
    try:
        target = _target(req, environ, allow_detection=False)
    except KernelcfgError:
        return release, None
    return release, (None if target.source == "fallback" else target)


def _line_args(raw: str) -> tuple[Any, list[str]]:
    """The id and argv of one batch line (an array, or an object with ``argv``)."""
    value = json.loads(raw)
    if isinstance(value, list) and all(isinstance(a, str) for a in value):
        return None, value
    if isinstance(value, dict) and isinstance(value.get("argv"), list):
        argv = value["argv"]
        if all(isinstance(a, str) for a in argv):
            return value.get("id"), argv
    raise ValueError('a line must be a JSON array of strings or {"id": ..., "argv": [...]}')


def batch(
    lines: Iterable[str], common: Sequence[str] = (), request: Request | None = None
) -> Iterator[tuple[Any, int, Resolution | Failure]]:
    """Resolve each JSON line; yield ``(id, line number, result)`` in order.

    ``common`` flags go in front of every line's own, so a line's flags win.
    """
    request = request or Request()
    prefix = list(common)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            line_id, args = _line_args(raw)
        except (ValueError, json.JSONDecodeError) as exc:
            yield (
                None,
                number,
                Failure(Problem("error", "bad-batch-line", None, f"line {number}: {exc}", 2)),
            )
            continue
        yield line_id, number, resolve_args(prefix + args, request)
