"""``--sparse-indexer-topk-backend auto`` against the vectors the project executed
itself: each release's own ``SparseIndexerTopk.resolve_backend`` run on simulated CUDA
targets by ``scripts/release/execute/topk.py`` (``golden/vllm-X.Y.Z/executed-topk.json``;
its ``meta`` says what was simulated). Every ``auto`` cell: the backend, and
cooperative's unmet constraints in vLLM's words and order."""

from __future__ import annotations

import pytest

from kernelcfg.vllm.kernels import topk

from .executed import load, releases

RELEASES = releases("topk")

pytestmark = pytest.mark.golden


@pytest.mark.parametrize("version", RELEASES)
def test_meta_says_what_was_simulated(version: str) -> None:
    meta = load(version, "topk")["meta"]
    assert meta["vllm_version"] == version
    assert "auto" in meta["values"]
    assert meta["rows"]
    assert meta["topk"]


@pytest.mark.parametrize("version", RELEASES)
def test_kernelcfg_resolves_auto_as_vllm_executed(version: str) -> None:
    data = load(version, "topk")
    facts = topk.facts(version)
    assert facts is not None
    found, compared, wrong = data["topk"], 0, []
    targets = data["meta"]["platform"]["targets"]
    for target, by_shape in found["index"].items():
        major, _, minor = targets[target]["capability"].partition(".")
        for shape, by_world in by_shape.items():
            rows, k = (int(part.split("=")[1]) for part in shape.split(","))
            backend, chain = topk.pick(facts, "cuda", (int(major), int(minor)), rows, k)
            for by_value in by_world.values():
                outcome = found["outcomes"][by_value["auto"]]
                refused = "; ".join(outcome["cooperative_refused"])
                compared += 1
                mine = chain[0][2] or ""
                if (backend, mine) != (outcome["backend"], refused):
                    wrong.append((target, shape, backend, outcome["backend"], mine, refused))
    assert compared == len(found["index"]) * 16 * len(data["meta"]["worlds"])
    assert wrong == []
