"""``kernelcfg scan`` finds every launch in a repository's files, judges it for the run's
target, and points at its line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.flags.launches import launches_in

from .cli_helpers import run

pytestmark = pytest.mark.cli


def found(tmp_path: Path, name: str, text: str) -> list[tuple[int, list[str]]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return [(f.line, f.argv) for f in launches_in(str(path))]


def scanned(tmp_path: Path, name: str, text: str, *args: str) -> list[dict[str, Any]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    done = run("scan", "--device", "h100", "--format", "json", *args, "--", str(path))
    assert done.exit_code in (0, 1, 2), done.stderr
    rows: list[dict[str, Any]] = done.json()["lines"]
    return rows


# Forms that were not found, or found wrong


def test_dockerfile_exec_form(tmp_path: Path) -> None:
    text = 'FROM python:3.11\nCMD ["vllm", "serve", "m", "--max-model-len", "4096"]\n'
    assert found(tmp_path, "Dockerfile", text) == [
        (2, ["vllm", "serve", "m", "--max-model-len", "4096"])
    ]


def test_dockerfile_entrypoint_and_cmd_join(tmp_path: Path) -> None:
    text = (
        "FROM python:3.11\n"
        'ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n'
        "# the model\n"
        'CMD ["--model", "m", \\\n     "--tensor-parallel-size", "2"]\n'
    )
    assert found(tmp_path, "Dockerfile", text) == [
        (2, ["vllm", "serve", "--model", "m", "--tensor-parallel-size", "2"])
    ]


def test_dockerfile_from_vllms_image_keeps_its_entrypoint(tmp_path: Path) -> None:
    text = 'FROM vllm/vllm-openai:v0.11.0\nENV VLLM_USE_V1=1\nCMD ["--model", "m"]\n'
    (launch,) = launches_in(str(_write(tmp_path, "Dockerfile", text)))
    assert (launch.line, launch.argv, launch.env) == (
        3,
        ["vllm", "serve", "--model", "m"],
        {"VLLM_USE_V1": "1"},
    )


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


K8S = """\
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
      - name: split
        image: vllm/vllm-openai:latest
        command:
          - vllm
          - serve
        args: ["m", "--max-model-len", "4096"]
      - name: flow
        image: vllm/vllm-openai:latest
        command: ["/bin/sh", "-c"]
        args: [
          "vllm serve m2 --trust-remote-code --enable-chunked-prefill"
        ]
      - name: one-string
        image: vllm/vllm-openai:latest
        args: ["vllm serve m3 --bogus"]
