"""Hostile and careless input: nothing lost, nothing executed, no traceback.

Every case runs the real ``kernelcfg`` in a subprocess (so a traceback or a crash
cannot hide behind the test runner) and asserts the exit code is one of 0, 1, 2,
stderr holds no traceback, stdout is well-formed, and a batch gives one line per
input line, in order.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

pytestmark = pytest.mark.robustness

KERNELCFG = [sys.executable, "-m", "kernelcfg"]


def kc(
    *args: str,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[bytes]:
    """Run kernelcfg; assert it neither crashed nor printed a traceback."""
    full_env = {**os.environ, "KERNELCFG_DEVICE": "h100", **(env or {})}
    done = subprocess.run(
        [*KERNELCFG, *args],
        input=stdin,
        capture_output=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")[-2000:]
    assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-2000:])
    return done


def json_lines(out: bytes) -> list[dict[str, Any]]:
    """Every stdout line, parsed strictly (no NaN, no Infinity)."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in JSON output")

    return [json.loads(line, parse_constant=refuse) for line in out.decode().splitlines()]


def one_json(out: bytes) -> dict[str, Any]:
    """The single JSON document on stdout, parsed strictly."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in JSON output")

    data: dict[str, Any] = json.loads(out, parse_constant=refuse)
    return data


GOOD = json.dumps(["--moe-backend", "triton"])


def batch_file(tmp_path: Path, bad: bytes, good: int = 300) -> Path:
    body = (GOOD + "\n").encode() * good + bad + b"\n" + (GOOD + "\n").encode() * good
    path = tmp_path / "lines.jsonl"
    path.write_bytes(body)
    return path


def _deep(n: int) -> str:
    return "[" * n + "]" * n


BAD_LINES = {
    "long-model-path": json.dumps(["a" * 300]).encode(),
    "long-path-as-hf-config": json.dumps(["--hf-config-path", "/" + "b" * 5000]).encode(),
    "deep-id": b'{"id": ' + _deep(5000).encode() + b', "argv": []}',
    "deep-kernel-config": json.dumps(
        ["--kernel-config", '{"a":' * 3000 + "1" + "}" * 3000]
    ).encode(),
    "deep-dotted": json.dumps(["--kernel-config.a=" + _deep(3000)]).encode(),
    "non-utf8": b'["\xff\xfe"]',
    "nan-id": b'{"id": NaN, "argv": []}',
    "infinity-id": b'{"id": Infinity, "argv": []}',
    "huge-float-id": b'{"id": 1e400, "argv": []}',
    "many-dots": json.dumps(["--kernel-config" + ".a" * 20000 + "=1"]).encode(),
    "overflowing-k": json.dumps(["--kernel-config.x=" + "9" * 400 + ".5k"]).encode(),
    "huge-int": json.dumps(["--kernel-config.x=" + "9" * 5000]).encode(),
    "not-a-line": b"{",
    "wrong-shape": b'{"argv": [1, 2]}',
}


@pytest.mark.parametrize("bad", list(BAD_LINES.values()), ids=list(BAD_LINES))
def test_one_bad_line_loses_nothing(tmp_path: Path, bad: bytes) -> None:
    path = batch_file(tmp_path, bad)
    done = kc("resolve", "--batch", str(path), "--format", "json")
    lines = json_lines(done.stdout)
    assert len(lines) == 601
    assert [line["exit_code"] for line in lines[:300] + lines[301:]] == [0] * 600
    assert [line["id"] for line in lines] == list(range(1, 602))
    middle = lines[300]
    assert all("\n" not in p["message"] for p in middle["problems"])


def test_config_file_errors_stay_on_their_line(tmp_path: Path) -> None:
    (tmp_path / "date.yaml").write_text("moe-backend: 2024-01-01\nkernel-config: {d: 2024-01-01}\n")
    (tmp_path / "config.json").write_text("[1, 2]")
    bad = json.dumps(["--config", str(tmp_path / "date.yaml")]).encode()
    bad += b"\n" + json.dumps(["--hf-config-path", str(tmp_path)]).encode()
    path = batch_file(tmp_path, bad, good=5)
    lines = json_lines(kc("resolve", "--batch", str(path), "--format", "json").stdout)
    assert [line["exit_code"] for line in lines] == [0] * 5 + [2, 2] + [0] * 5


def test_bom_before_the_first_line_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode() + b"\n" + GOOD.encode() + b"\n")
    lines = json_lines(kc("resolve", "--batch", str(path), "--format", "json").stdout)
    assert [line["exit_code"] for line in lines] == [0, 0]


@pytest.mark.parametrize("fmt", ["env", "args", "yaml"])
def test_batch_refuses_single_result_formats(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "$(touch pwned)`touch pwned2`", "argv": []}\n')
    done = kc("resolve", "--batch", str(path), "--format", fmt, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == b""
    assert fmt.encode() in done.stderr


def test_batch_table_is_a_summary(tmp_path: Path) -> None:
    path = batch_file(tmp_path, b'["--moe-backend", "nope"]', good=2)
    done = kc("resolve", "--batch", str(path), "--format", "table", env={"COLUMNS": "100"})
    assert done.returncode == 2
    text = done.stdout.decode()
    assert "5 lines: 4 exit 0, 1 exit 2" in text
    assert "invalid choice" in text


def test_batch_default_stays_json_lines(tmp_path: Path) -> None:
    path = batch_file(tmp_path, GOOD.encode(), good=1)
    assert len(json_lines(kc("resolve", "--batch", str(path)).stdout)) == 3


ALIAS_BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x]"]
    + [
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]"
        for i in range(8)
    ]
    + ["kernel-config: {moe_backend: *i}"]
)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(ALIAS_BOMB.encode(), id="alias-bomb"),
        pytest.param(b"a: &a [*a]\n", id="self-alias"),
        pytest.param("moe-backend: triton\n".encode("utf-16"), id="utf-16"),
        pytest.param("moe-backend: tr\xedton\n".encode("latin-1"), id="latin-1"),
        pytest.param(b"\x00\x01\x02binary", id="binary"),
        pytest.param(b"kernel-config: !!binary aGVsbG8=\n", id="yaml-binary"),
        pytest.param(b"kernel-config: !!set {a, b}\n", id="yaml-set"),
        pytest.param(b"kernel-config: {d: 2024-01-01}\n", id="yaml-date-in-mapping"),
        pytest.param(b"tensor-parallel-size: " + b"9" * 5000 + b"\n", id="huge-int"),
        pytest.param(b"kernel-config: " + b"[" * 3000 + b"]" * 3000 + b"\n", id="deep"),
        pytest.param(b"!!python/object:os.system {}\n", id="python-object"),
    ],
)
def test_hostile_config_files_are_one_line(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(text)
    started = time.perf_counter()
    done = kc("resolve", "--config", str(path), "--format", "json")
    assert time.perf_counter() - started < 10
    assert done.returncode == 2
    data = one_json(done.stdout)
    assert data["problems"][0]["code"] in ("bad-argument", "unusable-input")
    assert len(done.stderr.decode().strip().splitlines()) == 1


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo", "dir"])
def test_special_files_are_refused_not_read(tmp_path: Path, special: str) -> None:
    if special == "fifo":
        target = tmp_path / "f.yaml"
        os.mkfifo(target)
    elif special == "dir":
        target = tmp_path / "d.yaml"
        target.mkdir()
    else:
        target = Path(special)
    for args in (
        ["resolve", "--config", str(target)],
        ["lint-env", "--env-file", str(target)],
        ["resolve", "--batch", str(target)],
    ):
        if args[1] == "--config" and not str(target).endswith(".yaml"):
            continue
        done = kc(*args, timeout=10)
        assert done.returncode == 2, args
        assert b"cannot read" in done.stderr


def test_file_stat_says_the_reason_where_file_problem_does(tmp_path: Path) -> None:
    """One rule for what a readable file is: ``file_stat`` gives the stat of a regular
    file, or no stat and the same reason ``file_problem`` gives (the model's config.json
    is found with the one, refused with the other)."""
    import os

    from kernelcfg.base import bounded

    regular = tmp_path / "config.json"
    regular.write_text("{}")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (regular, tmp_path, fifo, tmp_path / "absent", "/dev/null", "nul\0byte"):
        info, problem = bounded.file_stat(str(path))
        assert problem == bounded.file_problem(str(path))
        assert (info is None) == (problem is not None), path
    assert bounded.file_stat(str(regular))[0].st_size == 2  # type: ignore[union-attr]


@pytest.mark.parametrize("prefix", ["", "kernel-config: ", "a:\n  b: "])
@pytest.mark.parametrize("extra", [-1, 0, 1, 2, 3000])
def test_yaml_nesting_is_capped_where_it_is_counted(prefix: str, extra: int) -> None:
    """A document nested deeper than MAX_DEPTH is refused with one message whether the
    node walk counts it or the scanner stops at the first flow collection too deep (it
    would otherwise look ahead over all 3,000 of them, 0.7 s)."""
    from kernelcfg.base import bounded
    from kernelcfg.base.errors import ArgumentError

    above = prefix.count(":")  # the mappings around the flow collections
    flow = bounded.MAX_DEPTH - above + extra
    text = prefix + "[" * flow + "]" * flow
    if above + flow <= bounded.MAX_DEPTH:
        assert bounded.loads_yaml(text, "--config") is not None
        return
    with pytest.raises(ArgumentError, match=f"YAML nested deeper than {bounded.MAX_DEPTH} levels"):
        bounded.loads_yaml(text, "--config")


def test_oversized_files_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as fh:
        fh.write(b"#" * (17 * 1024 * 1024))
    done = kc("resolve", "--config", str(path))
    assert done.returncode == 2
    assert b"larger than 16 MiB" in done.stderr


@pytest.mark.parametrize(
    "content",
    [
        b"[1]",
        b'"x"',
        b"null",
        '{"architectures": ["\xe9"]}'.encode("latin-1"),
        b"[" * 100000 + b"]" * 100000,
        b'{"x": ' + b"1" * 5000 + b"}",
    ],
    ids=["list", "string", "null", "latin-1", "deep", "huge-int"],
)
def test_hostile_model_config_json(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "config.json").write_bytes(content)
    for args in (["--", "vllm", "serve", str(tmp_path)], ["--hf-config-path", str(tmp_path)]):
        done = kc("resolve", "--format", "json", *args)
        assert done.returncode == 2
        assert "config.json" in one_json(done.stdout)["problems"][0]["message"]


@pytest.mark.parametrize(
    "path",
    ["/nonexistent/model", "/dev/zero", "loop"],
)
def test_unreadable_hf_config_path_is_a_warning(tmp_path: Path, path: str) -> None:
    if path == "loop":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        path = str(tmp_path / "loop")
    done = kc("resolve", "--hf-config-path", path, "--format", "json")
    data = one_json(done.stdout)
    codes = [p["code"] for p in data["problems"]]
    assert "model-config-unreadable" in codes


WRONG_TYPES = {
    "model_type": {"model_type": {}},
    "architectures": {"architectures": 1.5},
    "architectures[1]": {"architectures": [1, None]},
    "quantization_config.bits": {"quantization_config": {"quant_method": "awq", "bits": None}},
    "quantization_config.group_size": {
        "quantization_config": {"quant_method": "gptq", "group_size": "four"}
    },
    "quantization_config": {"quantization_config": []},
    "num_experts": {"architectures": ["Qwen3MoeForCausalLM"], "num_experts": "8"},
    "hidden_size": {"num_local_experts": 8, "hidden_size": [1], "moe_intermediate_size": 8},
}
"""Facts of the wrong type that were a TypeError (exit 70, or "unusable input" in a
batch), by the key the warning names."""


def test_model_facts_of_the_wrong_type_are_one_warning_each(tmp_path: Path) -> None:
    lines = []
    for number, config in enumerate(WRONG_TYPES.values()):
        (tmp_path / str(number)).mkdir()
        (tmp_path / str(number) / "config.json").write_text(json.dumps(config))
        lines.append(json.dumps(["--", "vllm", "serve", str(tmp_path / str(number)), "-tp", "2"]))
    done = kc("resolve", "--batch", "-", stdin="\n".join(lines).encode())
    for key, line in zip(WRONG_TYPES, json_lines(done.stdout), strict=True):
        said = [p["message"] for p in line["problems"] if p["code"] == "model-config-value"]
        assert line["exit_code"] == 0, line["problems"]
        assert len(said) == 1, said
        assert f'config.json\': "{key.split("[")[0]}" is ' in said[0]
    done = kc("resolve", "--device", "mi300x", "--", "vllm", "serve", str(tmp_path / "0"))
    assert done.returncode == 0
    assert b'config.json\': "model_type" is {}, not a string; kernelcfg ignores it' in done.stderr


def test_a_home_that_cannot_be_expanded_is_no_cache() -> None:
    serve = ["--", "vllm", "serve", "org/m"]
    done = kc("resolve", "--format", "json", *serve, env={"HF_HUB_CACHE": "~nosuchuser/hub"})
    notes = [p["message"] for p in one_json(done.stdout)["problems"]]
    assert "HF_HUB_CACHE '~nosuchuser/hub' starts with '~nosuchuser' (no such user)" in notes[0]
    line = json.dumps(["--env", "HF_HOME=~nosuchuser", *serve]).encode()
    (result,) = json_lines(kc("resolve", "--batch", "-", stdin=line).stdout)
    assert result["exit_code"] == 0  # a line's own HF_HOME is vLLM's, never kernelcfg's cache
    assert [p["code"] for p in result["problems"]] == ["model-not-local"]


def test_broken_cache_entries_say_what_is_broken(tmp_path: Path) -> None:
    broken = {
        "dev-zero": "snapshots/r/config.json leads to '/dev/zero', outside the model's folder",
        "folder": "snapshots/r/config.json: it is a directory",
        "nul": "refs/main holds 'r\\x00', not a revision",
        "megabytes": "refs/main is 2,000,000 bytes long, not a revision",
        "dots": "refs/main holds '..', not a revision",
        "snapshots-file": "snapshots: Not a directory",
    }
    lines = []
    for how in ["good", *broken]:
        folder = tmp_path / f"models--org--{how}"
        (folder / "blobs").mkdir(parents=True)
        (folder / "blobs" / "b").write_text('{"architectures": ["LlamaForCausalLM"]}')
        (folder / "config.json").write_text('{"architectures": ["Outside"]}')
        if how != "snapshots-file":
            (folder / "snapshots" / "r").mkdir(parents=True)
            (folder / "refs").mkdir()
            (folder / "refs" / "main").write_bytes(
                {"nul": b"r\0", "megabytes": b"r" * 2_000_000, "dots": b".."}.get(how, b"r")
            )
        config = folder / "snapshots" / "r" / "config.json"
        if how == "dev-zero":
            config.symlink_to("/dev/zero")
        elif how == "folder":
            config.mkdir()
        elif how == "snapshots-file":
            (folder / "snapshots").write_text("")
        else:
            config.symlink_to("../../blobs/b")
        lines.append(json.dumps({"argv": ["--", "vllm", "serve", f"org/{how}"]}))
    done = kc(
        "resolve",
        "--batch",
        "-",
        "--format",
        "json",
        stdin="\n".join(lines).encode(),
        env={"HF_HUB_CACHE": str(tmp_path)},
    )
    good, *bad = json_lines(done.stdout)
    assert good["model"]["architectures"] == ["LlamaForCausalLM"]
    for (how, said), line in zip(broken.items(), bad, strict=True):
        assert line["model"]["architectures"] is None, how
        (warning,) = [p["message"] for p in line["problems"] if p["code"] == "model-cache-broken"]
        assert f"but broken: {said};" in warning, (how, warning)


def test_huge_architecture_lists_and_names_are_bounded(tmp_path: Path) -> None:
    names = [f"Arch{i}" for i in range(300_000)]
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["X" * 2_000_000, *names]}))
    for fmt in ("table", "json"):
        started = time.perf_counter()
        done = kc("resolve", "--format", fmt, "--", "vllm", "serve", str(tmp_path))
        assert time.perf_counter() - started < 5
        assert len(done.stdout) < 20_000
        assert b'"architectures" holds 300,001 names; kernelcfg keeps the first 16' in done.stderr
        assert b'"architectures[0]" is a name of 2,000,000 characters' in done.stderr


def test_a_dist_info_folder_in_the_current_folder_is_no_install(tmp_path: Path) -> None:
    (tmp_path / "vllm-0.29.0.dist-info").mkdir()
    done = kc("resolve", "--format", "json", "--explain-sources", cwd=tmp_path)
    data = one_json(done.stdout)
    assert (data["vllm_version"], data["vllm_version_source"]) != ("0.29.0", "installed")


@pytest.mark.parametrize(
    "args",
    [
        ["resolve", "/" + "x" * 5000],
        ["resolve", "--model", "/" + "x" * 5000],
        ["resolve", "--", "vllm", "serve", "/" + "x" * 5000],
        ["diff", "--a", "/" + "x" * 5000 + ".json", "--b", "--moe-backend triton"],
        ["diff", "--a", "--moe-backend 'triton", "--b", "--moe-backend triton"],
        ["resolve", "--kernel-config", '{"a":' * 1500 + "1" + "}" * 1500],
        ["resolve", "--compilation-config", '{"a":' * 1500 + "1" + "}" * 1500],
        ["resolve", "--ir-op-priority", '{"a":' * 1500 + "1" + "}" * 1500],
        ["resolve", "--kernel-config" + ".a" * 20000 + "=1"],
        ["resolve", "-tp", "9" * 5000],
        ["resolve", "--capability", "9.0\n"],
        ["resolve", "--gfx-arch", "gfx942\n"],
    ],
    ids=[
        "long-positional",
        "long-model",
        "long-serve-model",
        "long-diff-path",
        "unclosed-quote",
        "deep-kernel-config",
        "deep-cc",
        "deep-ir",
        "many-dots",
        "huge-tp",
        "capability-newline",
        "gfx-newline",
    ],
)
def test_hostile_arguments_never_crash(args: list[str]) -> None:
    done = kc(*args)
    assert len(done.stderr.decode().strip().splitlines()) <= 3


@pytest.mark.parametrize("value", ["9.0\n", "9.0 ", "x9.0"])
def test_capability_is_matched_whole(value: str) -> None:
    done = kc("resolve", "--capability", value, "--format", "json")
    assert done.returncode == 2


def test_gfx_arch_is_matched_whole() -> None:
    assert kc("resolve", "--gfx-arch", "gfx942\n", "--format", "json").returncode == 2


def test_tensor_parallel_must_be_positive() -> None:
    done = kc("resolve", "-tp", "0", "--format", "json")
    assert done.returncode == 1
    assert "tensor_parallel_size" in done.stderr.decode()


def test_forged_ci_lines_cannot_reach_stderr() -> None:
    done = kc("resolve", "-cc.backend=x\n::error::FORGED", "-cc.mode=3")
    lines = done.stderr.decode().splitlines()
    assert not any(line.startswith("::") for line in lines)
    assert "\\n::error::FORGED" in done.stderr.decode()


def test_huge_value_is_not_echoed_whole(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text("moe-backend: " + "x" * 10_000_000 + "\n")
    done = kc("resolve", "--config", str(tmp_path / "big.yaml"), "--format", "json")
    assert done.returncode == 2
    assert len(done.stdout) + len(done.stderr) < 20_000


def test_non_utf8_argv_and_environment_under_a_strict_locale() -> None:
    env = {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict", "VLLM_X": "\udcff"}
    arg = os.fsdecode(b"--moe-backend=\xff")
    for fmt in ("json", "table", "env"):
        done = kc("resolve", arg, "--format", fmt, env=env)
        assert done.returncode == 2
    done = kc("lint-env", env={**env, "VLLM_FOO": os.fsdecode(b"\xfe")})
    assert b"\\x" in done.stdout or b"\\udc" in done.stdout


def test_closed_standard_streams() -> None:
    for close in ("<&-", ">&-"):
        done = subprocess.run(
            f"{sys.executable} -m kernelcfg resolve --device h100 --format json {close}; "
            "echo rc=$?",
            shell=True,
            capture_output=True,
            check=False,
        )
        assert b"Traceback" not in done.stderr
        assert b"rc=0" in done.stdout


def test_broken_pipe_keeps_the_earned_exit_code(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text((GOOD + "\n") * 20000)
    done = subprocess.run(
        f"set -o pipefail; {sys.executable} -m kernelcfg resolve --batch {path} "
        "--device h100 --format json | head -1 > /dev/null",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr


def test_sigint_writes_only_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    path.write_text((GOOD + "\n") * 200000)
    proc = subprocess.Popen(
        [*KERNELCFG, "resolve", "--batch", str(path), "--device", "h100", "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert out.endswith(b"\n") or out == b""
    json_lines(out)


def test_junit_drops_control_characters(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"id": "a\x1bb\x01", "argv": ["--moe-backend", "x\x1b"]}) + "\n")
    done = kc("resolve", "--batch", str(path), "--format", "junit")
    ET.fromstring(done.stdout)


def test_diff_refuses_saved_json_of_the_wrong_shape(tmp_path: Path) -> None:
    good = kc("resolve", "--format", "json").stdout
    data = json.loads(good)
    data["kernel_config"] = "not a mapping"
    (tmp_path / "a.json").write_text(json.dumps(data))
    (tmp_path / "b.json").write_bytes(good)
    done = kc("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert done.returncode == 2
    nan = good.replace(b'"hash": "', b'"hash": NaN, "x": "')
    (tmp_path / "c.json").write_bytes(nan)
    done = kc("diff", str(tmp_path / "c.json"), str(tmp_path / "b.json"), "--format", "json")
    assert done.returncode == 2


def test_many_unknown_variables_lint_quickly(tmp_path: Path) -> None:
    path = tmp_path / "big.env"
    path.write_text("".join(f"VLLM_UNKNOWN_{i}=1\n" for i in range(200_000)))
    started = time.perf_counter()
    done = kc("lint-env", "--env-file", str(path), "--format", "json", timeout=60)
    assert time.perf_counter() - started < 20
    data = one_json(done.stdout)
    assert (len(data["findings"]), data["omitted"]) == (1000, 199_000)


@pytest.mark.parametrize("fmt", ["table", "json", "github", "junit", "sarif"])
def test_lint_env_keeps_the_first_thousand_findings_in_every_format(
    tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / "many.env"
    path.write_text("".join(f"VLLM_NOPE_{i:05}=1\n" for i in range(2_000)))
    done = kc("lint-env", "--env-file", str(path), "--format", fmt)
    assert done.returncode == 1
    out = done.stdout.decode()
    assert len(out) < 1_000_000
    note = "1,000 more findings not shown, after the first 1,000 (warning: 1,000)"
    if fmt == "json":
        assert one_json(done.stdout)["omitted"] == 1_000
    elif fmt == "table":
        assert "the first 1,000 of 2,000 findings" in out
    elif fmt == "github":
        lines = out.splitlines()
        assert len(lines) == 1001
        assert lines[-1] == f"::warning title=kernelcfg lint-env%3A omitted-findings::{note}; " + (
            "the exit code counts them all"
        )
    elif fmt == "junit":
        cases = ET.fromstring(done.stdout).findall(".//testcase")
        assert len(cases) == 1001
        assert note in (cases[-1].findtext("system-out") or "")
    else:
        results = one_json(done.stdout)["runs"][0]["results"]
        assert len(results) == 1001
        assert results[-1]["message"]["text"].startswith(note)


def test_lint_env_never_forges_a_workflow_command() -> None:
    env = {"VLLM_X\n::error::forged": "1", "VLLM_USE_DEEP_GEMM": "1\n::error::v\x1b[2J"}
    for fmt in ("table", "json", "github", "junit", "sarif"):
        out = kc("lint-env", "--format", fmt, env=env).stdout.decode()
        assert "\x1b" not in out, fmt
        for line in out.split("\n"):
            if fmt == "github" and line:
                assert re.match(r"::(error|warning|notice) title=kernelcfg ", line), line
            else:
                assert not line.lstrip().startswith("::"), (fmt, line)


def test_resolve_warns_of_variables_vllm_ignores_once(tmp_path: Path) -> None:
    args = ("resolve", "--device", "h100", "--vllm-version", "0.33", "--format", "json")
    ignored = ("--env", "VLLM_USE_OINK_OP=1", "--env", "VLLM_ATTENTION_BACKEND=FLASHINFER")
    done = kc(*args, *ignored, env={"VLLM_USE_V1": "1", "VLLM_ROCM_USE_AITER": "1"})
    assert done.returncode == 0
    found = {p["field"]: p for p in one_json(done.stdout)["problems"] if p["field"]}
    warned = {f: p["code"] for f, p in found.items() if p["field"].startswith("VLLM_")}
    assert warned == {
        "VLLM_USE_OINK_OP": "unknown-variable",
        "VLLM_ATTENTION_BACKEND": "removed-variable",
        "VLLM_USE_V1": "removed-variable",
    }
    assert "did you mean 'VLLM_USE_OINK_OPS'" in found["VLLM_USE_OINK_OP"]["message"]
    assert kc(*args, *ignored, "--fail-on", "warning").returncode == 1
    batch = tmp_path / "lines.jsonl"
    batch.write_text(
        '{"id": "a", "env": {"VLLM_NOPE": "1"}, "argv": []}\n{"id": "b", "argv": []}\n'
    )
    a, b = json_lines(kc(*args, "--batch", str(batch)).stdout)
    assert [p["field"] for p in a["problems"]] == ["VLLM_NOPE"]
    assert a["exit_code"] == 0
    assert b["problems"] == []


def test_framework_errors_are_one_line() -> None:
    done = kc("resolve", "--format", "xml")
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: Invalid value for '--format'")


def test_a_bug_exits_70_with_its_traceback() -> None:
    code = (
        "import sys, kernelcfg.commands.pipeline as p, kernelcfg.cli as c\n"
        "def boom(*a, **k): raise ZeroDivisionError('planted')\n"
        "p.resolve_args = boom\n"
        "sys.argv = ['kernelcfg', 'resolve', '--device', 'h100']\n"
        "c.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert done.returncode == 70
    assert b"Traceback" in done.stderr
    assert b"ZeroDivisionError: planted" in done.stderr


def test_option_count_and_word_length_are_capped(tmp_path: Path) -> None:
    words = ["--port", "1"] * 6000
    path = tmp_path / "many.jsonl"
    path.write_text(json.dumps(words) + "\n" + json.dumps(["x" * (1024 * 1024 + 1)])[:-1] + "]\n")
    started = time.perf_counter()
    lines = json_lines(kc("resolve", "--batch", str(path), "--format", "json").stdout)
    assert time.perf_counter() - started < 10
    assert [line["exit_code"] for line in lines] == [2, 2]
    assert "at most 10,000" in lines[0]["problems"][0]["message"]


def _batch_of(tmp_path: Path, count: int, *, distinct: bool = False) -> Path:
    """``count`` lines with ids 0, 1, …: the same words (made once, so the lines are
    quick), or with ``distinct`` words each (every line read and resolved anew)."""
    path = tmp_path / "ids.jsonl"
    argv = ["--device", "h100", "--moe-backend", "triton"]
    path.write_text(
        "".join(
            json.dumps(
                {"id": i, "argv": [*argv, "--max-num-seqs", str(i + 1)] if distinct else argv}
            )
            + "\n"
            for i in range(count)
        )
    )
    return path


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _parent(int(entry)) == pid:
            found.append(int(entry))
    return found


def _parent(pid: int) -> int | None:
    """The parent of a live process (``None`` when gone or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, parent = stat.rsplit(")", 1)[1].split()[:2]
    return None if state in ("Z", "X") else int(parent)


def _workers(proc: subprocess.Popen[bytes], count: int = 2) -> list[int]:
    """The ``--jobs`` workers of ``proc``, once ``count`` of them run."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = _children(proc.pid)
        if len(found) >= count:
            return found
        time.sleep(0.01)
    raise AssertionError(f"{count} workers never started: {_children(proc.pid)}")


def _two_cpus() -> bool:
    from kernelcfg.output.parallel import available_jobs

    return Path("/proc/self/stat").exists() and available_jobs() >= 2


def _streaming(path: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``resolve --batch PATH --jobs 2`` running, its stdout and stderr pipes."""
    return subprocess.Popen(
        [*KERNELCFG, "resolve", "--batch", str(path), "--jobs", "2", *extra],
        bufsize=0,  # a line read first, then the rest by communicate(): nothing held between
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "KERNELCFG_DEVICE": "h100"},
    )


