"""``kernelcfg scan``: every vLLM launch in Dockerfiles, YAML, scripts, Markdown, Python."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from kernelcfg.base.bounded import cut, one_line, shown
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


class _FilesAfterDashes(TyperCommand):
    """``scan``'s words after ``--`` are file names, whatever they look like (the CLI
    framework would drop the ``--`` and read ``--env`` as an option)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta[_AFTER_DASHES] = args[at + 1 :]
            args = args[:at]
        return super().parse_args(ctx, args)


_AFTER_DASHES = "kernelcfg.scan.files"


@app.command(
    cls=_FilesAfterDashes,
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg scan --device h100 deploy/*.yaml scripts/serve.sh\n\n"
        "  kernelcfg scan --device b200 --format github -- k8s/vllm.yaml\n\n"
        "  git ls-files -z | kernelcfg scan --device h100 --files-from -\n\n"
        "Exit codes: the worst launch's (0, 1, 2; 70 for a file whose reader failed); 0 "
        "when no launch is found."
    ),
)
def scan(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None,
        typer.Argument(
            help="Target options (--device, --vllm-version, --env ...) and files; every "
            "word after -- is a file.",
            show_default=False,
        ),
    ] = None,
    files_from: Annotated[
        str | None,
        typer.Option(
            "--files-from",
            help="Read file names from FILE (- for standard input), separated by NUL or newlines.",
            show_default=False,
        ),
    ] = None,
    values: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="NAME=VALUE: the value of $NAME (or ${NAME}, $(NAME)) in the launches "
            "(repeatable).",
            show_default=False,
        ),
    ] = None,
    env_file: Annotated[
        str | None,
        typer.Option(
            "--env-file",
            help="Values of $NAME words from KEY=VALUE lines (as --set).",
            show_default=False,
        ),
    ] = None,
    fmt: ReportFormatOption = ReportFormat.table,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="What makes the exit code 1.")
    ] = FailOn.error,
) -> None:
    """Resolve every vLLM launch written in files: Dockerfiles, Kubernetes, compose and
    workflow YAML, shell scripts, Markdown, Python.

    For pre-commit hooks and CI: each launch is read as vLLM reads it -- every word
    after vllm serve is vLLM's, so a kernelcfg option there is an unknown option, never
    a change of target -- and resolved for the target the run names; problems carry
    file, line and column. Words the run fills in ($MODEL, {{ .Values.x }}) are left
    out with a warning unless --set gives them. In CI (CI=true) a target is required:
    --device or KERNELCFG_DEVICE.
    """
    from kernelcfg.commands import scan as scan_mod

    context, files = _context_and_files(list(args or []), ctx.meta.get(_AFTER_DASHES, []))
    files += _files_from(files_from) if files_from else []
    _require_target(context)
    known = _values(values or [], env_file)
    entries: list[Any] = []
    rows: list[dict[str, Any]] = []
    worst = 0
    for checked in scan_mod.check_files(files, context, known):
        entry, row = _entry(checked, fail_on)
        worst = max(worst, entry.exit_code)
        entries.append(entry)
        rows.append(row)
        if checked.traceback:
            sys.stderr.write(checked.traceback)
    _write(fmt, entries, rows)
    raise typer.Exit(worst)


def _context_and_files(words: list[str], after: list[str]) -> tuple[list[str], list[str]]:
    """The target options and the files among ``scan``'s words (files after ``--``
    whatever their names)."""
    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.flags.argv import CONTEXT_OPTIONS, FLAG_OPTIONS, take_options

    context: list[str] = []
    try:
        files = take_options(
            words,
            CONTEXT_OPTIONS,
            lambda n, v: context.extend([n] if n in FLAG_OPTIONS else [n, v]),
        )
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    odd = [f for f in files if f.startswith("-")]
    if odd:
        raise refuse(
            f"scan: {shown(odd[0])} is neither a target option nor a file; a file whose "
            "name begins with - goes after --",
            2,
        )
    return context, files + after


def _files_from(source: str) -> list[str]:
    """File names from a file (or ``-``: standard input), NUL- or newline-separated."""
    from kernelcfg.base import bounded
    from kernelcfg.base.errors import KernelcfgError

    try:
        if source == "-":
            text = bounded.decode(sys.stdin.buffer.read(bounded.MAX_FILE_BYTES + 1), "stdin")
        else:
            text = bounded.read_text(source, "--files-from")
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    separator = "\0" if "\0" in text else "\n"
    return [name for name in text.split(separator) if name.strip("\r")]


def _require_target(context: list[str]) -> None:
    """In CI, a target must be named: a runner has no GPU to detect, and the CPU fallback
    would judge every launch for the wrong machine."""
    import os

    named = {"--device", "--platform"} & set(context)
    if named or os.environ.get("KERNELCFG_DEVICE") or os.environ.get("KERNELCFG_PLATFORM"):
        return
    from kernelcfg.targets.presets import ci_needs_target

    message = ci_needs_target("scan", os.environ)
    if message is not None:
        raise refuse(message, 2)


def _values(pairs: list[str], env_file: str | None) -> dict[str, str]:
    """``--set NAME=VALUE`` pairs over ``--env-file`` values."""
    from kernelcfg.base.errors import KernelcfgError

    known: dict[str, str] = {}
    if env_file:
        from kernelcfg.checks.lint_env import read_env_file

        try:
            known.update(read_env_file(env_file))
        except KernelcfgError as exc:
            raise refuse(exc.message, 2) from None
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise refuse(f"--set: expected NAME=VALUE, got {shown(pair)}", 2)
        known[name] = value
    return known


def _entry(checked: Any, fail_on: FailOn) -> tuple[Any, dict[str, Any]]:
    """A report entry and a JSON row for one launch (or one unreadable file)."""
    from kernelcfg.output import render
    from kernelcfg.output.reports import Entry

    code = exit_code(checked.result, fail_on)
    if checked.found is None and checked.result.problem.severity == "warning":
        code = 1 if fail_on is FailOn.warning else 0  # a file summarised, not refused
    problems = render.as_data(checked.result, strict=fail_on is FailOn.warning)["problems"]
    found = checked.found
    line = found.line if found else None
    name = f"{checked.path}:{line}" if line else checked.path
    argv = [cut(word, 1000) for word in found.argv] if found else None
    entry = Entry(
        name,
        code,
        problems,
        cut(" ".join(argv or []), 4000),
        checked.path,
        line,
        found.column if found else None,
    )
    row: dict[str, Any] = {
        "where": name,
        "file": checked.path,
        "line": line,
        "column": found.column if found else None,
        "argv": argv,
        "env": found.env if found else None,
        "unresolved": found.unresolved if found else None,
        "exit_code": code,
        "problems": problems,
        "command": entry.detail,
    }
    return entry, row


def _write(fmt: ReportFormat, entries: list[Any], rows: list[dict[str, Any]]) -> None:
    """The scan in the format asked for."""
    if fmt is ReportFormat.json:
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
