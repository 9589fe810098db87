"""``kernelcfg upgrade FROM TO``: one launch across two releases, led by the kernels vLLM
picks; every expectation is read from ``resolve`` or the releases' data, never written
into the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm import releases
from kernelcfg.vllm.inputs import INSTALLS

from .cli_helpers import run

pytestmark = pytest.mark.cli

R1 = str(Path(__file__).resolve().parent.parent / "docs" / "examples" / "deepseek-r1")
"""DeepSeek-R1's config.json as its producer wrote it (FP8, 128x128 weight blocks)."""
SERVE = ["--", "vllm", "serve", R1, "-tp", "8"]


def _linear(version: str, install: str) -> dict[str, str]:
    """What ``resolve`` says vLLM picks for R1's linear layers on H100 under ``install``."""
    data = run(
        "resolve", "--vllm-version", version, "--device", "h100", "--install", install,
        "--format", "json", *SERVE,
    ).json()  # fmt: skip
    layers: dict[str, str] = data["selection"]["linear_backend"]["layers"]
    return layers


def _upgrade(*words: str) -> Any:
    done = run(
        "upgrade", "0.33.0", "0.34.0", "--device", "h100", *words, "--format", "json", *SERVE
    )
    assert done.exit_code == 0, done.stderr
    return done.json()


def test_deepseek_r1_on_h100_names_the_linear_kernel_change_first() -> None:
    data = _upgrade()
    first = data["kernels"][0]
    assert first["changed"] is True
    assert first["kernel"].startswith("linear ")
    kind = first["kernel"].removeprefix("linear ")
    for install in first["installs"]:
        before, after = _linear("0.33.0", install), _linear("0.34.0", install)
        assert (first["from"], first["to"]) == (before[kind], after[kind])
        assert before[kind] != after[kind]
    assert first["why"] is not None
    assert first["why"].startswith("0.34.0 ")
    assert data["compile_cache"]["reusable"] is False
    assert data["from"]["vllm_version"] == "0.33.0"
    assert data["to"]["vllm_version"] == "0.34.0"


def test_every_install_is_compared_and_each_row_matches_resolve() -> None:
    data = _upgrade()
    assert data["installs"] == list(INSTALLS)
    seen: dict[tuple[str, str], int] = {}
    for row in data["kernels"]:
        assert row["changed"] == (row["from"] != row["to"])
        for install in row["installs"]:
            seen[row["kernel"], install] = seen.get((row["kernel"], install), 0) + 1
            if row["kernel"].startswith("linear "):
                kind = row["kernel"].removeprefix("linear ")
                assert _linear("0.33.0", install)[kind] == row["from"]
                assert _linear("0.34.0", install)[kind] == row["to"]
    assert set(seen.values()) == {1}  # each kernel and install on one row
    changed = [row["changed"] for row in data["kernels"]]
    assert changed == sorted(changed, reverse=True)  # changes first


def test_an_install_named_is_the_only_one_compared() -> None:
    data = _upgrade("--install", "image")
    assert data["installs"] == ["image"]
    assert data["install_given"] is True
    for row in data["kernels"]:
        assert row["installs"] == ["image"]
    linear = next(r for r in data["kernels"] if r["kernel"].startswith("linear "))
    kind = linear["kernel"].removeprefix("linear ")
    assert linear["to"] == _linear("0.34.0", "image")[kind]


