"""What every command shares: option types, the exit policy, JSON and report writers,
problem lines on stderr."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


class FailOn(StrEnum):
    """What makes ``resolve`` exit 1."""

    error = "error"
    warning = "warning"
    never = "never"


def exit_code(result: Any, fail_on: FailOn) -> int:
    """The exit code under the run's policy: 2 and 70 always stand; 1 as ``fail_on``."""
    from kernelcfg.output import render

    return render.exit_code_under(
        result, strict=fail_on is FailOn.warning, never=fail_on is FailOn.never
    )


class Format(StrEnum):
    """Output formats of ``resolve``."""

    table = "table"
    json = "json"
    yaml = "yaml"
    env = "env"
    args = "args"
    github = "github"
    junit = "junit"
    sarif = "sarif"


REPORT_FORMATS: frozenset[str] = frozenset({Format.github, Format.junit, Format.sarif})
"""The CI report formats: one entry per resolution, its problems as annotations."""


def write_report(fmt: str, entries: list[Any]) -> None:
    """Print a CI report (github, junit or sarif) of ``entries``."""
    from kernelcfg.output import reports

    sys.stdout.write(
        {"github": reports.github, "junit": reports.junit, "sarif": reports.sarif}[fmt](entries)
    )


TABLE_ROWS = 1000
"""A people-facing table shows at most this many rows; ``lint-env`` keeps this many
findings in every format and counts the rest."""


def write_text(text: str) -> None:
    """Text for people (or for a shell: env, args, YAML) on stdout, with no line that a CI
    runner would take for a workflow command (:func:`guard_lines`)."""
    sys.stdout.write(guard_lines(text))


def print_rich(renderable: Any) -> None:
    """A rich renderable on stdout for people: the text in it is never read as markup,
    emoji codes or highlighting, the width is never zero (``COLUMNS=0`` is taken as
    unset), no line ends in the spaces rich pads it with (what the docs show is what
    is printed, byte for byte), and no line can be taken for a workflow command
    (:func:`guard_lines`)."""
    from rich.console import Console

    console = Console(markup=False, emoji=False, highlight=False, width=_width())
    with console.capture() as captured:
        console.print(renderable, crop=False)  # a no_wrap line (a hash) stays whole
    write_text("\n".join(line.rstrip(" ") for line in captured.get().split("\n")))


_MAX_WIDTH = 10_000


def _width() -> int | None:
    """The console width: ``COLUMNS`` when it is a positive number (at most
    :data:`_MAX_WIDTH`), else the terminal's, else rich's own choice."""
    import os
    import shutil

    given = os.environ.get("COLUMNS", "")
    if given.isascii() and given.isdigit() and 0 < int(given) <= _MAX_WIDTH:
        return None  # rich reads it itself
    if not given:
        return None
    return min(shutil.get_terminal_size((80, 24)).columns or 80, _MAX_WIDTH)


def guard_lines(text: str) -> str:
    """``text`` with a backslash in front of any line that would begin with ``::``
    (leading blanks and terminal colours aside): a GitHub runner reads such a line on
    stdout or stderr as a workflow command (``::error::``, ``::add-mask::``), and only
    kernelcfg's own annotations (``--format github``) may be one. User-derived values
    are already on one line; this covers a long one wrapped onto a line of its own."""
    if "::" not in text:
        return text
    import re

    colours = re.compile(r"\x1b\[[0-9;]*m")
    lines = text.split("\n")
    for place, line in enumerate(lines):
        if colours.sub("", line).lstrip().startswith("::"):
            lines[place] = "\\" + line
    return "\n".join(lines)


def write_json(data: dict[str, Any]) -> None:
    """A command's JSON output: one envelope for every command, ``format_version`` first
    (the same version as ``resolve``'s; the shapes are in ``kernelcfg schema --of``)."""
    import json

    from kernelcfg.output.render import FORMAT_VERSION

    envelope = {"format_version": FORMAT_VERSION, **data}
    sys.stdout.write(json.dumps(envelope, indent=2, allow_nan=False) + "\n")


