"""``kernelcfg versions``: the vLLM releases kernelcfg knows, and the one it would use."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    ListFormat,
    ListFormatOption,
    named_release,
    print_rich,
    refuse,
    write_json,
)


@app.command()
def versions(
    old: Annotated[
        str | None, typer.Argument(help="A release, e.g. 0.32.", show_default=False)
    ] = None,
    new: Annotated[
        str | None, typer.Argument(help="A later release, e.g. 0.34.", show_default=False)
    ] = None,
    fmt: ListFormatOption = ListFormat.table,
) -> None:
    """List the vLLM releases kernelcfg knows; with two, what changed between them.

    Examples: `kernelcfg versions`, `kernelcfg versions 0.33 0.34 --format json`.
    """

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.commands import versions as versions_mod

    if (old is None) != (new is None):
        raise refuse("give two releases to compare, or none to list them", 2)
    try:
        data: Any = (
            versions_mod.compare(named_release(old).version, named_release(new).version)
            if old and new
            else versions_mod.summary()
        )
    except KernelcfgError as exc:
        raise refuse(exc.message, exc.exit_code) from None
    if fmt is ListFormat.json:
        write_json(data if isinstance(data, dict) else {"releases": data})
        return
    print_rich(_release_table(data) if isinstance(data, list) else _change_table(data))


def _release_table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    from kernelcfg.output.tables import fold, plain

    # one IR op a line, and short headings: the table fits 80 columns without
    # splitting an op's name
    table = fold(Table("release", "fields", "IR ops", "MoE", "linear", "top-k", "all2all"))
    for row in rows:
        c = row["choices"]
        table.add_row(
            row["version"],
            str(len(row["fields"])),
            "\n".join(row["ir_ops"]) or "-",
            str(c.get("MoEBackend", 0)),
            str(c.get("LinearBackend", 0)),
            str(c.get("SparseIndexerTopkBackend", "-")),
            str(c.get("All2AllBackend", 0)),
        )
    mine = [f"{row['version']} from {row['data_from']}" for row in rows if row["data_from"]]
    if mine:
        table.caption = plain(f"read from KERNELCFG_DATA_PATH: {', '.join(mine)}")
    return table


def _change_table(data: dict[str, Any]) -> Any:
    from rich.table import Table

    from kernelcfg.output.tables import fold, plain

    table = fold(Table("what", "change", title=f"vLLM {data['old']} -> {data['new']}"))
    rows = [*_field_changes(data), *_ir_changes(data), *_other_changes(data)]
    if not rows:  # a patch release and its minor (0.25.0 -> 0.25.1)
        return (
            f"vLLM {data['old']} -> {data['new']}: no change in the kernel config (fields, "
            "choices, hash inputs, IR ops and providers, constants, rules)"
        )
    for row in rows:
        table.add_row(*(plain(cell) for cell in row))
    return table


Row = tuple[str, str]
ADDED_REMOVED = ("added", "removed")


def _field_changes(data: dict[str, Any]) -> Iterator[Row]:
    if data["hash_scheme"]:
        change = data["hash_scheme"]
        yield "hash", f"{change['old']} -> {change['new']}: {change['means']}"
    for key in ADDED_REMOVED:
        for name in data["fields"][key]:
            yield "field", f"{key} {name}"
    for change in data["fields"]["changed"]:
        yield "field", f"{change['field']}: {change['what']} {change['old']!r} -> {change['new']!r}"
    for name, diff in data["choices"].items():
        for key in ADDED_REMOVED:
            if diff[key]:
                yield name, f"{key} {', '.join(diff[key])}"


def _ir_changes(data: dict[str, Any]) -> Iterator[Row]:
    for key in ADDED_REMOVED:
        if data["hash_inputs"][key]:
            yield "hash input", f"{key} {', '.join(data['hash_inputs'][key])}"
        if data["ir_ops"][key]:
            yield "IR op", f"{key} {', '.join(data['ir_ops'][key])}"
    for op, diff in data["ir_providers"].items():
        for key in ADDED_REMOVED:
            if diff[key]:
                yield f"IR {op}", f"provider {key} {', '.join(diff[key])}"
        for change in diff["uuid_changed"]:
            yield f"IR {op}", f"{change['provider']}: {change['file']} changed (hash changes)"


def _other_changes(data: dict[str, Any]) -> Iterator[Row]:
    for name, change in data["constants"].items():
        yield "constant", f"{name}: {change['old']} -> {change['new']}"
    for name, change in data["functions"].items():
        yield "function", f"{name}: {change['old']} -> {change['new']}"
    for kind in data["platform_ir_defaults_changed"]:
        yield "platform rule", f"IR-op defaults on {kind} changed"
    env = data["environment"]
    for key in ADDED_REMOVED:
        if env[key]:
            yield "environment", f"{len(env[key])} variables {key}"
    if env["refused"]:
        yield "environment", f"refused at start-up: {', '.join(env['refused'])}"
