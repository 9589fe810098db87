"""A fuzz suite over every input kernelcfg reads: argv, batch files, YAML, JSON, env
files and a model's config.json. For every input: exit code 0, 1 or 2, no exception,
JSON and XML output that parse strictly, one batch output line per input line, in order.

Runs in-process (the subprocess side is in test_robustness.py). Seeded under CI
(``CI`` set: the ``ci`` hypothesis profile, derandomised).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kernelcfg.cli import app

from .examples import examples

pytestmark = pytest.mark.robustness

FUZZ = settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))


def invoke(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process; any exception but a clean exit fails the test."""
    result = CliRunner().invoke(
        app, list(args), input=stdin, env={"KERNELCFG_DEVICE": "h100"}, terminal_width=100
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError("kernelcfg raised") from result.exception
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.stderr[-500:])
    return result.exit_code, result.stdout, result.stderr


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


nasty_text = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters(max_codepoint=0x1F), max_size=10),
    st.sampled_from(
        [
            "/" + "x" * 5000,
            "[" * 2000,
            '{"a":' * 200 + "1" + "}" * 200,
            "NaN",
            "1e400",
            "9" * 5000,
            ".5k",
            "1Ki",
            "$(touch pwned)",
            "`id`",
            "x\n::error::forged",
            "\udcff",
            "../../etc/passwd",
            "-O",
            "--",
            "=",
            "",
        ]
    ),
)
option = st.sampled_from(
    [
        "--moe-backend",
        "--linear-backend",
        "--kernel-config",
        "--kernel-config.moe_backend",
        "--ir-op-priority.rms_norm",
        "-cc.mode",
        "-cc",
        "--compilation-config",
        "-O",
        "-O3",
        "-tp",
        "--all2all-backend",
        "--hf-config-path",
        "--model",
        "--config",
        "--device",
        "--capability",
        "--gfx-arch",
        "--vllm-version",
        "--env",
        "--quant-scheme",
        "--enforce-eager",
        "--no-such-flag",
        "--",
        "vllm",
        "serve",
    ]
)
argv_lists = st.lists(st.one_of(option, nasty_text), max_size=10)


@FUZZ
@given(argv_lists)
def test_argv(argv: list[str]) -> None:
    code, out, _ = invoke("resolve", "--format", "json", *argv)
    data = strict_json(out)
    assert data["valid"] is (code == 0)


@FUZZ
@given(argv_lists)
def test_argv_table_and_env(argv: list[str]) -> None:
    invoke("resolve", "--format", "table", *argv)
    invoke("resolve", "--format", "env", *argv)


batch_line = st.one_of(
    argv_lists.map(lambda a: json.dumps(a).encode()),
    st.builds(
        lambda i, a: json.dumps({"id": i, "argv": a}).encode(),
        st.one_of(st.integers(), st.text(max_size=8), st.none()),
        argv_lists,
    ),
    st.binary(max_size=40),
    st.sampled_from([b'{"id": NaN, "argv": []}', b"[" * 3000, b"\xef\xbb\xbf[]", b"{}"]),
)


@FUZZ
@given(st.lists(batch_line, min_size=1, max_size=8))
def test_batch(lines: list[bytes]) -> None:
    body = b"\n".join(line.replace(b"\n", b" ").replace(b"\r", b" ") for line in lines) + b"\n"
    _, out, _ = invoke("resolve", "--batch", "-", "--format", "json", stdin=body)
    raw_lines = body.removeprefix(b"\xef\xbb\xbf").split(b"\n")[:-1]  # a BOM is not content
    expected = [n for n, raw in enumerate(raw_lines, 1) if raw.strip(b" \t\r\n")]  # JSON blanks
    got = [strict_json(line) for line in out.splitlines()]
    assert len(got) == len(expected)
    for line, number in zip(got, expected, strict=True):
        assert "exit_code" in line
        if line["exit_code"] == 2 and line["kernel_config"] is None:
            continue
        assert line["id"] is not None or number


@FUZZ
@given(st.lists(batch_line, min_size=1, max_size=5))
def test_batch_junit(lines: list[bytes]) -> None:
    body = b"\n".join(line.replace(b"\n", b" ").replace(b"\r", b" ") for line in lines) + b"\n"
    _, out, _ = invoke("resolve", "--batch", "-", "--format", "junit", stdin=body)
    ET.fromstring(out)


yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), nasty_text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
yaml_text = st.one_of(
    st.dictionaries(st.sampled_from(["moe-backend", "kernel-config", "tp", "x"]), yaml_values).map(
        lambda d: json.dumps(d).encode()
    ),
    st.binary(max_size=60),
    st.sampled_from(
        [
            b"a: &a [*a]",
            b"k: !!binary aGk=",
            b"k: !!python/object:os.system {}",
            b"kernel-config: {d: 2024-01-01}",
            b"- 1\n- 2",
            b"---\na: 1\n---\nb: 2",
        ]
    ),
)


@FUZZ
@given(yaml_text)
def test_yaml_config(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.yaml"
        path.write_bytes(content)
        _, out, _ = invoke("resolve", "--format", "json", "--config", str(path))
    strict_json(out)


@FUZZ
@given(st.one_of(st.binary(max_size=80), yaml_values.map(lambda v: json.dumps(v).encode())))
def test_model_config_json(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_bytes(content)
        _, out, _ = invoke("resolve", "--format", "json", "--hf-config-path", tmp)
        strict_json(out)
        _, out, _ = invoke("resolve", "--format", "json", "--", "vllm", "serve", tmp)
    strict_json(out)


env_text = st.lists(
    st.one_of(
        st.builds(
            lambda k, v: f"{k}={v}", st.sampled_from(["VLLM_ROCM_USE_AITER", "VLLM_X"]), nasty_text
        ),
        nasty_text,
        st.sampled_from(["export VLLM_A=1", "# c", "VLLM_B='x'", "=1", "VLLM_C"]),
    ),
    max_size=6,
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogateescape"))


@FUZZ
@given(st.one_of(env_text, st.binary(max_size=60)))
def test_env_file(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.env"
        path.write_bytes(content)
        _, out, _ = invoke("lint-env", "--env-file", str(path), "--format", "json")
        if out:
            strict_json(out)
        _, out, _ = invoke("lint-env", "--env-file", str(path), "--format", "junit")
        if out:
            ET.fromstring(out)
