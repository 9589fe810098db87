"""The environment's part of the compile-cache key (``envs.compile_factors()``), per release.

The vectors (``tests/golden/vllm-X/compile-cache-env.json``, the env parts of the shared
``compile-cache.json``) were made by vLLM 0.33.0 and 0.34.0 themselves; the older releases'
(``compile-cache-env.json.gz``) by executing each release's own ``envs.compile_factors()``
on the same environments (``scripts/release/execute/env_factors.py``, which reproduces
real vLLM's 0.33.0 and 0.34.0 records).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelcfg.vllm import releases
from kernelcfg.vllm.compile_cache import env as compile_env
from kernelcfg.vllm.compile_cache.env import EnvInputs, UnknownEnvFactorError

from .conftest import GOLDEN

_NAME = "compile-cache-env.json"


def _path(version: str) -> Any:
    """Real vLLM's file as copied (``.json``), or an executed one packed (``.json.gz``)."""
    plain = GOLDEN / f"vllm-{version}" / _NAME
    return plain if plain.is_file() else plain.with_name(_NAME + ".gz")


VECTOR_RELEASES = tuple(v for v in releases.known_versions() if _path(v).is_file())
"""The releases kernelcfg knows that have env vectors (real or executed)."""
PLACEHOLDERS = ("{SCRATCH}", "{SITE_PACKAGES}")
"""Stand-ins the vectors print for the generator's own folders: those hashes were made
with the real path, so only the factors can be compared."""


@cache
def _vectors(version: str) -> dict[str, Any]:
    path = _path(version)
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data: dict[str, Any] = json.loads(raw)
    return data


def _inputs(data: dict[str, Any], record: dict[str, Any]) -> EnvInputs:
    torch = data["meta"]["package_versions"]["torch"]
    return EnvInputs(torch_version=torch, platform="rocm" if record["rocm_torch"] else "cuda")


