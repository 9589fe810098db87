"""The ``kernelcfg`` command: parse, call the library, render, exit. Nothing more.

Only this module prints and exits. stdout carries only the requested format;
problems go to stderr, one line each.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer

from kernelcfg._version import __version__

app = typer.Typer(
    name="kernelcfg",
    pretty_exceptions_enable=False,
    help=(
        "Tell what vLLM will do with its kernel flags, before a GPU is booked.\n\n"
        "kernelcfg reads vLLM's kernel flags (--moe-backend, --linear-backend, "
        "--kernel-config, -O, -cc, ...) exactly as a chosen vLLM release reads them, "
        "resolves them for a chosen GPU, and prints the resolved configuration with its "
        "compile-cache hash -- the digest vLLM itself computes."
    ),
    no_args_is_help=True,
    add_completion=True,
    # No -h: vLLM flags such as -cc.cudagraph_mode hold an "h", and click reads
    # unknown single-dash words as clusters of short options.
    context_settings={"help_option_names": ["--help"]},
)


class FailOn(StrEnum):
    """What makes ``resolve`` exit 1."""

    error = "error"
    warning = "warning"
    never = "never"


def _exit_code(result: Any, fail_on: FailOn) -> int:
    """The exit code under the run's policy: 2 and 70 always stand; 1 as ``fail_on``."""
    from kernelcfg import render

    code = render.exit_code_of(result, strict=fail_on is FailOn.warning)
    return 0 if code == 1 and fail_on is FailOn.never else code


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


def _write_report(fmt: str, entries: list[Any]) -> None:
    """Print a CI report (github, junit or sarif) of ``entries``."""
    from kernelcfg import reports

    sys.stdout.write(
        {"github": reports.github, "junit": reports.junit, "sarif": reports.sarif}[fmt](entries)
    )


_TABLE_ROWS = 1000
"""A people-facing table shows at most this many rows; the machine formats show all."""


def _cell(text: str, limit: int = 300) -> Any:
    """User-controlled text for a rich table: no markup, one line, cut to ``limit``."""
    from rich.text import Text

    from kernelcfg.bounded import one_line

    if len(text) > limit:
        text = text[:limit] + f"… ({len(text):,} characters)"
    return Text(one_line(text))


def _write_json(data: dict[str, Any]) -> None:
    """A command's JSON output: one envelope for every command, ``format_version`` first
    (the same version as ``resolve``'s; the shapes are in ``kernelcfg schema --of``)."""
    import json

    from kernelcfg.render import FORMAT_VERSION

    envelope = {"format_version": FORMAT_VERSION, **data}
    sys.stdout.write(json.dumps(envelope, indent=2, allow_nan=False) + "\n")


def _refuse(message: str, code: int) -> typer.Exit:
    """Write ``error: MESSAGE`` to stderr; return the exit to raise."""
    sys.stderr.write(f"error: {message}\n")
    return typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        from kernelcfg import releases

        typer.echo(
            f"kernelcfg {__version__} (vLLM releases: {', '.join(releases.known_versions())})"
        )
        raise typer.Exit()


