"""Execute a vLLM release's own ``envs.compile_factors()`` (the environment's part of the
compile-cache key) on the environments of real vLLM 0.33.0's and 0.34.0's env vectors
and write the project's vectors for that release,
``tests/golden/vllm-X.Y.Z/compile-cache-env.json.gz``, in the same schema.

    python scripts/release/execute/env_factors.py 0.31.0 [--out FILE]

Runs ``inside/env_factors_driver.py`` in the release's venv (CPU torch 2.13.0, no
stand-in CUDA libraries, ``VLLM_TARGET_DEVICE=cpu``; the process environment without
``VLLM_*`` / ``CUDA_*`` variables). ``{SCRATCH}`` / ``{SITE_PACKAGES}`` in an environment
are filled with a fixed scratch path and this venv's site-packages (those records' hashes
are not real vLLM's, the tests compare their factors only). The records real vLLM made
with a ROCm build of torch (``rocm_torch``) are not executed: this venv's torch is a CPU
build. A record of real
vLLM's ``env_ignored_records`` whose hash differs from the baseline in this release (a
variable it does not ignore) goes to ``env_records``.

Where the release's file is real vLLM's (``meta`` without ``made_by``), nothing is
written there: the executed records are compared with it (factors and hash).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from serve_parser import reusable_venv
from vectors import pack, sha256

FILE = "compile-cache-env.json"
SCRATCH = "/tmp/kernelcfg-env-scratch"
"""What ``{SCRATCH}`` stands for when executed: a fixed path (only its text is hashed), so
a second run writes the same hashes."""
MARKS = ("{SCRATCH}", "{SITE_PACKAGES}")
"""The placeholders of real vLLM's environments (its hashes of them are of its paths)."""
SOURCES = ("0.33.0", "0.34.0")
"""Real vLLM's env vectors whose environments are the inputs."""


def _load(path: Path) -> dict[str, Any]:
    import gzip

    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data: dict[str, Any] = json.loads(raw)
    return data


def _inputs() -> list[dict[str, Any]]:
    out = []
    for version in SOURCES:
        data = _load(common.GOLDEN_DIR / f"vllm-{version}" / FILE)
        for kind in ("env_records", "env_ignored_records"):
            for r in data[kind]:
                if r["rocm_torch"]:
                    continue
                out.append(
                    {"id": f"{version}/{r['id']}", "env": r["env"], "category": r["category"]}
                )
    return out