def _factors_of(data: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """A record's ``env_factors``, rebuilt from the baseline and its differences."""
    absent = set(record["env_factors_absent"])
    found = {k: v for k, v in data["baseline_factors"].items() if k not in absent}
    found.update(record["env_factors_changed"])
    return found


def _records(kind: str) -> list[Any]:
    return [pytest.param(v, r, id=r["id"]) for v in VECTOR_RELEASES for r in _vectors(v)[kind]]


@pytest.mark.golden
@pytest.mark.parametrize(("version", "record"), _records("env_records"))
def test_env_factors_and_hash_equal_vllms(version: str, record: dict[str, Any]) -> None:
    data = _vectors(version)
    found = compile_env.compute(version, record["env"], _inputs(data, record))
    assert json.dumps(found.factors, sort_keys=True) == json.dumps(
        _factors_of(data, record), sort_keys=True
    )
    assert sorted(found.skipped) == sorted(record.get("skipped_by_parser_error") or [])
    if not any(p in json.dumps(record["env"]) for p in PLACEHOLDERS):
        assert found.hash == record["env_hash"]


@pytest.mark.golden
@pytest.mark.parametrize(("version", "record"), _records("env_ignored_records"))
def test_ignored_variables_leave_the_hash_alone(version: str, record: dict[str, Any]) -> None:
    data = _vectors(version)
    inputs = _inputs(data, record)
    base = compile_env.env_hash(version, {}, inputs)
    assert compile_env.env_hash(version, record["env"], inputs) == base == record["env_hash"]


@pytest.mark.golden
@pytest.mark.parametrize("version", VECTOR_RELEASES)
def test_ignored_set_and_declared_variables_match_the_vectors(version: str) -> None:
    env = _vectors(version)["meta"]["env"]
    data = compile_env.env_data(version)
    declared_ignored = set(data["ignored"]) & set(data["variables"])  # vLLM's set names
    assert sorted(declared_ignored) == sorted(env["ignored_by_compile_factors"])  # old ones too
    assert len(data["variables"]) == env["declared_variables"]
    assert sorted(data["hashed_as_read"]) == sorted(env["hashed_undeclared_variables"])


def _input_checks() -> list[Any]:
    out = []
    for version in VECTOR_RELEASES:
        for check in _vectors(version)["meta"]["env"]["env_inputs_beyond_environment"]["checks"]:
            if _check_call(check) is not None:  # not: the real install path of vllm-rs
                out.append(pytest.param(version, check, id=f"{version}:{check['input']}"))
    return out


_TORCH = "torch.__version__ = "
_RUST = "VLLM_USE_RUST_FRONTEND=1, VLLM_RUST_FRONTEND_PATH="


def _check_call(check: dict[str, Any]) -> tuple[dict[str, str], EnvInputs] | None:
    """The environment and inputs a recorded check stands for (None: not reproducible
    here, e.g. the real install path or the machine's CPU count)."""
    text, base = check["input"], "2.13.0+cpu"
    if text.startswith(_TORCH):
        return {}, EnvInputs(torch_version=text.removeprefix(_TORCH).split(" ")[0])
    if text.startswith("torch.version.hip"):
        return {}, EnvInputs(torch_version=base, platform="rocm")
    if text.startswith(_RUST):
        path = text.removeprefix(_RUST)
        env = {"VLLM_USE_RUST_FRONTEND": "1", "VLLM_RUST_FRONTEND_PATH": path}
        return env, EnvInputs(torch_version=base)
    if text.startswith("VLLM_RUST_FRONTEND_PATH=/x"):
        return {"VLLM_RUST_FRONTEND_PATH": "/x"}, EnvInputs(torch_version=base)
    if text.startswith(("HOME", "os.cpu_count()")):  # read by ignored variables only
        moved = dict.fromkeys(("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TMPDIR"), "/elsewhere")
        return (moved if text.startswith("HOME") else {}), EnvInputs(torch_version=base)
    return None


@pytest.mark.golden
@pytest.mark.parametrize(("version", "check"), _input_checks())
def test_inputs_beyond_the_environment(version: str, check: dict[str, Any]) -> None:
    """The torch version, a ROCm torch, the Rust frontend's path, a moved HOME."""
    call = _check_call(check)
    assert call is not None
    assert compile_env.env_hash(version, *call) == check["env_hash"]


def test_rust_frontend_auto_is_the_installed_binary() -> None:
    env = {"VLLM_USE_RUST_FRONTEND": "1"}
    with pytest.raises(UnknownEnvFactorError, match="VLLM_RUST_FRONTEND_PATH"):
        compile_env.env_hash("0.34.0", env)
    found = compile_env.compute("0.34.0", env)
    assert found.unknown == ("VLLM_RUST_FRONTEND_PATH",)
    assert found.hash is None
    given_dir = EnvInputs(vllm_package_dir="/site/vllm")
    factors = compile_env.env_factors("0.34.0", env, given_dir)
    assert factors["VLLM_RUST_FRONTEND_PATH"] == "/site/vllm/vllm-rs"


def test_rust_frontend_switches_are_the_release_data() -> None:
    # 0.34.0 turns the path on with VLLM_USE_RUST_BENCH too; an entry naming its
    # switches (0.26.0's _resolve_rust_frontend_path reads VLLM_USE_RUST_FRONTEND only)
    # is read with those alone
    from kernelcfg.vllm.compile_cache.env import _Reader

    data = compile_env.env_data("0.34.0")
    bench = {"VLLM_USE_RUST_BENCH": "1", "VLLM_RUST_FRONTEND_PATH": "/opt/vllm-rs"}
    reader = _Reader(data, bench, EnvInputs())
    assert reader.value("VLLM_RUST_FRONTEND_PATH") == "/opt/vllm-rs"
    entry = data["variables"]["VLLM_RUST_FRONTEND_PATH"]
    older = {
        **data,
        "variables": {"VLLM_RUST_FRONTEND_PATH": {**entry, "switches": ["VLLM_USE_RUST_FRONTEND"]}},
    }
    assert _Reader(older, bench, EnvInputs()).value("VLLM_RUST_FRONTEND_PATH") is None


BOOLEANS = ("1", "true", "TRUE", "")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # bool(int(os.getenv(N, "0"))): only integers parse; "" and words are skipped.
        ("VLLM_BATCH_INVARIANT", (True, None, None, None)),
        # os.getenv(N, "0").strip().lower() in ("1", "true")
        ("VLLM_REPLICATE_EMBED", (True, True, True, False)),
        # os.environ.get(N, "1") == "1"
        ("VLLM_USE_STANDALONE_COMPILE", (True, False, False, False)),
        # maybe_convert_bool(os.getenv(N)): None unset, bool(int(value)) set
        ("VLLM_USE_V2_MODEL_RUNNER", (True, None, None, None)),
        # {"1": True, "0": False}.get(os.getenv(N, "").strip())
        ("VLLM_TRITON_USE_TD", (True, None, None, None)),
        # env_with_choices(N, "auto", [...], case_sensitive=False) with "0"/"1" allowed
        ("VLLM_ROCM_USE_AITER_MOE_SITUV2", ("1", None, None, None)),
    ],
)
def test_booleans_as_each_parser_reads_them(name: str, expected: tuple[Any, ...]) -> None:
    """``1``/``true``/``TRUE``/``""`` in 0.33.0: ``None`` where vLLM's parser raises (the
    variable is left out) or returns None."""
    for raw, want in zip(BOOLEANS, expected, strict=True):
        found = compile_env.compute("0.33.0", {name: raw})
        if want is None and name in found.skipped:
            continue
        assert name not in found.skipped, (raw, found.skipped)
        assert found.factors[name] == want, raw


