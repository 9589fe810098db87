"""Regenerate every release data file from its wheel and compare, byte for byte.

Downloads each ``vllm==X`` wheel (about 300 MB each) with ``pip download --no-deps``
into ``$KERNELCFG_WHEELS`` (default: a temporary folder) and runs
``release_data.py --check`` on it. Exit 1 when any file would change.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kernelcfg import releases  # noqa: E402


def _wheel(version: str, folder: Path) -> Path:
    found = sorted(folder.glob(f"vllm-{version}-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(folder),
                f"vllm=={version}",
            ],
            check=True,
        )
        found = sorted(folder.glob(f"vllm-{version}-*.whl"))
    return found[0]


def main() -> int:
    given = os.environ.get("KERNELCFG_WHEELS")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(given) if given else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        failed = 0
        for version in releases.known_versions():
            wheel = _wheel(version, folder)
            proc = subprocess.run(
                [sys.executable, str(HERE / "release_data.py"), str(wheel), "--check"],
                check=False,
            )
            failed += proc.returncode != 0
    print(f"{len(releases.known_versions()) - failed} identical, {failed} differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
