"""Explicit-backend verdicts from the executed vectors: for each target, field
(``moe_backend``, ``linear_backend``, ``sparse_indexer_topk_backend``) and value, whether
vLLM honours it, and per quantisation scheme, written to
``tests/golden/vllm-X.Y.Z/executed-verdicts.json``; then the agreement with real vLLM's
``constraints.json`` where ``../shared/golden/`` has it.

    python scripts/release/execute/verdicts.py 0.34.0

Per scheme, from every executed cell of that scheme: ``ok`` (honoured with ``pip
install vllm`` in some configuration), ``cond`` (honoured only with the image's or every
optional library), ``ignored`` (never honoured, never refused: vLLM selects as on
auto), ``refused`` (vLLM raises in every world and configuration). A target's verdict
with the scheme unknown: ``error`` when every scheme executed is refused, ``ok`` when
one is ``ok``, else ``warning`` (``constraints.json``'s words). MoE values are the ones
executed on TP1 (``expert_parallel`` false) and DP8+EP/allgather_reducescatter (true).
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
from vectors import load_vectors

STANDARD = "pip"
"""The world that stands for a standard install (``pip install vllm``)."""
EP_LAYOUT = {False: "TP1", True: "DP8+EP/allgather_reducescatter"}


def _load(path: Path) -> dict[str, Any] | None:
    return load_vectors(path)


def _scheme_status(by_world: dict[str, list[str]]) -> str:
    """``by_world``: per world, each cell's ``honoured`` / ``ignored`` / ``refused``."""
    cells = [c for cells in by_world.values() for c in cells]
    if any(c == "honoured" for c in by_world.get(STANDARD, [])):
        return "ok"
    if any(c == "honoured" for c in cells):
        return "cond"
    if cells and all(c == "refused" for c in cells):
        return "refused"
    return "ignored"


def _case(per_scheme: dict[str, str]) -> str:
    statuses = set(per_scheme.values())
    if statuses == {"refused"}:
        return "error"
    return "ok" if "ok" in statuses else "warning"


Cells = dict[tuple[str, str, str, bool], dict[str, dict[str, list[str]]]]
"""(target, field, value, expert_parallel) -> scheme -> world -> cell verdicts."""


def _squash(name: str) -> str:
    return name.replace("_", "").lower()


def _moe_verdict(value: str, outcome: dict[str, Any]) -> str:
    """Refused (the oracle raised), honoured (the backend vLLM took is the value's:
    its enum member's name contains the value's, ``cutlass`` -> ``VLLM_CUTLASS``,
    ``deep_gemm`` -> ``DEEPGEMM_MXFP4``), or ignored (another backend taken)."""
    if outcome["status"] != "selected":
        return "refused"
    member = str(outcome.get("backend") or "").rsplit(".", maxsplit=1)[-1]
    return "honoured" if _squash(value) in _squash(member) else "ignored"


def moe_cells(data: dict[str, Any], cells: Cells) -> None:
    moe = data["moe"]
    for target, by_variant in moe["index"].items():
        for variant, by_model in by_variant.items():
            scheme = variant.split("/", maxsplit=1)[0]  # mxfp4: both entry points
            for by_layout in by_model.values():
                for ep, layout in EP_LAYOUT.items():
                    for world, by_value in by_layout.get(layout, {}).items():
                        for value, oid in by_value.items():
                            if value == "auto":
                                continue
                            out = moe["outcomes"][oid]
                            if out["status"] == "not_run":
                                continue
                            verdict = _moe_verdict(value, out)
                            node = cells.setdefault((target, "moe_backend", value, ep), {})
                            node.setdefault(scheme, {}).setdefault(world, []).append(verdict)


def _linear_scheme(layer: str) -> str:
    return "nvfp4_w4a16" if layer == "nvfp4/w4a16" else layer.split("/", maxsplit=1)[0]


def linear_cells(data: dict[str, Any], cells: Cells) -> None:
    linear, kernels = data["linear"], data["meta"].get("backend_kernels", {})
    for target, by_layer in linear["index"].items():
        for layer, by_world in by_layer.items():
            for world, by_value in by_world.items():
                if "+" in world:  # the env-switch worlds are not installs
                    continue
                for value, oid in by_value.items():
                    if value == "auto":
                        continue
                    out = linear["outcomes"][oid]
                    if out["status"] == "error":
                        verdict = "refused"
                    elif out.get("kernel") in kernels.get(value, ()):
                        verdict = "honoured"
                    else:
                        verdict = "ignored"
                    for ep in (False, True):
                        node = cells.setdefault((target, "linear_backend", value, ep), {})
                        node.setdefault(_linear_scheme(layer), {}).setdefault(world, []).append(
                            verdict
                        )


