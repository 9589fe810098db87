"""``kernelcfg resolve``: one command line, a batch of them, or a matrix."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    REPORT_FORMATS,
    VLLM_FLAGS_PASS_THROUGH,
    FailOn,
    Format,
    choice_of,
    complete_flags,
    exit_code,
    note_fallback,
    print_problems,
    print_rich,
    refuse,
    silence_stdout,
    write_report,
    write_text,
)

_RESOLVE_HELP = """Resolve vLLM kernel flags for a release and a GPU; print the config
and its hash.

Flags are read exactly as `vllm serve` reads them: `--moe-backend X` or
`=X`, `_` or `-` in names, unambiguous prefixes, dotted keys
(`--kernel-config.moe_backend=x`, `--ir-op-priority.rms_norm=a,b`), JSON
values, `--config FILE.yaml`, `-O0`..`-O3`, `-cc.KEY=VALUE`. A whole
`vllm serve MODEL ...` line may follow `--`.

The target and context, among the flags:

  --device PRESET        h100, h200, b200, gb200, b300, rtx-pro-6000,
                         dgx-spark, a100, l40s, mi300x, mi325x, mi355x,
                         rx-7900-xtx, cpu, ...
  --platform KIND        cuda, rocm, xpu, cpu or tpu
  --capability X.Y       CUDA compute capability (9.0)
  --gfx-arch gfxNNN      ROCm architecture (gfx942)
  --cpu-features LIST    a CPU target's architecture and features
                         (x86_64,amx,avx512,avx512_bf16,amd; or
                         KERNELCFG_CPU_FEATURES); CPU presets: xeon-spr,
                         epyc-genoa, graviton4, ...
  --vllm-version X       release to resolve for (0.34, 0.34.0, v0.34.0;
                         or KERNELCFG_VLLM_VERSION); default the vLLM
                         installed here, else the newest known
  --architecture NAME    model architecture (repeatable)
  --hf-config-path PATH  a local model folder or config.json
  --download             fetch a hub id's config.json (org/name, not in
                         the local Hugging Face cache) from the Hub; or
                         KERNELCFG_DOWNLOAD=1; 10 s to connect, 30 s and
                         16 MiB a file at most
  --install KIND         pip, image, minimal or all: what is installed
                         beside vLLM (decides some picks); or
                         KERNELCFG_INSTALL; default per platform, judged
                         as if named: pip on CUDA and CPU, image on ROCm
                         and XPU
  --env KEY=VALUE        a variable the engine would see (repeatable);
                         this shell's VLLM_* and TORCH_COMPILE_DISABLE
                         count too

Without a target, kernelcfg uses KERNELCFG_DEVICE / KERNELCFG_PLATFORM,
then this machine's GPU (NVML, the ROCm KFD topology, then torch), then
cpu, and says so; in CI (CI=true) every command refuses instead.

