"""Regenerate every release data file from its wheel and compare, byte for byte.

Downloads each ``vllm==X`` wheel (about 300 MB each) with ``pip download --no-deps``
into ``$KERNELCFG_WHEELS`` (default: a temporary folder) and runs
``kernel_config.py --check``, ``attention_config.py --check`` and
``compile_env.py --check`` on it; then installs it
into a throwaway virtual environment (``scripts/release/serve_parser/venv.sh``, CPU torch;
``$KERNELCFG_SERVE_VENV`` keeps it between runs), dumps the parser ``vllm serve`` builds and checks
``serve-X.Y.Z.json`` with ``serve_options.py --check`` (``KERNELCFG_SKIP_SERVE=1``
skips that half). Exit 1 when any file would change.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from wheel_source import download_wheel  # noqa: E402

from kernelcfg.vllm import releases  # noqa: E402


def _serve_check(version: str, wheel: Path, venv: Path, tmp: Path) -> bool:
    """Dump ``vllm serve``'s parser from the wheel in a throwaway venv; compare."""
    env = {**os.environ, "VENV": str(venv), "KERNELCFG_WHEELS": str(wheel.parent)}
    serve = HERE / "serve_parser"
    subprocess.run(["bash", str(serve / "venv.sh"), version], check=True, env=env)
    dump = tmp / f"dump-{version}.json"
    subprocess.run(
        [str(venv / "bin" / "python"), str(serve / "dump.py"), str(dump)],
        check=True,
        env={k: v for k, v in env.items() if not k.startswith("VLLM_")},
    )
    proc = subprocess.run(
        [sys.executable, str(HERE / "serve_options.py"), str(dump), "--check"], check=False
    )
    return proc.returncode == 0


def main() -> int:
    given = os.environ.get("KERNELCFG_WHEELS")
    serve = os.environ.get("KERNELCFG_SKIP_SERVE") != "1"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(given) if given else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        venv = Path(os.environ.get("KERNELCFG_SERVE_VENV", str(Path(tmp) / "venv")))
        failed = 0
        for version in releases.known_versions():
            wheel = download_wheel(version, folder)
            for script in ("kernel_config.py", "attention_config.py", "compile_env.py"):
                proc = subprocess.run(
                    [sys.executable, str(HERE / script), str(wheel), "--check"], check=False
                )
                failed += proc.returncode != 0
            if serve:
                failed += not _serve_check(version, wheel, venv, Path(tmp))
    files = len(releases.known_versions()) * (4 if serve else 3)
    print(f"{files - failed} identical, {failed} differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
