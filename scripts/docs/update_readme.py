"""Rewrite the outputs of the ``$ kernelcfg …`` examples in the docs by running them.

Run from the repository root with the tool installed (``.venv/bin`` first on PATH):
``PATH=.venv/bin:$PATH python scripts/docs/update_readme.py``. ``tests/test_docs.py`` checks
that the README still says what the commands print.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "docs" / "ci.md", ROOT / "docs" / "index.md"]


def _run(command: str) -> tuple[list[str], int]:
    silenced = command.endswith("> /dev/null")
    env = {**os.environ, "COLUMNS": "80"}  # examples are printed at 80 columns
    proc = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, check=False, env=env
    )
    text = proc.stderr if silenced else proc.stdout
    return [line.rstrip() for line in text.splitlines()], proc.returncode


def _block(body: str) -> str:
    lines = body.splitlines()
    out: list[str] = []
    code = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == "$ echo $?":
            out += [line, str(code)]
            i += 2
            continue
        if line.startswith("$ ") and "kernelcfg " in line:
            shown, code = _run(line[2:])
            out += [line, *shown]
            i += 1
            while i < len(lines) and not lines[i].startswith("$ "):
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out) + "\n"


def main() -> None:
    for doc in DOCS:
        text = doc.read_text()
        updated = re.sub(
            r"(```console\n)(.*?)(```)",
            lambda m: m.group(1) + _block(m.group(2)) + m.group(3),
            text,
            flags=re.S,
        )
        doc.write_text(updated)


if __name__ == "__main__":
    main()