After `--` (a pasted `vllm serve` line), kernelcfg's own options
(--format, --fail-on, --strict, --quiet, --explain-sources and the target
options above) still work, unless that release's `vllm serve` has an
option of the very same name: then it is vLLM's.
"""


@app.command(
    help=_RESOLVE_HELP,
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg resolve --moe-backend flashinfer_trtllm --device b200 --format json\n\n"
        "  kernelcfg resolve --device mi300x --env VLLM_ROCM_USE_AITER=1 -O3\n\n"
        "  kernelcfg resolve --device h100 -- vllm serve ./my-model "
        "--kernel-config.moe_backend=triton -tp 8\n\n"
        "  kernelcfg resolve --device h100 --download -- vllm serve deepseek-ai/DeepSeek-R1 "
        "-tp 8\n\n"
        "  kernelcfg resolve --batch matrix.jsonl --device b200 > results.jsonl\n\n"
        "Exit codes: 0 valid; 1 vLLM would refuse it at engine start-up (or the target "
        "cannot run it); 2 vLLM would refuse it while reading its arguments, or the input "
        "cannot be read (files: regular, at most 16 MiB, UTF-8; JSON/YAML nested at most "
        "64 levels); 70 a bug in kernelcfg; 74 standard output cannot be written (a full "
        "disk)."
    ),
)
def resolve(
    vllm_flags: Annotated[
        list[str] | None,
        typer.Argument(
            help="vLLM flags and the target flags above, in any order.",
            show_default=False,
            autocompletion=complete_flags,
        ),
    ] = None,
    fmt: Annotated[
        Format | None,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help="Output format: table (default), json, yaml, env, args, github, junit or "
            "sarif. With --batch: json (default: JSON lines), table (a summary), github, "
            "junit or sarif.",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch",
            help="Resolve JSON lines from FILE (- for stdin): each an argv array or "
            '{"id": ..., "argv": [...]}; the flags given here apply to every line.',
        ),
    ] = None,
    matrix: Annotated[
        list[str] | None,
        typer.Option(
            "--matrix",
            help="With --batch: resolve every line for each value, e.g. --matrix "
            "device=h100,b200 --matrix vllm_version=0.33,0.34 (repeatable; keys: device, "
            "platform, capability, gfx_arch, cpu_features, vllm_version, quant_scheme, install).",
            show_default=False,
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Treat warnings as errors (= --fail-on warning).")
    ] = False,
    fail_on: Annotated[
        FailOn,
        typer.Option(
            "--fail-on",
            help="What makes the exit code 1: error (default), warning, or never (report "
            "only). Notes never fail; unusable input is always 2.",
        ),
    ] = FailOn.error,
    quiet: Annotated[
        bool, typer.Option("--quiet", help="Print nothing; only the exit code.")
    ] = False,
    explain_sources: Annotated[
        bool,
        typer.Option("--explain-sources", help="Add where each value came from to the output."),
    ] = False,
    jobs: Annotated[
        str | None,
        typer.Option(
            "--jobs",
            "-j",
            help="With --batch (JSON lines): resolve in N worker processes, or auto (one per "
            "CPU; the default for a file, while standard input is read line by line); never "
            "more than the CPUs this process may use (affinity, cgroup quota); the output "
            "keeps the input's order.",
            show_default=False,
        ),
    ] = None,
) -> None:
    from kernelcfg.commands import pipeline
    from kernelcfg.output import render

    flags, late = _late_options(list(vllm_flags or []))
    if "--format" in late:
        fmt = choice_of(Format, "--format", late["--format"])
    if "--fail-on" in late:
        fail_on = choice_of(FailOn, "--fail-on", late["--fail-on"])
    if strict or "--strict" in late:
        fail_on = FailOn.warning
    strict = fail_on is FailOn.warning
    quiet = quiet or "--quiet" in late
    if quiet:
        from kernelcfg.cli.progress import silence

        silence()
    explain_sources = explain_sources or "--explain-sources" in late
    cells = _matrix(matrix or [])
    if batch is not None:
        workers = _jobs(jobs or ("1" if batch == "-" else "auto"))
        raise typer.Exit(
            _run_batch(batch, flags, fmt, fail_on=fail_on, quiet=quiet, cells=cells, jobs=workers)
        )
    if cells:
        raise refuse("--matrix expands --batch lines; give --batch FILE too", 2)
    fmt = fmt or Format.table
    wanted = fmt in (Format.json, Format.yaml, Format.env)
    result = pipeline.resolve_args(
        flags, pipeline.Request(command="resolve", want_compile_cache=wanted)
    )
    data = render.as_data(result, strict=strict, sources=explain_sources)
    code = exit_code(result, fail_on)
    # GitHub shows the annotations on stdout; the same lines on stderr would show twice.
    print_problems(data["problems"], quiet or fmt is Format.github)
    if not quiet:
        note_fallback(result)
    if quiet:
        raise typer.Exit(code)
    _write_one(fmt, result, data, code, flags, strict=strict)
    raise typer.Exit(code)


def _write_one(
    fmt: Format, result: Any, data: dict[str, Any], code: int, flags: list[str], *, strict: bool
) -> None:
    """One resolution on stdout, in ``fmt``."""
    from kernelcfg.commands import pipeline
    from kernelcfg.output import render

    if fmt is Format.args:
        import shlex

        if not isinstance(result, pipeline.Failure):
            write_text(shlex.join(render.as_args(result)) + "\n")
    elif fmt in REPORT_FORMATS:
        from kernelcfg.base.secrets import masked_words
        from kernelcfg.output.reports import Entry

        detail = " ".join(masked_words(flags))
        write_report(fmt, [Entry("resolve", code, data["problems"], detail)])
    elif fmt is Format.table:
        from kernelcfg.output import tables

        print_rich(tables.table(result, strict=strict, walk="sources" in data))
    else:
        text = {
            Format.json: lambda: render.as_json(data) + "\n",
            Format.yaml: lambda: render.as_yaml(data),
            Format.env: lambda: render.as_env(data, exit_code=code),
        }[fmt]()
        write_text(text)


_LATE_FLAGS = ("--strict", "--quiet", "--explain-sources")


def _jobs(value: str) -> int:
    """``--jobs``: a positive count or ``auto``."""
    from kernelcfg.output.parallel import available_jobs

    if value.strip().lower() == "auto":
        return available_jobs()
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= 256:
        raise refuse(f"--jobs {value!r}: give a count from 1 to 256, or auto", 2)
    return count


def _late_options(flags: list[str]) -> tuple[list[str], dict[str, str]]:
    """``resolve``'s own options typed after ``-- vllm serve …`` (a pasted line with
    ``--format json`` appended), unless that release's ``vllm serve`` has the name."""
    import os

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.flags import argv
    from kernelcfg.vllm import releases

    serve = argv.split_serve(flags)[1]
    if not serve:
        return flags, {}
    from kernelcfg.flags.serve_line.parser import options  # a vllm serve part only

    try:
        release = releases.choose(argv.split_version(flags), os.environ).release
        theirs = options(release).strings
    except KernelcfgError:
        return flags, {}
    late: dict[str, str] = {}
    names = {n: n for n in ("--format", "--fail-on") if n not in theirs}
    rest = argv.take_options(serve, names, late.__setitem__)
    kept = []
    for word in rest:
        if word in _LATE_FLAGS and word not in theirs:
            late[word] = ""
        else:
            kept.append(word)
    return flags[: len(flags) - len(serve)] + kept, late


