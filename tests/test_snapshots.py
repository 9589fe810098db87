"""The outputs of 30 fixed command lines stay byte-identical (``python -m tests.snapshots``
rewrites them when a change is meant)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .snapshots import COMMANDS, STORE, capture

pytestmark = pytest.mark.cli

STORED: list[dict[str, Any]] = json.loads(STORE.read_text(encoding="utf-8"))


def test_thirty_commands_are_kept() -> None:
    assert len(COMMANDS) == 30
    assert [s["command"] for s in STORED] == COMMANDS


@pytest.mark.parametrize("stored", STORED, ids=[" ".join(s["command"])[:60] for s in STORED])
def test_output_is_byte_identical(stored: dict[str, Any]) -> None:
    assert capture(stored["command"]) == stored
