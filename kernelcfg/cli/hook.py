"""``kernelcfg-hook``: the entry of the pre-commit hook (``.pre-commit-hooks.yaml``).

pre-commit runs ``ENTRY ARGS... FILE...``: the hook's ``args`` and then the file names,
with nothing between them, so a file named ``--env`` would be read as an option. The
hook's ``args`` therefore end with ``--`` (the default is ``[--]``; with a target,
``[--device, h100, --]``), and this entry refuses to run without one rather than read a
file name as an option. Then it is ``kernelcfg scan ARGS... -- FILE...``.
"""

from __future__ import annotations

import sys

from kernelcfg.cli.app import main as kernelcfg

NO_SEPARATOR = (
    "the kernelcfg-scan hook's args must end with '--', e.g. args: [--device, h100, --]; "
    "pre-commit puts the file names right after them, and a file named like an option "
    "would be read as one"
)


def main() -> None:
    """Run ``kernelcfg scan`` with this command line, once it holds ``--``; exit 2 if not."""
    args = sys.argv[1:]
    if "--" not in args:
        sys.stderr.write(f"error: {NO_SEPARATOR}\n")
        raise SystemExit(2)
    sys.argv[1:] = ["scan", *args]
    kernelcfg()
