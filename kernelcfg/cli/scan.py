"""``kernelcfg scan``: every vLLM launch in Dockerfiles, YAML, scripts, Markdown, Python."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from kernelcfg.base.bounded import one_line, shown
from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    REPORT_FORMATS,
    VLLM_FLAGS_PASS_THROUGH,
    FailOn,
    ReportFormat,
    ReportFormatOption,
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
        "  kernelcfg scan --device h100 .\n\n"
        "  kernelcfg scan --device h100 deploy/*.yaml scripts/serve.sh\n\n"
        "  kernelcfg scan --device b200 --format github -- k8s/vllm.yaml\n\n"
        "  git show HEAD:compose.yaml | kernelcfg scan --device h100 -\n\n"
        "  kernelcfg scan --device h100 --image-entrypoint 'ghcr.io/acme/llm*=vllm' k8s/\n\n"
        "Exit codes: the worst launch's (0, 1, 2; 70 for a file whose reader failed); 0 "
        "when no launch is found, and under --fail-on never."
    ),
)
def scan(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None,
        typer.Argument(
            help="Target options (--device, --vllm-version, --env ...) and files or folders "
            "(- for standard input); every word after -- is a file.",
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
            help="NAME=VALUE: the value of $NAME (or ${NAME}, $(NAME), ${{ NAME }}) and of "
            "Helm's {{ .Values.NAME }} in the launches (repeatable).",
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
    image_entrypoint: Annotated[
        list[str] | None,
        typer.Option(
            "--image-entrypoint",
            help="IMAGE=vllm: the image (a name, or a glob such as 'ghcr.io/acme/llm*') starts "
            "vLLM's server, so a container of it that gives only arguments is a launch "
            "(repeatable).",
            show_default=False,
        ),
    ] = None,
    fmt: ReportFormatOption = ReportFormat.table,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="What makes the exit code non-zero.")
    ] = FailOn.error,
) -> None:
    """Resolve every vLLM launch written in files: Dockerfiles, Kubernetes, compose and
    workflow YAML, Helm templates, shell scripts, Markdown, Python.

    For pre-commit hooks and CI: each launch is read as vLLM reads it -- every word
    after vllm serve is vLLM's, so a kernelcfg option there is an unknown option, never
    a change of target -- and resolved for the target the run names; problems carry
    file, line and column. A container of vLLM's image (vllm/vllm-openai, rocm/vllm, or
    one named with --image-entrypoint) that gives only arguments is a launch. A folder
    is scanned recursively (what .gitignore ignores left out). Words the run fills in
    ($MODEL, {{ .Values.x }}) are left out with a warning unless --set gives them. In CI
    (CI=true) a target is required: --device or KERNELCFG_DEVICE.
    """
    from kernelcfg.commands import scan as scan_mod
    from kernelcfg.commands import scan_files
    from kernelcfg.output import scan_report

    context, names = _context_and_files(list(args or []), ctx.meta.get(_AFTER_DASHES, []))
    names += _files_from(files_from) if files_from else []
    _require_target(context)
    _check_context(context)
    known = _values(values or [], env_file)
    named = _images(image_entrypoint or [])
    stdin_text = _stdin(names, files_from)
    listing = scan_files.listing(names, stdin_text)
    if listing.folders:
        named = _with_built(named, listing.sources)
    checked = []
    for item in scan_mod.check_files(listing.sources, context, known, named):
        checked.append(item)
        if item.traceback:
            sys.stderr.write(item.traceback)
    done = scan_report.report(
        checked,
        listing.skipped,
        strict=fail_on is FailOn.warning,
        never=fail_on is FailOn.never,
        files=len(listing.sources),
    )
    _write(fmt, done)
    raise typer.Exit(done.exit_code)


def _context_and_files(words: list[str], after: list[str]) -> tuple[list[str], list[str]]:
    """The target options and the files among ``scan``'s words (files after ``--``
    whatever their names)."""
    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.flags.argv import CONTEXT_OPTIONS, FLAG_OPTIONS, take_options

    context: list[str] = []

    def take(name: str, value: str) -> None:
        if name == "--env" and "=" not in value:
            hint = (
                "; it names a file: files to scan go after the options (or after --), and "
                "a file of variables is --env-file"
                if os.path.exists(value)
                else ""
            )
            raise KernelcfgError(f"--env: expected KEY=VALUE, got {shown(value)}{hint}")
        context.extend([name] if name in FLAG_OPTIONS else [name, value])

    try:
        files = take_options(words, CONTEXT_OPTIONS, take)
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    odd = [f for f in files if f.startswith("-") and f != "-"]
    if odd:
        raise refuse(
            f"scan: {shown(odd[0])} is neither a target option nor a file; a file whose "
            "name begins with - goes after --",
            2,
        )
    return context, files + after


def _check_context(context: list[str]) -> None:
    """Refuse the run's own options when they are unusable (``--device h10``, ``--env
    x``), before any file is read: else a run that finds no launch would pass."""
    from kernelcfg.commands import pipeline

    if not context:
        return
    result = pipeline.resolve_words(context, pipeline.Request(serve_is_vllms=True))
    if isinstance(result, pipeline.Failure) and result.problem.exit_code == 2:
        raise refuse(result.problem.message, 2)


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


def _stdin(names: list[str], files_from: str | None) -> str | None:
    """Standard input's text when ``-`` is among the files (read once, bounded)."""
    from kernelcfg.base import bounded
    from kernelcfg.base.errors import KernelcfgError

    if "-" not in names:
        return None
    if files_from == "-":
        raise refuse("scan: standard input is read once: give - as a file or --files-from -", 2)
    data = sys.stdin.buffer.read(bounded.MAX_FILE_BYTES + 1)
    if len(data) > bounded.MAX_FILE_BYTES:
        raise refuse(
            f"scan: standard input is larger than {bounded.MAX_FILE_BYTES // 2**20} MiB", 2
        )
    try:
        return bounded.decode(data, "standard input")
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None


