"""From a command line to a :class:`Resolution`: choose the release and the target,
read the flags, resolve. Also the ``--batch`` loop, which returns data lines.
"""

from __future__ import annotations

import os
import re
import traceback as traceback_mod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelcfg.base.bounded import MAX_WORDS, loads_json, reason, shown
from kernelcfg.base.errors import ArgumentError, KernelcfgError
from kernelcfg.base.problems import EXIT_BUG, EXIT_USAGE, Problem
from kernelcfg.engine.resolution import Resolution, resolve
from kernelcfg.flags import argv as argv_mod
from kernelcfg.targets.presets import Target, ci_needs_target, resolve_target, with_cpu_features
from kernelcfg.vllm import releases
from kernelcfg.vllm.inputs import DEFAULT_INSTALLS, Inputs

__all__ = [
    "INPUT_ERRORS",
    "LINE_CONTEXT",
    "MAX_WORDS",
    "MAX_WORD_BYTES",
    "Failure",
    "Line",
    "Request",
    "Words",
    "batch",
    "batch_words",
    "context_args",
    "engine_env",
    "prepare",
    "repeatable",
    "resolve_args",
    "resolve_words",
]

ENV_PREFIXES = ("VLLM_",)
ENV_NAMES = ("TORCH_COMPILE_DISABLE",)


