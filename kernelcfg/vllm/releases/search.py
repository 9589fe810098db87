"""Where a release's data files are found: the user's folders first, then kernelcfg's own.

As botocore searches ``~/.aws/models`` before its own data, kernelcfg searches the
user's folders for a release's files (``vllm-X.Y.Z.json``, ``serve-X.Y.Z.json``,
``moe-X.Y.Z.json`` …: a kind of file kernelcfg ships, for one release) before its own,
so that the files made for a vLLM release newer than the installed kernelcfg can be used
the day vLLM ships it. The folders come from this process's environment, and from
nothing else (never a scanned file, a launch's ``--env`` or a batch line):
``KERNELCFG_DATA_PATH`` (folders separated by ``os.pathsep``, the first holding a file
wins; set empty: none), else ``$XDG_DATA_HOME/kernelcfg/releases`` (an absolute
``XDG_DATA_HOME``, else ``~/.local/share``). The shared files (``constraints.json``,
``glosses.json``, ``env-history.json``) are always kernelcfg's own.

A user's file is read bounded (a regular file of at most :data:`MAX_BYTES`, UTF-8,
JSON nested at most 64 deep) and checked against the shape of kernelcfg's own files of
its kind (:func:`check_shape`); a broken one is one error naming the file (exit 2).
Nothing here is read unless it is asked for: a resolve lists each folder once and reads
only the files of the release it resolves for.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_BYTES",
    "OPTIONAL",
    "PACKAGED",
    "SAME_AS",
    "VARIABLE",
    "check_shape",
    "folders",
    "kinds",
    "locate",
    "packaged_names",
    "read",
    "user_files",
    "user_files_read",
]

PACKAGED = Path(__file__).resolve().parent
"""kernelcfg's own release files."""
VARIABLE = "KERNELCFG_DATA_PATH"
"""The variable naming the user's folders."""
MAX_BYTES = 4 * 1024 * 1024
"""The largest user file read (kernelcfg's largest, an MoE file, is about 240 KB)."""
OPTIONAL: dict[str, frozenset[str]] = {"vllm": frozenset({"ir_op_priority"})}
"""Keys kernelcfg's own files of a kind all hold and the code reads only where present:
a user's file may leave them out (vLLM has announced the IR-op priority's removal)."""
_PER_RELEASE = re.compile(r"^([a-z][a-z-]*[a-z])-(\d+\.\d+\.\d+)\.json$")
_READ: list[Path] = []


@cache
def packaged_names() -> frozenset[str]:
    """The names of kernelcfg's own data files."""
    return frozenset(os.listdir(PACKAGED))


@cache
def kinds() -> frozenset[str]:
    """The kinds of per-release file kernelcfg ships (``vllm``, ``serve``, ``moe`` …)."""
    return frozenset(m.group(1) for m in map(_PER_RELEASE.match, packaged_names()) if m)


@cache
def folders() -> tuple[Path, ...]:
    """The user's folders, searched first to last (they need not exist)."""
    given = os.environ.get(VARIABLE)
    if given is not None:
        return tuple(Path(p).expanduser() for p in given.split(os.pathsep) if p)
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec: a relative value is ignored
        return (Path(xdg) / "kernelcfg" / "releases",)
    home = os.path.expanduser("~")
    if not os.path.isabs(home):  # no home to expand
        return ()
    return (Path(home) / ".local" / "share" / "kernelcfg" / "releases",)


@cache
def user_files() -> dict[str, Path]:
    """The user's per-release files by name; the first folder holding a name wins."""
    found: dict[str, Path] = {}
    for folder in folders():
        try:
            names = sorted(os.listdir(folder))
        except OSError:  # absent, not a folder, unreadable: nothing there
            continue
        for name in names:
            match = _PER_RELEASE.match(name)
            if match and match.group(1) in kinds() and name not in found:
                found[name] = folder / name
    return found


def locate(name: str) -> Path:
    """Where data file ``name`` is read from: a user's folder, else kernelcfg's own."""
    return user_files().get(name) or PACKAGED / name


def read(name: str) -> dict[str, Any]:
    """Data file ``name``: a user's (bounded and checked), else kernelcfg's own; a file
    that says it is the same as another release's (:data:`SAME_AS`) reads as that one."""
    path = user_files().get(name)
    if path is None:
        return _packaged(name)
    from kernelcfg.base.bounded import one_line

    what = f"release data file {one_line(str(path))}"
    value = _user_raw(path, what)
    if isinstance(value, dict) and SAME_AS in value:
        value = _same_as(value, name, what, packaged_only=False)
    check_shape(value, name, what)
    return value  # type: ignore[no-any-return]


def _user_raw(path: Path, what: str) -> Any:
    from kernelcfg.base.bounded import loads_json, read_text

    value = loads_json(read_text(str(path), what, limit=MAX_BYTES), what)
    _READ.append(path)
    return value


