"""The package's layers (docs/architecture.md): an import never climbs and no module
imports itself back through another. Run by import-linter (the contract is in
pyproject.toml) and grimp, its import graph, so a new import that breaks either fails
here, not only in ``make lint``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def test_import_contract_is_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 kept, 0 broken" in done.stdout


def test_no_import_circles() -> None:
    graph = grimp.build_graph("kernelcfg")
    circles = sorted(
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert circles == []


def test_every_module_sits_in_a_layer() -> None:
    """Only the package's front door lives outside the layer folders."""
    loose = sorted(
        p.name
        for p in (ROOT / "kernelcfg").glob("*.py")
        if p.name not in ("__init__.py", "__main__.py", "_version.py")
    )
    assert loose == []


def test_vllm_ground_floor_holds_only_what_every_concern_reads() -> None:
    """``kernelcfg/vllm/`` keeps its concerns in sub-packages (compile_cache, kernels,
    kernel_config, releases); only the modules every one of them reads stay on the
    ground floor (docs/architecture.md)."""
    ground = sorted(p.stem for p in (ROOT / "kernelcfg" / "vllm").glob("*.py"))
    assert ground == ["__init__", "checkpoint", "context", "inputs"]


def test_answers_keep_no_more_than_their_limit() -> None:
    import functools

    from kernelcfg.base.answers import Answers

    kept: Answers[int, int] = Answers(2)
    made: list[int] = []

    def make(n: int) -> int:
        made.append(n)
        return n * 10

    got = [kept.get(n, functools.partial(make, n)) for n in (1, 2, 3, 1, 3)]
    assert got == [10, 20, 30, 10, 30]
    assert made == [1, 2, 3, 3]  # 1 and 2 kept; 3 came past the limit, made again
