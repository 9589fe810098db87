"""``kernelcfg upgrade FROM TO``: what moving one launch to another vLLM release changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Annotated, Any

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    VLLM_FLAGS_PASS_THROUGH,
    ListFormat,
    ListFormatOption,
    note_fallback,
    print_rich,
    refuse,
    write_json,
)

_SHOWN = 160
"""The longest reason or message a table line shows (JSON holds it whole)."""


@app.command(
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg upgrade 0.33 0.34 --device h100 -- vllm serve ./DeepSeek-R1 -tp 8\n\n"
        "  kernelcfg upgrade 0.29 0.34 --device b200 --install image --format json "
        "-- vllm serve ./DeepSeek-V3.2 -tp 8\n\n"
        "Exit codes (the new release's verdict on the launch, as resolve exits): 0 it "
        "starts, 1 vLLM would refuse it building the engine, 2 its parser refuses the line "
        "(an option gone), or the input is unusable."
    ),
)
def upgrade(
    old: Annotated[str, typer.Argument(help="The release now: 0.33, 0.33.0.", show_default=False)],
    new: Annotated[str, typer.Argument(help="The release to move to: 0.34.", show_default=False)],
    flags: Annotated[
        list[str] | None,
        typer.Argument(
            help="The launch: vLLM's flags or `-- vllm serve MODEL ...`, and the target "
            "(--device, --install, --env ...), as for resolve.",
            show_default=False,
        ),
    ] = None,
    fmt: ListFormatOption = ListFormat.table,
) -> None:
    """What a vLLM upgrade changes for one launch, in the order its user meets it.

    The kernels vLLM picks (attention, MoE, linear per layer kind, sparse-indexer
    top-k) before and after, under each install (pip, image, minimal, all; --install
    names one), changes first, with the new release's reason for passing over the old
    pick; the launch's options the new release drops, renames or deprecates; the
    warnings and errors that appear or disappear; and the compile cache, which never
    carries across releases (said once). `diff` compares two configurations hash by
    hash; this compares one launch across two releases.
    """
    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.commands import upgrade as upgrade_mod

    try:
        data = upgrade_mod.report(old, new, list(flags or []))
    except KernelcfgError as exc:
        raise refuse(exc.message, exc.exit_code) from None
    platform = data["platform"] or {}
    if platform.get("source") == "fallback":  # said once, as resolve says it
        note_fallback(SimpleNamespace(target=SimpleNamespace(source="fallback", note=None)))
    if fmt is ListFormat.json:
        write_json(data)
    else:
        print_rich(_report(data))
    raise typer.Exit(data["exit_code"])


def _report(data: dict[str, Any]) -> Any:
    from rich.console import Group

    from kernelcfg.output.tables import plain

    a, b = data["from"]["asked"], data["to"]["asked"]
    lines: list[Any] = [plain(_title(data), limit=400)]
    if data["kernels"]:
        lines.append(_kernel_table(data, a, b))
    else:
        lines.append(plain("kernels: no walk to compare (give the model or --quant-scheme)"))
    lines += [plain(line, limit=1000) for line in _lines(data, a, b)]
    return Group(*lines)


def _title(data: dict[str, Any]) -> str:
    said = f"vLLM {data['from']['vllm_version']} -> {data['to']['vllm_version']}"
    platform = data["platform"]
    if platform:
        said += f" on {platform['device']}"
    model = data["model"]
    if model:
        what = ", ".join(model["architectures"]) or model["id"] or ""
        said += f"; {what}" + (f" ({model['quant_scheme']})" if model["quant_scheme"] else "")
    return said


def _kernel_table(data: dict[str, Any], a: str, b: str) -> Any:
    from rich.table import Table

    from kernelcfg.output.tables import fold, plain

    every = set(data["installs"])
    table = fold(Table("kernel", "install", a, b, title="kernels vLLM picks, changes first"))
    for row in data["kernels"]:
        installs = "every" if set(row["installs"]) == every and len(every) > 1 else None
        table.add_row(
            plain(row["kernel"]),
            plain(installs or ", ".join(row["installs"])),
            plain(row["from"] or "-"),
            plain((row["to"] or "-") if row["changed"] else "same"),
        )
    return table


def _lines(data: dict[str, Any], a: str, b: str) -> list[str]:
    out = [
        f"  {row['kernel']} ({', '.join(row['installs'])}): {_cut(row['why'])}"
        for row in data["kernels"]
        if row["why"]
    ]
    options = data["options"]
    if not options:
        out.append(f"options: none of the launch's options is gone or renamed in {b}")
    for row in options:
        what = {
            "gone": f"gone in {b}",
            "renamed": f"now {row['to']}",
            "ambiguous": f"an abbreviation {b} cannot read (it fits several); write {row['to']}",
        }.get(row["change"])
        out.append(f"option {row['option']}: {what or _cut(row['message'])}")
    warnings = data["warnings"]
    for sign, key in (("+", "appear"), ("-", "disappear")):
        out += [f"{sign} {p['severity']}: {_cut(p['message'])}" for p in warnings[key]]
    if not warnings["appear"] and not warnings["disappear"]:
        out.append(f"warnings: none appear or disappear from {a} to {b}")
    out.append(f"compile cache: not reusable; {data['compile_cache']['why']}")
    ha, hb = data["from"]["hash"], data["to"]["hash"]
    if ha and hb:
        out.append(f"kernel-config hash: {ha[:12]} -> {hb[:12]}")
    for side in ("from", "to"):
        out += [f"note: {note}" for note in data[side]["notes"]]
    return out


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
