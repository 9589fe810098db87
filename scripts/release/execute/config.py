"""Execute a vLLM release's own ``vllm.config.kernel`` -- ``KernelConfig``, its hash and
hash factors, the platform IR-op defaults, ``set_platform_defaults`` and the all2all /
DeepSeek-V4 rule functions -- and write ``tests/golden/vllm-X.Y.Z/cases.json`` and
``platform-cases.json`` in the schema of real vLLM's vectors (``tests/golden/README.md``),
so ``tests/test_golden_cases.py`` and ``tests/test_golden_platform.py`` check the release.

    python scripts/release/execute/config.py 0.28.0 [--out FOLDER] [--pack]
    python scripts/release/execute/config.py 0.33.0 --out /tmp/x \
        --compare ../shared/golden/vllm-0.33.0

Inputs: the union of the inputs of real vLLM's vectors in ``tests/golden/`` (the files
whose ``meta.generator`` is real vLLM's generator), the nearest release's first, adapted
inside the venv to what the release has (fields, Literal values, IR ops and providers it
lacks dropped, recorded per case as ``kwargs_adaptation``). Runs
``inside/config_driver.py`` in the release's venv (``common.ensure_venv``).

``--compare FOLDER`` checks the generator: every record of FOLDER's ``cases.json`` /
``platform-cases.json`` (real vLLM's) is compared with the output for the same input,
and the match counts and each difference printed (exit 1 on a difference or an input
not executed). Real vLLM's vectors are never overwritten: for a release that has them in
``tests/golden/`` the output goes to a temporary folder and is compared with them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from vectors import sha256

REAL = {"cases": "gen_cases.py", "platform-cases": "gen_platform_cases.py"}
"""``meta.generator`` of real vLLM's vectors (the inputs' source; never overwritten)."""

CASE_INPUTS = (
    "id",
    "kwargs",
    "kwargs_py",
    "kwargs_json_exact",
    "ir_op_priority_via",
    "with_default_arg",
)
INVALID_INPUTS = ("id", "target", "kwargs", "kwargs_py", "kwargs_json_exact", "note")
DEFAULT_INPUTS = ("platform", "gcn_arch", "note", "compilation_config", "env")
DEFAULTS_INPUTS = (
    "platform",
    "gcn_arch",
    "section",
    "compilation_config",
    "env",
    "kernel_kwargs",
    "user_ir_op_priority",
    "user_ir_variant",
    "model_architectures",
    "all2all_backend_in",
    "note",
    "user_ir_adapted",
)
BIND_INPUTS = ("moe_backend", "all2all_backend", "note")
VALIDATE_INPUTS = ("moe_backend", "architectures")
PLATFORM_INPUTS = {
    "default_ir_op_priority": DEFAULT_INPUTS,
    "set_platform_defaults": DEFAULTS_INPUTS,
    "bind_passthrough_all2all_backend": BIND_INPUTS,
    "validate_flashinfer_moe_ep_model": VALIDATE_INPUTS,
}
ADAPT_VARIANTS = ["all_set"]
"""The ``set_platform_defaults`` user IR variant kept with the IR ops a release lacks
dropped (``user_ir_adapted``); another naming such an op is skipped."""
ADAPT_ANCHORS = ["everything", "ir:all_providers", "ir:cuda_eager_default"]
"""Named cases kept (adapted) where the release lacks part of them; any other named
case whose subject the release lacks is skipped (``meta.anchors_skipped``)."""


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def load(path: Path) -> dict[str, Any]:
    """A vectors file, ``.json`` or ``.json.gz``."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
            return data
    return dict(json.loads(path.read_text(encoding="utf-8")))


def real_sources(name: str) -> list[tuple[str, dict[str, Any]]]:
    """(version, data) of every real-vLLM ``name`` file in tests/golden/."""
    out = []
    for path in sorted(common.GOLDEN_DIR.glob(f"vllm-*/{name}.json")):
        data = load(path)
        if data.get("meta", {}).get("generator") == REAL[name]:
            out.append((path.parent.name.removeprefix("vllm-"), data))
    return out


