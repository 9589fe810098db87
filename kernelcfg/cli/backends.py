"""``kernelcfg backends``: every backend value judged on one target."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Annotated, Any

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    REPORT_FORMATS,
    VLLM_FLAGS_PASS_THROUGH,
    ReportFormat,
    ReportFormatOption,
    note_fallback,
    print_rich,
    refuse,
    write_json,
    write_report,
)


@app.command(
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg backends --device b200 --quantization fp8\n\n"
        "  kernelcfg backends --device mi355x --quant-scheme mxfp4 --env VLLM_ROCM_USE_AITER=1\n\n"
        "  kernelcfg backends --device rtx-pro-6000 --vllm-version 0.32 --format json"
    ),
)
def backends(
    flags: Annotated[
        list[str] | None,
        typer.Argument(
            help="The target and context: --device, --platform, --capability, --gfx-arch, "
            "--vllm-version, --quant-scheme, --quantization, --architecture, --install, "
            "--env, -ep.",
            show_default=False,
        ),
    ] = None,
    fmt: ReportFormatOption = ReportFormat.table,
) -> None:
    """Every backend value and whether it can run on the target: runs, cannot run, depends.

    The matrix CI users ask for: each value of --moe-backend, --linear-backend,
    --sparse-indexer-topk-backend and --attention-backend with its verdict and the
    reason, for the release and target given. Without a quantisation scheme, only what
    fails for every scheme is "cannot run"; without the model, only what vLLM's
    attention selector refuses for every model and install.
    """

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.commands import pipeline
    from kernelcfg.engine import instead
    from kernelcfg.engine.resolution import check_context

    try:
        release, target, inputs = pipeline.prepare(
            list(flags or []), pipeline.Request(command="backends")
        )
    except KernelcfgError as exc:
        raise refuse(exc.message, exc.exit_code) from None
    note_fallback(SimpleNamespace(target=target))  # once, not in every reason
    ctx = check_context(target, release.version, inputs)
    scheme = ctx.scheme
    verdicts = instead.matrix(release, target, inputs, ctx)
    if fmt in REPORT_FORMATS:
        from kernelcfg.output.reports import Entry

        entries = [
            Entry(
                f"{v.field}={v.value}",
                1 if v.status == "cannot-run" else 0,
                [p.as_dict()] if (p := v.problem()) is not None else [],
            )
            for v in verdicts
        ]
        write_report(fmt, entries)
        return
    if fmt is ReportFormat.json:
        data = {
            "vllm_version": release.version,
            "platform": target.as_dict(),
            "install": inputs.install,
            "install_source": inputs.install_source,
            "quant_scheme": scheme,
            "backends": [v.as_dict() for v in verdicts],
        }
        write_json(data)
        return
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    from kernelcfg.output.tables import Fitted, fold, plain, unsplit_width

    marks = {
        "runs": "runs",
        "cannot-run": "cannot run",
        "falls-back": "ignored (auto)",
        "depends": "depends",
        "no-effect": "no effect",
    }
    styles = {
        "runs": "green",
        "cannot-run": "red",
        "falls-back": "yellow",
        "depends": "yellow",
        "no-effect": "dim",
    }
    title = f"vLLM {release.version} on {target.device}, --install {inputs.install}"
    title += "" if inputs.install_given else " (default)"
    if scheme:
        title += f", {scheme}"
    elif ctx.possible:
        title += f", --quantization {inputs.quantization} ({' or '.join(ctx.possible)})"
    parts: list[Any] = [plain(title, style="bold")]

    def table(title: str, rows: list[Any], narrow: bool) -> Any:
        """One field's verdicts: three columns, or (``narrow``) each value's verdict and
        its reason on lines of their own."""
        heads = ("value: verdict, then the reason",) if narrow else ("value", "verdict", "reason")
        out = fold(Table(*heads, title=title))
        for v in rows:
            style = styles[v.status]
            if narrow:
                head = Text.assemble(plain(v.value), ": ", marks[v.status])
                out.add_row(Group(head, Padding(plain(v.reason), (0, 0, 0, 2))), style=style)
            else:
                out.add_row(plain(v.value), marks[v.status], plain(v.reason), style=style)
        return out

    for field_name in dict.fromkeys(v.field for v in verdicts):
        title = f"--{field_name.replace('_', '-')}"
        rows = [v for v in verdicts if v.field == field_name]
        cells = [(v.value, marks[v.status], v.reason) for v in rows]
        need = unsplit_width(cells, ("value", "verdict", "reason"), wrapped=(1, 2))
        parts.append(Fitted(partial(table, title, rows), need))
    print_rich(Group(*parts))