_BATCH_REFUSED = (Format.yaml, Format.env, Format.args)


def _open_batch(path: str) -> Any:
    """The ``--batch`` input as a byte stream: stdin for ``-``, else a regular file."""
    from kernelcfg.base import bounded

    if path == "-":
        if sys.stdin is None:
            raise refuse("--batch -: standard input is closed", 2)
        return sys.stdin.buffer
    problem = bounded.file_problem(path)
    if problem is not None:
        hint = " (to read a pipe, use --batch - < PIPE)" if "pipe" in problem else ""
        raise refuse(f"--batch: cannot read {bounded.shown(path)}: {problem}{hint}", 2)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise refuse(
            f"--batch: cannot read {bounded.shown(path)}: {exc.strerror or exc}", 2
        ) from None


class _Out:
    """stdout for a stream of lines: written in small chunks, each chunk whole.

    Ctrl-C during a write is held until the write is done, so the output ends on a
    line boundary; a closed pipe (``| head``) ends the writing quietly.
    """

    def __init__(self, every: int) -> None:
        self.pending: list[bytes] = []
        self.lines = 0
        self.every = every
        self.closed = False
        self.writing = False
        self.interrupted = False

    def add(self, data: bytes, lines: int = 1) -> None:
        """``lines`` whole lines (UTF-8), each ending in a newline."""
        self.pending.append(data)
        self.lines += lines
        if self.lines >= self.every:
            self.flush()

    def on_sigint(self, signum: int, frame: object) -> None:
        del signum, frame
        self.interrupted = True
        if not self.writing:
            raise KeyboardInterrupt

    def flush(self) -> None:
        if self.closed or not self.pending:
            self.pending.clear()
            self.lines = 0
            return
        self.writing = True
        try:
            _write_whole(b"".join(self.pending))
        except BrokenPipeError:
            self.closed = True
            silence_stdout()
        finally:
            self.writing = False
            self.pending.clear()
            self.lines = 0
        if self.interrupted:
            raise KeyboardInterrupt


