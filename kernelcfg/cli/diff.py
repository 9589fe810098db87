"""``kernelcfg diff``: two resolves compared, field by field."""

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


@app.command(
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg diff --a '--moe-backend triton' --b '--moe-backend cutlass' --device h100\n\n"
        "  kernelcfg diff yesterday.json today.json\n\n"
        "  kernelcfg diff --a '--vllm-version 0.32' --b '--vllm-version 0.33' --device b200\n\n"
        "Exit codes (as kubectl diff): 0 same hashes and compile-cache key parts, 1 a "
        "different kernel-config or attention hash or compile-cache key, 2 unusable input."
    ),
)
def diff(
    sides: Annotated[
        list[str] | None,
        typer.Argument(
            help="Two saved `resolve --format json` files (or YAML --config files), and/or "
            "context flags (--device, --vllm-version, --env ...) that apply to both sides.",
            show_default=False,
        ),
    ] = None,
    a: Annotated[
        str | None, typer.Option("--a", help="Side A: flags, a .yaml, or a .json.")
    ] = None,
    b: Annotated[
        str | None, typer.Option("--b", help="Side B: flags, a .yaml, or a .json.")
    ] = None,
    fmt: ListFormatOption = ListFormat.table,
) -> None:
    """Why two kernel configurations have different kernel-config hashes.

    Names each hash factor that differs (field, A value, B value), the IR-op lists and
    provider files behind a differing IR sub-hash, the attention-config fields that
    differ (the attention config has its own hash), and, apart, the fields that differ
    but are not hashed. Both hashes are factors of vLLM's compile-cache key; the launch's
    other parts of that key (the environment and the whole engine config: -tp, -O, the
    model ...) are compared too, and each difference named, as `cache explain` does.
    The traced code and the compiler belong to the install: compare two caches with
    `cache explain` for those.
    """

    from rich.console import Group

    from kernelcfg.base.bounded import file_problem
    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.commands import diff as diff_mod
    from kernelcfg.output.tables import plain

    rest = list(sides or [])
    files = [x for x in rest if x.endswith((".json", ".yaml", ".yml")) and file_problem(x) is None]
    common = [x for x in rest if x not in files]
    if a is None and b is None and len(files) == 2:
        a, b = files
    elif files:
        common += ["--config", files[0]] if len(files) == 1 else files
    if a is None or b is None:
        raise refuse("give both sides: --a and --b, or two files", 2)
    try:
        data = diff_mod.compare(diff_mod.load_side(a, common), diff_mod.load_side(b, common))
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    same_key = data["same_compile_cache_key"] is not False
    code = 0 if data["same_hash"] and data["same_attention_hash"] and same_key else 1
    if fmt is ListFormat.json:
        write_json(data)
        raise typer.Exit(code)
    parts: list[Any] = []
    for side in ("a", "b"):
        label = f"{data[side]['label']}, vLLM {data[side]['vllm_version']}"
        parts.append(plain(f"{side.upper()} {data[side]['hash']}  ({label})"))
    parts.append(plain(data["summary"]))
    if data["hashed_differences"]:
        parts.append(
            _differences("hashed field", "hash factors that differ", data, "hashed_differences")
        )
    parts += [
        plain(f"IR {row['op']}: A {row['a']}  B {row['b']}") for row in data["ir_op_priority_lists"]
    ]
    parts += [
        plain(f"IR {row['op']}/{row['provider']}: {row['file']} differs between the releases")
        for row in data["ir_provider_files"]
    ]
    if data["attention_differences"]:
        parts.append(
            _differences(
                "attention field", "attention config (its own hash)", data, "attention_differences"
            )
        )
    parts += [plain(f"compile-cache key: {line}") for line in _key_lines(data["compile_cache"])]
    if data["not_hashed_differences"]:
        parts.append(
            _differences(
                "field (not hashed)",
                "differ, but cannot explain a cache miss",
                data,
                "not_hashed_differences",
            )
        )
    print_rich(Group(*parts))
    raise typer.Exit(code)


def _key_lines(cache: dict[str, Any]) -> list[str]:
    """The compile-cache key's differences, one line each; across releases, one line
    (no cache carries across, and every env and config difference follows from it:
    ``--format json`` lists them)."""
    findings = cache["findings"]
    release = next((f for f in findings if f["part"] == "scheme"), None)
    if release is None:
        return [f["message"] for f in findings]
    more = len(findings) - 1
    return [
        release["message"]
        + (
            f" ({more:,} more differences of the env and config parts: --format json)"
            if more
            else ""
        )
    ]


def _differences(header: str, title: str, data: dict[str, Any], key: str) -> Any:
    """A ``diff`` table of ``data[key]``: field, A, B (values as JSON; user text kept on
    one line), and how many rows the diff left out."""
    import json

    from rich.table import Table

    from kernelcfg.output.tables import fold, plain

    table = fold(Table(header, "A", "B", title=title))
    for row in data[key]:
        cells = (row["field"], json.dumps(row["a"]), json.dumps(row["b"]))
        table.add_row(*(plain(x) for x in cells))
    left_out = data["omitted"].get(key, 0)
    if left_out:
        table.caption = f"{left_out:,} more not shown"
    return table