def _require_target(context: list[str]) -> None:
    """In CI, a target must be named: a runner has no GPU to detect, and the CPU fallback
    would judge every launch for the wrong machine."""
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


def _images(pairs: list[str]) -> Any:
    """``--image-entrypoint IMAGE=vllm`` pairs as the images taken as vLLM's."""
    from kernelcfg.base.errors import closest
    from kernelcfg.flags.launches import Images
    from kernelcfg.flags.launches.images import ENTRY_POINTS

    named: list[str] = []
    for pair in pairs:
        image, sep, entry = pair.rpartition("=")
        if not sep or not image.strip():
            raise refuse(
                f"--image-entrypoint: expected IMAGE=vllm, got {shown(pair)}; allowed entry "
                f"points: {', '.join(ENTRY_POINTS)}",
                2,
            )
        if entry not in ENTRY_POINTS:
            near = closest(entry, list(ENTRY_POINTS))
            raise refuse(
                f"--image-entrypoint: {shown(entry)} is no entry point kernelcfg knows (for "
                f"{shown(image)}); allowed: {', '.join(ENTRY_POINTS)}"
                + (f" (did you mean {near!r}?)" if near else ""),
                2,
            )
        named.append(image.strip())
    return Images(tuple(named))


def _with_built(named: Any, sources: list[Any]) -> Any:
    """The images taken as vLLM's, with those the scanned repository builds from a
    Dockerfile whose entry point is vLLM's server."""
    from kernelcfg.flags.launches import Images, images
    from kernelcfg.flags.launches.builds import built_images

    with images.using(named):
        built = built_images(s.path for s in sources if s.text is None)
    return Images(named.named, built) if built else named


def _write(fmt: ReportFormat, done: Any) -> None:
    """The scan in the format asked for."""
    if fmt is ReportFormat.json:
        write_json({"lines": done.rows, "files": done.files, "exit_code": done.exit_code})
    elif fmt is ReportFormat.github:
        write_report(fmt, done.summarised())
    elif fmt in REPORT_FORMATS:
        write_report(fmt, done.entries)
    else:
        said: list[str] = []
        for e in done.entries:
            status = "ok" if e.exit_code == 0 else f"exit {e.exit_code}"
            said.append(f"{e.name}: {status}")
            said += [
                f"  {p['severity']}: {p['message']}"
                for p in e.problems
                if p["severity"] != "info" or not e.detail  # a file's notices, all
            ]
        if not done.entries:
            said.append(f"no vllm serve lines found in {done.files:,} file(s)")
        if done.never and done.worst:
            said.append(done.policy_note()["message"])
        write_text("".join(one_line(line) + "\n" for line in said))
