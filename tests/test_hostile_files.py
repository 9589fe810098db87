"""Files someone else wrote, read by kernelcfg: its on-disk text cache (a shared CI
cache), compile-cache factor files, a model's config.json and the files beside it, and
the variables that stand for its flags. Each case is what an attacker or a broken
machine would leave; none may change an answer in silence, hang, or crash."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.base import text_cache
from kernelcfg.vllm.compile_cache import model as compile_model

from .cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
R1 = ROOT / "docs" / "examples" / "deepseek-r1"
SERVE_R1 = ["--device", "h100", "--format", "json", "--", "vllm", "serve", str(R1)]
needs_transformers = pytest.mark.skipif(
    compile_model._transformers_version() is None, reason="the model extra (transformers)"
)


# ------------------------------------------------------------ the text cache


def _corrupt(entry: Path, how: str, tmp_path: Path) -> None:
    """Leave ``entry`` as someone else might have."""
    entry.unlink()
    if how == "garbage":
        entry.write_bytes(b'{"model_type": "attacker"}')
    elif how == "empty":
        entry.write_bytes(b"")
    elif how == "link":
        secret = tmp_path / "secret.txt"
        secret.write_text('{"token": "hf_secret"}')
        entry.symlink_to(secret)
    elif how == "fifo":
        os.mkfifo(entry)
    elif how == "other-question":
        text_cache.put("t", "another question", '{"model_type": "other"}')
        other = next(p for p in entry.parent.iterdir() if p != entry)
        other.rename(entry)


@pytest.mark.parametrize("how", ["garbage", "empty", "link", "fifo", "other-question"])
def test_an_entry_someone_else_wrote_is_a_miss_and_is_written_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setenv("KERNELCFG_CACHE_DIR", str(tmp_path / "cache"))
    text_cache.put("t", "question", '{"model_type": "llama"}')
    (entry,) = (tmp_path / "cache" / "t").iterdir()
    _corrupt(entry, how, tmp_path)
    started = time.monotonic()
    assert text_cache.get("t", "question") is None
    assert time.monotonic() - started < 1  # a FIFO is not waited on
    text_cache.put("t", "question", '{"model_type": "llama"}')
    assert entry.is_file()
    assert not entry.is_symlink()
    assert text_cache.get("t", "question") == '{"model_type": "llama"}'


def test_a_namespace_folder_linked_elsewhere_is_neither_read_nor_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("KERNELCFG_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "t").symlink_to(elsewhere)
    text_cache.put("t", "question", "text")
    assert list(elsewhere.iterdir()) == []
    assert text_cache.get("t", "question") is None


@needs_transformers
@pytest.mark.parametrize("how", ["garbage", "empty", "link", "fifo"])
def test_a_corrupt_hf_text_entry_never_changes_the_config_hash(tmp_path: Path, how: str) -> None:
    env = {"KERNELCFG_CACHE_DIR": str(tmp_path / "cache")}
    first = run("resolve", *SERVE_R1, env=env).json()["compile_cache"]
    assert first["config_hash"] is not None
    (entry,) = (tmp_path / "cache" / "hf-text").iterdir()
    compile_model._loaded.cache_clear()
    _corrupt(entry, how, tmp_path)
    again = run("resolve", *SERVE_R1, env=env)
    assert again.json()["compile_cache"]["config_hash"] == first["config_hash"]
    assert "hf_secret" not in again.stdout


# ------------------------------------------------------------ transformers' input


def test_ten_million_layers_make_the_model_part_unknown_at_once(tmp_path: Path) -> None:
    """A 231-byte config.json naming 10,000,000 layers took transformers 42 s and
    1.7 GiB; kernelcfg hands it no such config."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": 10_000_000,
        "hidden_size": 4096,
        "num_attention_heads": 32,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    code = (
        "import json, tracemalloc\n"
        "from typer.testing import CliRunner\n"
        "from kernelcfg.cli import app\n"
        "tracemalloc.start()\n"
        "out = CliRunner().invoke(app, ['resolve', '--device', 'h100', '--format', 'json', "
        f"'--', 'vllm', 'serve', {str(tmp_path)!r}])\n"
        "peak = tracemalloc.get_traced_memory()[1]\n"
        "print(json.dumps([json.loads(out.stdout)['compile_cache'], peak]))\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", ""), "KERNELCFG_CACHE_DIR": "", "HOME": str(tmp_path)},
        cwd=ROOT,
        check=True,
    )
    elapsed = time.monotonic() - started
    key, peak = json.loads(done.stdout)
    assert elapsed < 10  # the process start included; the guard itself is microseconds
    assert peak < 100 * 1024 * 1024  # what Python allocated while resolving
    assert key["config_hash"] is None
    said = json.dumps(key)
    assert "num_hidden_layers is 10,000,000" in said or "transformers" not in said


