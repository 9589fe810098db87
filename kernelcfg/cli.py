"""The ``kernelcfg`` command: parse, call the library, render, exit. Nothing more.

Only this module prints and exits. stdout carries only the requested format;
problems go to stderr, one line each.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from kernelcfg._version import __version__

app = typer.Typer(
    name="kernelcfg",
    help=(
        "Tell what vLLM will do with its kernel flags, before a GPU is booked.\n\n"
        "kernelcfg reads vLLM's kernel flags (--moe-backend, --linear-backend, "
        "--kernel-config, -O, -cc, ...) exactly as a chosen vLLM release reads them, "
        "resolves them for a chosen GPU, and prints the resolved configuration with its "
        "compile-cache hash -- the digest vLLM itself computes."
    ),
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["--help", "-h"]},
)


class Format(StrEnum):
    """Output formats of ``resolve``."""

    table = "table"
    json = "json"
    yaml = "yaml"
    env = "env"
    args = "args"


def _version(value: bool) -> None:
    if value:
        from kernelcfg import releases

        typer.echo(
            f"kernelcfg {__version__} (vLLM releases: {', '.join(releases.known_versions())})"
        )
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """kernelcfg: vLLM kernel flags, resolved before a GPU is booked."""


_KERNEL_FLAG_CHOICES = {
    "--moe-backend": "moe_backend",
    "--linear-backend": "linear_backend",
    "--sparse-indexer-topk-backend": "sparse_indexer_topk_backend",
    "--all2all-backend": "all2all_backend",
}


def _complete_flags(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """Complete backend names after a backend flag, and the flag names themselves."""
    del ctx
    from kernelcfg import releases

    release = releases.load(None)
    previous = args[-1] if args else ""
    if previous in _KERNEL_FLAG_CHOICES:
        values = release.choices(_KERNEL_FLAG_CHOICES[previous])
        return [v for v in values if v.startswith(incomplete) and v != "passthrough"]
    flags = [
        *_KERNEL_FLAG_CHOICES,
        "--kernel-config",
        "--ir-op-priority",
        "--monokernel",
        "--enable-flashinfer-autotune",
        "--enforce-eager",
        "--compilation-config",
        "--optimization-level",
        "--enable-lora",
        "--enable-expert-parallel",
        "--tensor-parallel-size",
        "--data-parallel-size",
        "--hf-config-path",
        "--config",
    ]
    return [f for f in flags if f.startswith(incomplete)]


def _print_problems(problems: list[dict[str, Any]], quiet: bool) -> None:
    if quiet:
        return
    for problem in problems:
        if problem["severity"] == "info":
            continue
        sys.stderr.write(f"{problem['severity']}: {problem['message']}\n")


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    epilog=(
        "Examples:\n\n"
        "  kernelcfg resolve --moe-backend flashinfer_trtllm --device b200 --format json\n\n"
        "  kernelcfg resolve --device mi300x --env VLLM_ROCM_USE_AITER=1 -O3\n\n"
        "  kernelcfg resolve --device h100 -- vllm serve ./my-model "
        "--kernel-config.moe_backend=triton -tp 8\n\n"
        "  kernelcfg resolve --batch matrix.jsonl --device b200 > results.jsonl\n\n"
        "Exit codes: 0 valid; 1 vLLM would refuse it at engine start-up (or the target "
        "cannot run it); 2 vLLM would refuse it while reading its arguments."
    ),
)
def resolve(
    vllm_flags: Annotated[
        list[str] | None,
        typer.Argument(
            help="vLLM flags, spelled any way vLLM accepts them; or `-- vllm serve MODEL ...`.",
            show_default=False,
            autocompletion=_complete_flags,
        ),
    ] = None,
    vllm_version: Annotated[
        str | None,
        typer.Option(
            "--vllm-version",
            envvar="KERNELCFG_VLLM_VERSION",
            help="vLLM release to resolve for (0.33, 0.33.0 or v0.33.0); default the newest.",
        ),
    ] = None,
    device: Annotated[
        str | None, typer.Option("--device", help="Device preset: h100, b200, mi300x, cpu, ...")
    ] = None,
    platform: Annotated[
        str | None, typer.Option("--platform", help="Platform kind: cuda, rocm, xpu, cpu, tpu.")
    ] = None,
    capability: Annotated[
        str | None, typer.Option("--capability", help="CUDA compute capability, e.g. 9.0.")
    ] = None,
    gfx_arch: Annotated[
        str | None, typer.Option("--gfx-arch", help="ROCm architecture, e.g. gfx942.")
    ] = None,
    architecture: Annotated[
        list[str] | None,
        typer.Option(
            "--architecture", help="Model architecture (repeatable), e.g. DeepseekV4ForCausalLM."
        ),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env", help="KEY=VALUE the engine would see (repeatable); wins over this shell's."
        ),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.table,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch", help="Resolve JSON lines from FILE (or - for stdin), one result per line."
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Treat warnings as errors.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", help="Print nothing; only the exit code.")
    ] = False,
    explain_sources: Annotated[
        bool,
        typer.Option("--explain-sources", help="Add where each value came from to the output."),
    ] = False,
) -> None:
    """Resolve vLLM kernel flags for a release and a GPU; print the config and its hash.

    Flags are read exactly as `vllm serve` reads them: `--moe-backend X` or `=X`,
    `_` or `-` in names, unambiguous prefixes, dotted keys
    (`--kernel-config.moe_backend=x`, `--ir-op-priority.rms_norm=a,b`), JSON values,
    `--config FILE.yaml`, `-O0`..`-O3`, `-cc.KEY=VALUE`.
    """
    from kernelcfg import pipeline, render
    from kernelcfg.errors import KernelcfgError

    pairs: dict[str, str] = {}
    for item in env or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            sys.stderr.write(f"error: --env: expected KEY=VALUE, got {item!r}\n")
            raise typer.Exit(2)
        pairs[key] = value
    request = pipeline.Request(
        vllm_version=vllm_version,
        device=device,
        platform=platform,
        capability=capability,
        gfx_arch=gfx_arch,
        architectures=list(architecture or []),
        env=pairs,
    )
    if batch is not None:
        raise typer.Exit(_run_batch(batch, request, strict=strict, quiet=quiet))
    try:
        result = pipeline.resolve_args(list(vllm_flags or []), request)
    except KernelcfgError as exc:  # pragma: no cover - resolve_args returns failures
        sys.stderr.write(f"error: {exc.message}\n")
        raise typer.Exit(exc.exit_code) from None
    data = render.as_data(result, strict=strict, sources=explain_sources)
    code = render.exit_code_of(result, strict=strict)
    _print_problems(data["problems"], quiet)
    if quiet:
        raise typer.Exit(code)
    if fmt is Format.json:
        sys.stdout.write(render.as_json(data) + "\n")
    elif fmt is Format.yaml:
        sys.stdout.write(render.as_yaml(data))
    elif fmt is Format.env:
        sys.stdout.write(render.as_env(data))
    elif fmt is Format.args:
        import shlex

        if isinstance(result, pipeline.Failure):
            raise typer.Exit(code)
        sys.stdout.write(shlex.join(render.as_args(result)) + "\n")
    else:
        from rich.console import Console

        Console().print(render.table(result, strict=strict))
    raise typer.Exit(code)


def _run_batch(path: str, request: Any, *, strict: bool, quiet: bool) -> int:
    import json

    from kernelcfg import pipeline, render

    try:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        sys.stderr.write(f"error: --batch: cannot read {path!r}: {exc.strerror}\n")
        return 2
    worst = 0
    out: list[str] = []
    with stream:
        for line_id, number, result in pipeline.batch(stream, request):
            data = render.as_data(result, strict=strict)
            code = render.exit_code_of(result, strict=strict)
            worst = max(worst, code)
            data["id"] = line_id if line_id is not None else number
            data["exit_code"] = code
            out.append(json.dumps(data, separators=(",", ":")))
            if len(out) >= 512:
                if not quiet:
                    sys.stdout.write("\n".join(out) + "\n")
                out.clear()
    if out and not quiet:
        sys.stdout.write("\n".join(out) + "\n")
    return worst


def main() -> None:
    """Console-script entry point."""
    app()
