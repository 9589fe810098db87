"""kernelcfg's speed, measured as ratios taken in one run (these machines are noisy).

- cold start: ``kernelcfg resolve --device h100 --format json`` against the smallest
  Typer + pydantic + rich command (bench/baseline_app.py), interleaved;
- peak memory of that resolve (max RSS of the child process);
- whether torch was imported on that path;
- ``--batch`` throughput on 20,000 varied JSON lines written to a file, in one process
  and with ``--jobs auto`` (one worker per CPU; the 20,000 lines/s target is for this
  one); and on the same lines made all different (no line repeats another's words);
  and on 3,000 such lines without a device, each resolved for seven by ``--matrix``;
- what the model's picks cost: the same lines with and without a config.json.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable
# Measure what an installed tool does: with its bytecode cached, as pip leaves it.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
RESOLVE = [PY, "-m", "kernelcfg", "resolve", "--device", "h100", "--format", "json"]
BASELINE = [PY, str(HERE / "baseline_app.py"), "--device", "h100"]


def _run(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return elapsed, usage.ru_maxrss


def cold_start(rounds: int) -> dict[str, float]:
    for _ in range(2):  # warm the bytecode caches of both
        _run(RESOLVE)
        _run(BASELINE)
    ours: list[float] = []
    base: list[float] = []
    rss: list[int] = []
    for _ in range(rounds):
        t, m = _run(RESOLVE)
        ours.append(t)
        rss.append(m)
        base.append(_run(BASELINE)[0])
    return {
        "resolve_median_s": statistics.median(ours),
        "baseline_median_s": statistics.median(base),
        "ratio": statistics.median(ours) / statistics.median(base),
        "peak_rss_mib": max(rss) / 1024,
    }


SERVE_2 = [*RESOLVE, "--", "vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]
SERVE_30 = [
    *RESOLVE,
    "--install",
    "image",  # DeepEP and DeepGEMM, which the launch names, come with vLLM's image
    "--",
    "vllm",
    "serve",
    "deepseek-ai/DeepSeek-R1",
    "--trust-remote-code",
    "--tensor-parallel-size",
    "8",
    "--data-parallel-size",
    "2",
    "--enable-expert-parallel",
    "--all2all-backend",
    "deepep_low_latency",
    "--max-model-len",
    "32k",
    "--max-num-batched-tokens",
    "8192",
    "--max-num-seqs",
    "256",
    "--gpu-memory-utilization",
    "0.92",
    "--kv-cache-dtype",
    "fp8",
    "--block-size",
    "64",
    "--enable-chunked-prefill",
    "--enable-prefix-caching",
    "--async-scheduling",
    "--served-model-name",
    "r1",
    "--host",
    "0.0.0.0",
    "--port",
    "8000",
    "--disable-log-requests",
    "--seed",
    "0",
    "--load-format",
    "auto",
    "--dtype",
    "auto",
    "--moe-backend",
    "deep_gemm",
    "-O3",
    "--compilation-config",
    '{"cudagraph_mode": "FULL_AND_PIECEWISE"}',
    "--kernel-config.enable_flashinfer_autotune=false",
    "--enable-eplb",
    "--reasoning-parser",
    "deepseek_r1",
    "--tool-call-parser",
    "deepseek_v3",
]


def serve_lines(rounds: int) -> dict[str, float]:
    """Cold start of a pasted 30-option vllm serve line against a 2-option one."""
    two: list[float] = []
    thirty: list[float] = []
    for _ in range(rounds):
        two.append(_run(SERVE_2)[0])
        thirty.append(_run(SERVE_30)[0])
    return {
        "two_options_median_s": statistics.median(two),
        "thirty_options_median_s": statistics.median(thirty),
        "extra_ms": 1000 * (statistics.median(thirty) - statistics.median(two)),
    }


def torch_imported() -> bool:
    proc = subprocess.run(
        [PY, "-X", "importtime", *RESOLVE[1:]], capture_output=True, text=True, check=True, env=ENV
    )
    return any(line.rstrip().endswith(" torch") for line in proc.stderr.splitlines())


DEVICES = ["h100", "b200", "mi300x", "mi355x", "rtx-pro-6000", "cpu", "a100"]
"""The targets of the batch lines (and of the ``--matrix`` run)."""


def _lines(count: int, seed: int = 7, *, distinct: bool = False) -> list[str]:
    """Random resolve lines (about a fifth repeat an earlier line's words; with
    ``distinct``, none does)."""
    from kernelcfg.vllm import releases

    release = releases.load(None)
    rng = random.Random(seed)
    moe = list(release.choices("moe_backend"))
    linear = list(release.choices("linear_backend"))
    sparse = list(release.choices("sparse_indexer_topk_backend"))
    out: list[str] = []
    seen: set[tuple[str, ...]] = set()
    while len(out) < count:
        argv = ["--device", rng.choice(DEVICES), "--moe-backend", rng.choice(moe)]
        if rng.random() < 0.6:
            argv += ["--linear-backend", rng.choice(linear)]
        if rng.random() < 0.4:
            argv += ["--sparse-indexer-topk-backend", rng.choice(sparse)]
        if rng.random() < 0.3:
            argv.append(f"-O{rng.randint(0, 3)}")
        if rng.random() < 0.2:
            argv.append("--enforce-eager")
        if rng.random() < 0.2:
            argv.append(f"--ir-op-priority.rms_norm={rng.choice(['native', 'vllm_c', 'oink'])}")
        if rng.random() < 0.2:
            argv += ["--env", f"VLLM_ROCM_USE_AITER={rng.randint(0, 1)}"]
        if distinct and tuple(argv) in seen:
            continue
        seen.add(tuple(argv))
        out.append(json.dumps({"id": len(out), "argv": argv}))
    return out


def _run_batch(lines: list[str], *options: str) -> tuple[float, int, str]:
    """Wall seconds of ``resolve --batch FILE OPTIONS > OUT`` over ``lines``, how many
    lines it wrote, and the end of its stderr. The output goes to a file, as a
    pipeline's ``> out.jsonl`` would: reading 50 MB back through a pipe and decoding it
    here would be this harness's work on the same CPUs."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lines.jsonl"
        path.write_text("\n".join(lines) + "\n")
        out = Path(tmp) / "out.jsonl"
        cmd = [PY, "-m", "kernelcfg", "resolve", "--batch", str(path), *options]
        with out.open("wb") as fh:
            start = time.perf_counter()
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.PIPE, check=False, env=ENV)
            elapsed = time.perf_counter() - start
        return elapsed, out.read_bytes().count(b"\n"), repr(proc.stderr[-500:])


