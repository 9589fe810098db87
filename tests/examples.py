"""How many examples a property test tries: its full count, or a fifth of it in the
quick subset (``make fast`` sets ``KERNELCFG_QUICK_TESTS=1``; ``make test`` and CI run
every example)."""

from __future__ import annotations

import os

QUICK = os.environ.get("KERNELCFG_QUICK_TESTS") == "1"
"""Whether this run is ``make fast``."""


def examples(full: int) -> int:
    """``full``, or a fifth of it (at least 10) in the quick subset."""
    return max(10, full // 5) if QUICK else full
