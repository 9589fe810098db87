"""Execute a vLLM release's own ``vllm serve`` argument parser on the command lines of
real vLLM 0.33.0's parser vectors and write the project's vectors for that release,
``tests/golden/vllm-X.Y.Z/serve-parser-cases.json``, in the same schema.

    python scripts/release/execute/serve_parser.py 0.31.0 [--out FILE] [--inputs FILE]

Runs ``inside/serve_parser_driver.py`` in the release's venv (``common.ensure_venv``),
without the stand-in CUDA libraries (as real vLLM's vectors were made: ``vllm._C`` does
not load, the CPU platform, ``VLLM_TARGET_DEVICE=cpu``). Each line is judged by the
release as it is: a flag the release lacks is refused by it, as a user would see.

Written packed (``serve-parser-cases.json.gz``, as the older releases' executed
vectors; the tests read either form) unless ``--out`` names a file.

Where the release's file is real vLLM's (copied from ``../shared/golden``, its
``meta`` has no ``made_by``), nothing is written there: the executed verdicts are
compared with it, field by field, and the differences printed (``--out`` writes them
elsewhere). That is how the generator is checked: on 0.33.0 it must agree exactly.
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
from vectors import pack, sha256

SOURCE = common.GOLDEN_DIR / "vllm-0.33.0" / "serve-parser-cases.json"
"""The inputs: real vLLM 0.33.0's lines (argv, config files, tags)."""
FILE = "serve-parser-cases.json"
DUMP = common.HERE.parent / "serve_parser"
"""``dump.py``'s ``capture()`` builds the parser as ``vllm serve`` does, per release."""
INPUT_KEYS = ("id", "argv", "config_file", "tags")


def reusable_venv(version: str) -> Path:
    """The release's execution venv as it is when it was completed once, whichever
    pins it was completed with (the parser needs only the common ones): other
    generators share these venvs, and a reinstall under them would break their runs."""
    venv = common.venv_path(version)
    if (venv / ".kernelcfg-complete").is_file():
        return venv
    return common.ensure_venv(version)


def _inputs(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    cases = [{k: c[k] for k in INPUT_KEYS if k in c} for c in data["cases"]]
    return data["meta"], cases


def _meta(
    version: str, source: Path, meta: dict[str, Any], answer: dict[str, Any], wall: float
) -> dict[str, Any]:
    whl = common.wheel(version)
    verdicts = [r["vllm"] for r in answer["records"]]
    return {
        "vllm_version": version,
        "made_by": "scripts/release/execute/serve_parser.py (vLLM's own `vllm serve` "
        "parser, ServeSubcommand.validate, AsyncEngineArgs.from_cli_args and the "
        "kernel-config statements of create_engine_config, executed)",
        "what": f"vllm serve argv lines judged by vLLM {version}'s real argument parser, "
        "and for accepted lines the KernelConfig vLLM builds from them before platform "
        "defaults",
        "inputs": f"the lines of real vLLM 0.33.0's {FILE} ({source.name}, sha256 "
        f"{sha256(source)}), unchanged: a flag this release lacks is judged by it",
        "wheel": {"name": whl.name, "sha256": sha256(whl)},
        "torch": common.TORCH_PIN,
        "parser": meta.get("parser"),
        "kernel_config": "AsyncEngineArgs.from_cli_args, then "
        f"{answer['found']['kernel_config_statements']}; before "
        "KernelConfig.set_platform_defaults; kernel_hash = its compute_hash() (hash_config "
        "where the release has none) on the CPU platform",
        "engine_args_error": "engine_error 'engine args: ...' where from_cli_args raises",
        "vllm_platform": answer["found"]["platform"],
        "packages": answer["found"].get("packages"),
        "config_mark": meta["config_mark"],
        "config_files": meta.get("config_files"),
        "exit_codes": meta.get("exit_codes"),
        "tmp_marker": meta["tmp_marker"],
        "n": len(verdicts),
        "accepted": sum(1 for v in verdicts if v["accepted"]),
        "refused": sum(1 for v in verdicts if not v["accepted"]),
        "wall_s": round(wall, 1),
    }


DECISION = ("accepted", "exit_code", "stage", "error", "validate_error", "engine_error")


def compare(ours: list[dict[str, Any]], real: list[dict[str, Any]]) -> dict[str, Any]:
    """Per line: the decision (accepted, exit code, stage, messages) and every other
    field of real vLLM's verdict; the counts and the first differences."""
    by_id = {c["id"]: c["vllm"] for c in real}
    counts = {"lines": 0, "decision_same": 0, "all_same": 0}
    fields: dict[str, int] = {}
    examples: list[str] = []
    for case in ours:
        want, got = by_id[case["id"]], case["vllm"]
        counts["lines"] += 1
        same = [k for k in DECISION if want.get(k) != got.get(k)] == []
        counts["decision_same"] += same
        differ = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
        counts["all_same"] += not differ
        for k in differ:
            fields[k] = fields.get(k, 0) + 1
        if differ and len(examples) < 12:
            examples.append(
                f"{case['id']}: {differ} real={[want.get(k) for k in differ]} "
                f"ours={[got.get(k) for k in differ]}"
            )
    return {**counts, "fields_differing": fields, "examples": examples}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--inputs", type=Path, default=SOURCE)
    args = parser.parse_args(argv)
    started = time.monotonic()
    venv = reusable_venv(args.version)
    meta, cases = _inputs(args.inputs)
    request = {"cases": cases, "config_mark": meta["config_mark"], "tmp_marker": meta["tmp_marker"]}
    answer = common.run_inside(venv, "serve_parser_driver.py", request, stubs=False, path=(DUMP,))
    by_id = {r["id"]: r["vllm"] for r in answer["records"]}
    out_cases = [{**c, "vllm": by_id[c["id"]]} for c in cases]
    data: dict[str, Any] = {
        "meta": _meta(args.version, args.inputs, meta, answer, time.monotonic() - started),
        "cases": out_cases,
    }
    target = common.GOLDEN_DIR / f"vllm-{args.version}" / FILE
    real = None
    if target.is_file():
        existing = json.loads(target.read_text(encoding="utf-8"))
        if "made_by" not in existing["meta"]:
            real = existing
    if real is not None:
        report = compare(out_cases, real["cases"])
        print(json.dumps(report, indent=1))
        if args.out:
            _write(args.out, data)
        return 0 if report["all_same"] == report["lines"] else 1
    path = _write(args.out, data) if args.out else pack(_write(target, data))
    m = data["meta"]
    print(f"{path}: {m['n']} lines, {m['accepted']} accepted, {m['refused']} refused, ", end="")
    print(f"{m['wall_s']} s")
    return 0


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    raise SystemExit(main())