def batch_rate(count: int, jobs: str = "1", *, distinct: bool = False) -> dict[str, float]:
    """Lines per second of ``resolve --batch FILE --jobs JOBS > OUT``."""
    elapsed, produced, err = _run_batch(_lines(count, distinct=distinct), "--jobs", jobs)
    if produced != count:
        raise SystemExit(f"batch produced {produced} lines for {count}: {err}")
    return {"lines": count, "seconds": elapsed, "per_second": count / elapsed}


def matrix_rate(count: int) -> dict[str, float]:
    """Results per second of ``resolve --batch FILE --matrix device=…`` (``--jobs auto``):
    ``count`` lines of the bench's flags without their device, each resolved for every
    device of :data:`DEVICES`, as a CI job checks one list of flags across targets."""
    lines: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for raw in _lines(count * 2, distinct=True):
        argv = json.loads(raw)["argv"]
        at = argv.index("--device")
        words = tuple(argv[:at] + argv[at + 2 :])
        if words not in seen and len(lines) < count:
            seen.add(words)
            lines.append(json.dumps({"id": len(lines), "argv": list(words)}))
    results = len(lines) * len(DEVICES)
    elapsed, produced, err = _run_batch(lines, "--matrix", "device=" + ",".join(DEVICES))
    if produced != results:
        raise SystemExit(f"the matrix run made {produced} results for {results}: {err}")
    return {"results": results, "seconds": elapsed, "per_second": results / elapsed}


def _selection_lines(count: int, seed: int = 11) -> list[str]:
    """Lines that leave every backend on auto, across targets and parallel layouts; each
    line's words differ (``--max-num-seqs``, which no kernel reads), so that neither run
    reuses what it made for a repeated line and the ratio is the model's picks alone."""
    rng = random.Random(seed)
    devices = ["h100", "b200", "mi300x", "mi355x", "rtx-pro-6000", "a100", "l40s"]
    layouts = [[], ["-tp", "8"], ["-tp", "8", "--enable-expert-parallel"], ["-dp", "8"]]
    out = []
    for i in range(count):
        argv = ["--device", rng.choice(devices), *rng.choice(layouts)]
        if rng.random() < 0.3:
            argv += ["--install", rng.choice(["image", "minimal"])]
        argv += ["--max-num-seqs", str(64 + i)]
        out.append(json.dumps({"id": i, "argv": argv}))
    return out


def selection_cost(count: int) -> dict[str, float]:
    """The same lines resolved plain and with a model (DeepSeek-R1's config.json: the
    attention, MoE, linear and top-k picks), one process each; the ratio of the times."""
    model = str(Path(__file__).resolve().parent.parent / "docs" / "examples" / "deepseek-r1")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lines.jsonl"
        path.write_text("\n".join(_selection_lines(count)) + "\n")
        times = {}
        for name, extra in (("plain", []), ("with_model", ["--hf-config-path", model])):
            cmd = [PY, "-m", "kernelcfg", "resolve", "--batch", str(path), "--jobs", "1", *extra]
            start = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=False, env=ENV)
            times[name] = time.perf_counter() - start
    return {"lines": count, **times, "ratio": times["with_model"] / times["plain"]}