def test_unknown_vllm_names_stay_out() -> None:
    base = compile_env.env_factors("0.34.0", {})
    odd = {"VLLM_FOO": "1", "VLLM_": "x", "VLLM_USE_V1": "1", "VLLM_ATTENTION_BACKENDS": "x"}
    assert compile_env.env_factors("0.34.0", odd) == base
    assert not set(odd) & set(base)


def test_a_variable_read_under_another_name() -> None:
    """VLLM_TPU_USING_PATHWAYS reads JAX_PLATFORMS, not itself."""
    assert (
        compile_env.env_factors("0.34.0", {"VLLM_TPU_USING_PATHWAYS": "proxy"})[
            "VLLM_TPU_USING_PATHWAYS"
        ]
        is False
    )
    assert (
        compile_env.env_factors("0.34.0", {"JAX_PLATFORMS": "Proxy,cpu"})["VLLM_TPU_USING_PATHWAYS"]
        is True
    )


def test_a_default_that_raises_takes_its_reader_out() -> None:
    """vLLM computes ``getenv``'s default first: VLLM_DP_RANK=abc also takes
    VLLM_DP_RANK_LOCAL out, set or not; VLLM_DISABLE_COMPILE_CACHE=x takes both AOT
    switches out."""
    found = compile_env.compute("0.34.0", {"VLLM_DP_RANK": "abc", "VLLM_DP_RANK_LOCAL": "1"})
    assert {"VLLM_DP_RANK", "VLLM_DP_RANK_LOCAL"} <= set(found.skipped)
    found = compile_env.compute("0.34.0", {"VLLM_DISABLE_COMPILE_CACHE": "x"})
    assert {"VLLM_USE_AOT_COMPILE", "VLLM_USE_MEGA_AOT_ARTIFACT"} <= set(found.skipped)


def test_the_release_pin_is_the_default_torch() -> None:
    """0.34.0 pins torch 2.14.0: compile-on-one-rank can switch on; 2.13 keeps it off."""
    env = {"VLLM_COMPILE_ON_ONE_RANK": "1"}
    assert compile_env.env_factors("0.34.0", env)["VLLM_COMPILE_ON_ONE_RANK"] is True
    old = EnvInputs(torch_version="2.13.0+cpu")
    assert compile_env.env_factors("0.34.0", env, old)["VLLM_COMPILE_ON_ONE_RANK"] is False
    cpu = EnvInputs(platform="cpu")
    assert compile_env.env_factors("0.34.0", env, cpu)["VLLM_COMPILE_ON_ONE_RANK"] is False


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("2.12.0.dev", "2.12.0"),
        ("2.11.0", "2.12.0.dev"),
        ("2.12.0.dev20250101", "2.12.0.dev20250102"),
        ("2.12.0.dev", "2.12.0a0"),
        ("2.12.0a0", "2.12.0rc1"),
        ("2.12.0rc1", "2.12.0"),
        ("2.12.0", "2.12.0.post1"),
        ("2.9.1", "2.10.0"),
    ],
)
def test_version_order_is_pep_440(left: str, right: str) -> None:
    assert compile_env.version_order(left) < compile_env.version_order(right)


def test_a_local_version_part_does_not_matter() -> None:
    order = compile_env.version_order
    assert order("2.13.0+cpu") == order("2.13.0") == order("2.13")


@pytest.mark.parametrize("version", releases.known_versions())
def test_release_data_loads_with_known_kinds(version: str) -> None:
    data = compile_env.env_data(version)
    assert data["vllm_version"] == version
    assert data["torch_pin"]
    declared = data["variables"]
    for name, entry in declared.items():
        assert entry["kind"] in compile_env.KINDS, name
        if "default_from" in entry:
            assert name in data["ignored"], f"{name}: an unknown default would be hashed"
    found = compile_env.compute(version, {})
    assert not found.skipped
    assert not found.unknown
    assert found.hash is not None
    assert len(found.hash) == 64


@pytest.mark.parametrize("version", releases.known_versions())
def test_unset_and_empty_differ_where_vllm_says(version: str) -> None:
    """A declared variable never makes the hash fail; ray's variables enter as read."""
    found = compile_env.compute(version, {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"})
    assert found.factors["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"] == "1"
    assert compile_env.env_hash(version, {}) != found.hash


_VALUES = st.sampled_from(["1", "0", "true", "TRUE", "", " 1", "abc", "-1", "1e3", "x,y", "auto"])


@pytest.mark.parametrize("version", releases.known_versions())
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_ignored_variable_leaves_the_hash_alone(version: str, data: st.DataObject) -> None:
    ignored = sorted(compile_env.env_data(version)["ignored"])
    names = data.draw(st.lists(st.sampled_from(ignored), max_size=6, unique=True))
    env = {name: data.draw(_VALUES) for name in names}
    assert compile_env.env_hash(version, env) == compile_env.env_hash(version, {})
