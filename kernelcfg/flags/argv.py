"""A command line into :class:`Inputs`: kernelcfg's own options (:data:`CONTEXT_OPTIONS`:
the target, the release, the environment) taken out of it, the rest read as the
release's ``vllm serve`` reads it (:mod:`kernelcfg.flags.serve_line`), the options that
bear on kernels given their meaning (:mod:`kernelcfg.flags.kernel_flags`), the model's
``config.json`` read (:mod:`kernelcfg.flags.model_config`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from kernelcfg.base import bounded
from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.flags import model_config
from kernelcfg.flags.serve_line import read as serve_line
from kernelcfg.vllm.inputs import INSTALLS, Inputs
from kernelcfg.vllm.releases import Release

__all__ = [
    "CONTEXT_OPTIONS",
    "FLAG_OPTIONS",
    "ContextOptions",
    "TargetOptions",
    "context_after_serve",
    "parse",
    "split_serve",
    "split_version",
    "take_options",
]


@dataclass
class TargetOptions:
    """kernelcfg's own options that say what to resolve for: the target, the release,
    the model's architectures and the environment (the CLI's, or a ``--batch`` line's)."""

    device: str | None = None
    """``--device``: a preset name."""
    platform: str | None = None
    """``--platform``: cuda, rocm, xpu, cpu or tpu."""
    capability: str | None = None
    """``--capability``: CUDA compute capability."""
    gfx_arch: str | None = None
    """``--gfx-arch``: ROCm architecture."""
    cpu_features: str | None = None
    """``--cpu-features``: a CPU target's architecture and host features."""
    vllm_version: str | None = None
    """``--vllm-version``; default ``KERNELCFG_VLLM_VERSION``, the installed vLLM, the newest."""
    architectures: list[str] = field(default_factory=list)
    """``--architecture`` (repeatable)."""
    env: dict[str, str] = field(default_factory=dict)
    """``--env KEY=VALUE`` (repeatable) and ``--env-file FILE``'s lines; they win over
    the process's environment."""
    compile_cache: str | None = None
    """``--compile-cache PATH``: a vLLM compile cache (or its ``cache_key_factors.json``)
    of the install the launch will run on."""


@dataclass
class ContextOptions(TargetOptions):
    """The options a line of flags may carry among vLLM's (``--batch`` lines)."""

    quant_scheme: str | None = None
    """``--quant-scheme``: the model's quantisation scheme."""
    install: str | None = None
    """``--install``: what is installed beside vLLM (pip, image, minimal, all)."""
    download: bool = False
    """``--download`` (or ``KERNELCFG_DOWNLOAD=1``): fetch a hub id's config.json from
    the Hub when it is not in the local cache."""
    read_root: str | None = None
    """Where the model files a line names may be read (a scanned file's repository: a
    path there names a file of vLLM's container); ``None``: anywhere (a line the user
    typed)."""


CONTEXT_OPTIONS = {
    "--device": "device",
    "--platform": "platform",
    "--capability": "capability",
    "--gfx-arch": "gfx_arch",
    "--cpu-features": "cpu_features",
    "--vllm-version": "vllm_version",
    "--architecture": "architectures",
    "--env": "env",
    "--env-file": "env_file",
    "--compile-cache": "compile_cache",
    "--quant-scheme": "quant_scheme",
    "--install": "install",
    "--download": "download",
}
"""kernelcfg's context options, by option string, to the ContextOptions field."""


FLAG_OPTIONS = frozenset({"--download"})
"""The context options that take no value."""


def parse(
    argv: Sequence[str],
    release: Release,
    *,
    env: Mapping[str, str] | None = None,
    context: ContextOptions | None = None,
    serve_is_vllms: bool = False,
) -> tuple[Inputs, ContextOptions]:
    """Read ``argv`` (vLLM flags, optionally ``vllm serve MODEL …``) into inputs.

    kernelcfg's own options (:data:`CONTEXT_OPTIONS`) are taken out first: anywhere
    before the ``vllm serve`` part, and inside it where the release's ``vllm serve``
    has no option of that name — unless ``serve_is_vllms``: then every word of the
    ``vllm serve`` part is vLLM's (a line found in a file or written in a batch: an
    option vLLM lacks is refused as vLLM refuses it, never a change of target).
    The rest is read as the release's ``vllm serve`` reads it (:mod:`.serve_line`), its
    kernel flags given their meaning (:mod:`.kernel_flags`) and the model's
    ``config.json`` read (:mod:`.model_config`).
    """
    inputs = Inputs(env=dict(env) if env is not None else {})
    ctx = context or ContextOptions()
    head, serve = split_serve(argv)
    head = take_options(head, CONTEXT_OPTIONS, lambda name, value: _context(ctx, name, value))
    if serve is not None:
        own = {} if serve_is_vllms else context_after_serve(release)
        serve = take_options(
            serve, own, lambda name, value: _context(ctx, name, value), after_serve=True
        )
    given = serve_line.read(release, head, serve, inputs.notes)
    if given:  # a line of kernelcfg's options alone loads no parser and gives no meaning
        from kernelcfg.flags import kernel_flags

        kernel_flags.apply(release, inputs, given)
    model_config.read(
        inputs,
        given.get("hf_config_path"),
        revision=given.get("revision"),
        download=ctx.download,
        root=ctx.read_root,
    )
    return inputs, ctx


