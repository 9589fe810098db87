"""kernelcfg's ``--moe-backend auto`` picks against the vectors the project executed
itself (``golden/vllm-X.Y.Z/executed-moe.json``, made by
``scripts/release/execute/moe.py``): the cells compared, the cells the simulation could
not finish, and the cells kernelcfg disagrees with. Shared by ``test_moe_executed.py``
and the release command (``scripts/release/release.py``), which prints the
disagreements on a new release's to-do list:

    python -m tests.moe_executed FILE [--every N]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelcfg.vllm.kernels import words as kernel_words
from kernelcfg.vllm.kernels.moe import oracle
from tests import test_moe_golden as golden

GOLDEN = Path(__file__).resolve().parent / "golden"


def executed_file(version: str) -> Path:
    """Where release ``version``'s executed MoE vectors are kept."""
    return GOLDEN / f"vllm-{version}" / "executed-moe.json"


def load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


Cell = tuple[str, str, str, str, str, dict[str, Any]]

STATUS = {"config_error": "error"}
"""The executor's ``config_error`` (vLLM's ``FusedMoEConfig`` or the layout refused the
layer before any selection, e.g. MoRI EPv1 without AITER fused MoE on ROCm) is a failed
model load, kernelcfg's ``error``."""


def cells(data: dict[str, Any], every: int) -> list[Cell]:
    """The ``auto`` cells (target, variant, model, layout, world, outcome), one in
    ``every`` by a hash of the cell's key (1: all)."""
    found = []
    outcomes = data["moe"]["outcomes"]
    for target, by_variant in data["moe"]["index"].items():
        for variant, by_model in by_variant.items():
            for model, by_layout in by_model.items():
                for layout, by_world in by_layout.items():
                    for world, by_value in by_world.items():
                        if "auto" not in by_value or model == "None":
                            continue
                        key = f"{target}|{variant}|{model}|{layout}|{world}"
                        if hashlib.sha256(key.encode()).digest()[0] % every:
                            continue
                        found.append(
                            (target, variant, model, layout, world, outcomes[by_value["auto"]])
                        )
    return found


def _where(
    data: dict[str, Any], found: oracle.MoeModel, target: str, world: str
) -> kernel_words.Where:
    spec = data["meta"]["platform"]["targets"][target]
    kind = spec.get("kind", "cuda")
    worlds = data["meta"]["rocm_worlds"] if kind == "rocm" else data["meta"]["worlds"]
    env = dict(worlds[world].get("env", {}))
    where = kernel_words.where(
        found.data, kind, spec.get("capability"), spec.get("gfx_arch"), world, env
    )
    return dataclasses.replace(where, device_name=spec["device_name"])


def simulation_gap(outcome: dict[str, Any]) -> bool:
    """A cell the executor could not run to the end: a library's own Python vLLM imports
    is not in the throwaway venv. It says nothing about vLLM."""
    return outcome["status"] == "error" and "ModuleNotFoundError" in (outcome.get("error") or "")


def redirected(
    found: oracle.MoeModel, variant: str, layer: dict[str, Any], where: kernel_words.Where
) -> bool:
    """Whether the variant's quantisation method sends this layer to another oracle
    (an ``inline`` rule of the variant naming an ``oracle``, whichever rule comes
    first): the executor calls the variant's own oracle, not the method."""
    spec = found.data["variants"][variant]
    feats = found._features(spec, layer, where)
    return any(
        "oracle" in rule and kernel_words.holds(rule["when"], where, feats)
        for rule in spec.get("inline", ())
    )


@dataclass
class Agreement:
    """What a comparison found."""

    compared: int = 0
    gaps: int = 0
    redirected: int = 0
    """Cells whose quantisation method sends the layer to another oracle than the one
    the executor called (:func:`redirected`; such as 0.28.0-0.30.0's compressed-tensors
    W4A8 off SM90 going to the W4A8-INT8 method): they say nothing about that choice."""
    wrong: list[dict[str, Any]] = field(default_factory=list)


def compare(data: dict[str, Any], every: int) -> Agreement:
    """kernelcfg's pick (status, ``Enum.MEMBER``, experts class) on each sampled cell
    against what the release executed."""
    version = data["meta"]["vllm_version"]
    found = oracle.model(version)
    if found is None:
        raise SystemExit(f"kernelcfg has no MoE data for vLLM {version}")
    result = Agreement()
    for target, variant, model, layout, world, outcome in cells(data, every):
        if simulation_gap(outcome):
            result.gaps += 1
            continue
        layer, where = golden.layer(model, layout), _where(data, found, target, world)
        if redirected(found, variant, layer, where):
            result.redirected += 1
            continue
        pick = found.pick(variant, layer, where)
        backend = f"{pick.enum}.{pick.backend}" if pick.backend else None
        got = [pick.status, backend, pick.kernel]
        status = STATUS.get(outcome["status"], outcome["status"])
        want = [status, outcome.get("backend"), outcome.get("experts")]
        result.compared += 1
        if got != want:
            cell = f"{target}|{variant}|{model}|{layout}|{world}"
            result.wrong.append({"cell": cell, "kernelcfg": got, "vllm": want})
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path, help="an executed-moe.json")
    parser.add_argument("--every", type=int, default=1, help="compare one cell in N")
    args = parser.parse_args(argv)
    result = compare(load(args.file), args.every)
    json.dump(dataclasses.asdict(result), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
