"""What a vLLM version a user names means to kernelcfg: a release it has data for; a
patch release of a known minor, resolved with that minor's data under a warning; or a
refusal that names the nearest known release, what may differ, and how to add it.

The patch rule and its evidence (the selection code of the patch releases checked
against their ``.0``) are in docs/releases.md, "Patch releases".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kernelcfg.base.errors import UnknownVersionError, closest

__all__ = ["canonical", "key", "patch_warning", "refusal", "stand_in"]

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?\Z")
_ADD = "the release command (docs/releases.md, 'Adding a release')"
_DIFFERS = (
    "its kernel-config fields, backend choices, kernel picks and hashes may differ from "
    "any release kernelcfg knows"
)


def key(version: str) -> tuple[int, ...]:
    """``X.Y.Z`` as a tuple of integers, for ordering releases."""
    return tuple(int(p) for p in version.split("."))


def canonical(text: str) -> str | None:
    """``X.Y.Z`` for ``0.32``, ``0.32.0`` or ``v0.32.0``; ``None`` for anything else."""
    match = _VERSION.match(text)
    if match is None:
        return None
    major, minor, patch = match.groups()
    return f"{int(major)}.{int(minor)}.{int(patch or 0)}"


def stand_in(wanted: str, known: Sequence[str]) -> str | None:
    """The known release a patch release kernelcfg has no data for resolves with: the
    newest known one of the same minor before it (``0.33.1``, ``0.33.2`` -> ``0.33.0``);
    ``None`` when there is none (a new minor, or one older than every known patch)."""
    minor = key(wanted)[:2]
    earlier = [v for v in known if key(v)[:2] == minor and key(v) < key(wanted)]
    return earlier[-1] if earlier else None


def patch_warning(asked: str, used: str, folders: str) -> str:
    """The warning of a patch release resolved with another's data."""
    return (
        f"kernelcfg has no data for vLLM {asked} and resolves it with {used}'s: the patch "
        "releases checked changed no kernel-selection code (docs/releases.md, 'Patch "
        "releases'), but vLLM hashes its own version into the compile-cache key, and a "
        "patch may add environment variables or options; for "
        f"{asked}'s own data, add its files to {folders} with {_ADD}"
    )


def _nearest(wanted: str, known: Sequence[str]) -> tuple[str, str]:
    """The nearest known release and where ``wanted`` sits among the known ones."""
    if key(wanted) > key(known[-1]):
        return known[-1], f"newer than the newest release it knows ({known[-1]})"
    if key(wanted) < key(known[0]):
        return known[0], f"older than the oldest release it knows ({known[0]})"
    below = [v for v in known if key(v) < key(wanted)][-1]
    above = next(v for v in known if key(v) > key(wanted))
    return below, f"between {below} and {above}, the releases it knows either side"


def _short(version: str) -> str:
    """``0.34.0`` as ``0.34``: the spelling a user types."""
    major, minor, patch = version.split(".")
    return f"{major}.{minor}" if patch == "0" else version


def refusal(text: str, known: Sequence[str], where: str, folders: str) -> UnknownVersionError:
    """The error for a version kernelcfg cannot resolve: where it was named (``where``:
    ``--vllm-version``, ``KERNELCFG_VLLM_VERSION`` or ``installed``), the nearest known
    release, what may differ, and how to add the release (``folders``: where it looks)."""
    listed = ", ".join(known)
    wanted = canonical(text)
    if wanted is None:
        hint = closest(text.strip(), known) or closest(text.strip().lstrip("v") + ".0", known)
        return UnknownVersionError(
            text,
            known,
            message=f"{where}: unknown vLLM version {text!r}: write it as 0.33, 0.33.0 or "
            f"v0.33.0 (no blanks); kernelcfg knows {listed}"
            + (f" (did you mean {_short(hint)!r}?)" if hint else ""),
        )
    nearest, position = _nearest(wanted, known)
    upgrade = ", upgrade kernelcfg," if key(wanted) > key(known[-1]) else ","
    if where == "installed":
        said = (
            f"vLLM {wanted} is installed here, and kernelcfg has no data for it: {position}; "
            f"{_DIFFERS}. Pass --vllm-version {_short(nearest)} (or KERNELCFG_VLLM_VERSION) "
            "to resolve for the nearest"
        )
    else:
        given, fix = (f"{where}={text}", "=") if where.endswith("_VERSION") else (where, " ")
        said = (
            f"{given}: kernelcfg has no data for vLLM {wanted}, {position}; {_DIFFERS}. "
            f"Resolve for the nearest with {where}{fix}{_short(nearest)}"
        )
    return UnknownVersionError(
        text,
        known,
        message=f"{said}{upgrade} or add {wanted}'s data files to {folders} with {_ADD}. "
        f"kernelcfg knows {listed}",
    )
