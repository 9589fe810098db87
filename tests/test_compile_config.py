"""The config part of the compile-cache key (``VllmConfig``'s sub-config hashes, the
whole config hash, the 0.34.0 factor tree), against vectors vLLM made itself.

The vectors (``tests/golden/vllm-X/compile-cache-launch.json``, the launch records of the
shared ``compile-cache.json``) come from vLLM 0.33.0 and 0.34.0 run on simulated targets:
each launch (a model's config.json, a target, an environment, a ``vllm serve`` line) with
every sub-config's hash, or vLLM's refusal. The model config's hash needs transformers
(``hf_config`` is its ``to_json_string()``): without it, or with another transformers
than the vectors were made with, only that part (and the whole hash) is skipped; every
other part is still checked.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from typing import Any

import pytest

from kernelcfg.engine.resolution import resolve
from kernelcfg.flags import argv
from kernelcfg.targets.presets import PRESETS
from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache import model as compile_model
from kernelcfg.vllm.compile_cache.config import CompileConfig, ConfigRefusal, compile_config

from .conftest import GOLDEN

RELEASES = ("0.33.0", "0.34.0")
MODEL_PARTS = ("model_config",)
"""Parts whose hash needs transformers."""


@cache
def _vectors(version: str) -> dict[str, Any]:
    with (GOLDEN / f"vllm-{version}" / "compile-cache-launch.json").open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def _transformers_mismatch(version: str) -> str | None:
    """Why the model part cannot be checked here (``None``: it can)."""
    tf = compile_model._transformers()
    if tf is None:
        return "transformers is not installed (the model part needs it)"
    wanted = _vectors(version)["meta"]["package_versions"]["transformers"]
    if tf.__version__ != wanted:
        return f"transformers {tf.__version__} here, the vectors were made with {wanted}"
    return None


def _launch(version: str, record: dict[str, Any]) -> Any:
    """What kernelcfg makes of the record's launch: the resolution, then the config."""
    data = _vectors(version)
    release = releases.load(version)
    template = data["meta"]["model_templates"][record["model_template"]]["config_json"]
    folder = data["meta"]["model_folders"][record["model_template"]]
    words = [w.replace("{MODEL}", folder) for w in record["argv"]]
    inputs, _ = argv.parse(words, release, env=dict(record["env"]))
    inputs.hf_config = template
    inputs.architectures = template.get("architectures")
    target = PRESETS[record["target"]]
    found = resolve(inputs, target, release)
    attention = found.attention.config if found.attention is not None else None
    return compile_config(
        release,
        target,
        inputs,
        kernel_config=found.kernel_config,
        attention_config=attention,
        use_transformers=_transformers_mismatch(version) is None,
    )


@cache
def _result(version: str, record_id: str) -> Any:
    record = next(r for r in _vectors(version)["launch_records"] if r["id"] == record_id)
    return _launch(version, record)


def _records(ok: bool) -> list[Any]:
    return [
        pytest.param(v, r, id=f"{v}-{r['id']}")
        for v in RELEASES
        for r in _vectors(v)["launch_records"]
        if r["ok"] is ok
    ]


def _table_factors(version: str, record: dict[str, Any], attr: str) -> Any:
    """The 0.34.0 vectors' factor dict of one part (``None`` before 0.34.0)."""
    data = _vectors(version)
    key = attr.removesuffix("_config")
    refs = record.get("config_factors_refs")
    if not refs or key not in refs:
        return None
    return data["config_factor_tables"][key][refs[key]]


def _checked_parts(record: dict[str, Any]) -> list[str]:
    """The parts a record's hashes are checked for without transformers."""
    return [
        attr
        for attr, want in record["sub_hashes"].items()
        if attr not in ("additional_config", *MODEL_PARTS) and want is not None
    ]


@pytest.mark.golden
@pytest.mark.parametrize(("version", "record"), _records(ok=True))
def test_sub_config_hashes_equal_vllms(version: str, record: dict[str, Any]) -> None:
    """Every part but the model's (0.34.0: its factor dict too)."""
    found = _result(version, record["id"])
    assert isinstance(found, CompileConfig), f"kernelcfg refuses: {found}"
    for attr in _checked_parts(record):
        part = found.parts[attr]
        want = _table_factors(version, record, attr)
        if want is not None:
            assert json.dumps(part.factors, sort_keys=True) == json.dumps(want, sort_keys=True), (
                attr
            )
        assert part.hash == record["sub_hashes"][attr], attr