def split_version(argv: Sequence[str]) -> str | None:
    """The ``--vllm-version`` a line asks for (the last one), read before anything else."""
    found = None
    if "--vllm-version" not in "\0".join(argv):  # most lines: one C scan, no loop
        return found
    for i, arg in enumerate(argv):
        if arg.startswith("--vllm-version="):
            found = arg.split("=", 1)[1]
        elif arg == "--vllm-version" and i + 1 < len(argv):
            found = argv[i + 1]
    return found


def split_serve(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """kernelcfg's part and what follows ``[--] [vllm] serve`` (``None``: no serve).

    A bare ``--`` before ``vllm serve`` (or alone at the start) only separates.
    """
    args = list(argv)
    for idx, arg in enumerate(args):
        if arg == "serve" and (idx == 0 or args[idx - 1] in ("vllm", "--")):
            head = idx - 1 if idx and args[idx - 1] == "vllm" else idx
            if head and args[head - 1] == "--":
                head -= 1
            return args[:head], args[idx + 1 :]
    if args and args[0] == "--":
        args = args[1:]
    return args, None


def take_options(
    tokens: list[str],
    names: Mapping[str, str],
    take: Callable[[str, str], None],
    *,
    after_serve: bool = False,
) -> list[str]:
    """``tokens`` without the options ``names`` lists (``--x V`` or ``--x=V``; one of
    :data:`FLAG_OPTIONS` alone, handed ``""``), each handed to ``take``; a bare ``--``
    ends the search. ``after_serve``: the words follow ``vllm serve``, where a flag
    option written with a value (``--download /models``, ``--download=/models``) is
    left to vLLM, whose parser reads it as the prefix of an option that takes one
    (``--download-dir``): kernelcfg takes it only where vLLM would refuse it."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        arg = tokens[i]
        name, eq, inline = arg.partition("=")
        if arg == "--":
            out.extend(tokens[i:])
            break
        if name not in names:
            out.append(arg)
            i += 1
            continue
        if name in FLAG_OPTIONS:
            if after_serve and _valued(tokens, i):
                out.append(arg)
            elif eq:
                raise ArgumentError(f"{name}: takes no value", field=names[name])
            else:
                take(name, "")
            i += 1
            continue
        if eq:
            take(name, inline)
            i += 1
            continue
        if i + 1 >= len(tokens):
            raise ArgumentError(f"{name}: expected one argument", field=names[name])
        take(name, tokens[i + 1])
        i += 2
    return out


def _valued(tokens: list[str], i: int) -> bool:
    """Whether the option at ``tokens[i]`` is written with a value (``=V``, or a next
    word that is no option)."""
    return "=" in tokens[i] or (i + 1 < len(tokens) and not tokens[i + 1].startswith("-"))


@cache
def context_after_serve(release: Release) -> dict[str, str]:
    """kernelcfg's context options that stay kernelcfg's after ``vllm serve``: those the
    release's own ``vllm serve`` does not read as one of its options — no option of the
    same name, and (but for a flag option, :func:`take_options`) not the start of exactly
    one of its option strings, which vLLM's parser takes as that option (``--device 1``
    is ``--device-ids 1`` in vLLM 0.25.0-0.30.0; from 0.31.0 on ``--device-memory-
    utilization`` makes it ambiguous, refused by vLLM, so kernelcfg's ``--device``)."""
    from kernelcfg.flags.serve_line.parser import options

    theirs = options(release).strings

    def vllms(name: str) -> bool:
        if name in theirs:
            return True
        starting = [s for s in theirs if s.startswith(name)]
        return name not in FLAG_OPTIONS and len(starting) == 1

    return {name: dest for name, dest in CONTEXT_OPTIONS.items() if not vllms(name)}


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A variable name a shell (and vLLM's environment) can hold."""


def _context(ctx: ContextOptions, name: str, value: str) -> None:
    """Apply one of kernelcfg's own options."""
    dest = CONTEXT_OPTIONS[name]
    if dest == "architectures":
        ctx.architectures.append(value)
    elif dest == "env":
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ArgumentError(
                f"--env: expected KEY=VALUE, got {bounded.shown(value)}", field="env"
            )
        if not _ENV_NAME.fullmatch(key):
            raise ArgumentError(
                f"--env: {bounded.shown(key)} is not a variable name (ASCII letters, digits "
                "and _, not starting with a digit)",
                field="env",
            )
        ctx.env[key] = val
    elif dest == "env_file":
        from kernelcfg.checks.lint_env import read_env_file

        ctx.env = {**read_env_file(value), **ctx.env}
    elif dest in ("quant_scheme", "install"):
        check_choice(dest, name, value)
        setattr(ctx, dest, value)
    elif dest == "download":
        ctx.download = True
    else:
        setattr(ctx, dest, value)


def check_choice(dest: str, name: str, value: str) -> None:
    """Refuse a value of ``--quant-scheme`` or ``--install`` (or the variable ``name``
    that stands for one) outside its list, naming the closest allowed value."""
    noun, choices = _CONTEXT_CHOICES[dest]
    allowed = choices()
    if value not in allowed:
        hint = closest(value, allowed)
        raise ArgumentError(
            f"{name}: unknown {noun} {bounded.shown(value)}; allowed: "
            f"{', '.join(allowed)}" + (f" (did you mean {hint!r}?)" if hint else ""),
            field=dest,
        )


def _schemes() -> tuple[str, ...]:
    from kernelcfg.vllm.kernels.quantization import SCHEMES

    return tuple(SCHEMES)


_CONTEXT_CHOICES: dict[str, tuple[str, Callable[[], Sequence[str]]]] = {
    "quant_scheme": ("scheme", _schemes),
    "install": ("install", lambda: INSTALLS),
}
"""The context options with a fixed list of values: what a value is called, and the list."""
