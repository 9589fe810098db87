"""What each environment variable means for a deployment on a chosen vLLM release.

vLLM only warns about ``VLLM_*`` variables it does not know (or fails with
``--fail-on-environ-validation``); lint-env says, per variable: a typo or a variable
this release does not have, a removed variable and the flag that replaced it, or what
a variable that steers kernel resolution changes here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from itertools import islice
from typing import Any, NamedTuple

from kernelcfg.base.bounded import one_line, read_text, shown
from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.base.secrets import MASK, SECRET_WORDS, masked
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config.defaults import env_flag
from kernelcfg.vllm.kernel_config.rules import environment_problems

__all__ = [
    "MASK",
    "SECRET_WORDS",
    "Finding",
    "Summary",
    "findings",
    "ignored",
    "lint",
    "masked",
    "read_env_file",
    "summary",
]


class Finding(NamedTuple):
    """What one variable means (a named tuple: a file may set 200,000 variables, and as
    frozen dataclasses they took 0.1 s and 9 MB more, ``make bench``)."""

    variable: str
    """The variable's name."""
    value: str
    """Its value."""
    severity: str
    """``error`` (vLLM refuses to start), ``warning`` (vLLM ignores it, or it is
    redundant) or ``info`` (it changes something)."""
    code: str
    """``unknown-variable``, ``removed-variable``, ``changes-resolution`` or ``steers-kernels``."""
    message: str
    """One line: what it is and what to do."""
    use_instead: tuple[str, ...] = ()
    """The flags that replace a removed variable, when the value says which."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (a problem, plus the variable and its replacement)."""
        return {
            "severity": self.severity,
            "code": self.code,
            "field": self.variable,
            "message": self.message,
            "value": self.value,
            "use_instead": list(self.use_instead),
        }


def _history() -> dict[str, Any]:
    """The environment variables of every vLLM release, and the removed ones' stories."""
    return releases.data_file("env-history.json")


_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
_PLAIN_VALUE = r"[^'\"\\#\s$`]*"
_NOT_PLAIN = re.compile(rf"^(?!{_KEY}={_PLAIN_VALUE}$|#|$)", re.MULTILINE)
"""The start of a line that needs dotenv's parser (quotes, ``export``, spaces, ``$``,
a character Python counts as a line break or a space, such as ``\\x85``)."""
_PAIR = re.compile(rf"^({_KEY})=(.*)$", re.MULTILINE)
_CHUNK = 1 << 20
"""A plain file's pairs are taken this many characters at a time, so that the matches
of one chunk, not of the whole file, are held at once."""