def _packaged_raw(name: str) -> dict[str, Any]:
    with (PACKAGED / name).open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def _packaged(name: str) -> dict[str, Any]:
    data = _packaged_raw(name)
    if SAME_AS in data:  # kernelcfg's own files point at kernelcfg's own only
        what = f"release data file {PACKAGED / name}"
        return _same_as(data, name, what, packaged_only=True)
    return data


SAME_AS = "same_as"
"""The key of a release file that holds no facts of its own: ``{"vllm_version": "0.25.1",
"same_as": "0.25.0"}`` in ``moe-0.25.1.json`` reads as ``moe-0.25.0.json`` with its own
``vllm_version`` (the release command writes one where a release's file would be the
named release's byte for byte but that line). One hop: the file named holds the facts."""
_ALIAS_KEYS = frozenset({"vllm_version", SAME_AS, "about"})
_RELEASE = re.compile(r"\d+\.\d+\.\d+")


def _same_as(value: dict[str, Any], name: str, what: str, *, packaged_only: bool) -> dict[str, Any]:
    """The file ``value`` (named ``name``) says it is the same as, under its own version:
    kernelcfg's own for one of kernelcfg's own (``packaged_only``), else the user's folders
    first."""
    from kernelcfg.base.errors import ArgumentError

    match = _PER_RELEASE.match(name)
    assert match is not None  # only such names are read
    target = value[SAME_AS]
    fix = "; write it with the release command (docs/releases.md, 'Adding a release')"
    if not isinstance(target, str) or not _RELEASE.fullmatch(target):
        raise ArgumentError(f"{what}: {SAME_AS} is {target!r}, not a release X.Y.Z{fix}")
    extra = sorted(set(value) - _ALIAS_KEYS)
    if extra:
        raise ArgumentError(f"{what}: a {SAME_AS} file holds no {', '.join(extra)}{fix}")
    other = f"{match.group(1)}-{target}.json"
    path = None if packaged_only else user_files().get(other)
    if path is not None:
        facts = _user_raw(path, f"release data file {path}")
    elif other in packaged_names() and other != name:
        facts = _packaged_raw(other)
    else:
        raise ArgumentError(f"{what}: {SAME_AS} {target}, and there is no other {other}{fix}")
    if not isinstance(facts, dict) or SAME_AS in facts:
        raise ArgumentError(f"{what}: {SAME_AS} {target}, and {other} holds no facts{fix}")
    return {**facts, "vllm_version": value.get("vllm_version")}


def user_files_read() -> tuple[Path, ...]:
    """The user's files read so far in this process (a bug report names them)."""
    return tuple(_READ)


_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _kind_of(value: Any) -> str:
    return _TYPES.get(type(value), "a value")


def _references(kind: str) -> list[dict[str, Any]]:
    """kernelcfg's own oldest and newest file of ``kind``: the shape a user's must have."""
    found = sorted(
        (tuple(int(p) for p in m.group(2).split(".")), m.group(0))
        for m in map(_PER_RELEASE.match, packaged_names())
        if m and m.group(1) == kind
    )
    return [_packaged(name) for name in dict.fromkeys([found[0][1], found[-1][1]])]


def check_shape(value: Any, name: str, what: str) -> None:
    """Refuse a user's file that kernelcfg could not use: not an object; another
    ``format`` than kernelcfg's own files of its kind; a ``vllm_version`` other than its
    name's; a key that each of kernelcfg's own files of its kind holds missing, or of
    another JSON type."""
    from kernelcfg.base.errors import ArgumentError

    match = _PER_RELEASE.match(name)
    assert match is not None  # only such names are listed
    kind, version = match.groups()
    fix = "; write it with the release command (docs/releases.md, 'Adding a release')"
    if not isinstance(value, dict):
        raise ArgumentError(f"{what}: holds {_kind_of(value)}, not an object{fix}")
    if value.get("vllm_version") != version:
        raise ArgumentError(
            f"{what}: its vllm_version is {value.get('vllm_version')!r}, and its name says "
            f"{version!r}{fix}"
        )
    references = _references(kind)
    if value.get("format") != references[-1].get("format"):
        raise ArgumentError(
            f"{what}: format {value.get('format')!r}; this kernelcfg reads "
            f"{kind}-X.Y.Z.json files of format {references[-1].get('format')!r}{fix}"
        )
    for key in references[-1]:
        wanted = " or ".join(sorted({_kind_of(ref[key]) for ref in references if key in ref}))
        if key not in value:
            if all(key in ref for ref in references) and key not in OPTIONAL.get(kind, ()):
                raise ArgumentError(f"{what}: {key!r} is missing{fix}")
            continue
        if _kind_of(value[key]) not in wanted.split(" or "):
            raise ArgumentError(f"{what}: {key!r} is {_kind_of(value[key])}, not {wanted}{fix}")


def forget() -> None:
    """Forget what was listed and read (a test changes the environment)."""
    for cached in (packaged_names, kinds, folders, user_files):
        cached.cache_clear()
    _READ.clear()