@pytest.mark.skipif(not _two_cpus(), reason="needs /proc and two CPUs for two workers")
def test_a_killed_worker_loses_no_line(tmp_path: Path) -> None:
    """A worker killed (the OOM killer) while the batch streams: what it held is made in
    the parent, every line once and in order, with a note (not BrokenProcessPool)."""
    count = 24 * 256  # distinct lines: the run outlasts the kill, however fast the machine
    proc = _streaming(_batch_of(tmp_path, count, distinct=True))
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        os.kill(_workers(proc)[0], signal.SIGKILL)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert b"Traceback" not in err, err[-2000:]
    assert proc.returncode == 0, err[-2000:]
    assert [line["id"] for line in json_lines(first + rest)] == list(range(count))
    assert b"note: --jobs 2: a worker process died" in err


@pytest.mark.skipif(not _two_cpus(), reason="needs /proc and two CPUs for two workers")
def test_workers_end_with_their_parent(tmp_path: Path) -> None:
    proc = _streaming(_batch_of(tmp_path, 12 * 256))
    workers: list[int] = []
    try:
        proc.stdout.readline()  # type: ignore[union-attr]
        workers = _workers(proc)
        proc.terminate()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while any(_parent(w) is not None for w in workers) and time.monotonic() < deadline:
            time.sleep(0.02)
        survivors = [w for w in workers if _parent(w) is not None]
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in workers:
            if _parent(pid) is not None:
                os.kill(pid, signal.SIGKILL)
        proc.communicate()
    assert survivors == []


