"""set_platform_defaults vectors that a command line can reach, run as command lines
through ``resolve --batch``: same IR lists, all2all backend, hash or refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .cli_helpers import run
from .conftest import enum_name, golden, golden_versions

pytestmark = pytest.mark.golden

_KIND = {
    "RocmPlatform": "rocm",
    "CudaPlatform": "cuda",
    "XPUPlatform": "xpu",
    "CpuPlatform": "cpu",
    "ZenCpuPlatform": "cpu",
    "Platform": "cpu",
    "UnspecifiedPlatform": "cpu",
}


def _argv(version: str, case: dict[str, Any]) -> list[str] | None:
    """The command line for a vector, or None where no command line reaches it."""
    cc = case["compilation_config"]
    a2a = case["all2all_backend_in"]
    if cc["backend"] == "" or a2a in ("naive", "pplx"):
        return None
    if "None assigned" in (case.get("note") or "") or case.get("model_architectures") == []:
        return None
    argv = ["--vllm-version", version, "--platform", _KIND[case["platform"]]]
    if case.get("gcn_arch"):
        argv += ["--gfx-arch", case["gcn_arch"]]
    compilation: dict[str, Any] = {"backend": cc["backend"]}
    if cc["mode"] is not None:
        compilation["mode"] = enum_name(cc["mode"])
    if cc["cudagraph_mode"] is not None:
        compilation["cudagraph_mode"] = enum_name(cc["cudagraph_mode"])
    argv += ["-cc", json.dumps(compilation)]
    kernel = dict(case["kernel_kwargs"])
    if case["user_ir_op_priority"] is not None:
        kernel["ir_op_priority"] = case["user_ir_op_priority"]
    if kernel:
        argv += ["--kernel-config", json.dumps(kernel)]
    for key, value in case["env"].items():
        argv += ["--env", f"{key}={value}"]
    if case.get("model_architectures"):
        for arch in case["model_architectures"]:
            argv += ["--architecture", arch]
        argv += ["--env", "VLLM_USE_BREAKABLE_CUDAGRAPH=0"]
    if a2a != "allgather_reducescatter":
        argv += ["--all2all-backend", a2a]
    return argv


def _reachable() -> list[tuple[str, int, dict[str, Any], list[str]]]:
    out = []
    for version in golden_versions():
        for i, case in enumerate(golden(version, "platform-cases")["set_platform_defaults"]):
            argv = _argv(version, case)
            if argv is not None:
                out.append((version, i, case, argv))
    return out


REACHABLE = _reachable()


def test_most_vectors_are_reachable() -> None:
    total = sum(
        len(golden(v, "platform-cases")["set_platform_defaults"]) for v in golden_versions()
    )
    assert len(REACHABLE) > total // 2


@pytest.fixture(scope="module")
def batch_results() -> dict[str, Any]:
    lines = "\n".join(json.dumps({"id": f"{v}:{i}", "argv": argv}) for v, i, _, argv in REACHABLE)
    result = run("resolve", "--batch", "-", stdin=lines + "\n")
    out = {}
    for line in result.stdout.splitlines():
        obj = json.loads(line)
        out[obj["id"]] = obj
    return out


@pytest.mark.parametrize(
    ("version", "index", "case", "argv"), REACHABLE, ids=[f"{v}:{i}" for v, i, _, _ in REACHABLE]
)
def test_vector_through_batch(
    batch_results: dict[str, Any], version: str, index: int, case: dict[str, Any], argv: list[str]
) -> None:
    got = batch_results[f"{version}:{index}"]
    assert got["vllm_version"] == version
    if case.get("construct_error"):
        assert got["exit_code"] == 2, argv
        return
    if case["all2all_backend_in"] == "passthrough":
        assert got["exit_code"] == 2, argv
        assert "passthrough" in got["problems"][0]["message"]
        return
    if case.get("error"):
        assert got["exit_code"] == 1, argv
        assert any(p["message"] == case["error"]["message"] for p in got["problems"])
        return
    # vLLM accepts it; kernelcfg's platform constraints may still refuse the backend here
    errors = [p for p in got["problems"] if p["severity"] == "error"]
    assert all(p["code"] == "backend-cannot-run" for p in errors), (argv, errors)
    assert got["exit_code"] == (1 if errors else 0), (argv, got["problems"])
    assert got["kernel_config"]["ir_op_priority"] == case["ir_after_1"]
    assert got["parallel_config"]["all2all_backend"] == case["all2all_after_1"]
    assert got["hash"] == case["hash_after"]
