"""Hostile and careless input, second round: a matrix cell that a line would override,
saved JSON of the wrong shape, and values that are too long, too many or not text."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .cli_helpers import run

pytestmark = pytest.mark.cli


def batch(lines: list[object], *args: str) -> list[dict[str, object]]:
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = run("resolve", "--batch", "-", *args, stdin=stdin)
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize(
    "line",
    [
        {"id": "mine", "device": "b200", "argv": []},
        {"id": "mine", "argv": ["--device", "b200"]},
        {"id": "mine", "argv": ["--device=b200"]},
        {"id": "mine", "argv": ["--capability", "10.0"]},
    ],
)
def test_a_line_cannot_override_a_matrix_cell(line: dict[str, object]) -> None:
    results = batch([line], "--matrix", "device=h100,b200")
    assert [r["exit_code"] for r in results] == [2, 2]
    assert [r["id"] for r in results] == ["mine", "mine"]
    assert all("decided by --matrix" in r["problems"][0]["message"] for r in results)  # type: ignore[index]


def test_a_line_may_set_what_no_axis_decides() -> None:
    results = batch([{"argv": ["--vllm-version", "0.33"]}], "--matrix", "device=h100,b200")
    assert [(r["exit_code"], r["vllm_version"]) for r in results] == [(0, "0.33.0")] * 2
    devices = [r["platform"]["device"] for r in results]  # type: ignore[index]
    assert "H100" in devices[0]
    assert "B200" in devices[1]


def test_a_refused_line_keeps_its_id() -> None:
    (result,) = batch([{"id": "keep-me", "bogus": 1, "argv": []}], "--device", "h100")
    assert (result["id"], result["exit_code"]) == ("keep-me", 2)


def test_a_matrix_too_large_is_refused_up_front() -> None:
    values = ",".join(["h100"] * 3000)
    started = time.perf_counter()
    done = run(
        "resolve", "--batch", "-", "--matrix", f"device={values}", "--matrix", f"install={values}"
    )
    assert time.perf_counter() - started < 5
    assert done.exit_code == 2
    assert "9,000,000 cells" in done.stderr


def _saved(tmp_path: Path, name: str, change: dict[str, object]) -> str:
    data = run("resolve", "--device", "h100", "--format", "json").json()
    for key, value in change.items():
        target = data
        *path, last = key.split(".")
        for part in path:
            target = target[part]
        target[last] = value
    saved = tmp_path / name
    saved.write_text(json.dumps(data), encoding="utf-8")
    return str(saved)


def test_diff_refuses_a_provider_that_is_not_a_name(tmp_path: Path) -> None:
    a = _saved(tmp_path, "a.json", {})
    b = _saved(tmp_path, "b.json", {"kernel_config.ir_op_priority.rms_norm": [{"x": 1}]})
    done = run("diff", a, b)
    assert done.exit_code == 2
    assert "ir_op_priority.rms_norm" in done.stderr
    assert "not a list of provider names" in done.stderr


def test_diff_of_many_factors_is_summarised(tmp_path: Path) -> None:
    a = _saved(tmp_path, "a.json", {})
    many = {f"k{i}": i for i in range(5000)}
    b = _saved(tmp_path, "b.json", {"hash_factors": many, "hash": "0" * 64})
    data = run("diff", "--format", "json", a, b).json()
    assert len(data["hashed_differences"]) == 1000
    assert data["omitted"]["hashed_differences"] == len(many) + 6 - 1000
    assert len(data["summary"]) < 400
    table = run("diff", a, b)
    assert table.exit_code == 1
    assert "4,006 more not shown" in table.stdout


def test_diff_refuses_a_saved_output_of_too_many_factors(tmp_path: Path) -> None:
    a = _saved(tmp_path, "a.json", {})
    b = _saved(tmp_path, "b.json", {"hash_factors": {f"k{i}": i for i in range(10_001)}})
    started = time.perf_counter()
    done = run("diff", a, b)
    assert time.perf_counter() - started < 3
    assert done.exit_code == 2
    assert "10,001 hash factors" in done.stderr


def test_an_unknown_option_of_half_a_megabyte_is_not_kept_whole() -> None:
    option = "--" + "a" * (512 * 1024)
    (result,) = batch([["--device", "h100", option]])
    done = run("resolve", "--device", "h100", "--format", "json", option)
    for problem in (result["problems"][0], done.json()["problems"][0]):  # type: ignore[index]
        assert len(problem["field"]) < 300
        assert len(problem["message"]) < 2200


def test_a_lone_surrogate_id_is_not_echoed() -> None:
    stdin = '{"id": "a\\ud800b", "argv": ["--device", "h100"]}\n'
    done = run("resolve", "--batch", "-", stdin=stdin)
    assert "\\ud800" not in done.stdout
    assert json.loads(done.stdout)["id"] == "a\ufffdb"


def test_cpythons_digit_limit_hint_does_not_reach_the_user() -> None:
    stdin = '{"id": 1' + "0" * 5000 + ', "argv": []}\n'
    done = run("resolve", "--batch", "-", "--device", "h100", stdin=stdin)
    message = json.loads(done.stdout)["problems"][0]["message"]
    assert "set_int_max_str_digits" not in message
    assert "an integer of more than" in message


@pytest.mark.parametrize("pair", [" VLLM_X=1", "VLLM_A$(id)=1", "1VLLM=1", "VLLM X=1"])
def test_env_keys_must_be_variable_names(pair: str) -> None:
    done = run("resolve", "--device", "h100", "--env", pair)
    assert done.exit_code == 2
    assert "is not a variable name" in done.stderr


def test_env_keys_that_are_names_are_taken() -> None:
    done = run("resolve", "--device", "h100", "--env", "VLLM_USE_DEEP_GEMM=0", "--format", "json")
    assert done.exit_code == 0


@pytest.mark.parametrize("version", ["0.33\n", " 0.33", "0.33\t"])
def test_a_release_with_blanks_is_refused_like_a_capability(version: str) -> None:
    done = run("resolve", "--device", "h100", env={"KERNELCFG_VLLM_VERSION": version})
    assert done.exit_code == 2
    assert "unknown vLLM version" in done.stderr


def test_a_line_of_thousands_of_unknown_options_is_refused_quickly() -> None:
    line = ["--device", "h100", *(["--bog"] * 9990)]
    started = time.perf_counter()
    (result,) = batch([line])
    assert time.perf_counter() - started < 2
    assert result["exit_code"] == 2
    assert "options on one line" in result["problems"][0]["message"]  # type: ignore[index]


def test_the_batch_summary_table_is_bounded() -> None:
    lines: list[object] = [
        {"id": f"{n}-" + "i" * 200_000, "argv": ["--device", "h100"]} for n in range(20)
    ]
    lines += [["--device", "h100"]] * 1200
    started = time.perf_counter()
    done = run(
        "resolve",
        "--batch",
        "-",
        "--format",
        "table",
        stdin="".join(json.dumps(x) + "\n" for x in lines),
    )
    assert time.perf_counter() - started < 10
    assert done.exit_code == 0
    assert "…" in done.stdout
    assert "1,220 lines: 1,220 exit 0 (the first 1,000 shown)" in done.stdout
    assert len(done.stdout) < 2_000_000
