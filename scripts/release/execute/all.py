"""Every executing generator for one vLLM release, then the agreement with real vLLM's
vectors where ``../shared/golden/vllm-X.Y.Z/`` has them.

    python scripts/release/execute/all.py 0.34.0 [--targets h100,b200] [--only moe,linear]

Writes ``tests/golden/vllm-X.Y.Z/executed-{moe,linear,attention,topk}.json`` (a kind
the release does not have is reported and skipped), ``executed-verdicts.json``
(``verdicts.py``, from the others), the KernelConfig vectors ``cases.json`` /
``platform-cases.json`` (``config.py``), ``serve-parser-cases.json.gz``
(``serve_parser.py``: real vLLM 0.33.0's parser lines judged by the release's own
``vllm serve`` parser) and ``compile-cache-env.json.gz`` (``env_factors.py``: the
release's ``envs.compile_factors()`` on real vLLM 0.33.0's and 0.34.0's environments);
for a release with real vLLM's vectors, each generator's output is compared with them
instead. It prints each driver's records and wall time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import vectors

HERE = common.HERE

DRIVERS = ("moe", "linear", "attention", "topk", "config", "serve_parser", "env_factors")
TARGETED = frozenset({"moe", "linear", "attention", "topk"})
"""The drivers that take ``--targets`` (the config code and the parser's lines name no
target)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--targets")
    parser.add_argument("--only", default=",".join(DRIVERS))
    parser.add_argument(
        "--pack",
        action="store_true",
        help="afterwards keep linear/attention/top-k/verdicts (and the KernelConfig "
        "vectors) as .json.gz and drop executed-moe.json (how releases other than the "
        "newest are checked in)",
    )
    args = parser.parse_args(argv)
    common.ensure_venv(args.version)
    failed = []
    for name in [d for d in args.only.split(",") if d]:
        command = [sys.executable, str(HERE / f"{name}.py"), args.version]
        if args.targets and name in TARGETED:
            command += ["--targets", args.targets]
        if name == "config" and args.pack:
            command.append("--pack")
        started = time.monotonic()
        done = subprocess.run(command, check=False)
        print(f"{name}: exit {done.returncode}, {time.monotonic() - started:.0f} s", flush=True)
        if done.returncode:
            failed.append(name)
    subprocess.run([sys.executable, str(HERE / "verdicts.py"), args.version], check=False)
    shared = common.REPO.parent / "shared" / "golden" / f"vllm-{args.version}"
    ours = common.GOLDEN_DIR / f"vllm-{args.version}" / "executed-moe.json"
    if (shared / "auto-picks.json").is_file():
        if ours.is_file():
            subprocess.run([sys.executable, str(HERE / "agreement.py"), args.version], check=False)
        subprocess.run(
            [sys.executable, str(HERE / "agreement_kinds.py"), args.version, "--examples", "4"],
            check=False,
        )
    else:
        print(f"no real-vLLM vectors for {args.version} in {shared}: nothing to agree with")
    if args.pack:
        folder = common.GOLDEN_DIR / f"vllm-{args.version}"
        for kind in ("linear", "attention", "topk", "verdicts"):
            if (folder / f"executed-{kind}.json").is_file():
                vectors.pack(folder / f"executed-{kind}.json")
        (folder / "executed-moe.json").unlink(missing_ok=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