"""


def test_kubernetes_command_and_args(tmp_path: Path) -> None:
    assert found(tmp_path, "deploy.yaml", K8S) == [
        (10, ["vllm", "serve", "m", "--max-model-len", "4096"]),
        (17, ["vllm", "serve", "m2", "--trust-remote-code", "--enable-chunked-prefill"]),
        (21, ["vllm", "serve", "m3", "--bogus"]),
    ]


def test_a_bogus_flag_in_a_one_string_args_is_refused(tmp_path: Path) -> None:
    rows = scanned(tmp_path, "deploy.yaml", K8S)
    assert [r["exit_code"] for r in rows] == [0, 0, 2]
    assert "--bogus" in rows[2]["problems"][0]["message"]


def test_compose_folded_command(tmp_path: Path) -> None:
    text = (
        "services:\n  vllm:\n    image: x\n    command: >\n      vllm serve m\n"
        "      --max-model-len 8192\n"
    )
    assert found(tmp_path, "compose.yaml", text) == [
        (5, ["vllm", "serve", "m", "--max-model-len", "8192"])
    ]


def test_an_unclosed_quote_is_reported(tmp_path: Path) -> None:
    rows = scanned(tmp_path, "serve.sh", "vllm serve m --served-model-name 'a\n")
    assert [r["exit_code"] for r in rows] == [2]
    assert "quote" in rows[0]["problems"][0]["message"]


def test_the_old_entry_point(tmp_path: Path) -> None:
    text = "python -m vllm.entrypoints.openai.api_server --model m --port 8000\n"
    assert found(tmp_path, "serve.sh", text) == [
        (1, ["vllm", "serve", "--model", "m", "--port", "8000"])
    ]


# False failures


def test_markdown_prose_and_inline_code(tmp_path: Path) -> None:
    text = (
        "Run `vllm serve` with your model; '5`.' is not an optimisation level.\n"
        "Start it with `vllm serve Qwen/Qwen3-8B --max-model-len 4096`.\n"
        "```bash\nvllm serve m \\\n  --port 8000\n```\n"
        "```console\n$ vllm serve m2\nINFO vllm serve started\n```\n"
    )
    assert found(tmp_path, "README.md", text) == [
        (2, ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "4096"]),
        (4, ["vllm", "serve", "m", "--port", "8000"]),
        (8, ["vllm", "serve", "m2"]),
    ]


def test_shell_variables_redirections_wrappers_and_env_prefixes(tmp_path: Path) -> None:
    text = (
        'VLLM_USE_DEEP_GEMM=0 exec nohup vllm serve "$MODEL" '
        "--tensor-parallel-size ${TP:-2} --port 8000 > log 2>&1 &\n"
        "/bin/sh -c 'vllm serve m2 \"$@\"'\n"
    )
    rows = scanned(tmp_path, "serve.sh", text)
    assert [(r["line"], r["argv"], r["exit_code"]) for r in rows] == [
        (
            1,
            ["vllm", "serve", "$MODEL", "--tensor-parallel-size", "${TP:-2}", "--port", "8000"],
            0,
        ),
        (2, ["vllm", "serve", "m2", "$@"], 0),
    ]
    assert rows[0]["env"] == {"VLLM_USE_DEEP_GEMM": "0"}
    assert rows[0]["unresolved"] == ["$MODEL", "${TP:-2}"]
    assert "judged without" in rows[0]["problems"][0]["message"]


def test_set_fills_in_unresolved_words(tmp_path: Path) -> None:
    text = "vllm serve m --tensor-parallel-size $TP\n"
    (row,) = scanned(tmp_path, "serve.sh", text, "--set", "TP=banana")
    assert row["exit_code"] == 2
    assert "banana" in row["problems"][0]["message"]


# The CI's target wins


@pytest.mark.parametrize("option", ["--device b200", "--capability 10.0", "--env VLLM_X=1"])
def test_a_kernelcfg_option_in_a_scanned_line_is_vllms_unknown_option(
    tmp_path: Path, option: str
) -> None:
    (row,) = scanned(tmp_path, "serve.sh", f"vllm serve m {option}\n")
    assert row["exit_code"] == 2
    message = row["problems"][0]["message"]
    assert "unrecognized arguments" in message or "ambiguous option" in message


def test_the_target_is_the_runs(tmp_path: Path) -> None:
    path = _write(tmp_path, "serve.sh", "vllm serve m --vllm-version 0.33\n")
    done = run("scan", "--device", "h100", "--format", "json", "--", str(path))
    (row,) = done.json()["lines"]
    assert row["exit_code"] == 2


def test_ci_requires_a_target(tmp_path: Path) -> None:
    path = _write(tmp_path, "serve.sh", "vllm serve m\n")
    done = run("scan", str(path), env={"CI": "true", "KERNELCFG_DEVICE": ""})
    assert done.exit_code == 2
    assert "needs a target" in done.stderr


# Every file is scanned, whatever its name


def test_files_after_dashes_and_files_from(tmp_path: Path) -> None:
    odd = _write(tmp_path, "--env", "vllm serve m\n")
    other = _write(tmp_path, "b.sh", "vllm serve m2\n")
    done = run("scan", "--device", "h100", "--format", "json", "--", str(odd), str(other))
    assert [r["file"] for r in done.json()["lines"]] == [str(odd), str(other)]
    names = _write(tmp_path, "names", f"{odd}\0{other}\0")
    done = run("scan", "--device", "h100", "--format", "json", "--files-from", str(names))
    assert [r["file"] for r in done.json()["lines"]] == [str(odd), str(other)]


def test_a_name_that_looks_like_an_option_is_refused_before_dashes() -> None:
    done = run("scan", "--device", "h100", "-x")
    assert done.exit_code == 2
    assert "goes after --" in done.stderr


def test_one_bad_file_does_not_end_the_scan(tmp_path: Path) -> None:
    deep = _write(tmp_path, "deep.yaml", "command: [vllm, serve, " + "[" * 600 + "]" * 601 + "\n")
    good = _write(tmp_path, "serve.sh", "vllm serve m\n")
    done = run("scan", "--device", "h100", "--format", "json", "--", str(deep), str(good))
    rows = done.json()["lines"]
    assert [(r["file"], r["exit_code"]) for r in rows] == [(str(deep), 2), (str(good), 0)]


# Lines as editors count them


@pytest.mark.parametrize("breaker", ["\x0c", "\x85", "\u2028", "\r"])
def test_lines_are_counted_at_newlines_only(tmp_path: Path, breaker: str) -> None:
    text = f"# a{breaker}b{breaker}c\necho hi\n\nvllm serve m\n"
    assert found(tmp_path, "serve.sh", text) == [(4, ["vllm", "serve", "m"])]
    if breaker != "\x0c":  # YAML allows no form feed
        yaml_text = f'x: "a{breaker}b{breaker}c"\ny: 1\ncommand: [vllm, serve, m]\n'
        assert found(tmp_path, "k.yaml", yaml_text) == [(3, ["vllm", "serve", "m"])]


# Bounded


@pytest.mark.slow
def test_hostile_files_are_read_in_linear_time(tmp_path: Path) -> None:
    cases = {
        "word.sh": "vllm serve m --x " + "a" * 15_000_000 + "\n",
        "long.sh": "vllm serve m \\\n" + "  --max-num-seqs 1 \\\n" * 100_000 + "\n",
        "docs.md": "```bash\nvllm serve m --port 1\n```\n" * 33_000,
    }
    for name, text in cases.items():
        path = _write(tmp_path, name, text)
        started = time.perf_counter()
        done = run("scan", "--device", "h100", "--format", "json", "--", str(path))
        assert time.perf_counter() - started < 6, name
        assert len(done.stdout) < 5_000_000, name


def test_a_file_reports_at_most_a_thousand_launches(tmp_path: Path) -> None:
    path = _write(tmp_path, "many.sh", "vllm serve m\n" * 1200)
    done = run("scan", "--device", "h100", "--format", "json", "--", str(path))
    rows = done.json()["lines"]
    assert len(rows) == 1001
    assert "more than 1,000 launches" in rows[-1]["problems"][0]["message"]


def test_json_rows_carry_where_and_what(tmp_path: Path) -> None:
    (row,) = scanned(tmp_path, "serve.sh", "  vllm serve m --port 1\n")
    assert {k: row[k] for k in ("line", "column", "argv", "env", "unresolved")} == {
        "line": 1,
        "column": 3,
        "argv": ["vllm", "serve", "m", "--port", "1"],
        "env": {},
        "unresolved": [],
    }
    json.dumps(row)


def test_a_batch_line_pasted_from_a_file_keeps_the_runs_target() -> None:
    line = json.dumps(["--", "vllm", "serve", "m", "--device", "b200"]) + "\n"
    done = run("resolve", "--batch", "-", "--device", "h100", stdin=line)
    result = json.loads(done.stdout)
    assert result["exit_code"] == 2
    assert result["platform"] is None or "B200" not in result["platform"]["device"]