def _factors_of(data: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    absent = set(record["env_factors_absent"])
    found = {k: v for k, v in data["baseline_factors"].items() if k not in absent}
    found.update(record["env_factors_changed"])
    return found


def compare(answer: dict[str, Any], version: str) -> dict[str, Any]:
    """Executed records against real vLLM's file of ``version`` (the records made from
    it): factors and hash equal, per record."""
    real = _load(common.GOLDEN_DIR / f"vllm-{version}" / FILE)
    by_id = {
        f"{version}/{r['id']}": r
        for kind in ("env_records", "env_ignored_records")
        for r in real[kind]
    }
    counts = {
        "records": 0,
        "factors_same": 0,
        "hash_same": 0,
        "placeholder_records": 0,
        "skipped_same": 0,
    }
    examples: list[str] = []
    for r in answer["records"]:
        want = by_id.get(r["id"])
        if want is None:
            continue
        counts["records"] += 1
        same = json.dumps(r["factors"], sort_keys=True) == json.dumps(
            _factors_of(real, want), sort_keys=True
        )
        counts["factors_same"] += same
        counts["hash_same"] += r["env_hash"] == want["env_hash"]
        counts["placeholder_records"] += any(m in json.dumps(want["env"]) for m in MARKS)
        counts["skipped_same"] += sorted(r["skipped_by_parser_error"]) == sorted(
            want.get("skipped_by_parser_error") or []
        )
        skipped_same = sorted(r["skipped_by_parser_error"]) == sorted(
            want.get("skipped_by_parser_error") or []
        )
        if not skipped_same and len(examples) < 8:
            examples.append(
                f"{r['id']} skipped: {r['skipped_by_parser_error']} "
                f"real {want.get('skipped_by_parser_error')} env {want['env']}"
            )
        if not same and len(examples) < 8:
            theirs = _factors_of(real, want)
            keys = sorted(
                k for k in set(theirs) | set(r["factors"]) if theirs.get(k) != r["factors"].get(k)
            )
            examples.append(
                f"{r['id']}: {[(k, theirs.get(k), r['factors'].get(k)) for k in keys[:4]]}"
            )
    return {**counts, "examples": examples}


def _record(item: dict[str, Any], got: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    factors = got["factors"]
    out = {
        "id": item["id"],
        "category": item["category"],
        "env": item["env"],
        "rocm_torch": False,
        "env_hash": got["env_hash"],
        "env_factors_changed": {k: v for k, v in factors.items() if base.get(k, object()) != v},
        "env_factors_absent": sorted(k for k in base if k not in factors),
    }
    if got["skipped_by_parser_error"]:
        out["skipped_by_parser_error"] = got["skipped_by_parser_error"]
    return out


def build(version: str, answer: dict[str, Any], wall: float) -> dict[str, Any]:
    base = answer["baseline"]
    base_hash = common_hash(base)
    items = {i["id"]: i for i in _inputs()}
    env_records: list[dict[str, Any]] = []
    ignored: list[dict[str, Any]] = []
    for got in answer["records"]:
        item = items[got["id"]]
        record = _record(item, got, base)
        is_ignored = item["category"] == "ignored-only" and got["env_hash"] == base_hash
        (ignored if is_ignored else env_records).append(record)
    whl = common.wheel(version)
    found = answer["found"]
    meta = {
        "vllm_version": version,
        "made_by": "scripts/release/execute/env_factors.py (vLLM's own "
        "envs.compile_factors(), executed)",
        "inputs": f"the environments of real vLLM {' and '.join(SOURCES)}'s {FILE} "
        "(ids prefixed with the release), but those made with a ROCm torch",
        "wheel": {"name": whl.name, "sha256": sha256(whl)},
        "package_versions": {"vllm": version, "torch": found["torch"]},
        "hash_scheme": {
            "env_hash": "sha256(json.dumps(vllm.envs.compile_factors(), sort_keys=True))"
            ".hexdigest()"
        },
        "env": {
            "declared_variables": found["declared_variables"],
            "ignored_by_compile_factors": found["ignored_declared"],
            "hashed_undeclared_variables": found["hashed_undeclared"],
            "env_inputs_beyond_environment": {"checks": []},
            "parser_errors": "a variable whose parser raises is left out of compile_factors() "
            "(vLLM logs a warning); records list them in skipped_by_parser_error",
        },
        "placeholders": {"{SCRATCH}": SCRATCH, "{SITE_PACKAGES}": "the venv's site-packages"},
        "not_run": "rocm_torch records (a ROCm build of torch); the inputs beyond the "
        "environment (torch version, Rust frontend path)",
        "wall_s": round(wall, 1),
    }
    return {
        "meta": meta,
        "baseline_factors": base,
        "env_records": env_records,
        "env_ignored_records": ignored,
    }


def common_hash(factors: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    started = time.monotonic()
    venv = reusable_venv(args.version)
    request = {"records": _inputs(), "placeholders": {"{SCRATCH}": SCRATCH}}
    answer = common.run_inside(venv, "env_factors_driver.py", request, stubs=False)
    target = common.GOLDEN_DIR / f"vllm-{args.version}" / FILE
    if target.is_file() and "made_by" not in _load(target)["meta"]:
        report = compare(answer, args.version)
        print(json.dumps(report, indent=1))
        return 0 if report["factors_same"] == report["records"] else 1
    data = build(args.version, answer, time.monotonic() - started)
    path = args.out or target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    if not args.out:
        path = pack(path)
    n, m = len(data["env_records"]), len(data["env_ignored_records"])
    print(f"{path}: {n} env records, {m} ignored-only, {data['meta']['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