@pytest.mark.parametrize("jobs", [[], ["--jobs", "2"]])
@pytest.mark.parametrize("count", [100_000, None], ids=["bounded", "endless"])
def test_a_closed_pipe_ends_the_batch_at_once(jobs: list[str], count: int | None) -> None:
    """``yes '[…]' | kernelcfg resolve --batch - | head -1``: the batch ends at the first
    line it cannot write, reads no further, and exits 0 quietly."""
    proc = subprocess.Popen(
        [*KERNELCFG, "resolve", "--batch", "-", *jobs],
        bufsize=0,  # nothing left in a buffer to flush into the closed pipe
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "KERNELCFG_DEVICE": "h100"},
    )
    sent = [0]

    def feed() -> None:
        block = b'["--device", "h100"]\n' * 1000
        try:
            while count is None or sent[0] < count:
                proc.stdin.write(block)  # type: ignore[union-attr]
                sent[0] += 1000
            proc.stdin.close()  # type: ignore[union-attr]
        except (OSError, ValueError):  # the batch stopped reading
            pass

    feeder = threading.Thread(target=feed, daemon=True)
    with proc:
        feeder.start()
        try:
            assert proc.stdout.readline().startswith(b"{")  # type: ignore[union-attr]
            proc.stdout.close()  # type: ignore[union-attr]
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        feeder.join(timeout=10)
        err = proc.stderr.read()  # type: ignore[union-attr]
    assert proc.returncode == 0, err[-2000:]
    assert b"Traceback" not in err
    if count is not None:
        assert sent[0] < count  # the rest of the input was never read


