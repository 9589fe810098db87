"""IR ops that run: native implementations against a plain float64 formula, and
dispatch following vLLM's priority filtering on a target."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from kernelcfg import for_version  # noqa: E402
from kernelcfg.base.errors import UnknownProviderError  # noqa: E402
from kernelcfg.targets.presets import PRESETS  # noqa: E402
from kernelcfg.vllm.kernel_config.ir import registry  # noqa: E402
from kernelcfg.vllm.kernel_config.ir.native import fused_add_rms_norm, gelu_and_mul_sparse, rms_norm  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _fresh_registries() -> None:
    """Each test starts with no dispatch priority set anywhere."""
    from kernelcfg.vllm.kernel_config.ir import ops

    ops._REGISTRIES.clear()


DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 2e-3), torch.bfloat16: (2e-2, 1.6e-2)}


def _reference_rms(x64: Any, w64: Any, eps: float, vs: int | None) -> Any:
    sample = x64 if vs is None else x64[..., :vs]
    out = x64 / torch.sqrt((sample * sample).mean(dim=-1, keepdim=True) + eps)
    return out if w64 is None else out * w64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("variance_size", [None, 48])
def test_rms_norm_matches_formula(dtype: Any, with_weight: bool, variance_size: int | None) -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(7, 128, generator=gen).to(dtype)
    weight = torch.randn(128, generator=gen).to(dtype) if with_weight else None
    out = rms_norm(x, weight, 1e-6, variance_size)
    assert out.dtype == dtype
    assert out.shape == x.shape
    expected = _reference_rms(
        x.double(), None if weight is None else weight.double(), 1e-6, variance_size
    )
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(out.double(), expected, atol=atol * 10, rtol=rtol * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("variance_size", [None, 32])
def test_fused_add_rms_norm_matches_formula(
    dtype: Any, with_weight: bool, variance_size: int | None
) -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(5, 96, generator=gen).to(dtype)
    residual = torch.randn(5, 96, generator=gen).to(dtype)
    weight = torch.randn(96, generator=gen).to(dtype) if with_weight else None
    out, new_residual = fused_add_rms_norm(x, residual, weight, 1e-5, variance_size)
    total = x.double() + residual.double()
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(new_residual.double(), total, atol=atol * 10, rtol=rtol * 10)
    expected = _reference_rms(
        total, None if weight is None else weight.double(), 1e-5, variance_size
    )
    torch.testing.assert_close(out.double(), expected, atol=atol * 10, rtol=rtol * 10)
    assert out.dtype == dtype
    assert new_residual.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_and_mul_sparse_matches_formula(dtype: Any, approximate: str) -> None:
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(6, 64, generator=gen).to(dtype)
    out = gelu_and_mul_sparse(x, 1.6448536269514722, approximate)
    x64 = x.double()
    gate, up = x64[..., :32], x64[..., 32:]
    mean = gate.mean(dim=-1, keepdim=True)
    std = ((gate - mean) ** 2).mean(dim=-1, keepdim=True).sqrt()
    sparse = torch.clamp(gate - (mean + std * 1.6448536269514722), min=0)
    if approximate == "tanh":
        gelu = 0.5 * sparse * (1 + torch.tanh(0.7978845608028654 * (sparse + 0.044715 * sparse**3)))
    else:
        gelu = 0.5 * sparse * (1 + torch.erf(sparse / 2**0.5))
    atol, rtol = TOL[dtype]
    torch.testing.assert_close(out.double(), gelu * up, atol=atol * 20, rtol=rtol * 20)


def test_dispatch_follows_priority_and_arguments() -> None:
    release = for_version("0.33.0").release
    op = registry(release, PRESETS["h100"]).op("rms_norm")
    x = torch.randn(4, 64)
    weight = torch.randn(64)
    assert op.dispatch(x, weight, 1e-6) == "native"  # no priority set yet
    op.set_default(["vllm_c", "native"])
    assert op.get_priority() == ["vllm_c", "native"]
    assert op.dispatch(x, weight, 1e-6) == "vllm_c"
    assert op.dispatch(x, weight, 1e-6, 32) == "native"  # vllm_c refuses variance_size
    assert op.dispatch(x, weight.half(), 1e-6) == "native"  # weight dtype differs
    with op.set_priority(["native"]):
        assert op.dispatch(x, weight, 1e-6) == "native"
    assert op.dispatch(x, weight, 1e-6) == "vllm_c"


def test_unsupported_providers_are_skipped_and_native_appended() -> None:
    release = for_version("0.33.0").release
    on_h100 = registry(release, PRESETS["h100"]).op("rms_norm")
    assert on_h100.chain(["oink", "aiter", "vllm_c"]) == ["vllm_c", "native"]
    on_b200 = registry(release, PRESETS["b200"]).op("rms_norm")
    assert on_b200.chain(["oink"]) == ["oink", "native"]
    on_cpu = registry(release, PRESETS["cpu"]).op("rms_norm")
    assert on_cpu.chain(["vllm_c"]) == ["native"]
    assert on_cpu.chain(["native", "vllm_c"]) == ["native"]


def test_oink_needs_weight_and_aligned_rows() -> None:
    release = for_version("0.33.0").release
    op = registry(release, PRESETS["b200"]).op("rms_norm")
    op.set_default(["oink", "native"])
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    w = torch.randn(64, dtype=torch.bfloat16)
    assert op.dispatch(x, w, 1e-6) == "oink"
    assert op.dispatch(x, None, 1e-6) == "native"
    assert op.dispatch(torch.randn(4, 65, dtype=torch.bfloat16)[:, :64], w, 1e-6) == "native"


def test_aiter_flattening_rule_on_rocm() -> None:
    release = for_version("0.33.0").release
    op = registry(release, PRESETS["mi300x"]).op("rms_norm")
    op.set_default(["aiter", "vllm_c", "native"])
    x = torch.randn(2, 3, 64, dtype=torch.float16)
    assert op.dispatch(x, None, 1e-6) == "aiter"
    assert op.dispatch(x.float(), None, 1e-6) == "vllm_c"  # aiter takes fp16/bf16 only
    assert op.dispatch(x.transpose(0, 1), None, 1e-6) == "vllm_c"  # not free to flatten


def test_triton_gelu_needs_cuda_tensors() -> None:
    release = for_version("0.33.0").release
    op = registry(release, PRESETS["h100"]).op("gelu_and_mul_sparse")
    op.set_default(["triton", "native"])
    assert op.dispatch(torch.randn(2, 8), 1.0, "tanh") == "native"


def test_set_default_from_the_config() -> None:
    api = for_version("0.33.0")
    config = api.IrOpPriorityConfig(rms_norm=["vllm_c", "native"])
    ops = registry(api.release)  # this machine: no GPU here means cpu
    config.set_default()
    assert ops.op("rms_norm").get_priority() in (["native"], ["vllm_c", "native"])
    with pytest.raises(UnknownProviderError, match="cuda"):
        api.IrOpPriorityConfig(rms_norm=["cuda"]).set_default()


def test_op_runs_native() -> None:
    release = for_version("0.33.0").release
    op = registry(release, PRESETS["cpu"]).op("rms_norm")
    x = torch.ones(2, 4)
    torch.testing.assert_close(op(x, None, 0.0), x)