def _write_whole(data: bytes) -> None:
    """Write ``data`` to stdout completely (:func:`write_fully`: short writes, a signal,
    a non-blocking pipe that is full)."""
    from kernelcfg.cli.common import write_fully

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream (tests)
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()
        return
    sys.stdout.flush()
    write_fully(fd, data)


MAX_MATRIX_CELLS = 10_000
"""The most cells a ``--matrix`` may have (each batch line is resolved once per cell)."""


def _matrix(axes: list[str]) -> list[dict[str, str]]:
    """``--matrix KEY=A,B`` axes as their cells (every combination, in order)."""
    import itertools
    import math

    from kernelcfg.base.errors import closest
    from kernelcfg.commands.pipeline import LINE_CONTEXT

    keys = [k for k in LINE_CONTEXT if k != "env"]
    named: list[tuple[str, list[str]]] = []
    for axis in axes:
        key, sep, values = axis.partition("=")
        key = key.replace("-", "_")
        if not sep or key not in keys or not values:
            hint = closest(key, keys)
            raise refuse(
                f"--matrix: expected KEY=V1,V2 with KEY one of {', '.join(keys)}, got {axis!r}"
                + (f" (did you mean {hint!r}?)" if hint and key not in keys else ""),
                2,
            )
        named.append((key, [v for v in values.split(",") if v]))
    cells = math.prod(len(v) for _, v in named)
    if cells > MAX_MATRIX_CELLS:
        raise refuse(
            f"--matrix: {cells:,} cells (the product of the axes' value counts); at most "
            f"{MAX_MATRIX_CELLS:,}: split the matrix into several runs",
            2,
        )
    return (
        [
            dict(zip([k for k, _ in named], combo, strict=True))
            for combo in itertools.product(*(v for _, v in named))
        ]
        if named
        else []
    )


def _run_batch(
    path: str,
    flags: list[str],
    fmt: Format | None,
    *,
    fail_on: FailOn,
    quiet: bool,
    cells: list[dict[str, str]],
    jobs: int = 1,
) -> int:
    """``--batch``: one JSON line per input line, written as they are known; or a report.
    A closed stdout ends it at once, quietly, with the code of the lines made so far."""
    import signal
    from contextlib import closing

    from kernelcfg.base import bounded
    from kernelcfg.commands import pipeline
    from kernelcfg.output import parallel

    if fmt in _BATCH_REFUSED:
        assert fmt is not None
        raise refuse(
            f"--format {fmt.value} describes one resolution; with --batch use json (one line "
            "per input line), table (a summary) or github, junit, sarif",
            2,
        )
    run = _Batch(
        fmt,
        fail_on,
        quiet=quiet,
        matrix=bool(cells),
        out=_Out(1 if path == "-" else 256),
        source=None if path == "-" else path,
    )
    stream = _open_batch(path)
    previous = signal.signal(signal.SIGINT, run.out.on_sigint)
    try:
        with stream:
            if run.collects:
                for line in pipeline.batch(bounded.lines(stream), flags, matrix=cells):
                    run.take(line)
            else:
                made = parallel.json_lines(
                    bounded.lines(stream),
                    flags,
                    cells,
                    jobs=jobs,
                    strict=run.strict,
                    never=fail_on is FailOn.never,
                )
                with closing(made):  # its workers stop with it
                    for rendered in made:
                        run.take_rendered(rendered)
                        if run.out.closed:  # the reader left (| head): read no further
                            return run.worst
        run.out.flush()
        if not run.out.closed:
            run.tally()
    except KeyboardInterrupt:
        run.out.pending.clear()
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
    run.report()
    return run.worst


