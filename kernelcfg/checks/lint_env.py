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
from typing import Any, NamedTuple

from kernelcfg.base.bounded import read_text, shown
from kernelcfg.base.errors import ArgumentError, closest
from kernelcfg.vllm import releases
from kernelcfg.vllm.defaults import env_flag
from kernelcfg.vllm.rules import environment_problems

__all__ = ["Finding", "findings", "lint", "read_env_file"]


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


def retired_attention(environ: Mapping[str, str], release: releases.Release) -> list[Finding]:
    """The removed variables an attention flag replaced (``VLLM_ATTENTION_BACKEND`` and
    its kin), as ``lint`` reports them; for ``resolve``."""
    removed = _history()["removed"]
    return [
        _removed(name, environ[name], removed[name], environ, release.version)
        for name in sorted(environ)
        if name in removed
        and name not in release.envs
        and str(removed[name].get("flag") or "").startswith(("--attention", "-ac"))
    ]


def lint(environ: Mapping[str, str], release: releases.Release) -> list[Finding]:
    """Findings for the kernel-relevant variables of ``environ`` under ``release``."""
    return list(findings(environ, release))


def findings(environ: Mapping[str, str], release: releases.Release) -> Iterator[Finding]:
    """:func:`lint`'s findings one by one, in variable order (a reader that shows the
    first few and counts the rest never holds them all: a file may set 200,000)."""
    history = _history()
    resolution: dict[str, str] = history["resolution"]
    refused = {p.field: p for p in environment_problems(release, environ)}
    unknown = 0
    for name in sorted(environ):
        value = environ[name]
        if name in refused:
            problem = refused[name]
            yield Finding(name, value, problem.severity, problem.code, problem.message)
        elif name in resolution and (name in release.envs or not name.startswith("VLLM_")):
            effect = resolution[name]
            if name in release.rules.get("env_flags", {}):
                state = "on" if env_flag(release, name, environ) else "off"
                effect = f"reads as {state}; {effect}"
            yield Finding(name, value, "info", "changes-resolution", f"{name}={value}: {effect}")
        elif not name.startswith("VLLM_"):
            continue
        elif name in release.envs:
            if name in history["steering"]:
                steering = history["steering"][name]
                yield Finding(name, value, "info", "steers-kernels", f"{name}={value}: {steering}")
        elif name in history["removed"]:
            yield _removed(name, value, history["removed"][name], environ, release.version)
        else:
            unknown += 1
            yield _unknown(name, value, release, suggest=unknown <= _SUGGESTIONS)