def test_the_bounds_name_what_is_beyond_them() -> None:
    assert compile_model._beyond_bounds({"num_hidden_layers": 61}) is None
    assert compile_model._beyond_bounds({"max_position_embeddings": 10_485_760}) is None
    said = compile_model._beyond_bounds({"text_config": {"num_hidden_layers": 5000}})
    assert said is not None
    assert "num_hidden_layers is 5,000" in said
    said = compile_model._beyond_bounds({"layer_types": ["full_attention"] * 200_000})
    assert said is not None
    assert "more than 100,000 values" in said


@needs_transformers
def test_a_full_disk_for_transformers_file_is_an_unknown_part_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    compile_model._loaded.cache_clear()
    monkeypatch.setenv("KERNELCFG_CACHE_DIR", "")
    monkeypatch.setattr("tempfile.TemporaryDirectory", full)
    done = run("resolve", *SERVE_R1)
    compile_model._loaded.cache_clear()
    assert done.exit_code == 0, done.stderr
    key = done.json()["compile_cache"]
    assert key["config_hash"] is None
    assert "No space left on device" in json.dumps(key)


@needs_transformers
def test_transformers_own_lines_never_reach_stderr(tmp_path: Path) -> None:
    """Where torch is absent, importing transformers says "PyTorch was not found…" on
    stderr; kernelcfg's stderr carries kernelcfg's lines only."""
    block = (
        "import importlib.util, sys\n"
        "find = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a, **k: None if name.split('.')[0] == "
        "'torch' else find(name, *a, **k)\n"
        "sys.modules['torch'] = None\n"
    )
    plain = subprocess.run(
        [sys.executable, "-c", block + "import transformers\n"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "PyTorch was not found" in plain.stderr  # what the test could see
    ours = subprocess.run(
        [
            sys.executable,
            "-c",
            block + "from kernelcfg.vllm.compile_cache import model\nmodel._transformers()\n",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert ours.stderr == ""


# ------------------------------------------------------------ files beside config.json


def test_wrong_types_in_hf_quant_config_are_named(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})
    )
    (tmp_path / "hf_quant_config.json").write_text(
        json.dumps(
            {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": ["FP8"], "x": 1}}
        )
    )
    done = run(
        "resolve", "--device", "h100", "--format", "json", "--", "vllm", "serve", str(tmp_path)
    )
    warned = [p for p in done.json()["problems"] if p["code"] == "model-config-value"]
    assert warned, done.json()["problems"]
    assert "hf_quant_config.json" in warned[0]["message"]


# ------------------------------------------------------------ cache explain


def _factors(folder: Path, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True)
    path = folder / "cache_key_factors.json"
    path.write_text(json.dumps(data))
    return path


def test_traced_paths_at_the_root_end(tmp_path: Path) -> None:
    """``/x`` against ``//x`` looped for ever (``os.path.dirname('//')`` is ``//``)."""
    a = _factors(tmp_path / "a", {"env": {}, "code": {"files": [{"path": "/x", "hash": "h"}]}})
    b = _factors(tmp_path / "b", {"env": {}, "code": {"files": [{"path": "//x", "hash": "h"}]}})
    done = subprocess.run(
        [sys.executable, "-m", "kernelcfg", "cache", "explain", str(a), str(b)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 1, done.stderr


def test_a_hash_that_is_not_text_is_compared_not_crashed_on(tmp_path: Path) -> None:
    a = _factors(tmp_path / "a", {"env": {}, "code": {"files": [{"path": "/x", "hash": [1]}]}})
    b = _factors(tmp_path / "b", {"env": {}, "code": {"files": [{"path": "/x", "hash": [2]}]}})
    done = run("cache", "explain", str(a), str(b), "--format", "json")
    assert done.exit_code == 1, done.stderr
    assert [f["what"] for f in done.json()["findings"]] == ["/x"]


def test_sides_that_look_like_paths_and_do_not_exist_are_refused(tmp_path: Path) -> None:
    done = run("cache", "explain", str(tmp_path / "nope-a"), str(tmp_path / "nope-b"))
    assert done.exit_code == 2
    assert "no such cache folder" in done.stderr
    assert run("cache", "explain", "./missing/", "-tp 2", "--device", "h100").exit_code == 2


def test_a_null_factor_is_not_an_absent_one(tmp_path: Path) -> None:
    a = _factors(tmp_path / "a", {"env": {"VLLM_X": None}})
    b = _factors(tmp_path / "b", {"env": {}})
    done = run("cache", "explain", str(a), str(b), "--format", "json")
    (finding,) = done.json()["findings"]
    assert finding["message"] == "env VLLM_X: null vs absent"


# ------------------------------------------------------------ variables for flags


@pytest.mark.parametrize("value", ["9.0\n", " 9.0", "٩.٠"])
def test_a_capability_variable_is_checked_as_the_flag_is(value: str) -> None:
    done = run("resolve", "--format", "json", env={"KERNELCFG_CAPABILITY": value})
    assert done.exit_code == 2
    assert "KERNELCFG_CAPABILITY" in done.stderr
