"""The release command's own logic, on small stand-in wheels (no network, no vLLM):
which known release a new one starts from, the to-do list's source diff (RECORD hashes,
lines added and removed, the selection code that changed, the files a data file cites),
and the hand-read files started from the nearest release's without touching one that
exists."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "release"))

import compile_env  # noqa: E402
import release  # noqa: E402
import source_diff  # noqa: E402
import wheel_source  # noqa: E402


def _wheel(path: Path, version: str, files: dict[str, str]) -> Path:
    """A wheel holding ``files`` and a RECORD with their SHA-256."""
    rows = []
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append(f"{name},sha256={digest.decode()},{len(data)}")
            whl.writestr(name, data)
        record = f"vllm-{version}.dist-info/RECORD"
        whl.writestr(record, "\n".join([*rows, f"{record},,"]) + "\n")
    return path


ORACLE = "vllm/model_executor/layers/fused_moe/oracle/fp8.py"
OLD_ORACLE = "def select_fp8_moe_backend():\n    return 'TRITON'\n\n\ndef helper():\n    return 1\n"
NEW_ORACLE = "def select_fp8_moe_backend():\n    return 'MARLIN'\n\n\ndef helper():\n    return 2\n"


@pytest.fixture
def wheels(tmp_path: Path) -> tuple[Path, Path]:
    same = {"vllm/envs.py": "A = 1\n", "vllm/other.py": "x = 1\n"}
    old = _wheel(tmp_path / "old.whl", "0.29.0", {**same, ORACLE: OLD_ORACLE})
    new_files = {**same, ORACLE: NEW_ORACLE, "vllm/other.py": "x = 2\n"}
    new_files["vllm/v1/attention/backends/new_backend.py"] = (
        "def supports_sink():\n    return True\n"
    )
    new = _wheel(tmp_path / "new.whl", "0.28.0", new_files)
    return new, old


def test_nearest_is_the_closest_known_release(tmp_path: Path) -> None:
    for version in ("0.29.0", "0.31.0", "0.34.0"):
        (tmp_path / f"vllm-{version}.json").write_text("{}")
    assert release.nearest("0.28.0", [tmp_path]) == "0.29.0"
    assert release.nearest("0.35.0", [tmp_path]) == "0.34.0"
    assert release.nearest("0.30.0", [tmp_path]) == "0.31.0"  # the newer on a tie
    assert release.nearest("0.31.1", [tmp_path]) == "0.31.0"  # a patch: its minor
    assert release.nearest("0.31.0", [tmp_path]) != "0.31.0"  # never itself


def test_source_diff_groups_the_changed_selection_code(wheels: tuple[Path, Path]) -> None:
    new, old = wheels
    cited = {"moe": json.dumps({"notes": "oracle/fp8.py:12 picks", "also": "other.py:1"})}
    report = source_diff.compare(new, old, cited)
    (oracle,) = report.by_kind["moe"][:1]
    assert oracle.path == ORACLE
    assert (oracle.added, oracle.removed) == (2, 2)
    assert oracle.selection == ("select_fp8_moe_backend",)  # helper() is not selection code
    assert oracle.cited
    # a file the data cites belongs to its concern, wherever it lives
    assert [c.path for c in report.by_kind["moe"]] == [ORACLE, "vllm/other.py"]
    (backend,) = report.by_kind["selector"]
    assert (backend.status, backend.selection) == ("new", ("supports_sink (new)",))
    assert "env" not in report.by_kind  # identical by RECORD hash: not even read
    assert source_diff.hand_edits(report) == 3
    lines = source_diff.render(report, "0.28.0", "0.29.0", {"moe": "started"})
    assert any("selection code: select_fp8_moe_backend" in line for line in lines)


def test_hand_read_files_start_from_the_nearest_and_are_never_overwritten(
    tmp_path: Path,
) -> None:
    out, staging = tmp_path / "out", tmp_path / "staging"
    out.mkdir()
    staging.mkdir()
    text = '{\n "format": 1,\n "vllm_version": "0.29.0",\n "about": "x"\n}\n'
    for kind in ("moe", "linear", "selector"):
        (out / f"{kind}-0.29.0.json").write_text(text)
    (out / "linear-0.28.0.json").write_text("edited by hand\n")
    run = release.Run("0.28.0", "0.29.0", out, staging)
    release._hand_read(run)
    started = json.loads((staging / "moe-0.28.0.json").read_text())
    assert started["vllm_version"] == "0.28.0"
    assert not (staging / "linear-0.28.0.json").exists()
    assert "kept" in run.kept["linear"]
    assert "none" in run.kept["topk"]


def test_a_patch_releases_files_equal_to_its_minors_become_same_as_files(
    tmp_path: Path,
) -> None:
    out, staging = tmp_path / "out", tmp_path / "staging"
    out.mkdir()
    staging.mkdir()
    text = '{\n "format": 1,\n "vllm_version": "0.29.0",\n "about": "x"\n}\n'
    for kind in ("moe", "env", "serve"):
        (out / f"{kind}-0.29.0.json").write_text(text)
    (staging / "env-0.29.1.json").write_text(text.replace("0.29.0", "0.29.1"))
    other = text.replace('"x"', '"y"').replace("0.29.0", "0.29.1")
    (staging / "serve-0.29.1.json").write_text(other)
    run = release.Run("0.29.1", "0.29.0", out, staging)
    release._hand_read(run)
    made = release._same_as(run)  # linear- and selector- start from kernelcfg's own 0.29.0
    assert {"env-0.29.1.json", "moe-0.29.1.json", "linear-0.29.1.json"} <= set(made)
    assert "serve-0.29.1.json" not in made
    for name in ("env-0.29.1.json", "moe-0.29.1.json"):
        said = json.loads((staging / name).read_text())
        assert said == {"vllm_version": "0.29.1", wheel_source.SAME_AS: "0.29.0"}
        # read back through the file it names: the bytes the generator wrote
        (out / name).write_text((staging / name).read_text())
        assert wheel_source.release_text(out / name) == text.replace("0.29.0", "0.29.1")
    assert json.loads((staging / "serve-0.29.1.json").read_text())["about"] == "y"
    # a same_as file whose bytes the generator writes again is kept, and checks identical
    env = out / "env-0.29.1.json"
    before = env.read_text()
    assert wheel_source.write_or_check(env, text.replace("0.29.0", "0.29.1"), check=True) == 0
    assert wheel_source.write_or_check(env, text.replace("0.29.0", "0.29.1"), check=False) == 0
    assert env.read_text() == before
    assert wheel_source.write_or_check(env, text.replace('"x"', '"z"'), check=True) == 1
    # a patch of the next release names the file that holds the facts (one hop)
    run = release.Run("0.29.2", "0.29.1", out, staging / "two")
    (staging / "two").mkdir()
    (staging / "two" / "env-0.29.2.json").write_text(text.replace("0.29.0", "0.29.2"))
    assert release._same_as(run) == ["env-0.29.2.json"]
    said = json.loads((staging / "two" / "env-0.29.2.json").read_text())
    assert said[wheel_source.SAME_AS] == "0.29.0"


def test_a_new_minor_starts_from_copies_not_same_as_files(tmp_path: Path) -> None:
    out, staging = tmp_path / "out", tmp_path / "staging"
    out.mkdir()
    staging.mkdir()
    text = '{\n "format": 1,\n "vllm_version": "0.29.0"\n}\n'
    (out / "moe-0.29.0.json").write_text(text)
    run = release.Run("0.28.0", "0.29.0", out, staging)
    release._hand_read(run)
    assert release._same_as(run) == []
    assert json.loads((staging / "moe-0.28.0.json").read_text())["format"] == 1


def test_a_deprecated_env_parser_reads_as_the_getter_it_wraps() -> None:
    """vLLM 0.23.0's ``deprecated_env(name, removal, replacement, getter)`` (envs.py:349-369)
    warns when the variable is set and returns the getter's value: compile_env.py reads
    the variable as the getter, where it had stopped at an unclassified parser."""
    getter = "lambda: bool(int(os.getenv('VLLM_X', '0')))"
    wrapped = f"deprecated_env('VLLM_X', 'v0.23', 'Use --moe-backend.', {getter})"
    tree = ast.parse("")
    found = compile_env.classify("VLLM_X", ast.parse(wrapped, mode="eval").body, tree)
    assert found == compile_env.classify("VLLM_X", ast.parse(getter, mode="eval").body, tree)
    assert found["kind"] == "bool_int"
    assert found["default"] is False
