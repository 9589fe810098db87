"""Every command's JSON output has the one envelope and matches its published schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from kernelcfg.output.schemas import OUTPUTS

from .cli_helpers import run

R1 = str(Path(__file__).resolve().parent.parent / "docs" / "examples" / "deepseek-r1")
"""DeepSeek-R1's config.json as its producer wrote it (FP8 block-quantised MoE)."""


def _outputs(tmp_path: Path) -> dict[str, list[object]]:
    batch = tmp_path / "lines.jsonl"
    batch.write_text('["--moe-backend", "triton"]\n{"id": "x", "argv": ["--bogus"]}\n')
    saved_a = tmp_path / "a.json"
    saved_a.write_text(run("resolve", "--device", "h100", "--format", "json").stdout)
    saved_b = tmp_path / "b.json"
    saved_b.write_text(
        run("resolve", "--device", "h100", "--moe-backend", "triton", "--format", "json").stdout
    )
    script = tmp_path / "serve.sh"
    script.write_text("vllm serve m --moe-backend aiter\n")
    lines = run("resolve", "--batch", str(batch), "--device", "h100", "--format", "json")
    return {
        "resolve": [
            run("resolve", "--device", "b200", "--format", "json", "--explain-sources").json(),
            run("resolve", "--moe-backend", "nope", "--format", "json").json(),
            run(
                "resolve",
                "--device",
                "rtx-pro-6000",
                "--architecture",
                "GptOssForCausalLM",
                "--attention-backend",
                "FLASHINFER",
                "--format",
                "json",
            ).json(),
        ],
        "batch-line": [json.loads(line) for line in lines.stdout.splitlines()],
        "why": [
            run(
                "why",
                "linear_backend",
                "--device",
                "h100",
                "--quant-scheme",
                "fp8_block",
                "--format",
                "json",
            ).json(),
            run(  # a value named by flag: the checks resolve makes of it
                "why",
                "linear_backend",
                "--device",
                "h100",
                "--quant-scheme",
                "fp8_block",
                "--linear-backend",
                "flashinfer_cutlass",
                "--format",
                "json",
            ).json(),
        ],
        "versions": [run("versions", "--format", "json").json()],
        "versions-compare": [run("versions", "0.33", "0.34", "--format", "json").json()],
        "backends": [run("backends", "--device", "mi300x", "--format", "json").json()],
        "diff": [run("diff", str(saved_a), str(saved_b), "--format", "json").json()],
        "upgrade": [
            run(*upgrade, "--format", "json", *serve).json()
            for upgrade, serve in (
                (["upgrade", "0.33", "0.34", "--device", "h100"], ["--", "vllm", "serve", R1]),
                (["upgrade", "0.29", "0.30.1"], ["--enable-bf16x3-router-gemm"]),
            )
        ],
        "cache-explain": [
            run("cache", "explain", "-tp 4", "-tp 8", "--device", "h100", "--format", "json").json()
        ],
        "explain": [run("explain", "moe_backend=triton", "--format", "json").json()],
        "lint-env": [run("lint-env", "--format", "json", env={"VLLM_X": "1"}).json()],
        "scan": [run("scan", str(script), "--device", "h100", "--format", "json").json()],
    }


def test_every_output_matches_its_schema(tmp_path: Path) -> None:
    outputs = _outputs(tmp_path)
    assert set(outputs) == set(OUTPUTS)
    for name, documents in outputs.items():
        schema = json.loads(run("schema", "--of", name).stdout)
        jsonschema.Draft202012Validator.check_schema(schema)
        for document in documents:
            jsonschema.validate(document, schema)
            assert isinstance(document, dict)
            assert next(iter(document)) == "format_version", name


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_schema_refuses_a_wrong_shape(name: str) -> None:
    schema = json.loads(run("schema", "--of", name).stdout)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"format_version": "2"}, schema)
