"""``kernelcfg cache explain``: why two launches (or caches) compile into different
compile-cache directories."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    VLLM_FLAGS_PASS_THROUGH,
    ListFormat,
    ListFormatOption,
    print_rich,
    refuse,
    write_json,
)

cache_app = typer.Typer(
    help="vLLM's compile cache: why a launch does not reuse one.", no_args_is_help=True
)
app.add_typer(cache_app, name="cache")


@cache_app.command(
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg cache explain '-tp 4' '-tp 8' --device h100 --hf-config-path ./model\n\n"
        "  kernelcfg cache explain ~/.cache/vllm/torch_compile_cache/1a2b3c4d5e "
        "/mnt/shared/torch_compile_cache/9f8e7d6c5b\n\n"
        "  kernelcfg cache explain ./cache 'vllm serve ./model -tp 8' --device h100 "
        "--env-file deploy.env\n\n"
        "  kernelcfg cache explain yesterday.json today.json\n\n"
        "Exit codes: 0 same key (every part both sides know is equal), 1 a part differs, "
        "2 unusable input."
    ),
)
def explain(
    sides: Annotated[
        list[str] | None,
        typer.Argument(
            help="Two sides, each a cache folder, a cache_key_factors.json, a saved "
            "`resolve --format json` or a --config YAML file (as diff takes them), or a "
            "launch (flags or a quoted `vllm serve` line); then context flags (--device, "
            "--env, --env-file, --vllm-version, --hf-config-path ...) for the launches.",
            show_default=False,
        ),
    ] = None,
    fmt: ListFormatOption = ListFormat.table,
) -> None:
    """Name what separates two compile-cache keys.

    vLLM's key has four parts: the environment (every variable vLLM hashes), the
    configuration (every sub-config: -tp, -O, the model, the kernel config ...), the
    traced code (file paths and contents of the install) and the compiler (torch,
    Triton, the GPU). A launch gives the first two; a cache written by vLLM gives all
    four; a saved `resolve --format json` gives what its compile_cache holds. Each
    difference is named: the variable, the config field's dotted path in vLLM's own
    names (parallel_config.tensor_parallel_size, as diff and resolve's JSON name it),
    the file (a moved install as one finding), or the compiler fact.
    """
    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.commands import cache as cache_mod
    from kernelcfg.commands.pipeline import Request
    from kernelcfg.flags.argv import CONTEXT_OPTIONS, take_options

    common: list[str] = []
    names = {**CONTEXT_OPTIONS, "--hf-config-path": "hf_config_path"}
    try:
        given = take_options(list(sides or []), names, lambda n, v: common.extend([n, v]))
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    if len(given) != 2:
        raise refuse(
            f"give two sides (cache folders, factor files or launches); got {len(given)}", 2
        )
    request = Request()
    try:
        a = cache_mod.load_side(given[0], common, request)
        b = cache_mod.load_side(given[1], common, request)
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    data = cache_mod.explain(a, b)
    code = 0 if data["same"] else 1
    if fmt is ListFormat.json:
        write_json(data)
        raise typer.Exit(code)
    print_rich(_table(data))
    raise typer.Exit(code)


def _table(data: dict[str, Any]) -> Any:
    """The sides, the verdict, and one line per finding."""
    from rich.console import Group

    from kernelcfg.output.tables import plain

    parts: list[Any] = []
    for side in ("a", "b"):
        found = data[side]
        key = found["key"] or "unknown (" + ", ".join(found["unknown"]) + ")"
        parts.append(plain(f"{side.upper()} key {key}  ({found['label']})"))
    compared = ", ".join(data["compared"]) or "nothing"
    if data["same"]:
        verdict = f"same compile-cache key as far as both sides say ({compared} compared)"
        if data["not_compared"]:
            verdict += "; not compared: " + ", ".join(data["not_compared"])
        parts.append(plain(verdict))
    else:
        parts.append(plain(f"different compile-cache key: {len(data['findings'])} difference(s)"))
        parts += [plain(f"  {f['message']}") for f in data["findings"]]
    return Group(*parts)