def _with_whole_hash() -> list[Any]:
    return [
        pytest.param(v, r, id=f"{v}-{r['id']}")
        for v in RELEASES
        for r in _vectors(v)["launch_records"]
        if r["ok"] and r.get("config_hash")
    ]


@pytest.mark.golden
@pytest.mark.parametrize(("version", "record"), _with_whole_hash())
def test_model_part_and_whole_hash_equal_vllms(version: str, record: dict[str, Any]) -> None:
    """The model part (transformers' ``hf_config`` text) and the whole config hash and
    factor tree (0.34.0: the 0.33.0 vectors were made under an unpublished folder)."""
    why = _transformers_mismatch(version)
    if why is not None:
        pytest.skip(why)
    found = _result(version, record["id"])
    assert isinstance(found, CompileConfig)
    model = found.parts["model_config"]
    assert json.dumps(model.factors, sort_keys=True) == json.dumps(
        _table_factors(version, record, "model_config"), sort_keys=True
    )
    assert model.hash == record["sub_hashes"]["model_config"]
    tables = _vectors(version)["config_factor_tables"]
    tree = {k: tables[k][ref] for k, ref in record["config_factors_refs"].items()}
    tree.update(record["config_factors_inline"])
    assert json.dumps(found.config_factors, sort_keys=True) == json.dumps(tree, sort_keys=True)
    assert found.config_hash == record["config_hash"]


@pytest.mark.golden
@pytest.mark.parametrize(("version", "record"), _records(ok=False))
def test_refusals_match_vllms(version: str, record: dict[str, Any]) -> None:
    found = _result(version, record["id"])
    assert isinstance(found, ConfigRefusal), "kernelcfg accepts a launch vLLM refuses"
    assert found.kind == record["error"]["type"]
    assert found.text in record["error"]["message"]


def _shares(version: str) -> Counter[tuple[str, bool]]:
    counts: Counter[tuple[str, bool]] = Counter()
    for record in _vectors(version)["launch_records"]:
        if not record["ok"]:
            continue
        found = _result(version, record["id"])
        for attr in _checked_parts(record):
            same = (
                isinstance(found, CompileConfig)
                and found.parts[attr].hash == record["sub_hashes"][attr]
            )
            counts[(attr, same)] += 1
    return counts


@pytest.mark.golden
@pytest.mark.parametrize("version", RELEASES)
def test_share_per_sub_config(version: str) -> None:
    """Every sub-config's share of launches whose hash equals vLLM's (all of them)."""
    counts = _shares(version)
    parts = sorted({attr for attr, _ in counts})
    shares = {a: f"{counts[(a, True)]}/{counts[(a, True)] + counts[(a, False)]}" for a in parts}
    assert all(counts[(a, False)] == 0 for a in parts), shares


def _one(version: str, template: str, words: list[str], target: str = "h100", **kw: Any) -> Any:
    """kernelcfg's config part for one launch of a vector template (not a vector)."""
    data = _vectors(version)
    release = releases.load(version)
    inputs, _ = argv.parse(["vllm", "serve", f"/models/{template}", *words], release, env={})
    inputs.hf_config = kw.pop("hf", data["meta"]["model_templates"][template]["config_json"])
    found = resolve(inputs, PRESETS[target], release)
    return compile_config(release, PRESETS[target], inputs, kernel_config=found.kernel_config, **kw)


def test_without_config_json_the_model_part_is_unknown_the_rest_exact() -> None:
    record = next(
        r
        for r in _vectors("0.34.0")["launch_records"]
        if r["ok"]
        and r["option_set"] == "defaults"
        and r["env_set"] == "none"
        and r["model_template"] == "llama-3.1-8b"
    )
    found = _one("0.34.0", "llama-3.1-8b", [], record["target"], hf=None)
    assert isinstance(found, CompileConfig)
    assert found.parts["model_config"].hash is None
    assert found.config_hash is None
    assert any(u.startswith("model_config: ") for u in found.unknown)
    assert found.parts["parallel_config"].hash is None
    assert found.parts["offload_config"].hash == record["sub_hashes"]["offload_config"]