def _slowly_read(args: list[str]) -> tuple[bytes, int, bytes]:
    """Run kernelcfg with stdout a non-blocking pipe, read slowly at first (so the pipe
    fills): what arrived, the exit code and stderr."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    proc = subprocess.Popen(
        [*KERNELCFG, *args],
        stdout=write,
        stderr=subprocess.PIPE,
        env={**os.environ, "KERNELCFG_DEVICE": "h100"},
    )
    os.close(write)
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    chunks = []
    try:
        with os.fdopen(read, "rb", buffering=0) as pipe:
            for turn in itertools.count():
                if turn < 15:
                    time.sleep(0.03)
                data = pipe.read(4096 if turn < 15 else 1 << 20)
                if not data:
                    break
                chunks.append(data)
        err = proc.communicate(timeout=60)[1]
    finally:
        watchdog.cancel()
    return b"".join(chunks), proc.returncode, err


def test_non_blocking_stdout_gets_every_line(tmp_path: Path) -> None:
    count = 3000
    out, code, err = _slowly_read(["resolve", "--batch", str(_batch_of(tmp_path, count))])
    assert (code, b"Traceback" in err) == (0, False), err[-2000:]
    assert [line["id"] for line in json_lines(out)] == list(range(count))


def test_non_blocking_stdout_gets_a_whole_large_output() -> None:
    """One resolve whose JSON is over 64 KiB (a pipe's size): all of it, exit 0."""
    rms_norm = "--ir-op-priority.rms_norm=" + ",".join(["native"] * 3000)
    out, code, err = _slowly_read(["resolve", "--format", "json", rms_norm])
    assert (code, b"Traceback" in err) == (0, False), err[-2000:]
    assert len(out) > 64 * 1024
    assert one_json(out)["kernel_config"]["ir_op_priority"]["rms_norm"] == ["native"] * 3000


def test_a_full_disk_is_exit_74_in_one_line() -> None:
    for args in (["--format", "json"], ["--batch", "-"]):
        done = subprocess.run(
            f"{sys.executable} -m kernelcfg resolve {' '.join(args)} > /dev/full",
            shell=True,
            input=b'["--device", "h100"]\n' * 300,
            capture_output=True,
            env={**os.environ, "KERNELCFG_DEVICE": "h100"},
            check=False,
        )
        assert done.returncode == 74, done.stderr[-2000:]
        assert done.stderr.endswith(
            b"error: cannot write standard output: No space left on device\n"
        ), done.stderr[-2000:]
