"""What a vLLM upgrade changes for one launch, led by what its user will see.

One launch (vLLM's flags, or a whole ``vllm serve`` line) resolved for two releases,
under every install (``--install`` names one): the kernels vLLM picks (attention, MoE,
linear per layer kind, sparse-indexer top-k) before and after, changes first, each with
the new release's reason for passing over the old pick; the launch's options the new
release has dropped, renamed or deprecated; the warnings and errors that appear or
disappear; and whether the compile cache carries over (across releases it never does:
vLLM hashes its version into the key). Returned as data; ``cli.upgrade`` prints it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kernelcfg.base.bounded import cut
from kernelcfg.base.errors import ArgumentError
from kernelcfg.base.problems import Problem
from kernelcfg.commands.pipeline import Failure, Request, resolve_args
from kernelcfg.engine.resolution import Resolution
from kernelcfg.flags import argv as argv_mod
from kernelcfg.vllm import releases
from kernelcfg.vllm.inputs import INSTALLS

__all__ = ["MAX_REASON", "report"]

MAX_REASON = 300
"""The longest reason kept for a changed pick (vLLM's own reasons can run long)."""
_OWN = "release-"
"""The codes of what kernelcfg says about its own data (a stand-in, a user's folder)."""


@dataclass(frozen=True)
class _Side:
    """One release's resolutions of the launch: as given, and per install."""

    asked: str
    """The release as the user wrote it."""
    chosen: releases.Chosen
    """The release resolved for."""
    given: Resolution | Failure
    """The launch as given (its warnings, options and hash)."""
    by_install: dict[str, Resolution | Failure]
    """The launch under each install compared."""
    words: tuple[str, ...]
    """The launch's words, as the user gave them."""


def report(
    old: str, new: str, words: Sequence[str], request: Request | None = None
) -> dict[str, Any]:
    """The upgrade report of the launch ``words`` from release ``old`` to ``new``; raises
    :class:`ArgumentError` for input no report can be made of."""
    if argv_mod.split_version(list(words)) is not None:
        raise ArgumentError(
            "upgrade: --vllm-version is not taken here; FROM and TO name the releases "
            "(kernelcfg upgrade 0.33 0.34 --device h100 -- vllm serve MODEL)",
            field="vllm_version",
        )
    before = releases.named(old, "FROM")
    after = releases.named(new, "TO")
    if (before.asked or before.release.version) == (after.asked or after.release.version):
        raise ArgumentError(
            f"upgrade: FROM and TO are the same release ({before.release.version}); name two",
            field="vllm_version",
        )
    a = _side(old, before, words, request)
    b = _side(new, after, words, request)
    return _compare(a, b)


def _side(asked: str, chosen: releases.Chosen, words: Sequence[str], req: Request | None) -> _Side:
    line = ["--vllm-version", asked, *words]
    given = resolve_args(line, req)
    named = (
        isinstance(given, Resolution) and given.inputs is not None and given.inputs.install_given
    )
    if named or isinstance(given, Failure):
        install = given.inputs.install if isinstance(given, Resolution) and given.inputs else "pip"
        return _Side(asked, chosen, given, {install: given}, tuple(words))
    by_install: dict[str, Resolution | Failure] = {}
    for install in INSTALLS:
        own = given.inputs is not None and given.inputs.install == install
        by_install[install] = given if own else resolve_args(["--install", install, *line], req)
    return _Side(asked, chosen, given, by_install, tuple(words))


def _version(side: _Side) -> str:
    """The release as the report names it: the one asked for (``0.33.1``)."""
    return side.chosen.asked or side.chosen.release.version


def _compare(a: _Side, b: _Side) -> dict[str, Any]:
    kernels = _kernels(a, b)
    options = _options(a, b)
    appear, disappear = _warnings(a, b)
    va, vb = _version(a), _version(b)
    changed = [row for row in kernels if row["changed"]]
    cache = {
        "reusable": False,
        "why": f"vLLM hashes its version into the compile-cache key: {vb} compiles afresh, "
        f"into a new directory, on its first start (nothing of {va}'s cache carries over)",
    }
    summary = (
        f"{len(changed)} kernel pick(s) change, {len(options)} of the launch's options "
        f"change, {len(appear)} warning(s) appear and {len(disappear)} disappear; "
        "compile cache not reusable"
    )
    return {
        "from": _side_data(a),
        "to": _side_data(b),
        "platform": _platform(a, b),
        "model": _model(a, b),
        "installs": list(b.by_install),
        "install_given": len(b.by_install) == 1 and isinstance(b.given, Resolution),
        "summary": summary,
        "kernels": kernels,
        "options": options,
        "warnings": {"appear": appear, "disappear": disappear},
        "compile_cache": cache,
        "exit_code": _exit_code(b.given),
    }


def _exit_code(result: Resolution | Failure) -> int:
    """The new release's verdict on the launch, as ``resolve`` exits."""
    if isinstance(result, Failure):
        return result.problem.exit_code
    return result.exit_code()


def _side_data(side: _Side) -> dict[str, Any]:
    result = side.given
    return {
        "asked": _version(side),
        "vllm_version": side.chosen.release.version,
        "hash": result.hash if isinstance(result, Resolution) else None,
        "hash_scheme": side.chosen.release.hash_scheme,
        "exit_code": _exit_code(result),
        "notes": [p.message for p in _problems(result) if p.code.startswith(_OWN)],
        "refused": result.problem.message if isinstance(result, Failure) else None,
    }


def _platform(a: _Side, b: _Side) -> dict[str, Any] | None:
    for side in (b, a):
        if isinstance(side.given, Resolution):
            return side.given.target.as_dict()
    return None


def _model(a: _Side, b: _Side) -> dict[str, Any] | None:
    for side in (b, a):
        result = side.given
        if isinstance(result, Resolution) and result.inputs is not None:
            inputs = result.inputs
            if not (inputs.model or inputs.architectures or inputs.quant_scheme):
                return None
            return {
                "id": inputs.model,
                "architectures": list(inputs.architectures or []),
                "quant_scheme": inputs.quant_scheme,
            }
    return None


# ---------------------------------------------------------------- kernels


_ORDER = ("attention", "MoE", "linear", "top-k")


def _picks(result: Resolution | Failure) -> dict[str, str]:
    """What vLLM picks, per kernel (``linear`` per layer kind): the kernel's class where
    the walk names one, else the backend."""
    if isinstance(result, Failure):
        return {}
    chosen = result.selection
    out: dict[str, str] = {}
    if "attention" in chosen:
        out["attention"] = _said(chosen["attention"])
    if "moe_backend" in chosen:
        out["MoE"] = _said(chosen["moe_backend"])
    linear = chosen.get("linear_backend")
    if linear:
        for kind, kernel in linear["layers"].items():
            out[f"linear {kind}"] = kernel
    topk = chosen.get("sparse_indexer_topk_backend")
    if topk:
        out["top-k"] = "; ".join(f"{band}: {name}" for band, name in topk["by_rows"].items())
    return out


def _said(picked: dict[str, Any]) -> str:
    """One selection in a few words."""
    if picked["status"] == "depends":
        return f"depends ({picked.get('message') or 'on the model'})"
    if picked["status"] in ("no_kernel", "error"):
        return "none"
    return str(picked.get("kernel") or picked.get("backend") or picked.get("value"))


def _kernels(a: _Side, b: _Side) -> list[dict[str, Any]]:
    """One row per kernel and group of installs that see the same change: changes
    first, then in vLLM's order (attention, MoE, linear, top-k)."""
    installs = [i for i in b.by_install if i in a.by_install] or list(b.by_install)
    before = {i: _picks(a.by_install.get(i, a.given)) for i in installs}
    after = {i: _picks(b.by_install.get(i, b.given)) for i in installs}
    names = dict.fromkeys(n for i in installs for n in (*before[i], *after[i]))
    rows = []
    for name in sorted(names, key=lambda n: _ORDER.index(n.split(" ")[0])):
        groups: dict[tuple[str | None, str | None], list[str]] = {}
        for install in installs:
            pair = (before[install].get(name), after[install].get(name))
            groups.setdefault(pair, []).append(install)
        for (old, new), where in groups.items():
            rows.append(_row(name, where, old, new, b.by_install.get(where[0], b.given)))
    return sorted(rows, key=lambda row: not row["changed"])


def _row(
    name: str, installs: list[str], old: str | None, new: str | None, after: Resolution | Failure
) -> dict[str, Any]:
    changed = old != new
    return {
        "kernel": name,
        "installs": installs,
        "from": old,
        "to": new,
        "changed": changed,
        "why": _why(name, old, new, after) if changed and old else None,
    }


_SELECTION_KEYS = {
    "attention": "attention",
    "MoE": "moe_backend",
    "linear": "linear_backend",
    "top-k": "sparse_indexer_topk_backend",
}


def _why(name: str, old: str, new: str | None, after: Resolution | Failure) -> str | None:
    """The new release's reason for passing over the old pick, as far as its walk says:
    a refusal with vLLM's reason, or a pick made without trying the old one (it comes
    later in the new order, or the new release has no such kernel); ``None`` where the
    new release refuses the whole launch."""
    if isinstance(after, Failure):  # the launch's refusal is said once, among the errors
        return None
    picked = after.selection.get(_SELECTION_KEYS[name.split(" ", maxsplit=1)[0]])
    if picked is None:
        return None
    version = after.release.version
    tried = [c for c in picked["candidates"] if old in (c.get("kernel"), c.get("backend"))]
    if tried and tried[0]["verdict"] == "refused":
        return cut(f"{version} refuses it: {tried[0]['reason']}", MAX_REASON)
    if tried and tried[0]["verdict"] == "ok":
        return None
    return f"{version} takes {new} without trying it" if new else None


# ---------------------------------------------------------------- options


def _option_words(words: Sequence[str]) -> Iterator[str]:
    """The option names the launch writes (``--x`` of ``--x=1``): the ``vllm serve``
    part when there is one, else the words less kernelcfg's own options."""
    head, serve = argv_mod.split_serve(list(words))
    for word in serve if serve is not None else head:
        name = word.split("=", 1)[0]
        if (
            name.startswith("-")
            and name not in ("-", "--")
            and name not in argv_mod.CONTEXT_OPTIONS
        ):
            yield name


def _normal(option: str) -> str:
    """An option string as vLLM's parser reads it: ``_`` is ``-`` after ``--``."""
    return option[:2] + option[2:].replace("_", "-") if option.startswith("--") else option


def _dest(strings: dict[str, dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The option ``name`` stands for, as argparse reads it: exact, with ``_`` for
    ``-`` before the first ``.``, the part before a ``.`` (dotted keys), or a prefix
    of exactly one option."""
    base, dot, _ = name.partition(".")
    base = _normal(base)
    if base in strings:
        return strings[base]
    if dot:
        return None
    found = {id(o): o for s, o in strings.items() if s.startswith(base)}
    return next(iter(found.values())) if len(found) == 1 else None


def _options(a: _Side, b: _Side) -> list[dict[str, Any]]:
    """The launch's options that the new release drops, renames or newly deprecates."""
    from kernelcfg.flags.serve_line import parser as serve_parser

    old = serve_parser.options(a.chosen.release)
    new = serve_parser.options(b.chosen.release)
    out = []
    for name in dict.fromkeys(_option_words(a.words)):
        option = _dest(old.exact, name)
        if option is None:
            continue
        found = _change(name, option, new)
        if found is not None:
            out.append(found)
    return out


def _change(name: str, option: dict[str, Any], new: Any) -> dict[str, Any] | None:
    """How the new release reads option ``name`` (the old one reads it as ``option``):
    ``gone`` (no such option), ``renamed`` (the string written is gone, the option is
    not), ``ambiguous`` (an abbreviation that now fits several options), ``deprecated``
    (newly); ``None`` when nothing changed."""
    dest = option["dest"]
    written = name.split(".", 1)[0]
    successor = new.by_dest.get(dest)
    if successor is None:
        return {"option": written, "change": "gone", "to": None, "message": None}
    if _dest(new.exact, name) is None:
        change = "renamed" if _normal(written) in option["strings"] else "ambiguous"
        return {"option": written, "change": change, "to": new.flag(dest), "message": None}
    if successor.get("deprecated") and not option.get("deprecated"):
        return {
            "option": written,
            "change": "deprecated",
            "to": None,
            "message": str(successor["deprecated"]),
        }
    return None


# ---------------------------------------------------------------- warnings


def _problems(result: Resolution | Failure) -> list[Problem]:
    return [result.problem] if isinstance(result, Failure) else list(result.problems)


def _keys(problem: Problem, versions: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A problem as compared across releases: as written, and with its release's own
    version left out (``vLLM 0.34.0 turns DeepGEMM off`` is the same warning in 0.35.0)."""
    message = problem.message
    for version in versions:
        message = message.replace(version, "<release>")
    return (problem.severity, problem.code, problem.message), (
        problem.severity,
        problem.code,
        message,
    )


def _warnings(a: _Side, b: _Side) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The errors and warnings only the new release has, and only the old one has."""

    def listed(side: _Side) -> list[tuple[tuple[str, ...], tuple[str, ...], Problem]]:
        release = side.chosen.release.version
        versions = sorted({_version(side), release, release.rsplit(".", 1)[0]}, key=len)
        return [
            (*_keys(p, versions[::-1]), p)
            for p in _problems(side.given)
            if p.severity != "info" and not p.code.startswith(_OWN)
        ]

    def only(
        mine: list[tuple[tuple[str, ...], tuple[str, ...], Problem]],
        theirs: list[tuple[tuple[str, ...], tuple[str, ...], Problem]],
    ) -> list[dict[str, Any]]:
        written = {w for w, _, _ in theirs}
        general = {g for _, g, _ in theirs}
        return [p.as_dict() for w, g, p in mine if w not in written and g not in general]

    old, new = listed(a), listed(b)
    return only(new, old), only(old, new)
