"""vLLM's compile-cache key and directory (``kernelcfg.vllm.compile_cache.key``): read from a
``cache_key_factors.json`` laid out the way vLLM writes it, and what separates two keys."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.base.errors import ArgumentError
from kernelcfg.vllm.compile_cache.key import (
    CacheKey,
    config_path,
    differences,
    directory,
    find_factors_file,
    read_factors_file,
)
from kernelcfg.vllm.kernel_config.hashing import digest

SITE = "/usr/lib/python3.12/site-packages"
ENV = {"VLLM_USE_DEEP_GEMM": True, "VLLM_BATCH_INVARIANT": False, "CUDA_HOME": None}
CONFIG = {
    "vllm_version": "0.34.0",
    "parallel": {"tensor_parallel_size": 4, "world_size": 4},
    "compilation": {"mode": 3, "cudagraph_mode": ["vllm.config.compilation.CUDAGraphMode", 3]},
}
COMPILER = {"torch": "2.14.0", "triton": "3.9.0", "device": "NVIDIA H100 80GB HBM3"}


def _files(site: str) -> list[dict[str, str]]:
    return [
        {"path": f"{site}/vllm/model_executor/models/llama.py", "hash": "a" * 64},
        {"path": f"{site}/vllm/model_executor/layers/linear.py", "hash": "b" * 64},
        {"path": "<string>"},
    ]


def _write_034(
    root: Path,
    env: dict[str, Any] = ENV,
    config: dict[str, Any] = CONFIG,
    files: list[dict[str, str]] | None = None,
) -> tuple[Path, str]:
    """A 0.34 cache directory as ``VllmBackend.__call__`` writes it; its key."""
    code = {"files": files if files is not None else _files(SITE)}
    tree = {"env": env, "config": config, "code": code, "compiler": COMPILER}
    key = hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:10]
    folder = root / "torch_compile_cache" / key / "rank_0_0" / "backbone"
    folder.mkdir(parents=True)
    written = {
        **tree,
        "config_hash": digest(config),
        "code_hash": digest(code),
        "compiler_hash": digest(COMPILER),
    }
    (folder / "cache_key_factors.json").write_text(json.dumps(written, indent=2, sort_keys=True))
    return root, key


def _write_033(root: Path, config_hash: str = "c" * 64) -> tuple[Path, str]:
    """A 0.33 cache directory: raw env factors and three hashes."""
    env_hash = digest(ENV)
    listed = [env_hash, config_hash, "d" * 64, "e" * 64]
    key = hashlib.sha256(str(listed).encode()).hexdigest()[:10]
    folder = root / "torch_compile_cache" / key / "rank_0_0" / "backbone"
    folder.mkdir(parents=True)
    written = {
        "env": ENV,
        "config_hash": config_hash,
        "code_hash": "d" * 64,
        "compiler_hash": "e" * 64,
    }
    (folder / "cache_key_factors.json").write_text(json.dumps(written, indent=2, sort_keys=True))
    return root, key


def test_034_key_is_the_folder_name(tmp_path: Path) -> None:
    root, key = _write_034(tmp_path / "cache")
    found = read_factors_file(str(root))
    assert (found.scheme, found.version, found.unknown) == ("factors", "0.34.0", [])
    assert found.key == key
    assert directory(found, "/root/.cache/vllm") == (
        f"/root/.cache/vllm/torch_compile_cache/{key}/rank_0_0/backbone"
    )


def test_033_key_is_the_folder_name(tmp_path: Path) -> None:
    root, key = _write_033(tmp_path / "cache")
    found = read_factors_file(str(root / "torch_compile_cache"))
    assert found.scheme == "hashes"
    assert found.key == key


def test_not_a_cache_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArgumentError, match=r"no cache_key_factors\.json"):
        find_factors_file(str(tmp_path / "empty"))
    (tmp_path / "x.json").write_text("[1]")
    with pytest.raises(ArgumentError, match=r"not a cache_key_factors\.json vLLM wrote"):
        read_factors_file(str(tmp_path / "x.json"))
    with pytest.raises(ArgumentError, match="neither a compile-cache folder"):
        read_factors_file(str(tmp_path / "missing"))


def test_one_env_variable(tmp_path: Path) -> None:
    a = read_factors_file(str(_write_034(tmp_path / "a")[0]))
    b = read_factors_file(
        str(_write_034(tmp_path / "b", env={**ENV, "VLLM_USE_DEEP_GEMM": False})[0])
    )
    found = differences(a, b)
    assert [(f.part, f.what, f.a, f.b) for f in found] == [
        ("env", "VLLM_USE_DEEP_GEMM", True, False)
    ]


def test_one_config_field_by_its_dotted_path(tmp_path: Path) -> None:
    other = {**CONFIG, "parallel": {"tensor_parallel_size": 8, "world_size": 8}}
    a = read_factors_file(str(_write_034(tmp_path / "a")[0]))
    b = read_factors_file(str(_write_034(tmp_path / "b", config=other)[0]))
    assert [f.what for f in differences(a, b)] == [  # vLLM's attribute names, as 0.33's
        "parallel_config.tensor_parallel_size",
        "parallel_config.world_size",
    ]


def test_a_config_path_reads_either_spelling() -> None:
    """0.34's factor tree keys a part ``parallel``; VllmConfig's attribute (and 0.33's
    part, and resolve's JSON) is ``parallel_config``: one spelling out, both taken in."""
    assert config_path("parallel.tensor_parallel_size") == "parallel_config.tensor_parallel_size"
    assert config_path("parallel_config.world_size") == "parallel_config.world_size"
    assert config_path("compilation.cudagraph_mode") == "compilation_config.cudagraph_mode"
    assert config_path("version") == "version"  # vLLM's version: no sub-config


def test_a_moved_install_is_one_finding(tmp_path: Path) -> None:
    a = read_factors_file(str(_write_034(tmp_path / "a")[0]))
    moved = _files("/opt/venv/lib/python3.12/site-packages")
    b = read_factors_file(str(_write_034(tmp_path / "b", files=moved)[0]))
    found = differences(a, b)
    assert [(f.part, f.what) for f in found] == [("code", "install path")]
    assert (found[0].a, found[0].b) == ("/usr", "/opt/venv")


def test_a_changed_file(tmp_path: Path) -> None:
    files = _files(SITE)
    files[1] = {**files[1], "hash": "f" * 64}
    a = read_factors_file(str(_write_034(tmp_path / "a")[0]))
    b = read_factors_file(str(_write_034(tmp_path / "b", files=files)[0]))
    assert [(f.part, f.message) for f in differences(a, b)] == [
        ("code", f"traced file changed: {SITE}/vllm/model_executor/layers/linear.py")
    ]


def test_a_vllm_upgrade(tmp_path: Path) -> None:
    old = read_factors_file(str(_write_033(tmp_path / "old")[0]))
    new = read_factors_file(str(_write_034(tmp_path / "new")[0]))
    found = differences(old, new)
    assert found[0].part == "scheme"
    assert "0.33 or older vs 0.34.0" in found[0].message


def test_same_key_nothing_differs(tmp_path: Path) -> None:
    a = read_factors_file(str(_write_034(tmp_path / "a")[0]))
    b = read_factors_file(str(_write_034(tmp_path / "b")[0]))
    assert (differences(a, b), a.key == b.key) == ([], True)


def test_a_launch_takes_the_install_parts_from_a_cache(tmp_path: Path) -> None:
    root, key = _write_034(tmp_path / "cache")
    cache = read_factors_file(str(root))
    launch = CacheKey("factors", env_factors=ENV, config_factors=CONFIG, config_hash=digest(CONFIG))
    assert launch.unknown == ["code", "compiler"]
    assert launch.key is None
    assert launch.with_install(cache).key == key
