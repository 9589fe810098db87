"""``scan`` on hostile or careless input: bounded time, no credential in any output, no
file read from outside the scanned repository, no silent "no lines"."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from kernelcfg.flags.launches import launches_in

from .cli_helpers import run

pytestmark = pytest.mark.cli

FORMATS = ("table", "json", "github", "junit", "sarif")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# 1. Many launches on one logical line are read in one pass


@pytest.mark.parametrize("joint", ["; ", " && \\\n"])
def test_many_launches_on_one_logical_line_take_linear_time(tmp_path: Path, joint: str) -> None:
    launch = "vllm serve m --max-model-len 1 --served-model-name " + "x" * 200
    path = _write(tmp_path, "serve.sh", (launch + joint) * 1000 + "\n")
    assert path.stat().st_size > 250_000
    started = time.perf_counter()
    found = list(launches_in(str(path)))
    elapsed = time.perf_counter() - started
    assert len(found) == 1000
    assert elapsed < 3, elapsed  # the quadratic reader took 20 s here


def test_the_launches_of_one_line_keep_their_columns(tmp_path: Path) -> None:
    path = _write(tmp_path, "serve.sh", "vllm serve a; vllm serve b && vllm serve c\n")
    assert [(f.line, f.column, f.argv[2]) for f in launches_in(str(path))] == [
        (1, 1, "a"),
        (1, 15, "b"),
        (1, 31, "c"),
    ]


# 2. --files-from names each file once


def test_files_from_reads_a_file_named_many_times_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, "serve.sh", "vllm serve m\n")
    names = "".join(("./" * (i % 5)) + "serve.sh\n" for i in range(60_000))
    listing = _write(tmp_path, "names.txt", names)
    assert listing.stat().st_size > 300_000
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    done = run("scan", "--device", "h100", "--format", "json", "--files-from", str(listing))
    assert time.perf_counter() - started < 5  # 14 s when each name was read again
    assert len(done.json()["lines"]) == 1


# 3. A large YAML file is no alias bomb


def test_a_megabyte_compose_file_without_aliases_is_read(tmp_path: Path) -> None:
    services = "".join(
        f"  s{i}:\n    image: nginx\n    environment:\n      A: '1'\n    ports: ['80:80']\n"
        for i in range(14_000)
    )
    text = (
        "services:\n" + services + "  vllm:\n    image: vllm/vllm-openai:v0.34.0\n"
        "    command: --model m --moe-backend deep_select\n"
    )
    path = _write(tmp_path, "docker-compose.yml", text)
    assert path.stat().st_size > 1_000_000
    done = run("scan", "--device", "h100", "--format", "json", "--", str(path))
    (row,) = done.json()["lines"]
    assert row["exit_code"] == 2
    assert "deep_select" in row["problems"][0]["message"]


def test_an_alias_bomb_is_still_refused(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 7):
        previous = chr(ord("a") + level - 1)
        name = chr(ord("a") + level)
        lines.append(f"{name}: &{name} [{', '.join(['*' + previous] * 10)}]")
    lines.append("command: [vllm, serve, m]")
    path = _write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    done = run("scan", "--device", "h100", "--format", "json", "--", str(path))
    (row,) = done.json()["lines"]
    assert row["exit_code"] == 2
    assert "aliases expand" in row["problems"][0]["message"]


# 4. A Python file the interpreter cannot parse is never "no lines"

NEW_SYNTAX = (
    "import subprocess\n"
    "type Argv = list[str]\n"
    "def first[T](items: list[T]) -> T:\n"
    "    return items[0]\n"
    'subprocess.run(["vllm", "serve", "m", "--moe-backend", "nope"])\n'
)


def test_a_file_in_newer_syntax_still_has_its_bad_launch_found(tmp_path: Path) -> None:
    path = _write(tmp_path, "serve.py", NEW_SYNTAX)
    done = run("scan", "--device", "h100", "--format", "json", "--", str(path))
    rows = done.json()["lines"]
    assert done.exit_code == 2
    launch = next(r for r in rows if r["argv"])
    assert (launch["line"], launch["exit_code"]) == (5, 2)
    if sys.version_info < (3, 12):  # the file parses whole on 3.12+
        notices = [r for r in rows if not r["argv"]]
        assert notices
        assert all(r["problems"][0]["code"] == "unparsed-python" for r in notices)
        assert "serve.py" in notices[0]["problems"][0]["message"]
        assert notices[0]["line"] == 2


def test_a_file_python_cannot_read_at_all_is_a_warning_naming_it(tmp_path: Path) -> None:
    text = 'import subprocess\nsubprocess.run(["vllm", "serve", "m", (((\n'
    path = _write(tmp_path, "broken.py", text)
    done = run("scan", "--device", "h100", "--format", "json", "--", str(path))
    rows = done.json()["lines"]
    assert rows, "a file that cannot be parsed is reported, never 'no lines'"
    problem = rows[-1]["problems"][0]
    assert (problem["code"], problem["severity"]) == ("unparsed-python", "warning")
    assert "broken.py" in problem["message"]
    assert rows[-1]["line"] is not None
    strict = run("scan", "--device", "h100", "--fail-on", "warning", "--", str(path))
    assert strict.exit_code == 1


def test_the_table_says_the_file_was_not_parsed(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.py", 'x = ["vllm", "serve", (\n')
    done = run("scan", "--device", "h100", "--", str(path))
    assert "cannot parse" in done.stdout
    assert "no vllm serve lines found" not in done.stdout


# 5. A target option's value that is no KEY=VALUE


def test_env_given_a_file_name_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "bad.sh", "vllm serve m\n")
    monkeypatch.chdir(tmp_path)
    done = run("scan", "--device", "h100", "--env", "bad.sh")
    assert done.exit_code == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--env: expected KEY=VALUE, got 'bad.sh'" in line
    assert "--env-file" in line  # the file exists: the hint says where a file goes
    assert path.exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--device", "h10"], "did you mean 'h100'"),
        (["--device", "h100", "--env", "=x"], "--env"),
        (["--device", "h100", "--image-entrypoint", "img=vlm"], "did you mean 'vllm'"),
        (["--device", "h100", "--image-entrypoint", "img"], "IMAGE=vllm"),
    ],
)
def test_bad_run_options_exit_2_before_any_file_is_read(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    done = run("scan", *args, str(tmp_path))
    assert done.exit_code == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert needle in done.stderr


# 6. Credentials never reach an output

SECRETS = ("sk-live-0123456789", "hf_abcdefghijklmn", "tok-999888777")


@pytest.mark.parametrize("fmt", FORMATS)
def test_credentials_are_masked_in_every_scan_format(tmp_path: Path, fmt: str) -> None:
    text = (
        f"HF_TOKEN={SECRETS[1]} vllm serve m --api-key {SECRETS[0]} --moe-backend nope\n"
        f"docker run -e X=1 vllm/vllm-openai --model m --api_key={SECRETS[2]}\n"
    )
    path = _write(tmp_path, "serve.sh", text)
    done = run(
        "scan", "--device", "h100", "--env", f"VLLM_API_KEY={SECRETS[0]}", "--format", fmt,
        "--", str(path),
    )  # fmt: skip
    assert done.exit_code == 2
    for secret in SECRETS:
        assert secret not in done.stdout + done.stderr, (fmt, secret)
    assert "***" in done.stdout or fmt in ("table", "github", "sarif")


@pytest.mark.parametrize("fmt", ["junit", "json", "github", "sarif"])
def test_resolve_reports_mask_credentials_given_on_the_command_line(fmt: str) -> None:
    done = run(
        "resolve", "--device", "h100", "--env", f"VLLM_API_KEY={SECRETS[0]}",
        "--env", f"HF_TOKEN={SECRETS[1]}", "--api-key", SECRETS[2], "--format", fmt,
    )  # fmt: skip
    for secret in SECRETS:
        assert secret not in done.stdout + done.stderr, (fmt, secret)


def test_one_masking_rule_serves_every_command() -> None:
    from kernelcfg.base import secrets
    from kernelcfg.checks import lint_env

    assert lint_env.masked is secrets.masked
    assert secrets.masked_words(["--max-num-batched-tokens", "8", "--tokenizer", "t"]) == [
        "--max-num-batched-tokens",
        "8",
        "--tokenizer",
        "t",
    ]
    assert secrets.masked_words(["--env=HF_TOKEN=x", "--hf-token", "y", "A_KEY="]) == [
        "--env=HF_TOKEN=***",
        "--hf-token",
        "***",
        "A_KEY=",
    ]


# 7. A config file named in a scanned line is read only inside the repository


def test_a_config_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".config" / "gh" / "hosts.yml"
    _write(secret.parent, "hosts.yml", "github.com:\n    oauth_token: gho_TOPSECRET\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    path = _write(repo, "deploy/serve.sh", f"vllm serve m --config {secret}\n")
    for fmt in FORMATS:
        done = run("scan", "--device", "h100", "--format", fmt, "--", str(path))
        assert "gho_TOPSECRET" not in done.stdout + done.stderr, fmt
        assert done.exit_code == 0, fmt
    rows = run("scan", "--device", "h100", "--format", "json", "--", str(path)).json()["lines"]
    codes = {p["code"]: p["message"] for p in rows[0]["problems"]}
    assert "outside the repository" in codes["config-not-read"]
    assert rows[0]["argv"][-2:] == ["--config", str(secret)]  # the launch as written


def test_a_symlink_out_of_the_repository_is_not_followed(tmp_path: Path) -> None:
    outside = _write(tmp_path, "outside/vllm.yaml", "moe-backend: nope\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "link.yaml").symlink_to(outside)
    path = _write(repo, "serve.sh", "vllm serve m --config link.yaml\n")
    (row,) = run("scan", "--device", "h100", "--format", "json", "--", str(path)).json()["lines"]
    assert row["exit_code"] == 0
    assert "config-not-read" in {p["code"] for p in row["problems"]}


def test_a_config_inside_the_repository_is_read_and_its_values_not_echoed(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    _write(repo, "configs/vllm.yaml", "not-an-option: hunter2-secret\nmoe-backend: triton\n")
    path = _write(repo, "deploy/serve.sh", "vllm serve m --config configs/vllm.yaml\n")
    for fmt in FORMATS:
        done = run("scan", "--device", "h100", "--format", fmt, "--", str(path))
        assert done.exit_code == 2, fmt  # read: its unknown option is vLLM's refusal
        assert "hunter2-secret" not in done.stdout + done.stderr, fmt
    (row,) = run("scan", "--device", "h100", "--format", "json", "--", str(path)).json()["lines"]
    assert "--not-an-option" in row["problems"][0]["message"]


def test_resolve_still_reads_a_config_the_user_names(tmp_path: Path) -> None:
    config = _write(tmp_path, "elsewhere/vllm.yaml", "moe-backend: nope\n")
    done = run("resolve", "--device", "h100", "--config", str(config), "m")
    assert done.exit_code == 2
    assert "moe-backend" in done.stderr


def test_the_repository_root_is_the_git_root_else_the_folder(tmp_path: Path) -> None:
    from kernelcfg.flags.launches.repository import root_of

    (tmp_path / "r" / ".git").mkdir(parents=True)
    nested = _write(tmp_path, "r/a/b/serve.sh", "")
    loose = _write(tmp_path, "loose/serve.sh", "")
    assert root_of(str(nested)) == str((tmp_path / "r").resolve())
    assert root_of(str(loose)) == str((tmp_path / "loose").resolve())
    json.dumps(root_of(str(loose)))