def refuse(message: str, code: int) -> typer.Exit:
    """Write ``error: MESSAGE`` to stderr; return the exit to raise."""
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(code)


def named_release(text: str | None) -> Any:
    """The release a command's ``--vllm-version`` names (the newest known when not
    given); a patch release resolved with its minor's data says so on stderr."""
    from kernelcfg.vllm import releases

    if text is None:
        return releases.load(None)
    chosen = releases.named(text)
    if chosen.warning:
        sys.stderr.write(f"warning: {chosen.warning}\n")
    return chosen.release


KERNEL_FLAG_CHOICES = {
    "--moe-backend": "moe_backend",
    "--linear-backend": "linear_backend",
    "--sparse-indexer-topk-backend": "sparse_indexer_topk_backend",
    "--all2all-backend": "all2all_backend",
}


def _option_values() -> dict[str, Callable[[], Iterable[str]]]:
    """kernelcfg's own target options and vLLM's backend options, each with where its
    values come from (the newest release's data for vLLM's)."""
    from kernelcfg.targets import cpu
    from kernelcfg.targets.presets import KINDS, PRESETS
    from kernelcfg.vllm import releases
    from kernelcfg.vllm.inputs import INSTALLS
    from kernelcfg.vllm.kernel_config import attention as attention_config
    from kernelcfg.vllm.kernels.quantization import SCHEMES

    release = releases.load(None)

    def backends(field: str) -> Callable[[], Iterable[str]]:
        passthrough = release.constant("PASSTHROUGH_ALL2ALL_BACKEND")
        return lambda: [v for v in release.choices(field) if v != passthrough]

    def attention() -> Iterable[str]:
        found = attention_config.facts(release.version)
        return ["auto", *found.backends] if found is not None else []

    return {
        "--device": lambda: PRESETS,
        "--platform": lambda: KINDS,
        "--install": lambda: INSTALLS,
        "--cpu-features": lambda: [*cpu.ARCHES, *cpu.FLAGS],
        "--vllm-version": releases.known_versions,
        "--quant-scheme": lambda: SCHEMES,
        "--attention-backend": attention,
        **{flag: backends(field) for flag, field in KERNEL_FLAG_CHOICES.items()},
    }


LISTS = frozenset({"--cpu-features"})
"""The options whose value is a comma-separated list (each item completed)."""