def _plain_env(text: str) -> dict[str, str] | None:
    """A file of bare ``KEY=value`` lines (and ``#`` comments) read directly, as dotenv
    would read it; ``None`` when any line needs dotenv's parser (quotes, ``export``,
    spaces, ``$``). dotenv's parser costs about 15 µs a line (``make bench``).

    Lines end where dotenv ends them, at ``\\n``, ``\\r\\n`` or a lone ``\\r``; not at
    the other breaks of ``str.splitlines`` (``\\x1e``, ``\\x85``, ``\\u2028``), which a
    shell and dotenv keep inside the value."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _NOT_PLAIN.search(text):
        return None
    out: dict[str, str] = {}
    start = 0
    while start < len(text):
        end = text.find("\n", start + _CHUNK)
        end = len(text) if end < 0 else end
        out.update(_PAIR.findall(text, start, end))
        start = end
    return out


def read_env_file(path: str) -> dict[str, str]:
    """``KEY=VALUE`` lines as shells and ``.env`` tools read them (python-dotenv's
    parser: ``export``, quotes, comments; ``${VAR}`` left as written)."""
    text = read_text(path, "--env-file")
    plain = _plain_env(text)
    if plain is not None:
        return plain
    import io

    from dotenv.parser import parse_stream  # ~20 ms to import: only where needed

    out: dict[str, str] = {}
    for binding in parse_stream(io.StringIO(text)):
        where = f"--env-file {path}:{binding.original.line}"
        if binding.error:
            raise ArgumentError(
                f"{where}: expected KEY=VALUE, got {shown(binding.original.string.strip())}",
                field="env_file",
            )
        if binding.key is None:  # a blank line or a comment
            continue
        if binding.value is None:
            raise ArgumentError(f"{where}: {binding.key!r} has no value; expected KEY=VALUE")
        out[binding.key] = binding.value
    return out


def _replacement(spec: dict[str, Any], value: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    by_value = spec.get("by_value", {})
    if value in by_value:
        return tuple(by_value[value])
    if "same_value" in spec and value and value.strip() not in spec.get("no_equivalent", ()):
        return (spec["same_value"], value)
    if "on" in spec and value.strip().lower() in ("1", "true"):
        chooser = spec.get("on_with_backend")
        if chooser and environ.get(chooser) in _history()["removed"][chooser]["by_value"]:
            return tuple(_history()["removed"][chooser]["by_value"][environ[chooser]])
        return tuple(spec["on"])
    return ()


def _removed(
    name: str, value: str, spec: dict[str, Any], environ: Mapping[str, str], version: str
) -> Finding:
    flags = _replacement(spec, value, environ)
    if flags:
        advice = f"use {' '.join(flags)} instead"
        if spec.get("on_note"):
            advice += f" ({spec['on_note']})"
    elif value.strip() in spec.get("no_equivalent", ()):
        advice = f"{spec.get('flag', 'nothing')} has no equivalent of {value!r}; drop it"
    elif value.strip().lower() in ("0", "false") and spec.get("off_note"):
        advice = spec["off_note"]
    elif spec.get("flag"):
        advice = f"use {spec['flag']} instead"
    elif spec.get("variable"):
        advice = f"use {spec['variable']} instead"
    else:
        advice = "nothing replaces it"
    if spec.get("note"):
        advice += f"; {spec['note']}"
    return Finding(
        name,
        value,
        "warning",
        "removed-variable",
        f"{name} ({spec['meaning']}) was removed in vLLM {spec['removed_in']}; vLLM "
        f"{version} ignores it (it only logs 'Unknown vLLM environment variable'): {advice}",
        flags,
    )


@cache
def _known_elsewhere() -> dict[str, tuple[str, ...]]:
    """Every variable any known release has, with the releases that have it."""
    found: dict[str, list[str]] = {}
    for version in releases.known_versions():
        for name in releases.load(version).envs:
            found.setdefault(name, []).append(version)
    return {name: tuple(versions) for name, versions in found.items()}


_SUGGESTIONS = 50
"""Closest-name suggestions are worked out for this many unknown variables, no more."""


def _unknown(name: str, value: str, release: releases.Release, *, suggest: bool) -> Finding:
    # Every name shares "VLLM_", which inflates similarity: suggest only close ones.
    hint = closest(name, release.envs, cutoff=0.8) if suggest else None
    elsewhere = _known_elsewhere().get(name, ())
    message = f"{name} is not a variable vLLM {release.version} knows; it is ignored"
    if elsewhere:
        message += f" (vLLM {', '.join(elsewhere)} has it)"
    if hint:
        message += f"; did you mean {hint!r}?"
    return Finding(name, value, "warning", "unknown-variable", message)


_SEVERITY = {"resolution": "info", "steering": "info", "removed": "warning", "unknown": "warning"}
"""The severity of each kind of finding (a refused variable's is its problem's)."""
_IGNORED = frozenset({"removed", "unknown"})
"""The kinds of finding that mean vLLM ignores the variable (``resolve`` warns of them)."""


class _Reader:
    """The findings of one environment under one release, made one at a time: a reader
    that keeps the first few only counts the kinds of the rest."""

    def __init__(self, environ: Mapping[str, str], release: releases.Release) -> None:
        self.environ = environ
        """The variables read."""
        self.release = release
        """The release they are read for."""
        self.refused = {p.field: p for p in environment_problems(release, environ)}
        """What vLLM refuses at start-up, by variable."""
        self.unknown = 0
        """How many unknown variables were made into findings so far."""

    def kinds(self) -> Iterator[tuple[str, str]]:
        """Each variable that has a finding, in name order, with its kind: ``refused``,
        ``resolution`` (changes resolution), ``steering``, ``removed`` or ``unknown``."""
        history = _history()
        resolution, steering, removed = (history[k] for k in ("resolution", "steering", "removed"))
        envs = self.release.envs
        for name in sorted(self.environ):
            if name in self.refused:
                yield name, "refused"
            elif name in resolution and (name in envs or not name.startswith("VLLM_")):
                yield name, "resolution"
            elif not name.startswith("VLLM_"):
                continue
            elif name in envs:
                if name in steering:
                    yield name, "steering"
            else:
                yield name, "removed" if name in removed else "unknown"

    def severity(self, name: str, kind: str) -> str:
        """The severity of the finding of ``kind`` for ``name``, without making it."""
        return self.refused[name].severity if kind == "refused" else _SEVERITY[kind]

    def finding(self, name: str, kind: str, *, show_values: bool = False) -> Finding:
        """The finding of ``kind`` for ``name``; its value masked (:func:`masked`) unless
        ``show_values``, and its message on one line."""
        found = self._make(name, kind)
        if not found.message.isprintable():
            found = found._replace(message=one_line(found.message))
        return found if show_values else _hide(found)

    def _make(self, name: str, kind: str) -> Finding:
        """The finding of ``kind`` for ``name``, as the release's facts word it."""
        value = self.environ[name]
        history = _history()
        if kind == "refused":
            problem = self.refused[name]
            return Finding(name, value, problem.severity, problem.code, problem.message)
        if kind == "resolution":
            effect = history["resolution"][name]
            if name in self.release.rules.get("env_flags", {}):
                state = "on" if env_flag(self.release, name, self.environ) else "off"
                effect = f"reads as {state}; {effect}"
            return Finding(name, value, "info", "changes-resolution", f"{name}={value}: {effect}")
        if kind == "steering":
            steering = history["steering"][name]
            return Finding(name, value, "info", "steers-kernels", f"{name}={value}: {steering}")
        if kind == "removed":
            spec = history["removed"][name]
            return _removed(name, value, spec, self.environ, self.release.version)
        self.unknown += 1
        return _unknown(name, value, self.release, suggest=self.unknown <= _SUGGESTIONS)


