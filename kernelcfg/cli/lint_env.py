"""``kernelcfg lint-env``: what an environment file says to vLLM."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    TABLE_ROWS,
    ReportFormat,
    ReportFormatOption,
    print_rich,
    refuse,
    write_json,
    write_report,
)


def _finding_code(finding: Any) -> int:
    """A lint-env finding's exit code: 1 when vLLM would ignore or refuse the variable."""
    return 1 if finding.severity in ("error", "warning") else 0


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
    fmt: ReportFormatOption = ReportFormat.table,
) -> None:
    """Check VLLM_* variables against a vLLM release: typos, removed ones and their flags.

    Reports variables the release does not know (typos, removed ones), removed
    variables that a flag replaced (VLLM_USE_FLASHINFER_MOE_FP8 -> --moe-backend ...),
    and what the variables that steer kernel resolution change. Exit 1 when a variable
    vLLM would ignore is set, 0 otherwise, 2 for unusable input.
    """
    import os

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.checks import lint_env as lint_mod
    from kernelcfg.vllm import releases

    try:
        release = releases.load(vllm_version)
        environ = lint_mod.read_env_file(env_file) if env_file else dict(os.environ)
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    if fmt is ReportFormat.table:
        raise typer.Exit(_table(lint_mod.findings(environ, release), release.version))
    findings = lint_mod.lint(environ, release)
    code = max((_finding_code(f) for f in findings), default=0)
    if fmt is ReportFormat.json:
        data = {"vllm_version": release.version, "findings": [f.as_dict() for f in findings]}
        write_json(data)
    else:
        from kernelcfg.output.reports import Entry

        entries = [Entry(f.variable, _finding_code(f), [f.as_dict()], f.value) for f in findings]
        write_report(fmt, entries)
    raise typer.Exit(code)


def _table(findings: Iterator[Any], version: str) -> int:
    """The first :data:`TABLE_ROWS` findings as a table, and how many there are; the
    exit code (the rest are counted, never kept)."""
    from rich.table import Table

    from kernelcfg.output.tables import fold, plain

    table = fold(Table("variable", "value", "finding", title=f"vLLM {version}"))
    total = code = 0
    for f in findings:
        total += 1
        code = max(code, _finding_code(f))
        if total <= TABLE_ROWS:
            style = {"error": "red", "warning": "yellow"}.get(f.severity, "dim")
            table.add_row(
                plain(f.variable, 300), plain(f.value, 300), plain(f.message, 2000), style=style
            )
    if total > TABLE_ROWS:
        table.caption = f"the first {TABLE_ROWS:,} of {total:,} findings; --format json has all"
    print_rich(table if total else "no kernel-relevant variables set")
    return code
