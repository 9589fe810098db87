"""vLLM's sparse-indexer top-k backend on ``auto``: the walk ``SparseIndexerTopk`` makes.

``auto`` tries ``cooperative`` (CUDA, SM90 or newer outside the families the release
excludes, a top-k it has kernels for, at most so many rows), then ``persistent``
(CUDA, the same top-k values), then ``per_row``. No library or environment variable
changes it; the number of rows does, so the pick is given per decode batch size. The
thresholds are the release's data (``topk-X.Y.Z.json``, from 0.30.0 when the field came).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from kernelcfg.vllm import releases

__all__ = ["facts", "pick", "picks_by_rows"]

Chain = list[tuple[str, str, str | None]]


def _cooperative(
    rule: Mapping[str, Any], kind: str, cap: tuple[int, int] | None, rows: int, topk: int
) -> list[str]:
    """``_cooperative_constraints``: every failed check, in vLLM's order."""
    failed = []
    if kind != "cuda":
        failed.append("requires a CUDA platform")
    if topk not in rule["topk"]:
        failed.append(f"topk_tokens must be in {tuple(rule['topk'])}, got {topk}")
    if rows > rule["max_rows"]:
        failed.append(f"num_rows must be <= {rule['max_rows']}, got {rows}")
    if kind == "cuda" and (
        cap is None
        or cap < (rule["min_capability"][0], rule["min_capability"][1])
        or cap[0] in rule["excluded_majors"]
    ):
        failed.append(rule["capability_reason"])
    return failed


def pick(
    facts: Mapping[str, Any], kind: str, cap: tuple[int, int] | None, rows: int, topk: int
) -> tuple[str, Chain]:
    """The backend ``auto`` resolves to for ``rows`` rows of logits, and the walk."""
    failed = _cooperative(facts["cooperative"], kind, cap, rows, topk)
    if not failed:
        return "cooperative", [("cooperative", "ok", None)]
    chain: Chain = [("cooperative", "refused", "; ".join(failed))]
    allowed = facts["persistent"]["topk"]
    if kind != "cuda":
        chain.append(("persistent", "refused", "not a CUDA platform"))
    elif topk not in allowed:
        chain.append(("persistent", "refused", f"topk_tokens {topk} not in {tuple(allowed)}"))
    else:
        chain.append(("persistent", "ok", None))
        return "persistent", chain
    chain.append(("per_row", "ok", None))
    return "per_row", chain


def picks_by_rows(
    facts: Mapping[str, Any], kind: str, cap: tuple[int, int] | None, topk: int
) -> dict[str, tuple[str, Chain]]:
    """The pick for each band of decode rows the walk tells apart (``1-64``, ``65+``)."""
    limit = facts["cooperative"]["max_rows"]
    return {
        f"1-{limit}": pick(facts, kind, cap, 1, topk),
        f"{limit + 1}+": pick(facts, kind, cap, limit + 1, topk),
    }


@cache
def facts(version: str) -> dict[str, Any] | None:
    """The release's top-k facts; ``None`` before the field existed."""
    return releases.release_data("topk", version)
