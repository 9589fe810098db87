"""lint-env: removed variables and their flags, typos, what resolution variables change."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from kernelcfg.checks.lint_env import _history, lint
from kernelcfg.vllm import releases

from .cli_helpers import run
from .examples import examples


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


REMOVED = sorted((n, s) for n, s in _history()["removed"].items() if n.startswith("VLLM_"))


@pytest.mark.parametrize("version", releases.known_versions())
@pytest.mark.parametrize(("name", "spec"), REMOVED, ids=[n for n, _ in REMOVED])
def test_every_removed_variable_says_what_replaced_it(
    version: str, name: str, spec: dict[str, Any]
) -> None:
    release = releases.load(version)
    if _key(version) < _key(spec["removed_in"]):
        return  # not removed yet in that release
    assert name not in release.envs
    by_value = spec.get("by_value")
    value = next(iter(by_value)) if isinstance(by_value, dict) else "1"
    (finding,) = lint({name: value}, release)
    if name in release.refused_envs:
        assert finding.severity in ("error", "warning")  # refused at start-up
        return
    assert finding.code == "removed-variable"
    assert finding.severity == "warning"
    assert f"removed in vLLM {spec['removed_in']}" in finding.message
    if spec.get("flag") and (by_value or spec.get("same_value") or spec.get("on")):
        assert spec["flag"] in finding.use_instead
    elif spec.get("variable"):
        assert f"use {spec['variable']} instead" in finding.message
    elif not spec.get("flag"):
        assert "nothing replaces it" in finding.message


def test_value_decides_the_replacement() -> None:
    release = releases.load(None)
    env = {"VLLM_USE_FLASHINFER_MOE_FP8": "1", "VLLM_FLASHINFER_MOE_BACKEND": "throughput"}
    fp8 = next(f for f in lint(env, release) if f.variable == "VLLM_USE_FLASHINFER_MOE_FP8")
    assert fp8.use_instead == ("--moe-backend", "flashinfer_cutlass")
    (off,) = lint({"VLLM_USE_FLASHINFER_MOE_FP4": "0"}, release)
    assert off.use_instead == ()
    assert "no flag says that" in off.message


def test_typo_and_resolution_variables() -> None:
    release = releases.load("0.33.0")
    found = {
        f.variable: f
        for f in lint(
            {
                "VLLM_USE_OINK_OP": "1",
                "VLLM_USE_OINK_OPS": "yes",
                "VLLM_ROCM_USE_AITER_RMSNORM": "0",
                "TORCH_COMPILE_DISABLE": "1",
                "PATH": "/bin",
                "VLLM_USE_BREAKABLE_CUDAGRAPH": "0",
            },
            release,
        )
    }
    assert "did you mean 'VLLM_USE_OINK_OPS'" in found["VLLM_USE_OINK_OP"].message
    assert found["VLLM_USE_OINK_OPS"].message.startswith("VLLM_USE_OINK_OPS=yes: reads as off")
    assert "reads as off" in found["VLLM_ROCM_USE_AITER_RMSNORM"].message
    assert found["TORCH_COMPILE_DISABLE"].code == "changes-resolution"
    assert found["VLLM_USE_BREAKABLE_CUDAGRAPH"].code == "changes-resolution"
    assert "PATH" not in found


def test_cli_env_file_and_formats(tmp_path: Path) -> None:
    env_file = tmp_path / "vllm.env"
    env_file.write_text(
        "# deployment\nVLLM_ALL2ALL_BACKEND=deepep_low_latency\n\nVLLM_USE_DEEP_GEMM=1\n"
    )
    result = run("lint-env", "--env-file", str(env_file), "--format", "json")
    assert result.exit_code == 1
    data = result.json()
    codes = {f["field"]: f["code"] for f in data["findings"]}
    assert codes == {
        "VLLM_ALL2ALL_BACKEND": "removed-variable",
        "VLLM_USE_DEEP_GEMM": "steers-kernels",
    }
    github = run("lint-env", "--env-file", str(env_file), "--format", "github").stdout
    assert github.startswith("::warning title=kernelcfg VLLM_ALL2ALL_BACKEND%3A removed-variable::")
    clean = tmp_path / "clean.env"
    clean.write_text("VLLM_USE_DEEP_GEMM=1\n")
    assert run("lint-env", "--env-file", str(clean)).exit_code == 0
    bad = tmp_path / "bad.env"
    bad.write_text("NOT A PAIR\n")
    broken = run("lint-env", "--env-file", str(bad))
    assert broken.exit_code == 2
    assert "expected KEY=VALUE" in broken.stderr
    json.loads(run("lint-env", "--env-file", str(env_file), "--format", "sarif").stdout)


def test_env_files_read_as_shells_read_them(tmp_path: Path) -> None:
    path = tmp_path / "deploy.env"
    path.write_text(
        '# comment\nexport VLLM_ROCM_USE_AITR=1\nVLLM_ROCM_USE_AITER="1"\n'
        "VLLM_X='${HOME}/x'  # trailing comment\n"
    )
    data = run("lint-env", "--env-file", str(path), "--vllm-version", "0.33", "--format", "json")
    found = {f["field"]: f for f in data.json()["findings"]}
    assert "reads as on" in found["VLLM_ROCM_USE_AITER"]["message"]
    assert found["VLLM_ROCM_USE_AITR"]["code"] == "unknown-variable"
    assert "did you mean 'VLLM_ROCM_USE_AITER'" in found["VLLM_ROCM_USE_AITR"]["message"]
    assert found["VLLM_X"]["value"] == "${HOME}/x"
    assert "did you mean" not in found["VLLM_X"]["message"]


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("VLLM_USE_V1", "1", "nothing replaces it"),
        ("VLLM_ATTENTION_BACKEND", "FLASH_ATTN_VLLM_V1", "--attention-backend FLASH_ATTN"),
        ("VLLM_ATTENTION_BACKEND", "XFORMERS", "has no equivalent of 'XFORMERS'"),
        ("VLLM_USE_TRITON_FLASH_ATTN", "0", "removed in vLLM 0.11.1"),
        ("VLLM_SKIP_DEEP_GEMM_WARMUP", "1", "use VLLM_DEEP_GEMM_WARMUP instead"),
    ],
)
def test_retired_variables_users_still_carry(name: str, value: str, needle: str) -> None:
    (finding,) = lint({name: value}, releases.load(None))
    assert finding.code == "removed-variable"
    assert needle in finding.message
    assert "VLLM_XLA_USE_SPMD" not in finding.message


def test_plain_env_files_read_as_dotenv_reads_them() -> None:
    import io

    from dotenv import dotenv_values
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kernelcfg.checks.lint_env import _plain_env

    keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
    values = st.from_regex(r"[A-Za-z0-9_.,:/=+-]{0,12}", fullmatch=True)

    @settings(max_examples=examples(200), deadline=None)
    @given(st.lists(st.tuples(keys, values), max_size=8))
    def check(pairs: list[tuple[str, str]]) -> None:
        text = "# a comment\n" + "".join(f"{k}={v}\n" for k, v in pairs)
        plain = _plain_env(text)
        assert plain is not None
        assert plain == dict(dotenv_values(stream=io.StringIO(text), interpolate=False))

    check()
    assert _plain_env("export A=1\n") is None
    assert _plain_env('A="1"\n') is None


def test_lines_end_where_dotenv_ends_them(tmp_path: Path) -> None:
    import io

    from dotenv import dotenv_values

    from kernelcfg.checks.lint_env import read_env_file

    text = (
        "VLLM_USE_DEEP_GEMM=1\x85VLLM_BOGUS_A=2\n"
        "VLLM_ROCM_USE_AITER=1\u2028VLLM_BOGUS_B=1\x1eVLLM_BOGUS_C=1\n"
        "VLLM_CR=1\rVLLM_CRLF=2\r\nVLLM_LAST=3"
    )
    path = tmp_path / "breaks.env"
    path.write_bytes(text.encode())
    read = read_env_file(str(path))
    assert read == dict(dotenv_values(stream=io.StringIO(text), interpolate=False))
    assert read["VLLM_USE_DEEP_GEMM"] == "1\x85VLLM_BOGUS_A=2"
    assert not any(name.startswith("VLLM_BOGUS") for name in read)
    assert [read[k] for k in ("VLLM_CR", "VLLM_CRLF", "VLLM_LAST")] == ["1", "2", "3"]


def test_plain_lines_split_as_dotenv_splits_them() -> None:
    import io

    from dotenv import dotenv_values
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kernelcfg.checks.lint_env import _plain_env

    keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
    values = st.text(st.sampled_from("ab1=\x85\u2028\x1e\x1c\x0b\x0c\t "), max_size=6)
    ends = st.sampled_from(["\n", "\r\n", "\r"])

    @settings(max_examples=examples(200), deadline=None)
    @given(st.lists(st.tuples(keys, values, ends), max_size=6))
    def check(lines: list[tuple[str, str, str]]) -> None:
        text = "".join(f"{k}={v}{end}" for k, v, end in lines)
        plain = _plain_env(text)
        if plain is not None:
            assert plain == dict(dotenv_values(stream=io.StringIO(text), interpolate=False))

    check()


def test_every_format_keeps_the_first_findings_and_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelcfg.cli import lint_env as cli_lint_env

    monkeypatch.setattr(cli_lint_env, "TABLE_ROWS", 2)
    path = tmp_path / "many.env"
    # Sorted by name: an info first, then warnings, so only the omitted ones fail the run.
    path.write_text("TORCH_COMPILE_DISABLE=0\nVLLM_NOPE_A=1\nVLLM_NOPE_B=1\nVLLM_NOPE_C=1\n")
    args = ("lint-env", "--env-file", str(path), "--format")
    data = run(*args, "json")
    assert data.exit_code == 1
    assert [f["field"] for f in data.json()["findings"]] == ["TORCH_COMPILE_DISABLE", "VLLM_NOPE_A"]
    assert data.json()["omitted"] == 2
    github = run(*args, "github").stdout.splitlines()
    assert len(github) == 3
    assert github[-1].startswith("::warning title=kernelcfg lint-env%3A omitted-findings::2 more")
    junit = ET.fromstring(run(*args, "junit").stdout)
    assert len(junit.findall(".//testcase")) == 3
    assert junit.find("testsuite").get("failures") == "2"  # type: ignore[union-attr]
    sarif = json.loads(run(*args, "sarif").stdout)["runs"][0]["results"]
    assert [r["ruleId"] for r in sarif][-1] == "omitted-findings"
    note = sarif[-1]["message"]["text"]
    assert note.startswith("2 more findings not shown, after the first 2 (warning: 2)")
    table = run(*args, "table")
    assert table.exit_code == 1
    assert "the first 2 of 4 findings" in table.stdout


def test_only_the_first_findings_are_made() -> None:
    from kernelcfg.checks.lint_env import summary

    environ = {f"VLLM_NOPE_{i:03}": "1" for i in range(300)}
    found = summary(environ, releases.load(None), 10)
    assert [f.variable for f in found.findings] == [f"VLLM_NOPE_{i:03}" for i in range(10)]
    assert found.omitted == {"warning": 290}
    assert found.total == 300


SECRET = "sk-live-0123456789abcdef"


@pytest.mark.parametrize("fmt", ["table", "json", "github", "junit", "sarif"])
def test_credentials_are_masked_in_every_format(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "deploy.env"
    path.write_text(
        f"VLLM_API_KEYS={SECRET}\nVLLM_HF_TOKEN={SECRET}x\nvllm_db_password={SECRET}y\n"
        f"VLLM_AUTH_HEADER='Bearer {SECRET}'\nVLLM_NOPE=plain-value\n"
    )
    shown = run("lint-env", "--env-file", str(path), "--format", fmt)
    assert shown.exit_code == 1
    assert SECRET not in shown.stdout
    assert "VLLM_API_KEYS" in shown.stdout
    if fmt in ("table", "json", "junit"):  # the formats that show values
        assert "***" in shown.stdout
        assert "plain-value" in shown.stdout
    opted = run("lint-env", "--env-file", str(path), "--format", fmt, "--show-values")
    if fmt in ("table", "json", "junit"):
        assert SECRET in opted.stdout


def test_masking_rule() -> None:
    from kernelcfg.checks.lint_env import masked

    for name in (
        "VLLM_API_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "S3_SECRET_ACCESS_KEY",
        "my_passwd",
        "DB_PASSWORD",
        "X_CREDENTIALS",
        "VLLM_AUTH",
    ):
        assert masked(name, "hunter2") == "***", name
        assert masked(name, "") == ""
    assert masked("VLLM_USE_DEEP_GEMM", "1") == "1"


def test_no_message_that_quotes_a_value_belongs_to_a_credential() -> None:
    """Only unknown variables' findings may be credentials', and their messages never
    quote the value; every other kind (removed, refused, resolution, steering) quotes it,
    so none of their variables may look like a credential (masking relies on it)."""
    from kernelcfg.checks.lint_env import masked

    history = _history()
    names = {*history["removed"], *history["resolution"], *history["steering"]}
    for version in releases.known_versions():
        release = releases.load(version)
        names |= set(release.refused_envs) | set(release.rules.get("env_validation", {}))
    assert [n for n in names if masked(n, "v") != "v"] == []


def test_user_text_stays_on_one_line_in_every_format(tmp_path: Path) -> None:
    path = tmp_path / "hostile.env"
    path.write_text(
        'VLLM_USE_DEEP_GEMM="1\\n::error::forged"\n'
        'VLLM_NOPE="x\\r::warning::forged"\n'
        'VLLM_ROCM_USE_AITER="1\\n::add-mask::y\\x1b[2J"\n'
    )
    for fmt in ("table", "json", "github", "junit", "sarif"):
        out = run("lint-env", "--env-file", str(path), "--format", fmt).stdout
        for line in out.splitlines():
            if fmt == "github":
                assert re.match(r"::(error|warning|notice) title=kernelcfg ", line), line
            else:
                assert not line.lstrip().startswith("::"), (fmt, line)
        assert "\x1b" not in out, fmt


def test_resolve_warns_as_lint_env_words_it_once_per_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelcfg.checks import lint_env as lint_mod

    calls: list[str] = []
    real = lint_mod.ignored

    def counted(environ: Any, release: Any) -> Any:
        calls.append(release.version)
        return real(environ, release)

    monkeypatch.setattr(lint_mod, "ignored", counted)
    path = tmp_path / "lines.jsonl"
    path.write_text(
        "".join(json.dumps(["--max-model-len", str(1000 + i)]) + "\n" for i in range(20))
    )
    env = ("--env", "VLLM_USE_OINK_OP=once-per-environment")
    out = run("resolve", "--batch", str(path), "--device", "h100", "--vllm-version", "0.33", *env)
    (finding,) = lint({"VLLM_USE_OINK_OP": "once-per-environment"}, releases.load("0.33"))
    warning = {"severity": "warning", "code": finding.code, "field": finding.variable}
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(lines) == 20
    assert all(line["problems"] == [{**warning, "message": finding.message}] for line in lines)
    assert out.exit_code == 0
    assert calls == ["0.33.0"]
