"""``resolve --compile-cache DIR`` against a cache folder laid out the way vLLM 0.34.0's
``VllmBackend.__call__`` writes it, its config factors taken from a launch vector (what
vLLM itself computed for that launch, the model folder as written swapped for this
test's): the same launch names that folder and reuses it; a changed flag names another
folder and the field that moved it. ``cache explain`` and ``diff`` read the same keys."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm.compile_cache.env import compute

from .cli_helpers import run
from .conftest import golden

pytestmark = pytest.mark.golden

VECTORS = golden("0.34.0", "compile-cache-launch")
RECORD = next(
    r
    for r in VECTORS["launch_records"]
    if r["ok"]
    and (r["model_template"], r["option_set"], r["env_set"], r["target"])
    == ("llama-3.1-8b", "pp2", "none", "h100")
)
CODE = {
    "files": [
        {"path": "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/models/llama.py",
         "hash": "1" * 64},
        {"path": "<string>"},
    ]
}  # fmt: skip
COMPILER = {"torch_version": "2.14.0+cu130", "triton": "3.9.0", "device": "NVIDIA H100 80GB HBM3"}


def _config_factors(model_folder: str) -> dict[str, Any]:
    """vLLM's factor tree for the vector's launch, for a model at ``model_folder``."""
    tree: dict[str, Any] = {
        key: copy.deepcopy(VECTORS["config_factor_tables"][key][ref])
        for key, ref in RECORD["config_factors_refs"].items()
    }
    tree.update(RECORD["config_factors_inline"])
    assert tree["model"]["model"] == "/models/llama-3.1-8b"  # the only place it is written
    tree["model"]["model"] = model_folder
    return tree


@pytest.fixture
def cache(tmp_path: Path) -> tuple[Path, Path, str]:
    """A model folder, a cache root holding one directory for the vector's launch, and
    that directory's key."""
    pytest.importorskip("transformers", reason="the model part is transformers' text")
    model = tmp_path / "llama-3.1-8b"
    model.mkdir()
    template = VECTORS["meta"]["model_templates"]["llama-3.1-8b"]["config_json"]
    (model / "config.json").write_text(json.dumps(template), encoding="utf-8")
    env = compute("0.34.0", dict(os.environ)).factors
    tree = {"env": env, "config": _config_factors(str(model)), "code": CODE, "compiler": COMPILER}
    key = hashlib.sha256(json.dumps(tree, sort_keys=True).encode()).hexdigest()[:10]
    folder = tmp_path / "root" / "torch_compile_cache" / key / "rank_0_0" / "backbone"
    folder.mkdir(parents=True)
    hashes = {
        "config_hash": _digest(tree["config"]),
        "code_hash": _digest(CODE),
        "compiler_hash": _digest(COMPILER),
    }
    written = json.dumps({**tree, **hashes}, indent=2, sort_keys=True)
    (folder / "cache_key_factors.json").write_text(written, encoding="utf-8")
    return model, tmp_path / "root", key


def _digest(factors: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).hexdigest()


def _resolve(model: Path, root: Path, *flags: str) -> dict[str, Any]:
    out = run(
        "resolve", "--vllm-version", "0.34.0", "--device", "h100", "--compile-cache", str(root),
        "--format", "json", "--", "vllm", "serve", str(model), "-pp", "2", *flags,
    )  # fmt: skip
    assert out.exit_code == 0, out.stderr
    found: dict[str, Any] = out.json()["compile_cache"]
    return found


def test_the_same_launch_names_the_cache_and_reuses_it(cache: tuple[Path, Path, str]) -> None:
    model, root, key = cache
    found = _resolve(model, root)
    assert (
        found["config_hash"]
        == hashlib.sha256(
            json.dumps(_config_factors(str(model)), sort_keys=True).encode()
        ).hexdigest()
    )
    assert (found["key"], found["reuses"], found["differences"]) == (key, True, [])
    assert found["directory"]["jit"] == str(
        root / "torch_compile_cache" / key / "rank_0_0" / "backbone"
    )
    assert found["unknown"] == []


