"""``kernelcfg scan``: every ``vllm serve`` line in scripts, YAML, Dockerfiles, Markdown."""

from __future__ import annotations

from typing import Annotated

import typer

from kernelcfg.base.bounded import one_line
from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    REPORT_FORMATS,
    VLLM_FLAGS_PASS_THROUGH,
    FailOn,
    ReportFormat,
    ReportFormatOption,
    exit_code,
    refuse,
    write_json,
    write_report,
    write_text,
)


@app.command(
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg scan deploy/*.yaml scripts/serve.sh --device h100\n\n"
        "  kernelcfg scan k8s/vllm.yaml --device b200 --format github\n\n"
        "Exit codes: the worst line's (0, 1, 2); 0 when no vllm serve line is found."
    ),
)
def scan(
    args: Annotated[
        list[str] | None,
        typer.Argument(
            help="Files to read, then context flags for every line (--device, "
            "--vllm-version, --env …).",
            show_default=False,
        ),
    ] = None,
    fmt: ReportFormatOption = ReportFormat.table,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="What makes the exit code 1.")
    ] = FailOn.error,
) -> None:
    """Resolve every `vllm serve` line written in files: shell, YAML, Dockerfiles, docs.

    For pre-commit hooks and CI: each line is read as that release's `vllm serve`
    reads it and resolved for the target given; problems are reported with file and
    line.
    """

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.base.problems import Problem
    from kernelcfg.commands import pipeline
    from kernelcfg.flags import scan as scan_mod
    from kernelcfg.flags.argv import CONTEXT_OPTIONS, take_options
    from kernelcfg.output import render
    from kernelcfg.output.reports import Entry

    context: list[str] = []
    try:
        files = take_options(
            list(args or []), CONTEXT_OPTIONS, lambda name, value: context.extend([name, value])
        )
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    odd = [f for f in files if f.startswith("-")]
    if odd:
        raise refuse(f"scan: {odd[0]!r} is not a file nor a target option", 2)
    entries: list[Entry] = []
    worst = 0
    for path in files:
        try:
            found = list(scan_mod.lines_in(path))
        except KernelcfgError as exc:
            entries.append(Entry(path, 2, [Problem.from_error(exc).as_dict()]))
            worst = 2
            continue
        for line in found:
            result = pipeline.resolve_args([*context, "--", *line.argv])
            code = exit_code(result, fail_on)
            worst = max(worst, code)
            data = render.as_data(result, strict=fail_on is FailOn.warning)
            entries.append(
                Entry(
                    f"{path}:{line.line}",
                    code,
                    data["problems"],
                    " ".join(line.argv),
                    file=path,
                    line=line.line,
                )
            )
    if fmt is ReportFormat.json:
        rows = [
            {"where": e.name, "exit_code": e.exit_code, "problems": e.problems, "command": e.detail}
            for e in entries
        ]
        write_json({"lines": rows})
    elif fmt in REPORT_FORMATS:
        write_report(fmt, entries)
    else:
        said: list[str] = []
        for e in entries:
            status = "ok" if e.exit_code == 0 else f"exit {e.exit_code}"
            said.append(f"{e.name}: {status}")
            said += [
                f"  {p['severity']}: {p['message']}" for p in e.problems if p["severity"] != "info"
            ]
        write_text("".join(one_line(line) + "\n" for line in said) or "no vllm serve lines found\n")
    raise typer.Exit(worst)