def _write(path: Path, *chunks: tuple[bytes, int]) -> None:
    """Write ``chunk * count`` pieces without building them in memory: a child's peak
    memory includes this process's (Linux keeps the high-water mark across fork)."""
    with path.open("wb") as fh:
        for chunk, count in chunks:
            for _ in range(count):
                fh.write(chunk)


def _hostile_inputs(tmp: Path) -> dict[str, list[str]]:
    """The worst inputs of the robustness tests, as command lines (files written to tmp)."""
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    bomb += [
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]"
        for i in range(8)
    ]
    (tmp / "bomb.yaml").write_text("\n".join([*bomb, "kernel-config: {moe_backend: *i}"]))
    _write(tmp / "big.yaml", (b"moe-backend: ", 1), (b"x" * 1000, 10_000), (b"\n", 1))
    _write(tmp / "huge.yaml", (b"#" * 1024, 17 * 1024))
    _write(tmp / "deep.yaml", (b"kernel-config: ", 1), (b"[", 3000), (b"]", 3000), (b"\n", 1))
    with (tmp / "many.env").open("w") as fh:
        fh.writelines(f"VLLM_UNKNOWN_{i}=1\n" for i in range(200_000))
    good = (json.dumps(["--moe-backend", "triton"]) + "\n").encode()
    bad = (json.dumps(["a" * 300]) + "\n" + '{"id": NaN, "argv": []}\n').encode()
    _write(tmp / "bad.jsonl", (good, 1000), (bad, 1), (good, 1000))
    os.mkfifo(tmp / "fifo.yaml")
    _write(tmp / "options.jsonl", (b'["--device", "h100"', 1), (b', "--bog"', 9990), (b"]\n", 1))
    long_id = (json.dumps({"id": "i" * 200_000, "argv": ["--device", "h100"]}) + "\n").encode()
    _write(tmp / "ids.jsonl", (long_id, 20))
    saved = '{"vllm_version": "0.34.0", "kernel_config": {}, "hash": "' + "0" * 64 + '", '
    (tmp / "a.json").write_text(saved + '"hash_factors": {}}')
    with (tmp / "b.json").open("w") as fh:
        fh.write(saved + '"hash_factors": {"k0": 0')
        fh.writelines(f', "k{i}": {i}' for i in range(1, 400_000))
        fh.write("}}")
    axis = ",".join(["h100"] * 3000)
    kc = [PY, "-m", "kernelcfg"]
    return {
        "yaml alias bomb": [*kc, "resolve", "--device", "h100", "--config", str(tmp / "bomb.yaml")],
        "10 MB value": [*kc, "resolve", "--device", "h100", "--config", str(tmp / "big.yaml")],
        "17 MiB file": [*kc, "resolve", "--device", "h100", "--config", str(tmp / "huge.yaml")],
        "3,000-deep YAML": [*kc, "resolve", "--device", "h100", "--config", str(tmp / "deep.yaml")],
        "/dev/zero as --config": [*kc, "resolve", "--config", "/dev/zero.yaml"],
        "FIFO as --config": [
            *kc,
            "resolve",
            "--device",
            "h100",
            "--config",
            str(tmp / "fifo.yaml"),
        ],
        "/dev/zero as --batch": [*kc, "resolve", "--batch", "/dev/zero"],
        "lint-env, 200k unknowns": [*kc, "lint-env", "--env-file", str(tmp / "many.env")],
        "lint-env, 200k unknowns, SARIF": [
            *kc,
            "lint-env",
            "--env-file",
            str(tmp / "many.env"),
            "--format",
            "sarif",
        ],
        "9,990 unknown options, one batch line": [
            *kc,
            "resolve",
            "--batch",
            str(tmp / "options.jsonl"),
        ],
        "batch table, ids of 200 KB": [
            *kc,
            "resolve",
            "--batch",
            str(tmp / "ids.jsonl"),
            "--format",
            "table",
        ],
        "diff, 400,000 hash factors": [*kc, "diff", str(tmp / "a.json"), str(tmp / "b.json")],
        "--matrix 3,000 x 3,000": [
            *kc,
            "resolve",
            "--batch",
            str(tmp / "ids.jsonl"),
            "--matrix",
            f"device={axis}",
            "--matrix",
            f"install={axis}",
        ],
        "batch with bad lines": [
            *kc,
            "resolve",
            "--device",
            "h100",
            "--batch",
            str(tmp / "bad.jsonl"),
        ],
    }