def engine_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (default: this process's) that vLLM would read."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


@dataclass
class Request(argv_mod.TargetOptions):
    """Context that applies to every resolution of a run (the CLI's own options)."""

    environ: Mapping[str, str] | None = None
    """The process environment to read (default: ``os.environ``)."""
    read_root: str | None = None
    """Where the model files a line names may be read (``scan``: the scanned file's
    repository); ``None``: anywhere."""
    serve_is_vllms: bool = False
    """Whether every word after ``vllm serve`` is vLLM's own (a launch found in a file,
    a pasted line in a batch): kernelcfg's options there are refused as vLLM refuses
    them, and the run's target and release stand."""
    command: str = "kernelcfg"
    """The command that asks, as a refusal names it (``resolve``, ``backends``)."""
    want_compile_cache: bool = False
    """Whether to work out each resolution's compile-cache key parts (JSON output): done
    where the model's config.json was read, or a line names ``--compile-cache``."""
    _engine_env: dict[str, str] | None = field(default=None, repr=False)
    _release_env: dict[str, str] | None = field(default=None, repr=False)

    @property
    def process_environ(self) -> Mapping[str, str]:
        """``environ``, or this process's environment when none was given."""
        return os.environ if self.environ is None else self.environ

    def engine_env(self) -> dict[str, str]:
        """The engine-relevant variables of the environment, read once."""
        if self._engine_env is None:
            self._engine_env = engine_env(self.process_environ)
        return dict(self._engine_env)

    def release_env(self) -> Mapping[str, str]:
        """The variable ``releases.choose`` reads (``KERNELCFG_VLLM_VERSION``), read once:
        every line of a batch chooses its release again."""
        if self._release_env is None:
            environ = self.process_environ
            self._release_env = {k: environ[k] for k in releases.ENVIRONMENT if k in environ}
        return self._release_env


@dataclass
class Failure:
    """A command line that could not be resolved at all (unusable input)."""

    problem: Problem
    """What was wrong."""
    release: releases.Release | None = None
    """The release, when it was known."""
    target: Target | None = None
    """The target, when it was known."""
    traceback: str | None = None
    """For a kernelcfg bug: the traceback, for the CLI to show."""


def prepare(
    args: Sequence[str], request: Request | None = None
) -> tuple[releases.Release, Target, Inputs]:
    """Choose the release and the target and read the flags; raises on unusable input."""
    _check_size(args)
    req = request or Request()
    environ = req.process_environ
    chosen = _release(args, req)
    release = chosen.release
    env = req.engine_env()
    env.update(req.env)
    context = argv_mod.ContextOptions(download=_download(environ), read_root=req.read_root)
    inputs, line = argv_mod.parse(
        args, release, env=env, context=context, serve_is_vllms=req.serve_is_vllms
    )
    inputs.env.update(line.env)
    inputs.compile_cache_path = line.compile_cache or req.compile_cache
    if line.quant_scheme:
        inputs.quant_scheme = line.quant_scheme
        inputs.sources["quant_scheme"] = "flag"
    _install(inputs, line.install, environ)
    archs = line.architectures or req.architectures
    if archs:
        inputs.architectures = list(archs)
        inputs.sources["architectures"] = "flag"
    inputs.sources["vllm_version"] = chosen.source
    inputs.notes[:0] = release_notes(chosen)
    named = any((line.device, line.platform, line.capability, line.gfx_arch))
    target = _target(line if named else req, environ, cpu=line.cpu_features or req.cpu_features)
    if target.source == "fallback":
        refusal = ci_needs_target(req.command, environ)
        if refusal is not None:
            raise ArgumentError(refusal, field="device")
    if "install" not in inputs.sources:
        inputs.install = DEFAULT_INSTALLS.get(target.kind, "pip")
    return release, target, inputs


"""The most words one command line may hold (a real vllm serve line has < 200)."""
MAX_WORD_BYTES = 1024 * 1024
"""The longest word (1 MiB): a --kernel-config JSON is a few hundred bytes."""


INSTALL_VARIABLE = "KERNELCFG_INSTALL"
"""The variable that stands for ``--install`` when the flag is not given."""


def _install(inputs: Inputs, flag: str | None, environ: Mapping[str, str]) -> None:
    """The install judged: ``--install``, else ``KERNELCFG_INSTALL`` (checked as the flag
    is), else (in :func:`prepare`, once the target is known) the platform's default,
    ``DEFAULT_INSTALLS``, judged as if named."""
    if flag:
        inputs.install = flag
        inputs.sources["install"] = "flag"
        return
    value = environ.get(INSTALL_VARIABLE, "")
    if value:
        argv_mod.check_choice("install", INSTALL_VARIABLE, value)
        inputs.install = value
        inputs.sources["install"] = "environment"


DOWNLOAD_VARIABLE = "KERNELCFG_DOWNLOAD"
"""The variable that asks for ``--download`` on every line (``1``)."""
_YES = frozenset({"1", "true", "yes", "on"})
_NO = frozenset({"", "0", "false", "no", "off"})


def _download(environ: Mapping[str, str]) -> bool:
    """Whether ``KERNELCFG_DOWNLOAD`` asks for downloads (``--download`` asks on its own
    line): 1, true, yes or on; 0, false, no, off or unset do not; anything else is
    refused, as a bad ``--install`` is."""
    value = environ.get(DOWNLOAD_VARIABLE, "")
    if value.strip().lower() in _YES:
        return True
    if value.strip().lower() in _NO:
        return False
    raise ArgumentError(
        f"{DOWNLOAD_VARIABLE}: {shown(value)} is neither 1 (download a hub id's config.json "
        "when it is not cached) nor 0",
        field="download",
    )


def _check_size(args: Sequence[str]) -> None:
    if len(args) > MAX_WORDS:
        raise ArgumentError(
            f"{len(args):,} words on one line; kernelcfg reads at most {MAX_WORDS:,}"
        )
    if max(map(len, args), default=0) <= MAX_WORD_BYTES:
        return
    for index, word in enumerate(args):
        if len(word) > MAX_WORD_BYTES:
            raise ArgumentError(
                f"word {index + 1} is {len(word):,} characters long; kernelcfg reads words of at "
                f"most {MAX_WORD_BYTES // 1024} KiB"
            )


def release_notes(chosen: releases.Chosen) -> list[Problem]:
    """What a resolve says about its release's data: a warning when it stands in for a
    patch release kernelcfg has no data for, a note per user folder its files came from."""
    said = [Problem("info", "release-data", "vllm_version", note) for note in chosen.notes]
    if chosen.warning:
        said.insert(0, Problem("warning", "release-stand-in", "vllm_version", chosen.warning))
    return said


def _release(args: Sequence[str], req: Request) -> releases.Chosen:
    """The release a line asks for: its own flag, the run's, then as releases.choose."""
    head = argv_mod.split_serve(args)[0] if req.serve_is_vllms else args
    return releases.choose(argv_mod.split_version(head) or req.vllm_version, req.release_env())


def _target(
    named: argv_mod.TargetOptions,
    environ: Mapping[str, str],
    *,
    allow_detection: bool = True,
    cpu: str | None = None,
) -> Target:
    """The target named by a request's or a line's target options (``cpu``: the
    ``--cpu-features`` that apply, where not ``named``'s own)."""
    found = resolve_target(
        device=named.device,
        kind=named.platform,
        capability=named.capability,
        gfx_arch=named.gfx_arch,
        environ=environ,
        allow_detection=allow_detection,
    )
    return with_cpu_features(found, cpu or named.cpu_features, environ)


INPUT_ERRORS = (OSError, UnicodeError, RecursionError, OverflowError)
"""What unusable input raises where it is read (a file, a batch line): each becomes
exit 2, never a traceback. Not ``ValueError``: the readers turn theirs into one
:class:`ArgumentError` line, so one from kernelcfg's own code is a bug (exit 70)."""


def resolve_args(args: Sequence[str], request: Request | None = None) -> Resolution | Failure:
    """Resolve one command line of vLLM flags under ``request``'s context."""
    try:
        release, target, inputs = prepare(args, request)
    except KernelcfgError as exc:
        return Failure(Problem.from_error(exc), *_known_context(args, request or Request()))
    except INPUT_ERRORS as exc:
        return Failure(_unusable(exc), *_known_context(args, request or Request()))
    result = resolve(inputs, target, release)
    req = request or Request()
    wanted = req.want_compile_cache or inputs.compile_cache_path
    try:
        if wanted:
            _compile_cache(result, req)
        elif inputs.hf_config is not None:
            _refused(result)
    except KernelcfgError as exc:
        return Failure(Problem.from_error(exc), release, target)
    return result


def _compile_cache(result: Resolution, req: Request) -> None:
    """Fill the resolution's compile-cache key parts, and say where vLLM refuses the
    launch while building its config."""
    from kernelcfg.commands.cache_key import compile_cache_of

    assert result.inputs is not None
    found = compile_cache_of(result, req.process_environ, result.inputs.compile_cache_path)
    if any(p.code == "release-stand-in" for p in result.problems):
        found = _stood_in(found, result.release.version)
    result.compile_cache = found
    if found.get("refused"):
        _refused(result, found["refused"])


def _stood_in(found: dict[str, Any], version: str) -> dict[str, Any]:
    """The key parts of a release resolved with ``version``'s data: its factors as
    ``version`` hashes them, every digest unknown (vLLM hashes its own version)."""
    why = f"the release's own (vLLM hashes its version; kernelcfg has {version}'s data)"
    return {
        **found,
        "env_hash": None,
        "config_hash": None,
        "key": None,
        "directory": None,
        "reuses": None,
        "differences": [],
        "unknown": [*found["unknown"], f"env: {why}", f"config: {why}"],
    }


def _refused(result: Resolution, refused: Mapping[str, str] | None = None) -> None:
    """vLLM's refusal while building its config (worked out here when not given: a few
    milliseconds, no transformers) as an error, exit 1, with vLLM's reason."""
    from kernelcfg.commands.cache_key import refusal_of

    found = refused if refused is not None else refusal_of(result)
    if found is None:
        return
    result.problems.append(
        Problem(
            "error",
            "config-refused",
            None,
            f"vLLM refuses this launch while building its config: {found['kind']}: "
            f"{found['message']}",
        )
    )


def _unusable(exc: BaseException) -> Problem:
    """The one-line problem for an OS, decoding or number error met reading input."""
    return Problem(
        "error", "unusable-input", None, f"unusable input: {reason(exc)[:300]}", EXIT_USAGE
    )


def _known_context(
    args: Sequence[str], req: Request
) -> tuple[releases.Release | None, Target | None]:
    """The release and target of a line that could not be read, as far as they are known."""
    environ = req.process_environ
    try:
        release = _release(args, req).release
    except KernelcfgError:
        return None, None
    try:
        target = _target(req, environ, allow_detection=False)
    except KernelcfgError:
        return release, None
    return release, (None if target.source == "fallback" else target)


LINE_CONTEXT = {
    "device": "--device",
    "platform": "--platform",
    "capability": "--capability",
    "gfx_arch": "--gfx-arch",
    "cpu_features": "--cpu-features",
    "vllm_version": "--vllm-version",
    "quant_scheme": "--quant-scheme",
    "install": "--install",
    "env": "--env",
}
"""The keys a batch line (or a ``--matrix`` axis) may set, and the option each stands for."""
_LINE_KEYS = frozenset({"id", "argv", *LINE_CONTEXT})
_LINE_CONTEXT_KEYS = frozenset(LINE_CONTEXT)


def _line_args(raw: str, number: int, clash: frozenset[str]) -> tuple[Any, list[str]]:
    """The id and argv of one batch line: an array, or ``{"id", "argv", ...context}``
    (the context keys become options in front of ``argv``; any other key is refused, and
    so is an option a ``--matrix`` axis decides, ``clash``). A refusal of a line whose id
    is known is a :class:`_RefusedLineError` carrying it."""
    value = loads_json(raw, f"line {number}")
    if isinstance(value, list) and _strings(value):
        args: list[str] = value
        line_id = None
    elif isinstance(value, dict) and isinstance(value.get("argv"), list):
        line_id = value.get("id")
        if "\\u" in raw:  # only an escape can make a lone surrogate
            line_id = _whole_unicode(line_id)
        try:
            args = _object_args(value, number)
        except ArgumentError as exc:
            raise _RefusedLineError(line_id, exc) from None
    else:
        raise ArgumentError(
            f'line {number}: a line must be a JSON array of strings or {{"id": ..., "argv": '
            f"[...]}} (optional keys: {', '.join(LINE_CONTEXT)})"
        )
    if clash:
        try:
            _refuse_clash(args, clash, number)
        except ArgumentError as exc:
            raise _RefusedLineError(line_id, exc) from None
    return line_id, args


_SURROGATE = re.compile("[\ud800-\udfff]")


def _whole_unicode(value: Any) -> Any:
    """``value`` with each lone surrogate (``"\\ud800"`` in JSON, which no UTF-8 output
    can hold and strict JSON readers refuse) replaced by U+FFFD, at any depth."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_whole_unicode(item) for item in value]
    if isinstance(value, dict):
        return {_whole_unicode(k): _whole_unicode(v) for k, v in value.items()}
    return value


class _RefusedLineError(Exception):
    """A batch line refused once its id was read: the id, and why."""

    def __init__(self, line_id: Any, error: ArgumentError) -> None:
        super().__init__(error.message)
        self.line_id = line_id
        self.error = error


def _object_args(value: dict[str, Any], number: int) -> list[str]:
    """The words of a ``{"id", "argv", ...context}`` line: its context keys as options,
    then its argv."""
    unknown = sorted(set(value) - _LINE_KEYS)
    if unknown:
        from kernelcfg.base.errors import closest

        hint = closest(unknown[0], sorted(_LINE_KEYS))
        raise ArgumentError(
            f"line {number}: unknown key {shown(unknown[0])}; a line holds "
            f"{', '.join(sorted(_LINE_KEYS))}" + (f" (did you mean {hint!r}?)" if hint else "")
        )
    argv = value["argv"]
    if not _strings(argv):
        raise ArgumentError(f"line {number}: argv must hold strings only")
    return [*context_args(value, f"line {number}"), *argv]


def _strings(values: list[Any]) -> bool:
    """Whether every item of a decoded JSON array is a string (checked in one C pass)."""
    return set(map(type, values)) <= {str}


def context_args(given: Mapping[str, Any], where: str) -> list[str]:
    """``{"device": "b200", "env": {"K": "V"}}`` as ``--device b200 --env K=V``."""
    out: list[str] = []
    if _LINE_CONTEXT_KEYS.isdisjoint(given):  # most lines: only id and argv
        return out
    for key, option in LINE_CONTEXT.items():
        if key not in given:
            continue
        value = given[key]
        if key == "env" and isinstance(value, dict):
            pairs = [f"{k}={v}" for k, v in value.items()]
        elif key == "env" and isinstance(value, list):
            pairs = list(value)
        else:
            pairs = [value]
        for pair in pairs:
            if not isinstance(pair, str):
                raise ArgumentError(f"{where}: {key} must be a string, got {shown(pair)}")
            out += [option, pair]
    return out


@dataclass(frozen=True)
class Line:
    """One ``--batch`` result: the line's id (or number), its number and its outcome."""

    id: Any
    """The line's ``id``, or its number when it has none."""
    number: int
    """Its line number in the file (1-based)."""
    result: Resolution | Failure
    """What it resolved to."""
    cell: dict[str, str] = field(default_factory=dict)
    """The ``--matrix`` cell it was resolved for (empty without a matrix)."""


@dataclass(frozen=True)
class Words:
    """One readable ``--batch`` line for one matrix cell, before it is resolved."""

    id: Any
    """The line's ``id``, or its number when it has none."""
    number: int
    """Its line number in the file (1-based)."""
    words: tuple[str, ...]
    """The cell's context options, the common flags, then the line's own."""
    cell: dict[str, str]
    """The ``--matrix`` cell (empty without a matrix)."""


def batch(
    lines: Iterable[str | KernelcfgError],
    common: Sequence[str] = (),
    request: Request | None = None,
    matrix: Sequence[Mapping[str, str]] = (),
    start: int = 1,
) -> Iterator[Line]:
    """Resolve each JSON line; yield one :class:`Line` per non-blank line (one per
    ``matrix`` cell when given), in order; ``start`` is the number of the first line.

    ``common`` flags go in front of every line's own, so a line's flags win; a matrix
    cell's context goes in front of both. A line that cannot be read (an error in
    place of its text) or resolved gets its own :class:`Failure`; every other line is
    unaffected. A bug shows as a ``Failure`` of code ``internal-error`` (exit 70)
    carrying the traceback.
    """
    request = request or Request(serve_is_vllms=True)
    for item in batch_words(lines, common, matrix, start):
        if isinstance(item, Line):
            yield item
        else:
            yield Line(item.id, item.number, resolve_words(item.words, request), item.cell)


def batch_words(
    lines: Iterable[str | KernelcfgError],
    common: Sequence[str] = (),
    matrix: Sequence[Mapping[str, str]] = (),
    start: int = 1,
) -> Iterator[Words | Line]:
    """:func:`batch`'s first half: each non-blank line read into its words (one
    :class:`Words` per matrix cell), in order; a line that cannot be read is its
    :class:`Line` with a :class:`Failure` already."""
    cells = [(dict(cell), [*context_args(cell, "--matrix"), *common]) for cell in matrix or [{}]]
    clash = _matrix_options(cells[0][0])
    for number, raw in enumerate(lines, start=start):
        if isinstance(raw, KernelcfgError):
            yield Line(number, number, Failure(Problem.from_error(raw)))
            continue
        if not raw.strip(" \t\r\n"):  # JSON whitespace only (RFC 8259)
            continue
        line_id: Any = number
        try:
            given_id, args = _line_args(raw, number, clash)
        except _RefusedLineError as refused:
            failed = Failure(Problem.from_error(refused.error))
            line_id = number if refused.line_id is None else refused.line_id
        except KernelcfgError as exc:
            failed = Failure(Problem.from_error(exc))
        except INPUT_ERRORS as exc:
            failed = Failure(_unusable(exc))
        else:
            line_id = number if given_id is None else given_id
            for cell, prefix in cells:
                yield Words(line_id, number, (*prefix, *args), cell)
            continue
        for cell, _ in cells:
            yield Line(line_id, number, failed, cell)


_TARGET_KEYS = ("device", "platform", "capability", "gfx_arch", "cpu_features")


def _matrix_options(cell: Mapping[str, str]) -> frozenset[str]:
    """The options a batch line may not give under a ``--matrix`` of these axes: the
    axes' own, and every target option when an axis sets the target."""
    keys = set(cell)
    if keys & set(_TARGET_KEYS):
        keys |= set(_TARGET_KEYS)
    return frozenset(LINE_CONTEXT[key] for key in keys)


def _refuse_clash(args: Sequence[str], clash: frozenset[str], number: int) -> None:
    """Refuse a line that sets what a ``--matrix`` axis sets: each cell must be resolved
    for its own value, never for the line's (exit 2)."""
    for word in args:
        option = word.partition("=")[0]
        if option in clash:
            raise ArgumentError(
                f"line {number}: {option} is decided by --matrix for every line; remove it "
                "from the line (or the axis from --matrix)",
                field=option.lstrip("-").replace("-", "_"),
            )


def resolve_words(words: Sequence[str], request: Request) -> Resolution | Failure:
    """:func:`resolve_args` that never raises: unusable input is a ``Failure``, and so is
    a kernelcfg bug (code ``internal-error``, exit 70, carrying the traceback): one line
    never stops a batch."""
    try:
        return resolve_args(list(words), request)
    except KernelcfgError as exc:
        return Failure(Problem.from_error(exc))
    except Exception as exc:  # a bug: this line reports it, the others go on
        return Failure(
            Problem("error", "internal-error", None, f"kernelcfg bug: {exc!r}", EXIT_BUG),
            traceback="".join(traceback_mod.format_exception(exc)),
        )


def repeatable(words: Sequence[str], result: Resolution | Failure) -> bool:
    """Whether ``result`` is what ``words`` resolve to wherever they recur under the
    same request: a resolution that read no file (no ``--config``, ``--env-file`` or
    ``--compile-cache``, no model folder, cache or ``--hf-config-path``), so a batch may
    reuse it for a repeated line."""
    if not isinstance(result, Resolution) or result.inputs is None:
        return False
    inputs = result.inputs
    if inputs.model is not None or "hf_config_path" in inputs.other_options:
        return False
    return not any(word.startswith(_FILE_OPTIONS) for word in words)


_FILE_OPTIONS = ("--config", "--env-file", "--compile-cache")
"""The options whose value names a file read for the line."""