def test_without_transformers_the_model_part_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_model, "_transformers", lambda: None)
    monkeypatch.setattr(compile_model, "_transformers_version", lambda: None)
    found = _one("0.34.0", "llama-3.1-8b", [])
    assert isinstance(found, CompileConfig)
    assert found.parts["model_config"].unknown == compile_model.NO_TRANSFORMERS
    assert found.config_hash is None
    assert found.parts["cache_config"].hash is not None


def test_an_option_no_rule_reads_makes_its_part_unknown() -> None:
    found = _one("0.34.0", "llama-3.1-8b", ["--cpu-offload-gb", "4", "--enable-lora"])
    assert isinstance(found, CompileConfig)
    assert found.parts["offload_config"].hash is None
    assert "lora_config" in found.parts
    assert found.config_hash is None


@pytest.mark.parametrize(
    ("words", "part"),
    [
        (["--performance-mode", "throughput"], "scheduler_config"),
        (["--hf-overrides", '{"max_position_embeddings": 4096}'], "model_config"),
        (["--aux-output-config", '{"enable_return_routed_experts": true}'], "aux_output_config"),
        (["--distributed-executor-backend", "external_launcher"], "parallel_config"),
    ],
)
def test_options_beyond_their_field_make_their_parts_unknown(words: list[str], part: str) -> None:
    found = _one("0.34.0", "qwen3-30b-a3b", words)
    assert isinstance(found, CompileConfig)
    assert found.parts[part].hash is None
    assert found.parts["device_config"].hash is not None


def test_ray_takes_async_scheduling_off_and_refuses_it_when_asked() -> None:
    """The Ray executor has no async scheduling: the DP synchronisation switch (hashed)
    stays off, and asking for both is vLLM's refusal."""
    plain = _one("0.34.0", "qwen3-30b-a3b", ["-tp", "2"])
    ray = _one("0.34.0", "qwen3-30b-a3b", ["-tp", "2", "--distributed-executor-backend", "ray"])
    assert isinstance(plain, CompileConfig)
    assert isinstance(ray, CompileConfig)
    assert plain.parts["parallel_config"].factors["disable_nccl_for_dp_synchronization"] is True
    assert ray.parts["parallel_config"].factors["disable_nccl_for_dp_synchronization"] is False
    words = ["--distributed-executor-backend", "ray", "--async-scheduling"]
    refused = _one("0.34.0", "qwen3-30b-a3b", words)
    assert isinstance(refused, ConfigRefusal)
    assert refused.text == "`ray` does not support async scheduling yet."


def test_tensor_parallel_and_optimisation_level_change_the_key() -> None:
    """The issue's two examples: ``-tp 4``/``-tp 8`` and ``-O1``/``-O3`` compile into
    different cache directories."""
    parts = {
        w: _one("0.34.0", "qwen3-30b-a3b", w.split()) for w in ("-tp 4", "-tp 8", "-O1", "-O3")
    }
    assert all(isinstance(p, CompileConfig) for p in parts.values())
    tp4, tp8 = parts["-tp 4"].parts, parts["-tp 8"].parts
    assert tp4["parallel_config"].hash != tp8["parallel_config"].hash
    o1, o3 = parts["-O1"].parts, parts["-O3"].parts
    assert o1["compilation_config"].hash != o3["compilation_config"].hash


def test_batch_invariance_turns_breakable_graphs_on_and_changes_the_kernel_hash() -> None:
    """vLLM compiles nothing for a batch-invariant model with tuned matmul shapes on
    Hopper (breakable CUDA graphs), so the platform's IR-op defaults differ; kernelcfg
    missed it and gave the kernel config of a compiled model."""
    record = next(r for r in _vectors("0.34.0")["launch_records"] if r["id"] == "launch:00161")
    assert record["env_set"] == "batch-invariant"
    found = _launch("0.34.0", record)
    assert found.parts["kernel_config"].hash == record["sub_hashes"]["kernel_config"]
    assert found.parts["compilation_config"].hash == record["sub_hashes"]["compilation_config"]
