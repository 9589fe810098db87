"""``kernelcfg lint-env``: what an environment file says to vLLM."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    TABLE_ROWS,
    ReportFormat,
    ReportFormatOption,
    named_release,
    print_rich,
    refuse,
    write_json,
    write_report,
)

_SEVERITIES = ("info", "warning", "error")
"""Severities from the mildest."""


def _finding_code(finding: Any) -> int:
    """A lint-env finding's exit code: 1 when vLLM would ignore or refuse the variable."""
    return _severity_code(finding.severity)


def _severity_code(severity: str) -> int:
    """The exit code of a finding of ``severity``."""
    return 1 if severity in ("error", "warning") else 0


@app.command("lint-env")
def lint_env(
    env_file: Annotated[
        str | None,
        typer.Option("--env-file", help="Read KEY=VALUE lines from FILE instead of this shell."),
    ] = None,
    vllm_version: Annotated[
        str | None,
        typer.Option("--vllm-version", envvar="KERNELCFG_VLLM_VERSION", help="The release."),
    ] = None,
    show_values: Annotated[
        bool,
        typer.Option(
            "--show-values",
            help="Show the values of variables that look like credentials (masked as ***).",
        ),
    ] = False,
    fmt: ReportFormatOption = ReportFormat.table,
) -> None:
    """Check VLLM_* variables against a vLLM release: typos, removed ones and their flags.

    Reports variables the release does not know (typos, removed ones), removed
    variables that a flag replaced (VLLM_USE_FLASHINFER_MOE_FP8 -> --moe-backend ...),
    and what the variables that steer kernel resolution change. Every format keeps the
    first 1,000 findings and counts the rest. Exit 1 when a variable vLLM would ignore
    is set, 0 otherwise, 2 for unusable input.
    """
    import os

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.checks import lint_env as lint_mod

    try:
        release = named_release(vllm_version)
        environ = lint_mod.read_env_file(env_file) if env_file else dict(os.environ)
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    found = lint_mod.summary(environ, release, TABLE_ROWS, show_values=show_values)
    code = max((_severity_code(s) for s in found.omitted), default=0)
    code = max((_finding_code(f) for f in found.findings), default=code)
    if fmt is ReportFormat.table:
        _table(found, release.version)
    elif fmt is ReportFormat.json:
        findings = [f.as_dict() for f in found.findings]
        omitted = found.total - len(found.findings)
        write_json({"vllm_version": release.version, "findings": findings, "omitted": omitted})
    else:
        write_report(fmt, _entries(found))
    raise typer.Exit(code)


def _entries(found: Any) -> list[Any]:
    """One report entry per finding kept, and one that says how many were not."""
    from kernelcfg.base.bounded import one_line
    from kernelcfg.output.reports import Entry

    entries = [
        Entry(one_line(f.variable), _finding_code(f), [f.as_dict()], one_line(f.value))
        for f in found.findings
    ]
    if found.omitted:
        worst = max(found.omitted, key=_SEVERITIES.index)
        problem = {
            "severity": worst,
            "code": "omitted-findings",
            "field": None,
            "message": found.omitted_note(),
        }
        entries.append(Entry("lint-env", _severity_code(worst), [problem]))
    return entries


def _table(found: Any, version: str) -> None:
    """The findings kept as a table, and how many there are in all."""
    from rich.table import Table

    from kernelcfg.output.tables import fold, plain

    table = fold(Table("variable", "value", "finding", title=f"vLLM {version}"))
    for f in found.findings:
        style = {"error": "red", "warning": "yellow"}.get(f.severity, "dim")
        table.add_row(
            plain(f.variable, 300), plain(f.value, 300), plain(f.message, 2000), style=style
        )
    if found.omitted:
        table.caption = f"the first {len(found.findings):,} of {found.total:,} findings"
    print_rich(table if found.findings else "no kernel-relevant variables set")
