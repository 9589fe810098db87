"""What the executing generators share: the release's wheel (downloaded once into a
cache folder), a throwaway virtual environment outside the repository where vLLM's own
selection code can be imported on this CPU machine, the stand-in CUDA libraries its
compiled support queries need to load, and running a driver inside that environment.

Nothing here imports vLLM; the drivers under ``inside/`` do, inside the venv.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wheel_source import download_wheel

__all__ = [
    "GOLDEN_DIR",
    "INSIDE",
    "REPO",
    "TORCH_PIN",
    "ensure_venv",
    "run_inside",
    "stub_libraries",
    "venv_path",
    "wheel",
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
INSIDE = HERE / "inside"
"""The drivers that run inside the release's venv (they import vLLM)."""
GOLDEN_DIR = REPO / "tests" / "golden"
TORCH_PIN = "torch==2.13.0"
"""A CPU build from local disk; vLLM's config and selection code runs on it for every
release checked (0.28.0-0.34.0), though 0.33.0+ ask for 2.14."""

COMMON = [
    "pydantic==2.14.4",
    "pydantic_core==2.50.5",
    "openai>=2.25.0",
    "numpy",
    "psutil",
    "pyzmq>=25",
    "PyYAML==6.0.4",
    "cbor2",
    "regex",
    "requests>=2.33.0",
    "safetensors>=0.6.2",
    "tokenizers>=0.23.2",
    "tqdm",
    "aiohttp>=3.14.4",
    "typer",
    "rich",
    "msgspec",
    "cachetools",
    "blake3",
    "py-cpuinfo",
    "cloudpickle",
    "pybase64",
    "einops",
    "pillow>=13.0.0",
    "uvloop==0.23.0",
    "fastapi[standard]==0.136.3",
    "starlette>=1.0.1",
    "prometheus_client>=0.18.0",
    "prometheus-fastapi-instrumentator>=8.0.0",
    "orjson>=3.11.6",
    "partial-json-parser",
    "model-hosting-container-standards<1.0.0,>=0.1.14",
    "llguidance>=1.7.0,<1.8.0",
    "apache-tvm-ffi==0.1.11",
    "xgrammar==0.2.8",
    "compressed-tensors",
]
"""What ``import vllm.model_executor.layers.fused_moe`` needs beside torch, at the
versions the serve-parser venv uses (scripts/release/serve_parser/constraints-common.txt)."""

OLDER = [
    "transformers==5.17.0",
    "huggingface_hub==1.33.0",
    "httpx==0.28.1",
    "openai-harmony==0.0.8",
    "compressed-tensors==0.17.0",
]
"""0.24.0-0.28.0: 0.29.0's pins, openai-harmony (``vllm.config`` imports
``openai_harmony`` through the reasoning parsers' tool server) and the
compressed-tensors release their wheels require."""

PINS = {
    "0.34.0": ["transformers==5.22.2", "huggingface_hub==2.4.0", "oss-harmony>=0.0.11"],
    "0.33.0": ["transformers==5.20.2", "huggingface_hub==2.4.0", "oss-harmony>=0.0.11"],
    "0.32.0": ["transformers==5.19.0", "huggingface_hub==2.4.0", "oss-harmony>=0.0.11"],
    "0.31.0": [
        "transformers==5.17.0",
        "huggingface_hub==1.33.0",
        "httpx==0.28.1",
        "oss-harmony>=0.0.11",
    ],
    "0.30.0": [
        "transformers==5.17.0",
        "huggingface_hub==1.33.0",
        "httpx==0.28.1",
        "openai-harmony>=0.0.3",
    ],
    "0.29.0": [
        "transformers==5.17.0",
        "huggingface_hub==1.33.0",
        "httpx==0.28.1",
        "openai-harmony>=0.0.3",
    ],
    "0.28.0": OLDER,
    "0.27.1": OLDER,
    "0.27.0": OLDER,
    "0.26.0": OLDER,
    "0.25.1": OLDER,
    "0.25.0": OLDER,
    "0.24.0": OLDER,
    "0.23.0": [*OLDER, "gguf>=0.17.0"],
}
"""Per release, the packages whose pins differ (inside the wheel's Requires-Dist; a patch
release's are its ``.0``'s: 0.25.1 and 0.27.1 require what 0.25.0 and 0.27.0 do). 0.23.0's
``vllm.config`` imports ``gguf`` (transformers_utils/gguf_utils.py:9), which its wheel
requires unconditionally."""

UNCONSTRAINED = {"0.23.0": ["ijson", "mistral_common[image]>=1.11.3"]}
"""Per release, packages installed after the pinned ones and outside the shared
constraints (which they conflict with): 0.23.0's ``vllm serve`` parser
(``serve_parser.py``) imports its tool parsers' ``ijson`` and ``mistral_common``."""

CUDA_LIBS = (
    "libcudart.so",
    "libcuda.so",
    "libtorch_cuda.so",
    "libc10_cuda.so",
    "libcublas",
    "libcublasLt",
)
"""Shared objects the CUDA wheel's compiled extensions link that a CPU host lacks
(``libc10_cuda.so``: vLLM 0.27.0's FlashAttention-3 extension links it)."""

