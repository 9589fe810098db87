"""How far the project's executed MoE vectors agree with real vLLM's.

    python scripts/release/execute/agreement.py 0.34.0 \
        [--ours tests/golden/vllm-0.34.0/executed-moe.json] \
        [--theirs ../shared/golden/vllm-0.34.0/auto-picks.json]

Compares, for every ``auto`` cell both files hold (target, variant, model, layout,
install), the status, the backend and the experts class, and prints the agreement rate
and the disagreements grouped by what differs.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

WORLDS = {"bare": "minimal", "wheel": "pip", "docker": "image", "full": "all"}
"""Real vLLM's vectors name the installs bare / wheel / docker / full."""
FIELDS = ("status", "backend", "experts")
STATUS = {"config_error": "error"}
"""Our ``config_error`` (``FusedMoEConfig`` or the layout refused before selection) is
real vLLM's ``error`` with ``error_stage`` "before selection"."""


def _field(outcome: dict[str, Any], name: str) -> Any:
    value = outcome.get(name)
    if name == "status" and isinstance(value, str):
        return STATUS.get(value, value)
    return value


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Cells compared, cells agreeing, and the disagreements by (variant, fields)."""
    mine, gold = ours["moe"], theirs["moe"]
    compared = agreed = 0
    by_class: collections.Counter[tuple[str, str, str]] = collections.Counter()
    examples: dict[tuple[str, str, str], Any] = {}
    for target, by_variant in gold["index"].items():
        for variant, by_model in by_variant.items():
            for model, by_layout in by_model.items():
                for layout, by_world in by_layout.items():
                    for world, oid in by_world.items():
                        cell = (
                            mine["index"]
                            .get(target, {})
                            .get(variant, {})
                            .get(model, {})
                            .get(layout, {})
                            .get(WORLDS[world], {})
                            .get("auto")
                        )
                        if cell is None:
                            continue
                        got, want = mine["outcomes"][cell], gold["outcomes"][oid]
                        compared += 1
                        wrong = [f for f in FIELDS if _field(got, f) != _field(want, f)]
                        if not wrong:
                            agreed += 1
                            continue
                        key = (variant, "+".join(wrong), world)
                        by_class[key] += 1
                        examples.setdefault(
                            key,
                            {
                                "cell": [target, model, layout, world],
                                "ours": {f: got.get(f) for f in (*FIELDS, "error")},
                                "theirs": {f: want.get(f) for f in (*FIELDS, "error")},
                            },
                        )
    return {
        "compared": compared,
        "agreed": agreed,
        "classes": [
            {"variant": k[0], "differs": k[1], "world": k[2], "n": n, "example": examples[k]}
            for k, n in by_class.most_common()
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--ours", type=Path)
    parser.add_argument("--theirs", type=Path)
    parser.add_argument("--examples", type=int, default=12)
    args = parser.parse_args(argv)
    ours = args.ours or common.GOLDEN_DIR / f"vllm-{args.version}" / "executed-moe.json"
    theirs = args.theirs or (
        common.REPO.parent / "shared" / "golden" / f"vllm-{args.version}" / "auto-picks.json"
    )
    result = compare(_load(ours), _load(theirs))
    n, ok = result["compared"], result["agreed"]
    rate = f"{100 * ok / n:.1f}%" if n else "n/a"
    print(f"vLLM {args.version}: {ok}/{n} cells agree ({rate}) on status, backend, experts")
    for entry in result["classes"][: args.examples]:
        print(f"  {entry['n']:5d}  {entry['variant']}  [{entry['differs']}]  {entry['world']}")
        print(f"         {json.dumps(entry['example'])[:600]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