def _hide(found: Finding) -> Finding:
    """``found`` with a credential's value masked. Only an unknown variable's finding can
    be a credential's, and its message never quotes the value (the variables whose
    messages do, removed, refused or steering ones, are none of them credentials: the
    tests hold that for every release)."""
    shown = masked(found.variable, found.value)
    return found if shown == found.value else found._replace(value=shown)


def lint(
    environ: Mapping[str, str], release: releases.Release, *, show_values: bool = False
) -> list[Finding]:
    """Findings for the kernel-relevant variables of ``environ`` under ``release``."""
    return list(findings(environ, release, show_values=show_values))


def findings(
    environ: Mapping[str, str], release: releases.Release, *, show_values: bool = False
) -> Iterator[Finding]:
    """:func:`lint`'s findings one by one, in variable order."""
    reader = _Reader(environ, release)
    for name, kind in reader.kinds():
        yield reader.finding(name, kind, show_values=show_values)


class Summary(NamedTuple):
    """The first findings of an environment, and how many more there are."""

    findings: list[Finding]
    """The first ones, in variable order."""
    omitted: dict[str, int]
    """The rest, counted by severity (never made: a file may set 1,000,000 variables)."""

    @property
    def total(self) -> int:
        """How many findings there are in all."""
        return len(self.findings) + sum(self.omitted.values())

    def omitted_note(self) -> str:
        """One line: how many findings are not shown, and of which severities."""
        counts = ", ".join(f"{severity}: {count:,}" for severity, count in self.omitted.items())
        return (
            f"{self.total - len(self.findings):,} more findings not shown, after the first "
            f"{len(self.findings):,} ({counts}); the exit code counts them all"
        )


def summary(
    environ: Mapping[str, str],
    release: releases.Release,
    keep: int,
    *,
    show_values: bool = False,
) -> Summary:
    """The first ``keep`` findings of ``environ`` and the count of the rest, by severity."""
    reader = _Reader(environ, release)
    kinds = reader.kinds()
    kept = [reader.finding(n, k, show_values=show_values) for n, k in islice(kinds, keep)]
    omitted: dict[str, int] = {}
    for name, kind in kinds:
        severity = reader.severity(name, kind)
        omitted[severity] = omitted.get(severity, 0) + 1
    return Summary(kept, omitted)


def ignored(environ: Mapping[str, str], release: releases.Release) -> list[Finding]:
    """The variables of ``environ`` that ``release`` ignores (unknown or removed ones),
    as lint-env reports them, values masked; for ``resolve``, which reports the
    variables vLLM refuses itself."""
    reader = _Reader(environ, release)
    return [reader.finding(n, k) for n, k in reader.kinds() if k in _IGNORED]