EXTENSION_FOLDERS = ("", "vllm_flash_attn")
"""Folders under ``vllm/`` whose compiled extensions get stand-ins: the top level and
vLLM's FlashAttention builds, whose load decides ``FA2_AVAILABLE`` / ``FA3_AVAILABLE``."""


def _nice() -> list[str]:
    return ["nice", "-n", "10"] if shutil.which("nice") else []


def wheel_cache() -> Path:
    folder = Path(os.environ.get("KERNELCFG_WHEELS") or "/tmp/kernelcfg-wheels")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wheel(version: str) -> Path:
    """The release's wheel, downloaded into the cache folder unless already there."""
    return download_wheel(version, wheel_cache(), _nice())


def venv_path(version: str) -> Path:
    return Path(os.environ.get("KERNELCFG_EXEC_VENV") or f"/tmp/kernelcfg-venv-{version}")


def _pip(venv: Path, *args: str) -> None:
    subprocess.run([*_nice(), str(venv / "bin" / "pip"), "install", "-q", *args], check=True)


def ensure_venv(version: str) -> Path:
    """The release's venv: CPU torch first (so pip never pulls a CUDA build), the import
    dependencies, then the wheel with ``--no-deps``. A marker file says it is complete,
    with which pins (changed pins are installed again)."""
    venv = venv_path(version)
    marker = venv / ".kernelcfg-complete"
    if version not in PINS:
        raise SystemExit(f"no pins for vLLM {version}: add them to PINS in {__file__}")
    extra = UNCONSTRAINED.get(version, [])
    stamp = "\n".join([version, TORCH_PIN, *COMMON, *PINS[version], *extra]) + "\n"
    if marker.is_file() and marker.read_text(encoding="utf-8") == stamp:
        return venv
    if not (venv / "bin" / "python").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    _pip(venv, TORCH_PIN)
    constraints = REPO / "scripts" / "release" / "serve_parser" / "constraints-common.txt"
    _pip(venv, "-c", str(constraints), *COMMON, *PINS[version])
    if extra:
        _pip(venv, *extra)
    _pip(venv, "--no-deps", "--force-reinstall", str(wheel(version)))
    marker.write_text(stamp, encoding="utf-8")
    return venv


# ---------------------------------------------------------------- stand-in CUDA libraries
def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def _dynamic_symbols(path: Path, defined: bool) -> list[tuple[str, str, str]]:
    """(name, version, type) of a shared object's dynamic symbols, defined or undefined."""
    out = subprocess.run(
        ["readelf", "--dyn-syms", "--wide", str(path)], capture_output=True, text=True, check=True
    ).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 8 or not parts[0].rstrip(":").isdigit():
            continue
        kind, bind, ndx, name = parts[3], parts[4], parts[6], parts[7]
        if (ndx != "UND") != defined or bind == "WEAK" or not name:
            continue
        base, _, version = name.partition("@")
        rows.append((base, version.lstrip("@").split(" ")[0], kind))
    return rows