def topk_cells(data: dict[str, Any], cells: Cells) -> None:
    topk = data["topk"]
    for target, by_shape in topk["index"].items():
        for by_world in by_shape.values():
            for world, by_value in by_world.items():
                for value, oid in by_value.items():
                    if value == "auto":
                        continue
                    out = topk["outcomes"][oid]
                    verdict = "honoured" if out["status"] == "selected" else "refused"
                    for ep in (False, True):
                        node = cells.setdefault(
                            (target, "sparse_indexer_topk_backend", value, ep), {}
                        )
                        node.setdefault("any", {}).setdefault(world, []).append(verdict)


def verdicts(version: str) -> list[dict[str, Any]]:
    folder = common.GOLDEN_DIR / f"vllm-{version}"
    cells: Cells = {}
    for name, reader in (("moe", moe_cells), ("linear", linear_cells), ("topk", topk_cells)):
        data = _load(folder / f"executed-{name}.json")
        if data is not None:
            reader(data, cells)
        elif name != "topk":  # top-k came in 0.30.0; the others are always there
            raise SystemExit(f"{folder}/executed-{name}.json is missing: run all.py first")
    out = []
    for (target, field, value, ep), by_scheme in sorted(cells.items()):
        per_scheme = {s: _scheme_status(w) for s, w in sorted(by_scheme.items())}
        out.append(
            {
                "device": target,
                "field": field,
                "value": value,
                "expert_parallel": ep,
                "expected": _case(per_scheme),
                "per_quantization": per_scheme,
            }
        )
    return out


def agreement(mine: list[dict[str, Any]], theirs: dict[str, Any]) -> dict[str, Any]:
    """Real vLLM's cases we executed: same verdict; and by what differs."""
    index = {(c["device"], c["field"], c["value"], c["expert_parallel"]): c for c in mine}
    compared = agreed = 0
    differs: collections.Counter[tuple[str, str, str]] = collections.Counter()
    examples: dict[tuple[str, str, str], Any] = {}
    for case in theirs["cases"]:
        key = (case["device"], case["field"], case["value"], case["expert_parallel"])
        ours = index.get(key)
        if ours is None:
            continue
        if case["quantization"] is None:
            got = ours["expected"]
        else:
            status = ours["per_quantization"].get(case["quantization"])
            if status is None:
                continue
            got = {"refused": "error", "ok": "ok"}.get(status, "warning")
        compared += 1
        if got == case["expected"]:
            agreed += 1
            continue
        cls = (case["field"], got, case["expected"])
        differs[cls] += 1
        examples.setdefault(cls, {"case": key, "quantization": case["quantization"]})
    return {
        "compared": compared,
        "agreed": agreed,
        "differs": [
            {"field": k[0], "ours": k[1], "theirs": k[2], "n": n, "example": examples[k]}
            for k, n in differs.most_common()
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    args = parser.parse_args(argv)
    found = verdicts(args.version)
    out = common.GOLDEN_DIR / f"vllm-{args.version}" / "executed-verdicts.json"
    data = {
        "meta": {
            "vllm_version": args.version,
            "made_by": "scripts/release/execute/verdicts.py, from the executed-*.json beside it",
            "rules": __doc__.split("\n\n", 2)[2],
        },
        "cases": found,
    }
    out.write_text(json.dumps(data, indent=None, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{out}: {len(found)} cases")
    theirs = _load(
        common.REPO.parent / "shared" / "golden" / f"vllm-{args.version}" / "constraints.json"
    )
    if theirs is not None:
        result = agreement(found, theirs)
        n, ok = result["compared"], result["agreed"]
        rate = f"{100 * ok / n:.1f}%" if n else "n/a"
        print(f"vLLM {args.version} verdicts: {ok}/{n} of real vLLM's cases agree ({rate})")
        for entry in result["differs"]:
            print(
                f"  {entry['n']:4d}  {entry['field']}: ours {entry['ours']}, theirs "
                f"{entry['theirs']}  e.g. {entry['example']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