def nearest_first(version: str, sources: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    target = _key(version)

    def distance(item: tuple[str, Any]) -> tuple[int, int]:
        k = _key(item[0])
        return (abs(k[1] - target[1]) + 100 * abs(k[0] - target[0]), -k[1])

    return sorted(sources, key=distance)


def case_inputs(version: str) -> dict[str, Any]:
    """The union of the KernelConfig inputs, each id from the nearest release holding it."""
    cases: dict[str, Any] = {}
    invalid: dict[str, Any] = {}
    used = []
    for source, data in nearest_first(version, real_sources("cases")):
        used.append(source)
        for case in data["cases"]:
            if case["id"] in cases:
                continue
            row = {k: case[k] for k in CASE_INPUTS if k in case}
            if source == version and "release_only_kwargs" in case:
                row["release_only_kwargs"] = case["release_only_kwargs"]
            adaptation = case.get("kwargs_adaptation")
            if adaptation and source != version:
                row["generator_kwargs_py"] = adaptation["generator_kwargs_py"]
                row["dropped_before"] = adaptation["dropped"]
            elif adaptation:
                row["kwargs_adaptation"] = adaptation
            cases[case["id"]] = row
        for case in data["invalid"]:
            invalid.setdefault(case["id"], {k: case[k] for k in INVALID_INPUTS if k in case})
    return {"cases": list(cases.values()), "invalid": list(invalid.values()), "sources": used}


def platform_inputs(version: str) -> dict[str, Any]:
    out: dict[str, list[Any]] = {section: [] for section in PLATFORM_INPUTS}
    seen: set[str] = set()
    for _, data in nearest_first(version, real_sources("platform-cases")):
        for section, keys in PLATFORM_INPUTS.items():
            for record in data.get(section, []):
                row = {k: record[k] for k in keys if k in record}
                key = section + json.dumps(row, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    out[section].append(row)
    return out


def _meta_cases(version: str, answer: dict[str, Any], inputs: dict[str, Any], wall: float) -> Any:
    whl = common.wheel(version)
    found = answer["found"]
    return {
        "oracle": "vLLM's own vllm.config.kernel, executed by the project",
        "vllm_version": version,
        "generator": "scripts/release/execute/config.py (inside/config_driver.py)",
        "wheel": {"name": whl.name, "sha256": sha256(whl)},
        "torch": common.TORCH_PIN,
        "venv": str(common.venv_path(version)),
        "hash_scheme": found["hash_scheme"],
        "stubs": "none for the config code; the platform modules' import-time native "
        "modules stubbed empty (see platform-cases meta)",
        "capture_method": "the hash helpers vllm.config.kernel imported (get_hash_factors / "
        "hash_factors, or get_compile_factors) wrapped call-through; each hash re-checked "
        "as sha256 of the recorded JSON",
        "ir_kernels_preimport": {
            "compute_hash_imports_ir_kernels": found["compute_hash_imports_ir_kernels"],
            "action": "UnspecifiedPlatform.import_ir_kernels() called once before any case",
            "registry_before": found["registry_before_import_ir_kernels"],
            "registry_after": found["registry_after"],
        },
        "inputs": {
            "from": "the inputs of real vLLM's vectors in tests/golden/ (cases.json of "
            + ", ".join(inputs["sources"])
            + "), each id taken from the nearest release holding it",
            "adaptation": "fields, Literal values, IR ops and IR providers this release "
            "lacks dropped (kwargs_adaptation: generator_kwargs_py = the input as first "
            "drawn, dropped = every step); named cases whose subject the release lacks "
            "are skipped (anchors_skipped) but " + ", ".join(ADAPT_ANCHORS),
            "invalid": "executed as given",
        },
        "anchors_skipped": answer["anchors_skipped"],
        "random_cases_rejected_by_vllm": answer["rejected"],
        "counts": {"cases": len(answer["cases"]), "invalid": len(answer["invalid"])},
        "wall_s": round(wall, 1),
    }


def _meta_platform(version: str, answer: dict[str, Any]) -> Any:
    plat = answer["platform"]
    return {
        "vllm_version": version,
        "generator": "scripts/release/execute/config.py (inside/config_driver.py)",
        "executed": "every record was produced by calling this release's own code",
        "platform_classes": plat["platform_classes"],
        "get_default_ir_op_priority_defined_in": plat["get_default_ir_op_priority_defined_in"],
        "stubs": {
            "sys_modules_stubbed_empty": [
                "vllm._C_stable_libtorch",
                "vllm_xpu_kernels (+ _C, _moe_C, _xpu_C)",
            ],
            "rocm_import": "torch.cuda.get_device_properties patched during `import "
            "vllm.platforms.rocm` to report gcnArchName=<gcn_arch>; module re-imported "
            "per arch",
            "current_platform": "replaced by a proxy (inside/simulate.py) forwarding to the "
            "record's platform class during set_platform_defaults",
        },
        "stand_ins": "vllm_config = SimpleNamespace(model_config=None | "
        "SimpleNamespace(architectures=[...]), parallel_config=SimpleNamespace("
        "all2all_backend=...), compilation_config=SimpleNamespace(backend, mode, "
        "cudagraph_mode)); env vars set in os.environ per record",
        "inputs": "the union of the inputs of real vLLM's platform-cases.json in "
        "tests/golden/ (nearest release first); set_platform_defaults records whose user "
        "IR lists or kernel fields the release lacks are skipped (the all_set IR variant "
        "adapted instead, user_ir_adapted)",
        "skipped": plat["skipped"],
        "rocm_arch_flags": plat["rocm_arch_flags"],
        "counts": {s: len(plat[s]) for s in PLATFORM_INPUTS},
    }


def write(path: Path, data: dict[str, Any], pack: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    if pack:
        target = path.with_name(path.name + ".gz")
        with gzip.GzipFile(target, "wb", mtime=0) as fh:
            fh.write(text.encode("utf-8"))
        path.unlink(missing_ok=True)
        return target
    path.write_text(text, encoding="utf-8")
    path.with_name(path.name + ".gz").unlink(missing_ok=True)
    return path


def make(version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Execute the release on the inputs; (cases.json, platform-cases.json) data."""
    started = time.monotonic()
    venv = common.ensure_venv(version)
    inputs = case_inputs(version)
    request = {
        "cases": inputs["cases"],
        "invalid": inputs["invalid"],
        "adapt_anchors": ADAPT_ANCHORS,
        "adapt_variants": ADAPT_VARIANTS,
        "platform": platform_inputs(version),
    }
    answer = common.run_inside(venv, "config_driver.py", request)
    wall = time.monotonic() - started
    cases = {
        "meta": _meta_cases(version, answer, inputs, wall),
        "schema": answer["schema"],
        "ir_impls": answer["ir_impls"],
        "cases": answer["cases"],
        "invalid": answer["invalid"],
    }
    plat = answer["platform"]
    platform = {"meta": _meta_platform(version, answer)}
    platform.update({s: plat[s] for s in PLATFORM_INPUTS})
    return cases, platform


# ---------------------------------------------------------------- comparison
def _by(rows: list[Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {json.dumps({k: r[k] for k in keys if k in r}, sort_keys=True): r for r in rows}


def compare_rows(name: str, ours: list[Any], real: list[Any], keys: tuple[str, ...]) -> int:
    """Print how many of the ``real`` records ``ours`` reproduce on the same input (a
    real record whose input was not executed is counted apart); the differences."""
    ours_by = _by(ours, keys)
    same = differ = missing = 0
    for other in real:
        key = json.dumps({k: other[k] for k in keys if k in other}, sort_keys=True)
        row = ours_by.get(key)
        if row is None:
            missing += 1
            continue
        outputs = sorted((set(row) | set(other)) - set(keys) - {"executed"})
        bad = [k for k in outputs if row.get(k) != other.get(k)]
        if not bad:
            same += 1
            continue
        differ += 1
        if differ <= 5:
            print(f"  {name} {key[:120]}: {bad}")
            for k in bad[:2]:
                print(f"    ours {json.dumps(row.get(k))[:300]}")
                print(f"    real {json.dumps(other.get(k))[:300]}")
    print(
        f"{name}: {same} of {len(real)} real records reproduced, {differ} different, "
        f"{missing} not among the inputs executed"
    )
    return differ + missing


def compare(cases: dict[str, Any], platform: dict[str, Any], folder: Path) -> int:
    real_cases = load(folder / "cases.json")
    real_platform = load(folder / "platform-cases.json")
    bad = compare_rows("cases", cases["cases"], real_cases["cases"], ("id", "kwargs_py"))
    bad += compare_rows("invalid", cases["invalid"], real_cases["invalid"], ("id", "kwargs_py"))
    ir_same = cases["ir_impls"] == real_cases["ir_impls"]
    print(f"ir_impls: {'equal' if ir_same else 'DIFFERENT'}")
    bad += not ir_same
    shared = [k for k in real_cases["schema"] if k in cases["schema"]]
    schema_bad = [k for k in shared if cases["schema"][k] != real_cases["schema"][k]]
    print(
        f"schema: {len(shared) - len(schema_bad)} of {len(shared)} common keys equal {schema_bad}"
    )
    bad += len(schema_bad)
    for section, keys in PLATFORM_INPUTS.items():
        bad += compare_rows(section, platform[section], real_platform[section], keys)
    return bad


def holds_real(folder: Path) -> bool:
    """Whether ``folder`` holds real vLLM's vectors (never overwritten)."""
    for name, generator in REAL.items():
        existing = folder / f"{name}.json"
        if existing.is_file() and load(existing).get("meta", {}).get("generator") == generator:
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument(
        "--out", type=Path, help="folder to write into (default tests/golden/vllm-X.Y.Z)"
    )
    parser.add_argument("--pack", action="store_true", help="write .json.gz")
    parser.add_argument(
        "--compare", type=Path, help="a folder of real vLLM's vectors to compare with"
    )
    parser.add_argument("--targets", help="ignored: the config code takes no GPU target")
    args = parser.parse_args(argv)
    folder = args.out or common.GOLDEN_DIR / f"vllm-{args.version}"
    compare_with = args.compare
    if holds_real(folder):
        if args.out:
            raise SystemExit(f"{folder} holds real vLLM's vectors: give another --out")
        compare_with = compare_with or folder
        folder = Path(tempfile.mkdtemp(prefix=f"kernelcfg-config-{args.version}-"))
        print(f"real vLLM's vectors in {compare_with}: writing to {folder} and comparing")
    cases, platform = make(args.version)
    for name, data in (("cases", cases), ("platform-cases", platform)):
        path = write(folder / f"{name}.json", data, args.pack)
        print(f"{path}: {sum(len(v) for k, v in data.items() if isinstance(v, list))} records")
    print(f"{cases['meta']['wall_s']} s")
    if compare_with:
        return 1 if compare(cases, platform, compare_with) else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