def _needed(path: Path) -> list[str]:
    out = subprocess.run(
        ["readelf", "-d", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return re.findall(r"Shared library: \[([^\]]+)\]", out)


def stub_libraries(venv: Path) -> Path:
    """Compile (with gcc) empty stand-ins for the CUDA libraries the wheel's compiled
    extensions link, so that they load on a CPU host and their support queries (pure
    capability arithmetic) answer. Every symbol the extensions need that torch's CPU
    libraries and the system do not define becomes a function returning 0 (or a zeroed
    object); symbols versioned ``@libcudart.so.N`` get that version node. Returns the
    folder to put on ``LD_LIBRARY_PATH``."""
    site = _site_packages(venv)
    out_dir = venv / "kernelcfg-stub-libs"
    done = out_dir / ".complete"
    if done.is_file() and done.read_text(encoding="utf-8").startswith(STUB_FORMAT):
        return out_dir
    out_dir.mkdir(exist_ok=True)
    extensions = sorted(
        path for folder in EXTENSION_FOLDERS for path in (site / "vllm" / folder).glob("*.so")
    )
    provided: set[str] = set()
    system = [
        Path(
            subprocess.run(
                ["gcc", f"-print-file-name={n}"], capture_output=True, text=True, check=True
            ).stdout.strip()
        )
        for n in ("libstdc++.so.6", "libgcc_s.so.1")
    ]
    for lib in [*sorted((site / "torch" / "lib").glob("*.so*")), *system]:
        if lib.is_file():
            provided.update(name for name, _, _ in _dynamic_symbols(lib, defined=True))
    wanted: dict[str, dict[str, tuple[str, str]]] = {}
    for ext in extensions:
        cuda_needs = [n for n in _needed(ext) if n.startswith(CUDA_LIBS)]
        if not cuda_needs:
            continue
        for soname in cuda_needs:
            wanted.setdefault(soname, {})
        for name, version, kind in _dynamic_symbols(ext, defined=False):
            if name in provided or version.startswith(("GLIBC", "GCC", "CXXABI", "GLIBCXX")):
                continue
            if name.startswith(("Py", "_Py", "_ITM_", "__gmon", "__cxa", "__pthread")):
                continue
            if version:
                wanted.setdefault(version, {})[name] = (version, kind)
            else:
                torch_cuda = [n for n in wanted if n.startswith("libtorch_cuda")]
                wanted[(torch_cuda or list(wanted))[0]][name] = ("", kind)
    for soname, symbols in wanted.items():
        _compile_stub(out_dir, soname, symbols)
    done.write_text(STUB_FORMAT + json.dumps(sorted(wanted)) + "\n", encoding="utf-8")
    return out_dir


STUB_FORMAT = "stubs-3 "
"""Starts the marker of a complete set of stand-ins; a set made before the version
queries answered, or before the FlashAttention extensions had stand-ins (no such start),
is rebuilt."""

VERSION_QUERIES = ("cudaRuntimeGetVersion", "cudaDriverGetVersion", "cuDriverGetVersion")
"""Stand-ins that answer the CUDA version (through their pointer) instead of leaving it
unset: the compiled support queries compare it (CUTLASS FP4 needs a runtime >= 12.8)."""


def _version_query(name: str, soname: str) -> str:
    """The version a ``libcudart.so.N`` of that major release reports (N.0; 12.9 for 12)."""
    major = re.search(r"\.so\.(\d+)", soname)
    number = int(major.group(1)) if major and major.group(1) != "1" else 13
    version = 12090 if number == 12 else number * 1000
    return f"long {name}(int *v) {{ if (v) *v = {version}; return 0; }}"


def _compile_stub(out_dir: Path, soname: str, symbols: dict[str, tuple[str, str]]) -> None:
    lines = ["/* stand-in written by scripts/release/execute/common.py */"]
    versions = sorted({v for v, _ in symbols.values() if v})
    for name, (_, kind) in sorted(symbols.items()):
        if kind == "OBJECT":
            lines.append(f"char {name}[256];")
        elif name in VERSION_QUERIES:
            lines.append(_version_query(name, soname))
        else:
            lines.append(f"long {name}(void) {{ return 0; }}")
    source = out_dir / (soname.replace(".", "_") + ".c")
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cmd = ["gcc", "-shared", "-fPIC", "-o", str(out_dir / soname), str(source)]
    cmd.append(f"-Wl,-soname,{soname}")
    if versions:
        vmap = out_dir / (soname.replace(".", "_") + ".map")
        vmap.write_text(
            "\n".join(f"{v} {{ global: *; }};" for v in versions) + "\n", encoding="utf-8"
        )
        cmd.append(f"-Wl,--version-script={vmap}")
    subprocess.run(cmd, check=True)


# ---------------------------------------------------------------- running a driver
def run_inside(
    venv: Path,
    driver: str,
    request: dict[str, Any],
    *,
    stubs: bool = True,
    path: tuple[Path, ...] = (),
) -> dict[str, Any]:
    """Run ``inside/<driver>`` with the venv's Python, the stand-in libraries on the
    loader path (unless ``stubs`` is false: then vLLM's compiled extensions do not load,
    as on a machine without CUDA) and no GPU visible; ``path`` is added to the module
    search path; ``request`` goes in as JSON on stdin, the answer comes back as JSON on
    stdout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VLLM_", "CUDA_", "DG_JIT", "DJ_JIT"))
    }
    if stubs:
        libs = stub_libraries(venv)
        env["LD_LIBRARY_PATH"] = f"{libs}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
    env["PYTHONPATH"] = ":".join(str(p) for p in (INSIDE, *path))
    env["VLLM_LOGGING_LEVEL"] = "ERROR"
    env["PATH"] = "/usr/bin:/bin"  # no nvcc, no ninja: the worlds say what is installed
    started = time.monotonic()
    proc = subprocess.run(
        [*_nice(), str(venv / "bin" / "python"), str(INSIDE / driver)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-12000:])
        raise SystemExit(f"{driver} failed (exit {proc.returncode})")
    answer: dict[str, Any] = json.loads(proc.stdout)
    answer["wall_s"] = round(time.monotonic() - started, 1)
    return answer


def driver_arguments(doc: str | None, targets: dict[str, Any], argv: list[str] | None) -> Any:
    """The command line every executing generator takes: ``VERSION [--targets A,B]
    [--out FILE]`` (the targets default to every one of ``targets``; ``args.targets`` is
    the list of names)."""
    import argparse

    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("version")
    parser.add_argument("--targets", default=",".join(targets))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    return args


def write_vectors(out: Path | None, version: str, kind: str, data: dict[str, Any]) -> Path:
    """Write a release's executed vectors of ``kind`` (``--out``, else
    ``tests/golden/vllm-X.Y.Z/executed-<kind>.json``); where they went."""
    path = out or GOLDEN_DIR / f"vllm-{version}" / f"executed-{kind}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=None, sort_keys=True) + "\n", encoding="utf-8")
    return path