def test_a_changed_flag_names_another_directory(cache: tuple[Path, Path, str]) -> None:
    model, root, key = cache
    found = _resolve(model, root, "--max-num-seqs", "64")
    assert found["reuses"] is False
    assert found["key"] != key
    moved = [d["what"] for d in found["differences"]]
    assert "scheduler_config.max_num_seqs" in moved
    assert (
        "compilation_config.cudagraph_capture_sizes" in moved
    )  # the capture sizes follow max_num_seqs


def test_cache_explain_reads_the_directory_against_a_launch(cache: tuple[Path, Path, str]) -> None:
    model, root, _key = cache
    out = run(
        "cache", "explain", str(root), f"vllm serve {model} -pp 2 -O1", "--device", "h100",
        "--vllm-version", "0.34.0", "--format", "json",
    )  # fmt: skip
    assert out.exit_code == 1, out.stderr
    data = out.json()
    assert data["not_compared"] == ["code", "compiler"]
    assert {f["part"] for f in data["findings"]} == {"config"}
    assert any(f["what"].startswith("compilation_config.") for f in data["findings"])


def _explain(*words: str) -> tuple[int, dict[str, Any]]:
    out = run("cache", "explain", *words, "--format", "json")
    assert out.exit_code in (0, 1), out.stderr
    data: dict[str, Any] = out.json()
    return out.exit_code, data


def _moved(found: dict[str, Any]) -> list[str]:
    return sorted({f["what"] for f in found["findings"]})


@pytest.mark.parametrize(
    ("a", "b", "named"),
    [
        ("-tp 4", "-tp 8", {"parallel_config.tensor_parallel_size", "parallel_config.world_size"}),
        ("-O1", "-O3", {"compilation_config.cudagraph_mode"}),
        ("--env VLLM_USE_DEEP_GEMM=0", "", {"VLLM_USE_DEEP_GEMM"}),
    ],
)
def test_cache_explain_names_what_moved(
    cache: tuple[Path, Path, str], a: str, b: str, named: set[str]
) -> None:
    model, _root, _key = cache
    serve = f"vllm serve {model}"
    code, data = _explain(f"{a} {serve}" if a.startswith("--env") else f"{serve} {a}",
                          f"{serve} {b}", "--device", "h100")  # fmt: skip
    assert code == 1
    assert named <= set(_moved(data))
    parts = {f["part"] for f in data["findings"]}
    assert parts == ({"env"} if a.startswith("--env") else {"config"})


def test_cache_explain_same_launch_same_key(cache: tuple[Path, Path, str]) -> None:
    model, _root, _key = cache
    code, data = _explain(
        f"vllm serve {model} -tp 2", f"vllm serve {model} -tp 2", "--device", "h100"
    )
    assert (code, data["same"], data["findings"]) == (0, True, [])
    assert data["compared"] == ["env", "config"]


def test_cache_explain_a_033_cache_against_a_034_launch(
    cache: tuple[Path, Path, str], tmp_path: Path
) -> None:
    model, _root, _key = cache
    old = tmp_path / "old" / "torch_compile_cache" / "0123456789" / "rank_0_0" / "backbone"
    old.mkdir(parents=True)
    env = compute("0.33.0", dict(os.environ)).factors
    written = {
        "env": env,
        "config_hash": "c" * 64,
        "code_hash": "d" * 64,
        "compiler_hash": "e" * 64,
    }
    (old / "cache_key_factors.json").write_text(json.dumps(written), encoding="utf-8")
    code, data = _explain(str(tmp_path / "old"), f"vllm serve {model}", "--device", "h100")
    assert code == 1
    assert data["findings"][0]["part"] == "scheme"
    assert "0.33 or older vs 0.34.0" in data["findings"][0]["message"]


def test_cache_explain_refuses_what_is_neither(tmp_path: Path) -> None:
    out = run("cache", "explain", str(tmp_path), "-tp 2", "--device", "h100")
    assert out.exit_code == 2
    assert "no cache_key_factors.json" in out.stderr
    one = run("cache", "explain", "-tp 2")
    assert one.exit_code == 2
    assert "give two sides" in one.stderr
