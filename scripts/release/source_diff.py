"""The maintainer's to-do list for a new release: the vLLM source files that differ
between its wheel and the nearest known release's, grouped by the data file whose
selection code they are.

    python scripts/release/source_diff.py NEW.whl NEAR.whl [--cited moe-0.29.0.json ...]

Two wheels are compared through their ``RECORD`` (a SHA-256 per file), so only the files
that differ are read; each differing Python file of a concern is diffed for the lines
added and removed. A concern is a data file kernelcfg keeps per release (``moe-``,
``linear-``, ``selector-``, ``topk-``, read by hand; the ``rules`` of ``vllm-``, carried
over by ``kernel_config.py --rules-from``); its files are the folders and files the
concern's code lives in (``CONCERNS``) and every vLLM file the nearest release's data
file cites in its notes (``file.py:LINE``). Under each file, the selection code that
differs: the support and selection functions and methods (``is_supported``,
``can_implement``, ``supports_*``, ``select_*`` …) and the module constants listing
priorities, backends or kernels (``_POSSIBLE_*_KERNELS`` …).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import io
import re
import sys
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CONCERNS", "Changed", "Concern", "cited_files", "compare", "render"]


@dataclass(frozen=True)
class Concern:
    """A per-release data file and the vLLM code it models."""

    kind: str
    """The data file's kind (``moe`` for ``moe-X.Y.Z.json``; ``vllm`` for its rules)."""
    what: str
    """The selection it models, in a few words."""
    paths: tuple[str, ...]
    """Folders (ending in ``/``) and files under the wheel's root; a file matches a folder
    anywhere below it."""
    hand_read: bool = True
    """Whether a maintainer edits the file by hand (else a generator rewrites it and a
    change is for information)."""


CONCERNS = (
    Concern(
        "moe",
        "fused-MoE backend selection",
        (
            "vllm/model_executor/layers/fused_moe/oracle/",
            "vllm/model_executor/layers/fused_moe/experts/",
            "vllm/model_executor/layers/fused_moe/modular_kernel.py",
            "vllm/model_executor/layers/fused_moe/config.py",
            "vllm/model_executor/layers/fused_moe/all2all_utils.py",
            "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe/",
        ),
    ),
    Concern(
        "linear",
        "linear-kernel selection",
        (
            "vllm/model_executor/kernels/linear/",
            "vllm/model_executor/layers/quantization/compressed_tensors/schemes/",
        ),
    ),
    Concern(
        "selector",
        "attention backend selection",
        (
            "vllm/v1/attention/selector.py",
            "vllm/v1/attention/backends/",
            "vllm/platforms/cuda.py",
            "vllm/platforms/rocm.py",
            "vllm/platforms/cpu.py",
            "vllm/platforms/xpu.py",
        ),
    ),
    Concern(
        "topk", "sparse-indexer top-k selection", ("vllm/model_executor/layers/indexer_topk.py",)
    ),
    Concern(
        "vllm",
        "the rules section (platform IR defaults, providers, compilation, engine rules)",
        (
            "vllm/config/kernel.py",
            "vllm/config/vllm.py",
            "vllm/config/compilation.py",
            "vllm/platforms/interface.py",
            "vllm/platforms/__init__.py",
            "vllm/kernels/",
            "vllm/ir/",
            "vllm/engine/arg_utils.py",
        ),
    ),
    Concern("env", "environment variables (generated: env-, vllm- envs)", ("vllm/envs.py",), False),
)
"""Every concern, in the order the to-do list prints them."""

_CITED = re.compile(r"([A-Za-z_][\w./]*\.py)(?::\d+)?")


@dataclass
class Changed:
    """One file that differs between the two wheels."""

    path: str
    added: int
    removed: int
    status: str
    """``changed``, ``new`` (only in the new wheel) or ``gone`` (only in the old one)."""
    cited: bool = False
    """Whether the nearest release's data file names it."""
    selection: tuple[str, ...] = ()
    """The selection code inside it that differs (:func:`selection_changes`)."""


@dataclass
class Report:
    """The comparison: per concern kind, its changed files; and the count of the rest."""

    by_kind: dict[str, list[Changed]] = field(default_factory=dict)
    other_python: int = 0
    other_files: int = 0


def _record(whl: zipfile.ZipFile) -> dict[str, str]:
    name = next(n for n in whl.namelist() if n.endswith(".dist-info/RECORD"))
    rows: dict[str, str] = {}
    for line in whl.read(name).decode("utf-8").splitlines():
        path, digest, *_ = line.rsplit(",", 2) if line.count(",") >= 2 else (line, "", "")
        if path.startswith("vllm/"):
            rows[path] = digest
    return rows


def _lines(whl: zipfile.ZipFile, path: str) -> list[str]:
    try:
        raw = whl.read(path)
    except KeyError:
        return []
    return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="replace").readlines()