def complete_flags(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """Complete the values of kernelcfg's target options (``--device`` presets,
    ``--platform``, ``--install``, ``--cpu-features``, ``--vllm-version``,
    ``--quant-scheme``) and of vLLM's
    backend options after them, and the option names themselves."""
    from kernelcfg.flags.argv import CONTEXT_OPTIONS

    # Typer hands an empty ``args``; the words typed so far are the argument's value
    # in the context click parsed for completion.
    typed = args or list((ctx.params.get("vllm_flags") or []) if ctx is not None else [])
    previous = typed[-1] if typed else ""
    values = _option_values()
    if previous in values:
        # a list value (--cpu-features x86_64,am): complete its last item
        done, _, last = incomplete.rpartition(",") if previous in LISTS else ("", "", incomplete)
        head = done + "," if done else ""
        return [head + v for v in values[previous]() if v.startswith(last)]
    flags = [
        *CONTEXT_OPTIONS,
        "--attention-backend",
        *KERNEL_FLAG_CHOICES,
        "--kernel-config",
        "--ir-op-priority",
        "--monokernel",
        "--enable-flashinfer-autotune",
        "--enforce-eager",
        "--compilation-config",
        "--optimization-level",
        "--enable-lora",
        "--enable-expert-parallel",
        "--tensor-parallel-size",
        "--data-parallel-size",
        "--hf-config-path",
        "--config",
    ]
    return [f for f in flags if f.startswith(incomplete)]


def note_fallback(result: Any) -> bool:
    """Say once, on stderr, that no target was given and none was found."""
    target = getattr(result, "target", None)
    if target is None or target.source != "fallback":
        return False
    sys.stderr.write(
        "note: no --device given and no GPU detected here"
        + (f" ({target.note})" if target.note else "")
        + "; resolving for the CPU platform. Give --device PRESET (or set KERNELCFG_DEVICE)\n"
    )
    return True


def print_problems(problems: list[dict[str, Any]], quiet: bool) -> None:
    if quiet:
        return
    from kernelcfg.base.problems import RUNS_INSTEAD

    for problem in problems:
        said = problem["severity"]
        if said == "info" and problem.get("code") != RUNS_INSTEAD:
            continue  # notes are the table's; what runs instead follows its refusal here
        sys.stderr.write(f"{'note' if said == 'info' else said}: {problem['message']}\n")


_E = TypeVar("_E", bound=StrEnum)


def choice_of(kind: type[_E], flag: str, value: str) -> _E:
    """An option value given after ``--``, checked as Typer checks it before ``--``."""
    try:
        return kind(value)
    except ValueError:
        from kernelcfg.base.errors import closest

        allowed = [str(f.value) for f in kind]
        hint = closest(value, allowed)
        raise refuse(
            f"{flag}: invalid value {value!r}; allowed: {', '.join(allowed)}"
            + (f" (did you mean {hint!r}?)" if hint else ""),
            2,
        ) from None


class ListFormat(StrEnum):
    """Output formats of the listing commands."""

    table = "table"
    json = "json"


class ReportFormat(StrEnum):
    """Output formats of the checking commands."""

    table = "table"
    json = "json"
    github = "github"
    junit = "junit"
    sarif = "sarif"


VLLM_FLAGS_PASS_THROUGH: dict[str, bool] = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
}
"""Context settings of the commands that take vLLM's flags as arguments: unknown words
are theirs to read, not the framework's to refuse."""

ListFormatOption = Annotated[ListFormat, typer.Option("--format", help="Output format.")]
"""``--format`` of the commands that print a table or JSON."""
ReportFormatOption = Annotated[
    ReportFormat,
    typer.Option(
        "--format", metavar="FORMAT", help="Output format: table, json, github, junit or sarif."
    ),
]
"""``--format`` of the commands that also write CI reports."""


def silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class OutputError(Exception):
    """Standard output cannot take what kernelcfg writes (a full disk, a device error):
    exit 74 (``EX_IOERR``) with this message, never a traceback."""


def write_fully(fd: int, data: bytes | memoryview) -> None:
    """Write ``data`` to ``fd`` whole: a short write is continued, and a descriptor that
    another process made non-blocking is waited on while it is full (``select``), so that
    no byte is lost to ``BlockingIOError``. A closed pipe stays ``BrokenPipeError`` (the
    reader left: end quietly); any other failure is an :class:`OutputError`."""
    import os
    import select

    view = memoryview(data).cast("B")
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(f"cannot write standard output: {exc.strerror or exc}") from None


def patient_stdout() -> None:
    """Put standard output on :func:`write_fully`, so that every command's output (plain
    text, JSON, rich tables) arrives whole when its descriptor is non-blocking (a
    terminal shared with a Node.js program, a pipe made so by the reader); only the
    interpreter's own stdout, with a descriptor, is replaced (not a test's capture)."""
    stream = sys.stdout
    if stream is not sys.__stdout__ or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    stream.flush()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_WholeWrites(fd)),
        encoding=stream.encoding,
        errors=stream.errors,
        newline="\n",
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )


class _WholeWrites(io.RawIOBase):
    """A file descriptor written through :func:`write_fully` (never closed by it)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        """The descriptor written to."""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        import os

        return os.isatty(self.fd)

    def write(self, data: ReadableBuffer, /) -> int:
        """Write all of ``data``; return its length."""
        view = memoryview(data)
        write_fully(self.fd, view)
        return view.nbytes