def hostile() -> dict[str, dict[str, float]]:
    """Wall time and peak memory of the worst inputs; each must stay under 1 s and 100 MiB."""
    with tempfile.TemporaryDirectory() as name:
        return {label: _measured(cmd) for label, cmd in _hostile_inputs(Path(name)).items()}


def _measured(cmd: list[str]) -> dict[str, float]:
    """Wall time, peak memory and exit code of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    return {
        "seconds": round(time.perf_counter() - start, 3),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "exit_code": os.waitstatus_to_exitcode(status),
    }


def scan_inputs() -> dict[str, Any]:
    """``scan``'s throughput over the scan corpus (64 real deployment files, each laid
    out 20 times) and its three hostile files; each of those must stay under 2 s and
    200 MiB."""
    corpus = Path(__file__).resolve().parent.parent / "tests" / "data" / "scan-corpus"
    expected = json.loads((corpus / "expected.json").read_text("utf-8"))
    kc = [PY, "-m", "kernelcfg", "scan", "--device", "h100", "--format", "json", "--"]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        paths, size = [], 0
        for copy in range(20):
            for number, entry in enumerate(expected):
                folder = tmp / f"{copy}-{number}"
                folder.mkdir()
                path = folder / Path(entry["source"]["path"]).name
                data = (corpus / entry["file"]).read_bytes()
                path.write_bytes(data)
                paths.append(str(path))
                size += len(data)
        took = _measured([*kc, *paths])
        _write(tmp / "word.sh", (b"vllm serve m --x ", 1), (b"a" * 1_000_000, 15), (b"\n", 1))
        _write(tmp / "long.sh", (b"vllm serve m \\\n", 1), (b"  --max-num-seqs 1 \\\n", 100_000))
        _write(tmp / "docs.md", (b"```bash\nvllm serve m --port 1\n```\n", 33_334))
        hostile_files = {
            "a 15 MB word": _measured([*kc, str(tmp / "word.sh")]),
            "100,000 continuation lines": _measured([*kc, str(tmp / "long.sh")]),
            "a 100,000-line Markdown file": _measured([*kc, str(tmp / "docs.md")]),
        }
    return {
        "corpus_mb_per_second": round(size / 1e6 / took["seconds"], 2),
        "corpus_files": len(paths),
        "hostile": hostile_files,
    }


def parallel_jobs() -> int:
    """The worker count ``--jobs auto`` takes here."""
    from kernelcfg.output.parallel import available_jobs

    return available_jobs()


def main() -> None:
    rounds = int(os.environ.get("KERNELCFG_BENCH_ROUNDS", "15"))
    lines = int(os.environ.get("KERNELCFG_BENCH_LINES", "20000"))
    cold = cold_start(rounds)
    serve = serve_lines(rounds)
    torch = torch_imported()
    worst = hostile()  # before the batch runs, while this process is still small
    scanned = scan_inputs()
    runs = [batch_rate(lines) for _ in range(3)]
    best = max(runs, key=lambda r: r["per_second"])
    parallel = [batch_rate(lines, "auto") for _ in range(3)]
    distinct = [batch_rate(lines, "auto", distinct=True) for _ in range(3)]
    matrix = [matrix_rate(3000) for _ in range(3)]
    selection = selection_cost(lines // 4)
    best_parallel = max(parallel, key=lambda r: r["per_second"])
    report = {
        "serve_lines": serve,
        "hostile_inputs": worst,
        "scan": scanned,
        "cold_start": cold,
        "torch_imported_on_resolve": torch,
        "batch_best_of_3": best,
        "batch_rates": [round(r["per_second"]) for r in runs],
        "batch_jobs_auto_best_of_3": best_parallel,
        "batch_jobs_auto_rates": [round(r["per_second"]) for r in parallel],
        "batch_jobs_auto_distinct_lines_rates": [round(r["per_second"]) for r in distinct],
        "batch_matrix_7_devices_rates": [round(r["per_second"]) for r in matrix],
        "cpus": parallel_jobs(),
        "selection_cost": selection,
    }
    print(json.dumps(report, indent=2))
    ok = (
        cold["ratio"] <= 1.0
        and cold["peak_rss_mib"] <= 40
        and not torch
        and best_parallel["per_second"] >= 20000
        and serve["extra_ms"] <= 10
        and selection["ratio"] < 2
        and all(w["seconds"] < 1 and w["peak_rss_mib"] < 100 for w in worst.values())
        and all(w["seconds"] < 2 and w["peak_rss_mib"] < 200 for w in scanned["hostile"].values())
    )
    print("targets met" if ok else "targets MISSED", file=sys.stderr)


if __name__ == "__main__":
    main()