@app.callback()
def main_callback(
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


_KERNEL_FLAG_CHOICES = {
    "--moe-backend": "moe_backend",
    "--linear-backend": "linear_backend",
    "--sparse-indexer-topk-backend": "sparse_indexer_topk_backend",
    "--all2all-backend": "all2all_backend",
}


def _complete_flags(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """Complete backend names after a backend flag, and the flag names themselves."""
    del ctx
    from kernelcfg import releases

    release = releases.load(None)
    previous = args[-1] if args else ""
    if previous in _KERNEL_FLAG_CHOICES:
        values = release.choices(_KERNEL_FLAG_CHOICES[previous])
        passthrough = release.constant("PASSTHROUGH_ALL2ALL_BACKEND")
        return [v for v in values if v.startswith(incomplete) and v != passthrough]
    flags = [
        *_KERNEL_FLAG_CHOICES,
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


def _note_fallback(result: Any) -> bool:
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


def _print_problems(problems: list[dict[str, Any]], quiet: bool) -> None:
    if quiet:
        return
    for problem in problems:
        if problem["severity"] == "info":
            continue
        sys.stderr.write(f"{problem['severity']}: {problem['message']}\n")


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
  --vllm-version X       release to resolve for (0.34, 0.34.0, v0.34.0;
                         or KERNELCFG_VLLM_VERSION); default the vLLM
                         installed here, else the newest known
  --architecture NAME    model architecture (repeatable)
  --hf-config-path PATH  a local model folder or config.json
  --env KEY=VALUE        a variable the engine would see (repeatable);
                         this shell's VLLM_* and TORCH_COMPILE_DISABLE
                         count too

Without a target, kernelcfg uses KERNELCFG_DEVICE / KERNELCFG_PLATFORM,
then this machine's GPU (NVML, the ROCm KFD topology, then torch), then
cpu, and says so.

After `--` (a pasted `vllm serve` line), kernelcfg's own options
(--format, --fail-on, --strict, --quiet, --explain-sources and the target
options above) still work, unless that release's `vllm serve` has an
option of the very same name: then it is vLLM's.
"""


@app.command(
    help=_RESOLVE_HELP,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    epilog=(
        "Examples:\n\n"
        "  kernelcfg resolve --moe-backend flashinfer_trtllm --device b200 --format json\n\n"
        "  kernelcfg resolve --device mi300x --env VLLM_ROCM_USE_AITER=1 -O3\n\n"
        "  kernelcfg resolve --device h100 -- vllm serve ./my-model "
        "--kernel-config.moe_backend=triton -tp 8\n\n"
        "  kernelcfg resolve --batch matrix.jsonl --device b200 > results.jsonl\n\n"
        "Exit codes: 0 valid; 1 vLLM would refuse it at engine start-up (or the target "
        "cannot run it); 2 vLLM would refuse it while reading its arguments, or the input "
        "cannot be read (files: regular, at most 16 MiB, UTF-8; JSON/YAML nested at most "
        "64 levels); 70 a bug in kernelcfg."
    ),
)
def resolve(
    vllm_flags: Annotated[
        list[str] | None,
        typer.Argument(
            help="vLLM flags and the target flags above, in any order.",
            show_default=False,
            autocompletion=_complete_flags,
        ),
    ] = None,
    fmt: Annotated[
        Format | None,
        typer.Option(
            "--format",
            help="Output format (default table; with --batch, JSON lines). With --batch: "
            "json, table (a summary), github, junit or sarif.",
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
            "platform, capability, gfx_arch, vllm_version, quant_scheme).",
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
) -> None:
    from kernelcfg import pipeline, render

    flags, late = _late_options(list(vllm_flags or []))
    if "--format" in late:
        fmt = _choice_of(Format, "--format", late["--format"])
    if "--fail-on" in late:
        fail_on = _choice_of(FailOn, "--fail-on", late["--fail-on"])
    if strict or "--strict" in late:
        fail_on = FailOn.warning
    strict = fail_on is FailOn.warning
    quiet = quiet or "--quiet" in late
    explain_sources = explain_sources or "--explain-sources" in late
    cells = _matrix(matrix or [])
    if batch is not None:
        raise typer.Exit(_run_batch(batch, flags, fmt, fail_on=fail_on, quiet=quiet, cells=cells))
    if cells:
        raise _refuse("--matrix expands --batch lines; give --batch FILE too", 2)
    result = pipeline.resolve_args(flags)
    fmt = fmt or Format.table
    data = render.as_data(result, strict=strict, sources=explain_sources)
    code = _exit_code(result, fail_on)
    # GitHub shows the annotations on stdout; the same lines on stderr would show twice.
    _print_problems(data["problems"], quiet or fmt is Format.github)
    if not quiet:
        _note_fallback(result)
    if quiet:
        raise typer.Exit(code)
    if fmt is Format.json:
        sys.stdout.write(render.as_json(data) + "\n")
    elif fmt is Format.yaml:
        sys.stdout.write(render.as_yaml(data))
    elif fmt is Format.env:
        sys.stdout.write(render.as_env(data, exit_code=code))
    elif fmt is Format.args:
        import shlex

        if isinstance(result, pipeline.Failure):
            raise typer.Exit(code)
        sys.stdout.write(shlex.join(render.as_args(result)) + "\n")
    elif fmt in (Format.github, Format.junit, Format.sarif):
        from kernelcfg.reports import Entry

        _write_report(fmt, [Entry("resolve", code, data["problems"], " ".join(flags))])
    else:
        from rich.console import Console

        Console().print(render.table(result, strict=strict))
    raise typer.Exit(code)


_LATE_FLAGS = ("--strict", "--quiet", "--explain-sources")


def _late_options(flags: list[str]) -> tuple[list[str], dict[str, str]]:
    """``resolve``'s own options typed after ``-- vllm serve …`` (a pasted line with
    ``--format json`` appended), unless that release's ``vllm serve`` has the name."""
    import os

    from kernelcfg import argv, releases, serve_parser
    from kernelcfg.errors import KernelcfgError

    serve = argv.split_serve(flags)[1]
    if not serve:
        return flags, {}
    try:
        release = releases.choose(argv.split_version(flags), os.environ).release
        theirs = serve_parser.options(release).strings
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


_E = TypeVar("_E", bound=StrEnum)


def _choice_of(kind: type[_E], flag: str, value: str) -> _E:
    """An option value given after ``--``, checked as Typer checks it before ``--``."""
    try:
        return kind(value)
    except ValueError:
        from kernelcfg.errors import closest

        allowed = [str(f.value) for f in kind]
        hint = closest(value, allowed)
        raise _refuse(
            f"{flag}: invalid value {value!r}; allowed: {', '.join(allowed)}"
            + (f" (did you mean {hint!r}?)" if hint else ""),
            2,
        ) from None


_BATCH_REFUSED = (Format.yaml, Format.env, Format.args)


def _open_batch(path: str) -> Any:
    """The ``--batch`` input as a byte stream: stdin for ``-``, else a regular file."""
    from kernelcfg import bounded

    if path == "-":
        if sys.stdin is None:
            raise _refuse("--batch -: standard input is closed", 2)
        return sys.stdin.buffer
    problem = bounded.file_problem(path)
    if problem is not None:
        hint = " (to read a pipe, use --batch - < PIPE)" if "pipe" in problem else ""
        raise _refuse(f"--batch: cannot read {bounded.shown(path)}: {problem}{hint}", 2)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise _refuse(
            f"--batch: cannot read {bounded.shown(path)}: {exc.strerror or exc}", 2
        ) from None


class _Out:
    """stdout for a stream of lines: written in small chunks, each chunk whole.

    Ctrl-C during a write is held until the write is done, so the output ends on a
    line boundary; a closed pipe (``| head``) ends the writing quietly.
    """

    def __init__(self, every: int) -> None:
        self.pending: list[str] = []
        self.every = every
        self.closed = False
        self.writing = False
        self.interrupted = False

    def add(self, line: str) -> None:
        self.pending.append(line)
        if len(self.pending) >= self.every:
            self.flush()

    def on_sigint(self, signum: int, frame: object) -> None:
        del signum, frame
        self.interrupted = True
        if not self.writing:
            raise KeyboardInterrupt

    def flush(self) -> None:
        if self.closed or not self.pending:
            self.pending.clear()
            return
        self.writing = True
        try:
            _write_whole("\n".join(self.pending) + "\n")
        except BrokenPipeError:
            self.closed = True
            _silence_stdout()
        finally:
            self.writing = False
            self.pending.clear()
        if self.interrupted:
            raise KeyboardInterrupt


def _write_whole(text: str) -> None:
    """Write ``text`` to stdout completely, retrying short writes (a full pipe, a signal)."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream (tests)
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    data = memoryview(text.encode("utf-8", "backslashreplace"))
    while data:
        data = data[os.write(fd, data) :]


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _matrix(axes: list[str]) -> list[dict[str, str]]:
    """``--matrix KEY=A,B`` axes as their cells (every combination, in order)."""
    import itertools

    from kernelcfg.errors import closest
    from kernelcfg.pipeline import LINE_CONTEXT

    keys = [k for k in LINE_CONTEXT if k != "env"]
    named: list[tuple[str, list[str]]] = []
    for axis in axes:
        key, sep, values = axis.partition("=")
        key = key.replace("-", "_")
        if not sep or key not in keys or not values:
            hint = closest(key, keys)
            raise _refuse(
                f"--matrix: expected KEY=V1,V2 with KEY one of {', '.join(keys)}, got {axis!r}"
                + (f" (did you mean {hint!r}?)" if hint and key not in keys else ""),
                2,
            )
        named.append((key, [v for v in values.split(",") if v]))
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
) -> int:
    """``--batch``: one JSON line per input line, written as they are known; or a report."""
    import signal

    from kernelcfg import bounded, pipeline, render
    from kernelcfg.reports import Entry

    strict = fail_on is FailOn.warning
    if fmt in _BATCH_REFUSED:
        assert fmt is not None
        raise _refuse(
            f"--format {fmt.value} describes one resolution; with --batch use json (one line "
            "per input line), table (a summary) or github, junit, sarif",
            2,
        )
    report = fmt in (Format.github, Format.junit, Format.sarif)
    summary = fmt is Format.table
    entries: list[Entry] = []
    rows: list[dict[str, Any]] = []
    out = _Out(1 if path == "-" else 256)
    worst = 0
    counts: dict[int, int] = {}
    noted = quiet
    stream = _open_batch(path)
    previous = signal.signal(signal.SIGINT, out.on_sigint)
    try:
        with stream:
            for line in pipeline.batch(bounded.lines(stream), flags, matrix=cells):
                result = line.result
                code = _exit_code(result, fail_on)
                worst = max(worst, code)
                counts[code] = counts.get(code, 0) + 1
                if isinstance(result, pipeline.Failure) and result.traceback:
                    sys.stderr.write(result.traceback)
                if not noted:
                    noted = _note_fallback(result)
                if quiet or out.closed:
                    continue
                if report or summary:
                    problems = render.as_data(result, strict=strict)["problems"]
                    if report:
                        entries.append(Entry(str(line.id), code, problems))
                    else:
                        rows.append(render.summary_row(result, line.id, code, strict=strict))
                    continue
                extra: dict[str, Any] = {"id": line.id, "exit_code": code}
                if cells:
                    extra["matrix"] = line.cell
                out.add(render.json_line(result, extra, strict=strict))
        out.flush()
        if not quiet:
            tally = ", ".join(f"{n:,} exit {c}" for c, n in sorted(counts.items()))
            sys.stderr.write(f"kernelcfg: {sum(counts.values()):,} results: {tally or 'none'}\n")
    except KeyboardInterrupt:
        out.pending.clear()
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
    if report and not quiet:
        _write_report(fmt.value if fmt else "github", entries)
    if summary and not quiet:
        from rich.console import Console

        Console().print(render.summary_table(rows))
    return worst


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


@app.command()
def versions(
    old: Annotated[
        str | None, typer.Argument(help="A release, e.g. 0.32.", show_default=False)
    ] = None,
    new: Annotated[
        str | None, typer.Argument(help="A later release, e.g. 0.34.", show_default=False)
    ] = None,
    fmt: Annotated[ListFormat, typer.Option("--format", help="Output format.")] = ListFormat.table,
) -> None:
    """List the vLLM releases kernelcfg knows; with two, what changed between them.

    Examples: `kernelcfg versions`, `kernelcfg versions 0.33 0.34 --format json`.
    """

    from kernelcfg import versions as versions_mod
    from kernelcfg.errors import KernelcfgError

    if (old is None) != (new is None):
        raise _refuse("give two releases to compare, or none to list them", 2)
    try:
        data: Any = versions_mod.compare(old, new) if old and new else versions_mod.summary()
    except KernelcfgError as exc:
        raise _refuse(exc.message, exc.exit_code) from None
    if fmt is ListFormat.json:
        _write_json(data if isinstance(data, dict) else {"releases": data})
        return
    from rich.console import Console
    from rich.table import Table

    from kernelcfg.render import fold

    console = Console()
    if isinstance(data, list):
        table = fold(
            Table("release", "fields", "IR ops", "MoE", "linear", "sparse top-k", "all2all")
        )
        for row in data:
            c = row["choices"]
            table.add_row(
                row["version"],
                str(len(row["fields"])),
                ", ".join(row["ir_ops"]),
                str(c.get("MoEBackend", 0)),
                str(c.get("LinearBackend", 0)),
                str(c.get("SparseIndexerTopkBackend", "-")),
                str(c.get("All2AllBackend", 0)),
            )
        console.print(table)
        return
    table = fold(Table("what", "change", title=f"vLLM {data['old']} -> {data['new']}"))
    if data["hash_scheme"]:
        change = data["hash_scheme"]
        table.add_row("hash", f"{change['old']} -> {change['new']}: {change['means']}")
    for key in ("added", "removed"):
        for name in data["fields"][key]:
            table.add_row("field", f"{key} {name}")
    for change in data["fields"]["changed"]:
        table.add_row(
            "field", f"{change['field']}: {change['what']} {change['old']!r} -> {change['new']!r}"
        )
    for name, diff in data["choices"].items():
        for key in ("added", "removed"):
            if diff[key]:
                table.add_row(name, f"{key} {', '.join(diff[key])}")
    for key in ("added", "removed"):
        if data["hash_inputs"][key]:
            table.add_row("hash input", f"{key} {', '.join(data['hash_inputs'][key])}")
        if data["ir_ops"][key]:
            table.add_row("IR op", f"{key} {', '.join(data['ir_ops'][key])}")
    for op, diff in data["ir_providers"].items():
        for key in ("added", "removed"):
            if diff[key]:
                table.add_row(f"IR {op}", f"provider {key} {', '.join(diff[key])}")
        for change in diff["uuid_changed"]:
            table.add_row(
                f"IR {op}", f"{change['provider']}: {change['file']} changed (hash changes)"
            )
    for name, change in data["constants"].items():
        table.add_row("constant", f"{name}: {change['old']} -> {change['new']}")
    for name, change in data["functions"].items():
        table.add_row("function", f"{name}: {change['old']} -> {change['new']}")
    for kind in data["platform_ir_defaults_changed"]:
        table.add_row("platform rule", f"IR-op defaults on {kind} changed")
    env = data["environment"]
    for key in ("added", "removed"):
        if env[key]:
            table.add_row("environment", f"{len(env[key])} variables {key}")
    if env["refused"]:
        table.add_row("environment", f"refused at start-up: {', '.join(env['refused'])}")
    console.print(table)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    epilog=(
        "Examples:\n\n"
        "  kernelcfg diff --a '--moe-backend triton' --b '--moe-backend cutlass' --device h100\n\n"
        "  kernelcfg diff yesterday.json today.json\n\n"
        "  kernelcfg diff --a '--vllm-version 0.32' --b '--vllm-version 0.33' --device b200\n\n"
        "Exit codes (as kubectl diff): 0 same hash, 1 different hash, 2 unusable input."
    ),
)
def diff(
    sides: Annotated[
        list[str] | None,
        typer.Argument(
            help="Two saved `resolve --format json` files (or YAML --config files), and/or "
            "context flags (--device, --vllm-version, --env ...) that apply to both sides.",
            show_default=False,
        ),
    ] = None,
    a: Annotated[
        str | None, typer.Option("--a", help="Side A: flags, a .yaml, or a .json.")
    ] = None,
    b: Annotated[
        str | None, typer.Option("--b", help="Side B: flags, a .yaml, or a .json.")
    ] = None,
    fmt: Annotated[ListFormat, typer.Option("--format", help="Output format.")] = ListFormat.table,
) -> None:
    """Why two kernel configurations have different compile-cache hashes.

    Names each hash factor that differs (field, A value, B value), the IR-op lists and
    provider files behind a differing IR sub-hash, and, apart, the fields that differ
    but are not hashed -- they cannot explain a cache miss.
    """

    from kernelcfg import diff as diff_mod
    from kernelcfg.bounded import file_problem, one_line
    from kernelcfg.errors import KernelcfgError

    rest = list(sides or [])
    files = [x for x in rest if x.endswith((".json", ".yaml", ".yml")) and file_problem(x) is None]
    common = [x for x in rest if x not in files]
    if a is None and b is None and len(files) == 2:
        a, b = files
    elif files:
        common += ["--config", files[0]] if len(files) == 1 else files
    if a is None or b is None:
        raise _refuse("give both sides: --a and --b, or two files", 2)
    try:
        data = diff_mod.compare(diff_mod.load_side(a, common), diff_mod.load_side(b, common))
    except KernelcfgError as exc:
        raise _refuse(exc.message, 2) from None
    code = 0 if data["same_hash"] else 1
    if fmt is ListFormat.json:
        _write_json(data)
        raise typer.Exit(code)
    from rich.console import Console
    from rich.text import Text

    console = Console()
    for side in ("a", "b"):
        label = one_line(f"{data[side]['label']}, vLLM {data[side]['vllm_version']}")
        console.print(Text(f"{side.upper()} {data[side]['hash']}  ({label})"))
    console.print(Text(one_line(data["summary"])))
    if data["hashed_differences"]:
        console.print(
            _differences("hashed field", "hash factors that differ", data["hashed_differences"])
        )
    for row in data["ir_op_priority_lists"]:
        console.print(f"IR {row['op']}: A {row['a']}  B {row['b']}")
    for row in data["ir_provider_files"]:
        console.print(
            f"IR {row['op']}/{row['provider']}: {row['file']} differs between the releases"
        )
    if data["not_hashed_differences"]:
        console.print(
            _differences(
                "field (not hashed)",
                "differ, but cannot explain a cache miss",
                data["not_hashed_differences"],
            )
        )
    raise typer.Exit(code)


def _differences(header: str, title: str, rows: list[dict[str, Any]]) -> Any:
    """A ``diff`` table: field, A, B (values as JSON; user text kept on one line)."""
    import json

    from rich.table import Table
    from rich.text import Text

    from kernelcfg.bounded import one_line
    from kernelcfg.render import fold

    table = fold(Table(header, "A", "B", title=title))
    for row in rows:
        cells = (row["field"], json.dumps(row["a"]), json.dumps(row["b"]))
        table.add_row(*(Text(one_line(str(x))) for x in cells))
    return table


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
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
    fmt: Annotated[ReportFormat, typer.Option("--format", help="Output format.")] = (
        ReportFormat.table
    ),
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="What makes the exit code 1.")
    ] = FailOn.error,
) -> None:
    """Resolve every `vllm serve` line written in files: shell, YAML, Dockerfiles, docs.

    For pre-commit hooks and CI: each line is read as that release's `vllm serve`
    reads it and resolved for the target given; problems are reported with file and
    line.
    """

    from kernelcfg import pipeline, render
    from kernelcfg import scan as scan_mod
    from kernelcfg.argv import CONTEXT_OPTIONS, take_options
    from kernelcfg.errors import KernelcfgError
    from kernelcfg.problems import Problem
    from kernelcfg.reports import Entry

    context: list[str] = []
    try:
        files = take_options(
            list(args or []), CONTEXT_OPTIONS, lambda name, value: context.extend([name, value])
        )
    except KernelcfgError as exc:
        raise _refuse(exc.message, 2) from None
    odd = [f for f in files if f.startswith("-")]
    if odd:
        raise _refuse(f"scan: {odd[0]!r} is not a file nor a target option", 2)
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
            code = _exit_code(result, fail_on)
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
        _write_json({"lines": rows})
    elif fmt in (ReportFormat.github, ReportFormat.junit, ReportFormat.sarif):
        _write_report(fmt, entries)
    else:
        for e in entries:
            shown = [p for p in e.problems if p["severity"] != "info"]
            status = "ok" if e.exit_code == 0 else f"exit {e.exit_code}"
            sys.stdout.write(f"{e.name}: {status}\n")
            for p in shown:
                sys.stdout.write(f"  {p['severity']}: {p['message']}\n")
        if not entries:
            sys.stdout.write("no vllm serve lines found\n")
    raise typer.Exit(worst)


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
    fmt: Annotated[ReportFormat, typer.Option("--format", help="Output format.")] = (
        ReportFormat.table
    ),
) -> None:
    """Check VLLM_* variables against a vLLM release: typos, removed ones and their flags.

    Reports variables the release does not know (typos, removed ones), removed
    variables that a flag replaced (VLLM_USE_FLASHINFER_MOE_FP8 -> --moe-backend ...),
    and what the variables that steer kernel resolution change. Exit 1 when a variable
    vLLM would ignore is set, 0 otherwise, 2 for unusable input.
    """
    import os

    from kernelcfg import lint_env as lint_mod
    from kernelcfg import releases
    from kernelcfg.errors import KernelcfgError

    try:
        release = releases.load(vllm_version)
        environ = lint_mod.read_env_file(env_file) if env_file else dict(os.environ)
    except KernelcfgError as exc:
        raise _refuse(exc.message, 2) from None
    findings = lint_mod.lint(environ, release)
    code = max((_finding_code(f) for f in findings), default=0)
    if fmt is ReportFormat.json:
        data = {"vllm_version": release.version, "findings": [f.as_dict() for f in findings]}
        _write_json(data)
    elif fmt in (ReportFormat.github, ReportFormat.junit, ReportFormat.sarif):
        from kernelcfg.reports import Entry

        entries = [Entry(f.variable, _finding_code(f), [f.as_dict()], f.value) for f in findings]
        _write_report(fmt, entries)
    else:
        from rich.console import Console
        from rich.table import Table

        from kernelcfg.render import fold

        table = fold(Table("variable", "value", "finding", title=f"vLLM {release.version}"))
        for f in findings[:_TABLE_ROWS]:
            style = {"error": "red", "warning": "yellow"}.get(f.severity, "dim")
            table.add_row(_cell(f.variable), _cell(f.value), _cell(f.message, 2000), style=style)
        if len(findings) > _TABLE_ROWS:
            table.caption = (
                f"the first {_TABLE_ROWS:,} of {len(findings):,} findings; --format json has all"
            )
        Console().print(table if findings else "no kernel-relevant variables set")
    raise typer.Exit(code)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
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
            "--vllm-version, --quant-scheme, --quantization, --architecture, --env, -ep.",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="Output format.")] = (
        ReportFormat.table
    ),
) -> None:
    """Every backend value and whether it can run on the target: runs, cannot run, depends.

    The matrix CI users ask for: each value of --moe-backend, --linear-backend and
    --sparse-indexer-topk-backend with its verdict and the reason, for the release and
    target given. Without a quantisation scheme, only what fails for every scheme is
    "cannot run".
    """

    from kernelcfg import constraints, pipeline
    from kernelcfg.errors import KernelcfgError

    try:
        release, target, inputs = pipeline.prepare(list(flags or []))
    except KernelcfgError as exc:
        raise _refuse(exc.message, exc.exit_code) from None
    ctx = constraints.Context.of(target, release.version, inputs)
    scheme = ctx.scheme
    choices = {name: release.choices(name) for name in constraints.FIELDS}
    verdicts = constraints.matrix(ctx, choices)
    if fmt in (ReportFormat.github, ReportFormat.junit, ReportFormat.sarif):
        from kernelcfg.reports import Entry

        entries = [
            Entry(
                f"{v.field}={v.value}",
                1 if v.status == "cannot-run" else 0,
                [p.as_dict()] if (p := v.problem()) is not None else [],
            )
            for v in verdicts
        ]
        _write_report(fmt, entries)
        return
    if fmt is ReportFormat.json:
        data = {
            "vllm_version": release.version,
            "platform": target.as_dict(),
            "quant_scheme": scheme,
            "backends": [v.as_dict() for v in verdicts],
        }
        _write_json(data)
        return
    from rich.console import Console
    from rich.table import Table

    from kernelcfg.render import fold

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
    title = f"vLLM {release.version} on {target.device}"
    if scheme:
        title += f", {scheme}"
    elif ctx.possible:
        title += f", --quantization {inputs.quantization} ({' or '.join(ctx.possible)})"
    console = Console()
    console.print(title, style="bold")
    for field_name in dict.fromkeys(v.field for v in verdicts):
        table = fold(Table("value", "verdict", "reason", title=f"--{field_name.replace('_', '-')}"))
        for v in verdicts:
            if v.field == field_name:
                table.add_row(v.value, marks[v.status], v.reason, style=styles[v.status])
        console.print(table)


@app.command()
def explain(
    what: Annotated[
        str, typer.Argument(help="FIELD or FIELD=VALUE, e.g. moe_backend=flashinfer_trtllm.")
    ],
    fmt: Annotated[ListFormat, typer.Option("--format", help="Output format.")] = ListFormat.table,
) -> None:
    """What a kernel-config field or value means, in which releases, and what it needs.

    Like `kubectl explain`: the field's meaning, its choices release by release, whether
    it is part of the compile-cache hash, and for a value its requirements (platform,
    GPU, quantisation, expert parallelism, environment), what vLLM does when they are
    not met, where in vLLM the rule lives, and an example.
    """
    import json

    from kernelcfg import explain as explain_mod
    from kernelcfg.errors import KernelcfgError

    try:
        data = explain_mod.explain(what)
    except KernelcfgError as exc:
        raise _refuse(exc.message, exc.exit_code) from None
    if fmt is ListFormat.json:
        _write_json(data)
        return
    lines = [f"FIELD: {data['field']}  ({data['releases']}; flag {data['flag']})", ""]
    lines.append(f"  {data['doc']}")
    lines.append(f"  default: {json.dumps(data['default'])}")
    hashed = sorted({str(v) for v in data["hashed"].values()})
    lines.append(
        "  part of the compile-cache hash: "
        + (
            hashed[0]
            if len(hashed) == 1
            else ", ".join(f"{k}: {v}" for k, v in data["hashed"].items())
        )
    )
    if "value" in data:
        lines += ["", f"VALUE: {data['value']}  ({data['value_releases']})"]
        for key, value in data["requirements"].items():
            lines.append(f"  {key}: {json.dumps(value) if not isinstance(value, str) else value}")
        lines.append(f"  when unmet: {data['when_unmet']}")
        lines.append(f"  source: vllm/{data['source']}")
    elif "choices" in data:
        lines += ["", "CHOICES:"]
        lines += [f"  {c}  ({span})" for c, span in data["choices"].items()]
    if "example" in data:
        lines += ["", f"EXAMPLE: {data['example']}"]
    sys.stdout.write("\n".join(lines) + "\n")


class SchemaOf(StrEnum):
    """What ``schema`` describes."""

    kernel_config = "kernel-config"
    config_file = "config-file"
    resolve = "resolve"
    batch_line = "batch-line"
    versions = "versions"
    versions_compare = "versions-compare"
    backends = "backends"
    diff = "diff"
    explain = "explain"
    lint_env = "lint-env"
    scan = "scan"


@app.command()
def schema(
    vllm_version: Annotated[
        str | None,
        typer.Option("--vllm-version", envvar="KERNELCFG_VLLM_VERSION", help="The release."),
    ] = None,
    of: Annotated[
        SchemaOf, typer.Option("--of", help="What to describe.")
    ] = SchemaOf.kernel_config,
) -> None:
    """Print a JSON Schema (draft 2020-12) for editors and check-jsonschema.

    --of kernel-config (default): what --kernel-config takes. --of config-file:
    the kernel-relevant keys of a vllm serve --config YAML file. Both are
    stricter than vLLM: canonical names and true/false only. --of resolve,
    batch-line, versions, versions-compare, backends, diff, explain, lint-env,
    scan: the shape of that command's --format json output.
    """

    import json

    if of not in (SchemaOf.kernel_config, SchemaOf.config_file):
        from kernelcfg.output_schemas import output_schema

        sys.stdout.write(json.dumps(output_schema(of.value), indent=2) + "\n")
        return

    from kernelcfg import releases
    from kernelcfg import schema as schema_mod
    from kernelcfg.errors import KernelcfgError

    try:
        release = releases.load(vllm_version)
    except KernelcfgError as exc:
        raise _refuse(exc.message, 2) from None
    build = (
        schema_mod.kernel_config_schema
        if of is SchemaOf.kernel_config
        else schema_mod.config_file_schema
    )
    sys.stdout.write(json.dumps(build(release), indent=2) + "\n")


def _guard_streams() -> None:
    """Output never crashes: undecodable text is escaped, a closed stream is a null one."""
    import os

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
        elif hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def main() -> None:
    """Console-script entry point: exit 0, 1 or 2 as documented; 70 for a kernelcfg bug."""
    import traceback

    from kernelcfg.problems import EXIT_BUG

    _guard_streams()
    try:
        code = app(standalone_mode=False)
    except SystemExit:
        raise
    except typer.Abort:
        raise SystemExit(130) from None
    except BrokenPipeError:
        _silence_stdout()
        raise SystemExit(0) from None
    except Exception as exc:
        if _usage_error(exc):
            # The CLI framework's own refusals (click's UsageError), one line like the rest.
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "kernelcfg"
            message = bounded_line(exc.format_message())  # type: ignore[attr-defined]
            sys.stderr.write(f"error: {message} (see {where} --help)\n")
            raise SystemExit(2) from None
        traceback.print_exc()  # a bug, never bad input: show it, and exit apart from 0/1/2
        sys.stderr.write(
            "kernelcfg hit a bug (exit 70); please report it with the command line above\n"
        )
        raise SystemExit(EXIT_BUG) from None
    raise SystemExit(code if isinstance(code, int) else 0)


def _usage_error(exc: Exception) -> bool:
    """Whether ``exc`` is the CLI framework's usage error (click's ``UsageError``, which
    Typer vendors and does not export)."""
    return getattr(exc, "exit_code", None) == 2 and callable(getattr(exc, "format_message", None))


def bounded_line(text: str) -> str:
    """A framework message on one line."""
    from kernelcfg.bounded import one_line

    return one_line(" ".join(text.split()))
