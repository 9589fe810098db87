"""Property-based tests: the plain validation path agrees with pydantic, and the CLI
never shows a traceback, always exits 0, 1 or 2, and always prints parseable JSON."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kernelcfg import for_version
from kernelcfg.commands.pipeline import batch
from kernelcfg.output import render
from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config import validation

from .cli_helpers import run
from .examples import examples

RELEASE = releases.load(None)
API = for_version(None)


def _spell(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [name, name.upper(), name.replace("_", "-"), name.title(), f" {name}", name + "x"]
    )


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from(["yes", "off", "true", "0", "", "auto", "native"]),
    st.floats(allow_nan=False, width=16),
)
backend_values = st.one_of(
    *(_spell(c) for c in RELEASE.choices("moe_backend")[:6]),
    *(_spell(c) for c in RELEASE.choices("linear_backend")[:6]),
    scalars,
)
ir_lists = st.one_of(
    st.lists(st.sampled_from(["native", "vllm_c", "oink", "aiter", "triton", " x", 1]), max_size=4),
    st.sampled_from(["native", "vllm_c, native", " oink ,native", "a,,b", ""]),
    scalars,
)


@st.composite
def kernel_inputs(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for facts in RELEASE.kernel_fields:
        if not draw(st.booleans()):
            continue
        if facts.kind == "ir_op_priority":
            ops = draw(st.lists(st.sampled_from([*RELEASE.ir_ops, "gelu"]), max_size=3))
            out[facts.name] = {op: draw(ir_lists) for op in ops}
        elif facts.kind == "choice_map":
            out[facts.name] = draw(
                st.one_of(
                    st.none(),
                    st.dictionaries(
                        st.sampled_from(["fp8", "nvfp4", ""]), backend_values, max_size=2
                    ),
                )
            )
        elif facts.kind == "bool":
            out[facts.name] = draw(scalars)
        else:
            out[facts.name] = draw(backend_values)
    if draw(st.integers(0, 9)) == 0:
        out["not_a_field"] = 1
    return out


@settings(max_examples=examples(300), deadline=None)
@given(kernel_inputs())
def test_plain_validation_agrees_with_pydantic(given_values: dict[str, Any]) -> None:
    try:
        expected = API.KernelConfig(**given_values).values()
    except (ValidationError, TypeError) as exc:
        try:
            validation.validate_kernel(RELEASE, given_values)
        except type(exc):
            return
        raise AssertionError(f"plain path accepted what pydantic refuses: {given_values}") from None
    assert validation.validate_kernel(RELEASE, given_values) == expected


TOKENS = [
    "--moe-backend",
    "triton",
    "FlashInfer-TRTLLM",
    "--linear-backend",
    "marlin",
    "--sparse-indexer-topk-backend",
    "deep_select",
    "--kernel-config",
    '{"moe_backend": 3}',
    '{"monokernel": "yes"}',
    "{bad",
    "--kernel-config.moe_backend=aiter",
    "--ir-op-priority.rms_norm=vllm_c,native",
    "--ir-op-priority.rms_norm+",
    "-O0",
    "-O5",
    "-O",
    "3",
    "-cc.mode=3",
    "-cc.cudagraph_mode=full",
    "-cc.backend=foo",
    "--enforce-eager",
    "--monokernel",
    "--enable-lora",
    "--all2all-backend",
    "passthrough",
    "pplx",
    "-ep",
    "-tp",
    "x",
    "2",
    "--device",
    "b200",
    "mi300x",
    "--platform",
    "rocm",
    "--gfx-arch",
    "gfx950",
    "--capability",
    "12.0",
    "--env",
    "VLLM_ROCM_USE_AITER=1",
    "--architecture",
    "DeepseekV4ForCausalLM",
    "--enable",
    "--",
    "vllm",
    "serve",
    "m",
    "--max-model-len",
    "4096",
    "--config",
    "--disable-flashinfer-autotune",
    "-q",
    "fp8",
]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=10))
def test_cli_never_crashes(argv: list[str]) -> None:
    result = run("resolve", "--format", "json", *argv)
    assert result.exit_code in (0, 1, 2)
    data = json.loads(result.stdout)
    assert data["valid"] is (result.exit_code == 0)
    assert "Traceback" not in result.stderr


@settings(max_examples=examples(60), deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "moe-backend",
                "kernel-config",
                "enforce-eager",
                "kernel_config.monokernel",
                "optimization-level",
                "all2all-backend",
                "unrelated-flag",
            ]
        ),
        st.one_of(
            scalars,
            st.lists(scalars, max_size=2),
            st.dictionaries(st.sampled_from(["moe_backend", "bogus"]), scalars, max_size=2),
        ),
        max_size=4,
    )
)
def test_yaml_config_never_crashes(content: dict[str, Any]) -> None:
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.yaml"
        path.write_text(yaml.safe_dump(content))
        result = run("resolve", "--device", "h100", "--format", "json", "--config", str(path))
    assert result.exit_code in (0, 1, 2)
    json.loads(result.stdout)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.lists(st.sampled_from(TOKENS), max_size=8), min_size=1, max_size=5))
def test_batch_lines_match_single_objects(lines: list[list[str]]) -> None:
    raw = [json.dumps(line) for line in lines]
    for entry, argv in zip(batch(raw), lines, strict=True):
        extra = {"id": entry.id, "exit_code": render.exit_code_of(entry.result)}
        line = json.loads(render.json_line(entry.result, extra))
        assert line == {**render.as_data(entry.result), **extra}, argv
