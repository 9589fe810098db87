"""The ``kernelcfg`` application: the Typer app, ``--version``, and the entry point.

Only this module prints and exits. stdout carries only the requested format;
problems go to stderr, one line each.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from typer import _click
from typer.core import TyperGroup

from kernelcfg._version import __version__
from kernelcfg.cli.common import OutputError, patient_stdout, silence_stdout


class _Group(TyperGroup):
    """The top-level group: ``-h`` is ``--help`` for every command."""

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, help_words(args))


def help_words(args: list[str]) -> list[str]:
    """``args`` with each ``-h`` before the first ``--`` read as ``--help``: vLLM flags
    such as ``-cc.cudagraph_mode`` hold an "h", so ``-h`` cannot be a click option (click
    reads an unknown single-dash word as a cluster of short options); after ``--`` (a
    pasted ``vllm serve`` line, files to scan) every word stays as written."""
    end = args.index("--") if "--" in args else len(args)
    return ["--help" if word == "-h" else word for word in args[:end]] + args[end:]


app = typer.Typer(
    name="kernelcfg",
    cls=_Group,
    pretty_exceptions_enable=False,
    help=(
        "Tell what vLLM will do with its kernel flags, before a GPU is booked.\n\n"
        "kernelcfg reads vLLM's kernel flags (--moe-backend, --linear-backend, "
        "--kernel-config, -O, -cc, ...) exactly as a chosen vLLM release reads them, "
        "resolves them for a chosen GPU, and prints the resolved configuration with its "
        "kernel-config hash -- the digest vLLM itself computes, one factor of its "
        "compile-cache key."
    ),
    epilog=(
        "Environment: NO_COLOR (any value) turns colours off in tables and help; COLUMNS "
        "sets the width (80 in a CI log). -h is --help everywhere. Exit codes: 0 valid, "
        "1 refused at start-up, 2 unusable input, 70 a kernelcfg bug, 74 stdout "
        "unwritable."
    ),
    no_args_is_help=True,
    add_completion=True,
    # -h is read as --help by _Group (help_words), not by click.
    context_settings={"help_option_names": ["--help"]},
)


def _version(value: bool) -> None:
    if value:
        from kernelcfg.base.bounded import one_line
        from kernelcfg.vllm import releases

        listed = [
            v
            if releases.data_source(v) is None
            else f"{v} from {one_line(releases.data_source(v) or '')}"
            for v in releases.known_versions()
        ]
        typer.echo(f"kernelcfg {__version__} (vLLM releases: {', '.join(listed)})")
        raise typer.Exit()


@app.callback()
def main_callback(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """kernelcfg: vLLM kernel flags, resolved before a GPU is booked."""
    del version  # handled by its eager callback
    _guard_streams()
    from kernelcfg.cli.progress import listen  # a download says it is under way, on stderr

    ctx.call_on_close(listen())


def _guard_streams() -> None:
    """Output never crashes: undecodable text is escaped, a closed stream is a null one,
    and stdout is written whole even when its descriptor is non-blocking."""
    import os

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
        elif hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    patient_stdout()


def main() -> None:
    """Console-script entry point: exit 0, 1 or 2 as documented; 70 for a kernelcfg bug;
    74 when standard output cannot be written."""
    import traceback

    from kernelcfg.base.problems import EXIT_BUG, EXIT_IOERR

    _guard_streams()
    try:
        code = app(standalone_mode=False)
        sys.stdout.flush()  # here, where a failure is caught, not at the interpreter's exit
    except SystemExit:
        raise
    except typer.Abort:
        raise SystemExit(130) from None
    except BrokenPipeError:
        silence_stdout()
        raise SystemExit(0) from None
    except OutputError as exc:
        silence_stdout()
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(EXIT_IOERR) from None
    except Exception as exc:
        if _usage_error(exc):
            # The CLI framework's own refusals (click's UsageError), one line like the rest;
            # a bare ``kernelcfg`` (or ``kernelcfg cache``) has had its help printed: no
            # line more, and exit 2 as click's ``no_args_is_help`` does (a usage error).
            if not exc.format_message().strip():  # type: ignore[attr-defined]
                raise SystemExit(2) from None
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "kernelcfg"
            message = bounded_line(exc.format_message())  # type: ignore[attr-defined]
            sys.stderr.write(f"error: {message} (see {where} --help)\n")
            raise SystemExit(2) from None
        traceback.print_exc()  # a bug, never bad input: show it, and exit apart from 0/1/2
        sys.stderr.write(
            "kernelcfg hit a bug (exit 70); please report it with the command line above\n"
        )
        _name_user_files()
        raise SystemExit(EXIT_BUG) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def _name_user_files() -> None:
    """After a bug: the release files read from the user's folders, the first suspects
    (their shape is checked, not every value in them)."""
    from kernelcfg.base.bounded import one_line
    from kernelcfg.vllm.releases import search

    read = search.user_files_read()
    if read:
        sys.stderr.write(
            f"note: this run read release data from {search.VARIABLE}: "
            f"{', '.join(one_line(str(p)) for p in read)}; check them first (docs/releases.md)\n"
        )


def _usage_error(exc: Exception) -> bool:
    """Whether ``exc`` is the CLI framework's usage error (click's ``UsageError``, which
    Typer vendors and does not export)."""
    return getattr(exc, "exit_code", None) == 2 and callable(getattr(exc, "format_message", None))


def bounded_line(text: str) -> str:
    """A framework message on one line."""
    from kernelcfg.base.bounded import one_line

    return one_line(" ".join(text.split()))