@dataclass(frozen=True)
class _FallbackTarget:
    source: str
    note: str | None


class _Fallback:
    """What :func:`note_fallback` reads of a result resolved for the CPU fallback."""

    def __init__(self, note: str | None) -> None:
        self.target = _FallbackTarget("fallback", note)


class _Batch:
    """The state of one ``--batch`` run: the worst exit code, counts, what to report."""

    def __init__(
        self,
        fmt: Format | None,
        fail_on: FailOn,
        *,
        quiet: bool,
        matrix: bool,
        out: _Out,
        source: str | None = None,
    ) -> None:
        self.fmt = fmt
        self.fail_on = fail_on
        self.strict = fail_on is FailOn.warning
        self.quiet = quiet
        self.matrix = matrix
        self.out = out
        self.report_entries: list[Any] = []
        self.rows: list[dict[str, Any]] = []
        self.counts: dict[int, int] = {}
        self.worst = 0
        self.noted = quiet
        self.source = source
        """The batch file, where the reports place each line (none for standard input)."""

    @property
    def collects(self) -> bool:
        """A CI report or the summary table: written at the end, not line by line."""
        return self.fmt in REPORT_FORMATS or self.fmt is Format.table

    def _count(self, code: int, lines: int = 1) -> None:
        self.worst = max(self.worst, code)
        self.counts[code] = self.counts.get(code, 0) + lines

    def take(self, line: Any) -> None:
        """One resolved line of a summary or report."""
        from kernelcfg.commands import pipeline

        result = line.result
        code = exit_code(result, self.fail_on)
        self._count(code)
        if isinstance(result, pipeline.Failure) and result.traceback:
            sys.stderr.write(result.traceback)
        if not self.noted:
            self.noted = note_fallback(result)
        if not self.quiet:
            self._collect(line, result, code)

    def take_rendered(self, chunk: Any) -> None:
        """A chunk of JSON lines, made here or by a worker (or a note of the run's)."""
        for note in () if self.quiet else chunk.notes:
            sys.stderr.write(f"note: {note}\n")
        for code, count in chunk.codes.items():
            self._count(code, count)
        for trace in chunk.tracebacks:
            sys.stderr.write(trace)
        if not self.noted and chunk.fallback_note is not None:
            self.noted = note_fallback(_Fallback(chunk.fallback_note or None))
        if chunk.lines and not (self.quiet or self.out.closed):
            self.out.add(chunk.data, chunk.lines)

    def _collect(self, line: Any, result: Any, code: int) -> None:
        """A report's entry for ``line`` (placed on its line of the batch file, named with
        its matrix cell), or a summary table's row."""
        from kernelcfg.output import render, tables
        from kernelcfg.output.reports import Entry

        if self.fmt in REPORT_FORMATS:
            problems = render.as_data(result, strict=self.strict)["problems"]
            self.report_entries.append(
                Entry(
                    str(line.id),
                    code,
                    problems,
                    file=self.source,
                    line=line.number,
                    cell=dict(line.cell),
                )
            )
        elif len(self.rows) < tables.SUMMARY_ROWS:
            self.rows.append(tables.summary_row(result, line.id, code, strict=self.strict))

    def tally(self) -> None:
        """``kernelcfg: 20,000 results: 5,848 exit 0, …`` on stderr."""
        if not self.quiet:
            tally = ", ".join(f"{n:,} exit {c}" for c, n in sorted(self.counts.items()))
            sys.stderr.write(
                f"kernelcfg: {sum(self.counts.values()):,} results: {tally or 'none'}\n"
            )

    def report(self) -> None:
        if self.quiet:
            return
        if self.fmt in REPORT_FORMATS:
            write_report(self.fmt.value if self.fmt else "github", self.report_entries)
        elif self.fmt is Format.table:
            from kernelcfg.output import tables

            print_rich(tables.summary_table(self.rows, self.counts))
