"""How far the project's executed linear / attention / top-k vectors agree with real
vLLM's (``agreement.py`` does MoE).

    python scripts/release/execute/agreement_kinds.py 0.34.0 [--kind linear|attention|topk]

Compares every ``auto`` cell both files hold and prints the agreement rate per kind and
the disagreements grouped by what differs.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from agreement import WORLDS
from vectors import load_vectors

Cell = tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def linear_cells(ours: dict[str, Any], theirs: dict[str, Any]) -> Iterator[Cell]:
    mine, gold = ours["linear"], theirs["linear"]
    for target, by_layer in gold["index"].items():
        for layer, by_world in by_layer.items():
            for world, oid in by_world.items():
                cell = (
                    mine["index"].get(target, {}).get(layer, {}).get(WORLDS[world], {}).get("auto")
                )
                if cell is not None:
                    yield (target, layer, world), mine["outcomes"][cell], gold["outcomes"][oid]


ATTENTION_WORLDS = {"wheel": "pip", "docker": "image", "extras": "all"}
"""Real vLLM's attention vectors name the installs wheel / docker / extras."""


def attention_cells(ours: dict[str, Any], theirs: dict[str, Any]) -> Iterator[Cell]:
    """The ``auto`` cells: pick and candidates."""
    mine, gold = ours["auto"], theirs["auto"]
    for target, by_feature in gold["index"].items():
        for feature, by_world in by_feature.items():
            for world, oid in by_world.items():
                node = mine["index"].get(target, {}).get(feature, {})
                cell = node.get(ATTENTION_WORLDS.get(world, ""))
                if cell is not None:
                    yield (target, feature, world), mine["outcomes"][cell], gold["outcomes"][oid]


def attention_explicit_cells(ours: dict[str, Any], theirs: dict[str, Any]) -> Iterator[Cell]:
    """Each explicit ``--attention-backend`` value: honoured, ignored or refused."""
    mine, gold = ours["explicit"], theirs["explicit"]
    my_backends = ours["meta"]["backends"]
    for target, by_feature in gold["index"].items():
        for feature, by_world in by_feature.items():
            for world, ids in by_world.items():
                node = mine["index"].get(target, {}).get(feature, {})
                row = node.get(ATTENTION_WORLDS.get(world, ""))
                if row is None:
                    continue
                numbers = mine["rows"][row]
                for backend, oid in zip(theirs["meta"]["backends"], ids, strict=True):
                    if backend not in my_backends:
                        continue
                    got = mine["outcomes"][numbers[my_backends.index(backend)]]
                    yield (target, backend, world), got, gold["outcomes"][oid]


def topk_cells(ours: dict[str, Any], theirs: dict[str, Any]) -> Iterator[Cell]:
    """``auto`` (the backend) and each explicit value real vLLM's vectors judged
    (``accepted`` = ours ``selected``; ``refused: reason`` = ours ``refused``)."""
    mine, gold = ours["topk"], theirs["sparse_indexer_topk"]
    for target, by_shape in gold["index"].items():
        for shape, by_world in by_shape.items():
            for world, oid in by_world.items():
                node = mine["index"].get(target, {}).get(shape, {}).get(WORLDS[world])
                if node is None:
                    continue
                want = gold["outcomes"][oid]
                yield (target, "auto", world), mine["outcomes"][node["auto"]], want
                for value, verdict in want.get("explicit_values_if_requested", {}).items():
                    if value not in node:
                        continue
                    got = mine["outcomes"][node[value]]
                    if verdict == "accepted":
                        expected = {"status": "selected", "backend": value}
                    else:
                        expected = {"status": "refused", "backend": None}
                    yield (target, value, world), got, expected


LINEAR_FIELDS = ("status", "kernel")
"""Compared for the headline; candidates and trials are counted apart."""


def compare(
    cells: Iterator[Cell], fields: tuple[str, ...], extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    compared = agreed = 0
    extra_agreed = collections.Counter[str]()
    by_class: collections.Counter[tuple[str, str, str]] = collections.Counter()
    examples: dict[tuple[str, str, str], Any] = {}
    for key, got, want in cells:
        compared += 1
        for f in extra:
            if _norm(got.get(f)) == _norm(want.get(f)):
                extra_agreed[f] += 1
        wrong = [f for f in fields if got.get(f) != want.get(f)]
        if not wrong:
            agreed += 1
            continue
        cls = (key[1], "+".join(wrong), key[-1])
        by_class[cls] += 1
        examples.setdefault(
            cls,
            {
                "cell": list(key),
                "ours": {f: got.get(f) for f in (*fields, "error")},
                "theirs": {f: want.get(f) for f in (*fields, "error")},
            },
        )
    return {
        "compared": compared,
        "agreed": agreed,
        "extra_agreed": dict(extra_agreed),
        "classes": [
            {"what": k[0], "differs": k[1], "world": k[2], "n": n, "example": examples[k]}
            for k, n in by_class.most_common()
        ],
    }


def _norm(value: Any) -> Any:
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


KINDS: dict[str, tuple[str, str, Callable[..., Iterator[Cell]], tuple[str, ...], tuple[str, ...]]]
KINDS = {
    "linear": (
        "executed-linear.json",
        "auto-picks.json",
        linear_cells,
        LINEAR_FIELDS,
        ("candidates", "trials"),
    ),
    "attention": (
        "executed-attention.json",
        "attention-picks.json",
        attention_cells,
        ("status", "backend"),
        ("candidates",),
    ),
    "attention-explicit": (
        "executed-attention.json",
        "attention-picks.json",
        attention_explicit_cells,
        ("status",),
        ("message",),
    ),
    "topk": (
        "executed-topk.json",
        "auto-picks.json",
        topk_cells,
        ("status", "backend"),
        (),
    ),
}
"""kind -> (our file, real vLLM's file, cell reader, headline fields, counted fields)."""


def report(version: str, kind: str, examples: int, path: Path | None = None) -> dict[str, Any]:
    ours_name, theirs_name, cells, fields, extra = KINDS[kind]
    ours = path or common.GOLDEN_DIR / f"vllm-{version}" / ours_name
    theirs = common.REPO.parent / "shared" / "golden" / f"vllm-{version}" / theirs_name
    mine = load_vectors(ours)
    assert mine is not None, ours
    result = compare(cells(mine, _load(theirs)), fields, extra)
    n, ok = result["compared"], result["agreed"]
    rate = f"{100 * ok / n:.1f}%" if n else "n/a"
    print(f"vLLM {version} {kind}: {ok}/{n} cells agree ({rate}) on {', '.join(fields)}")
    for f, count in result["extra_agreed"].items():
        print(f"  {f}: {count}/{n} agree")
    for entry in result["classes"][:examples]:
        print(f"  {entry['n']:5d}  {entry['what']}  [{entry['differs']}]  {entry['world']}")
        print(f"         {json.dumps(entry['example'])[:600]}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--kind", choices=sorted(KINDS), action="append")
    parser.add_argument("--examples", type=int, default=12)
    parser.add_argument("--ours", type=Path, help="our vectors (with one --kind)")
    args = parser.parse_args(argv)
    for kind in args.kind or sorted(KINDS):
        ours = args.ours or common.GOLDEN_DIR / f"vllm-{args.version}" / KINDS[kind][0]
        if load_vectors(ours) is not None:
            report(args.version, kind, args.examples, ours)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