def test_the_table_fits_one_screen_of_80_columns_and_says_the_cache_once() -> None:
    done = run("upgrade", "0.33", "0.34", "--device", "h100", *SERVE, env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert len(lines) <= 40
    assert sum("compile cache" in line for line in lines) == 1
    data = _upgrade()
    first = data["kernels"][0]
    rows = [line.split("│")[1:-1] for line in lines if line.startswith("│")]
    assert rows[0][0].strip() == "linear"
    columns = ["".join(cells[i].strip() for cells in rows) for i in range(4)]
    assert first["from"] in columns[2]
    assert first["to"] in columns[3]


def test_an_option_the_new_release_drops_is_named_and_its_refusal_is_the_exit() -> None:
    old, new = (releases.data_file(f"serve-{v}.json")["options"] for v in ("0.29.0", "0.30.0"))
    kept = {s for o in new for s in o["strings"]}
    dests = {o["dest"] for o in new}
    gone = next(
        s
        for o in old
        if o["action"] in ("store_true", "boolean") and o["dest"] not in dests
        for s in o["strings"]
        if s not in kept
    )
    done = run("upgrade", "0.29", "0.30", "--device", "h100", gone, "--format", "json")
    data = done.json()
    assert {"option": gone, "change": "gone", "to": None, "message": None} in data["options"]
    assert done.exit_code == data["to"]["exit_code"] == 2
    assert data["from"]["exit_code"] == 0
    assert any(gone in p["message"] for p in data["warnings"]["appear"])


def test_a_variable_the_new_release_refuses_appears_as_an_error() -> None:
    refused = sorted(releases.load("0.34").refused_envs - releases.load("0.33").refused_envs)
    name = refused[0]
    done = run(
        "upgrade", "0.33", "0.34", "--device", "h100", "--env", f"{name}=1", "--format", "json"
    )
    data = done.json()
    assert any(
        name in p["message"] and p["severity"] == "error" for p in data["warnings"]["appear"]
    )
    assert not any(name in p["message"] for p in data["warnings"]["disappear"])
    assert done.exit_code == 1


def test_a_warning_both_releases_give_neither_appears_nor_disappears() -> None:
    flag = ["--ir-op-priority.rms_norm", "native"]  # deprecated in both, same words
    data = run(
        "upgrade", "0.33", "0.34", "--device", "h100", "--format", "json", *flag
    ).json()  # fmt: skip
    codes = [p["code"] for key in ("appear", "disappear") for p in data["warnings"][key]]
    assert "ir-op-priority-deprecated" not in codes


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["0.33", "0.34", "--vllm-version", "0.33"], "--vllm-version is not taken here"),
        (["0.34", "0.34.0"], "the same release"),
        (["0.33", "9.0"], "newer than the newest release it knows"),
        (["0.33", "0.3x"], "did you mean"),
    ],
)
def test_what_no_report_can_be_made_of_is_one_line_exit_2(words: list[str], said: str) -> None:
    done = run("upgrade", *words, "--device", "h100")
    assert done.exit_code == 2
    assert done.stdout == ""
    assert said in done.stderr
    assert done.stderr.count("\n") == 1


def test_a_patch_release_is_compared_with_its_minors_data_and_a_note() -> None:
    data = run(
        "upgrade", "0.33.1", "0.34", "--device", "h100", "--format", "json", *SERVE
    ).json()  # fmt: skip
    assert data["from"]["asked"] == "0.33.1"
    assert data["from"]["vllm_version"] == "0.33.0"
    assert any("0.33.1" in note for note in data["from"]["notes"])
    assert data["kernels"] == _upgrade()["kernels"]


def _abbreviation(old: str, new: str) -> tuple[str, str]:
    """An abbreviation ``vllm serve`` of release ``old`` reads as exactly one option and
    that of ``new`` finds ambiguous, and that option's full string."""
    strings = {
        v: {
            s: o["dest"]
            for o in releases.data_file(f"serve-{v}.json")["options"]
            for s in o["strings"]
        }
        for v in (old, new)
    }
    for full, dest in strings[old].items():
        for end in range(len("--x"), len(full)):
            short = full[:end]
            fits = {v: {d for s, d in strings[v].items() if s.startswith(short)} for v in strings}
            if fits[old] == {dest} and dest in fits[new] and len(fits[new]) > 1:
                return short, full
    raise AssertionError("no abbreviation turns ambiguous")


def test_an_abbreviation_the_new_release_cannot_read_names_the_full_option() -> None:
    short, full = _abbreviation("0.33.0", "0.34.0")
    done = run("upgrade", "0.33", "0.34", "--device", "h100", "--format", "json", short)
    data = done.json()
    assert {"option": short, "change": "ambiguous", "to": full, "message": None} in data["options"]
    assert done.exit_code == 2
    assert data["from"]["exit_code"] == 0