def _count(old: list[str], new: list[str]) -> tuple[int, int]:
    added = removed = 0
    for line in difflib.unified_diff(old, new, n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


_SELECTING = re.compile(
    r"^_?(is_supported|can_implement|supports|supported|validate_configuration|get_supported"
    r"|select_|get_attn_backend|_get_backend_priorities|get_default_ir_op_priority"
    r"|get_flash_attn_version|flash_attn_supports)"
)
_LISTS = re.compile(r"^_?[A-Z][A-Z0-9_]*(POSSIBLE|PRIORIT|BACKENDS|KERNELS|ARCHITECTURES)")


def _selection_parts(lines: list[str]) -> dict[str, str]:
    """The parts of a module that choose kernels: functions and methods named like the
    support and selection queries, and module constants naming priorities, backends or
    kernels; by qualified name, as source text."""
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return {}
    parts: dict[str, str] = {}
    for node in tree.body:
        bodies = [(node.name + ".", node.body)] if isinstance(node, ast.ClassDef) else []
        for prefix, body in [("", [node]), *bodies]:
            for item in body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    if _SELECTING.match(item.name):
                        parts[prefix + item.name] = ast.unparse(item)
                elif isinstance(item, ast.Assign | ast.AnnAssign) and not prefix:
                    target = item.targets[0] if isinstance(item, ast.Assign) else item.target
                    if isinstance(target, ast.Name) and _LISTS.match(target.id):
                        parts[target.id] = ast.unparse(item)
    return parts


def selection_changes(old: list[str], new: list[str]) -> tuple[str, ...]:
    """The selection parts (:func:`_selection_parts`) added, removed or changed."""
    a, b = _selection_parts(old), _selection_parts(new)
    out = []
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            out.append(name + (" (new)" if name not in a else " (gone)" if name not in b else ""))
    return tuple(out)


def cited_files(texts: Iterable[str], names: Iterable[str]) -> set[str]:
    """The wheel paths a data file's notes name (``vllm/x/y.py:12``, ``oracle/fp8.py``;
    a bare ``fp8.py`` only where one file of that name exists)."""
    names = sorted(names)
    found: set[str] = set()
    for text in texts:
        for found_cite in set(_CITED.findall(text)):
            cite = found_cite.lstrip("./")
            if cite.startswith("vllm/"):
                found.add(cite)
                continue
            suffix = "/" + cite
            matches = [n for n in names if n.endswith(suffix)]
            if len(matches) == 1 or ("/" in cite and matches):
                found.update(matches)
    return found


def _concerns_of(path: str, cited: Mapping[str, set[str]]) -> list[str]:
    kinds = []
    for concern in CONCERNS:
        inside = any(path.startswith(p) if p.endswith("/") else path == p for p in concern.paths)
        if inside or path in cited.get(concern.kind, set()):
            kinds.append(concern.kind)
    return kinds


def compare(new_wheel: Path, old_wheel: Path, cited: Mapping[str, str]) -> Report:
    """The files that differ, by concern; ``cited`` maps a concern kind to the text of
    the nearest release's data file of that kind."""
    report = Report()
    with zipfile.ZipFile(new_wheel) as new, zipfile.ZipFile(old_wheel) as old:
        new_rec, old_rec = _record(new), _record(old)
        names = set(new_rec) | set(old_rec)
        cites = {kind: cited_files([text], names) for kind, text in cited.items()}
        for path in sorted(names):
            if new_rec.get(path) == old_rec.get(path):
                continue
            kinds = _concerns_of(path, cites)
            if not kinds or not path.endswith(".py"):
                report.other_python += path.endswith(".py")
                report.other_files += not path.endswith(".py")
                continue
            status = "new" if path not in old_rec else "gone" if path not in new_rec else "changed"
            before, after = _lines(old, path), _lines(new, path)
            added, removed = _count(before, after)
            parts = selection_changes(before, after)
            for kind in kinds:
                cited_here = path in cites.get(kind, set())
                report.by_kind.setdefault(kind, []).append(
                    Changed(path, added, removed, status, cited_here, parts)
                )
    return report


def render(report: Report, version: str, near: str, kept: Mapping[str, str]) -> list[str]:
    """The to-do list's lines; ``kept`` says per hand-read kind what the new release's
    file is (started from the nearest's, or already there)."""
    lines = [f"Source diff, vLLM {version} against {near} (+added -removed lines):"]
    for concern in CONCERNS:
        files = report.by_kind.get(concern.kind, [])
        state = kept.get(concern.kind, "")
        head = f"  {concern.kind}-{version}.json: {concern.what}"
        if not files:
            lines.append(f"{head}: no selection code changed{'; ' + state if state else ''}")
            continue
        todo = "review and edit" if concern.hand_read else "for information"
        lines.append(f"{head}: {len(files)} file(s) changed, {todo}{'; ' + state if state else ''}")
        for c in files:
            mark = f" [{c.status}]" if c.status != "changed" else ""
            cite = " (cited by its data)" if c.cited else ""
            lines.append(f"    {c.path}  +{c.added} -{c.removed}{mark}{cite}")
            if c.selection:
                lines.append(f"      selection code: {', '.join(c.selection)}")
    lines.append(
        f"  elsewhere: {report.other_python} Python file(s) and {report.other_files} "
        "other file(s) changed (no selection code)"
    )
    return lines


def hand_edits(report: Report) -> int:
    """How many (file, data file) pairs the list asks a maintainer to review."""
    hand = {c.kind for c in CONCERNS if c.hand_read}
    return sum(len(files) for kind, files in report.by_kind.items() if kind in hand)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("new", type=Path, help="the new release's wheel")
    parser.add_argument("old", type=Path, help="the nearest known release's wheel")
    parser.add_argument("--cited", type=Path, nargs="*", default=[], help="KIND-X.Y.Z.json files")
    args = parser.parse_args(argv)
    cited = {p.name.rsplit("-", 1)[0]: p.read_text(encoding="utf-8") for p in args.cited}
    report = compare(args.new, args.old, cited)
    print("\n".join(render(report, args.new.name, args.old.name, {})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
