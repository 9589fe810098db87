"""kernelcfg's disk cache of slow-to-make texts (``base.text_cache``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelcfg.base import text_cache


def test_a_text_comes_back_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCFG_CACHE_DIR", str(tmp_path))
    assert text_cache.get("t", "question") is None
    text_cache.put("t", "question", "answer ✓")
    assert text_cache.get("t", "question") == "answer ✓"
    assert text_cache.get("t", "another") is None
    assert not [p for p in (tmp_path / "t").iterdir() if p.name.startswith(".part-")]


def test_empty_folder_variable_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCFG_CACHE_DIR", "")
    assert text_cache.folder() is None
    text_cache.put("t", "q", "a")
    assert text_cache.get("t", "q") is None


def test_the_default_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELCFG_CACHE_DIR")
    assert text_cache.folder({"XDG_CACHE_HOME": "/x"}) == "/x/kernelcfg"
    assert text_cache.folder({"KERNELCFG_CACHE_DIR": "/k"}) == "/k"


def test_an_unwritable_folder_is_a_miss_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KERNELCFG_CACHE_DIR", str(blocker))
    text_cache.put("t", "q", "a")
    assert text_cache.get("t", "q") is None


def test_a_file_not_text_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCFG_CACHE_DIR", str(tmp_path))
    text_cache.put("t", "q", "a")
    (entry,) = (tmp_path / "t").iterdir()
    entry.write_bytes(b"\xff\xfe")
    assert text_cache.get("t", "q") is None
