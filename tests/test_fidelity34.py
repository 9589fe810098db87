"""Issue 34: where vLLM, executed or read, disagrees with kernelcfg. gpt-oss's linear
layers are labelled by what they are (BF16; MXFP4 is its experts' only); a
``--linear-backend`` whose kernels vLLM walks alone and none can implement the layers
is refused with vLLM's load-time error, naming what runs instead."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm import releases
from kernelcfg.vllm.kernels.linear import model as linear_model

from .cli_helpers import run
from .test_attention_old import GPT_OSS, LLAMA
from .test_moe_checkpoint import CT_FP8_STATIC, CT_W4A8_FP8

RELEASES = releases.known_versions()
"""Every release kernelcfg has data for: one added later is checked without editing here."""


def _model(tmp_path: Path, name: str, config: dict[str, Any]) -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def _resolve(*args: str) -> dict[str, Any]:
    done = run("resolve", "--format", "json", *args)
    assert done.exit_code in (0, 1), done.stderr
    data: dict[str, Any] = done.json()
    return data


# 4. gpt-oss: BF16 linear layers, MXFP4 experts


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0", "0.34.0"])
def test_gpt_oss_linear_layers_are_labelled_by_their_kind(tmp_path: Path, version: str) -> None:
    model = _model(tmp_path, "gpt-oss-20b", GPT_OSS)
    argv = ["--device", "h100", "--vllm-version", version, "--", "vllm", "serve", model]
    data = _resolve(*argv)
    linear = data["selection"]["linear_backend"]
    own = releases.data_file(f"linear-{version}.json")["scheme_layers"][linear["scheme"]]
    assert linear["layers"]
    assert not set(linear["layers"]) & set(own)  # none of them is the checkpoint's scheme
    assert linear["experts_only"]
    assert data["selection"]["moe_backend"]["variant"].startswith(linear["scheme"])
    table = run("resolve", *argv).stdout
    (line,) = [t for t in table.splitlines() if t.startswith("linear layers ")]
    assert line.startswith(f"linear layers {', '.join(linear['layers'])}:")
    assert f"{linear['scheme']}:" not in line


# 5. Refusals vLLM makes at load


def _raises_for(version: str, device_kind: str, layer_kind: str, value: str) -> bool:
    """Whether the release's linear data walks only ``value``'s kernels for the layer
    kind and none passes, with the default environment, every switch on and every
    switch off (from the data)."""
    found = linear_model(version)
    assert found is not None
    where = found.where(device_kind, "9.0" if device_kind == "cuda" else None, "gfx942", "all", {})
    envs = [where] + [
        dataclasses.replace(where, env=dict.fromkeys(where.env, b)) for b in (True, False)
    ]
    picks = [found.pick_named(layer_kind, w, value) for w in envs]
    return all(p is not None and p.status == "error" for p in picks)


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize(
    "case",
    [
        ("mi300x", "rocm", CT_FP8_STATIC, "aiter", "fp8_tensor/static_act"),
        ("h100", "cuda", CT_W4A8_FP8, "exllama", "w4a8_fp8/int4_fp8"),
    ],
)
def test_a_backend_vllm_walks_alone_and_cannot_use_is_refused(
    tmp_path: Path, version: str, case: tuple[str, str, dict[str, Any], str, str]
) -> None:
    device, kind, config, value, layer = case
    model = _model(tmp_path, "dense", {**LLAMA, "quantization_config": config})
    argv = ["--device", device, "--vllm-version", version, "--linear-backend", value]
    data = _resolve(*argv, "--", "vllm", "serve", model)
    errors = [p for p in data["problems"] if p["field"] == "linear_backend"]
    if not _raises_for(version, kind, layer, value):
        assert all(p["severity"] != "error" for p in errors)
        return
    (refusal,) = errors
    assert refusal["severity"] == "error"
    assert "Failed to find a kernel that can implement" in refusal["message"]
    assert layer in refusal["message"]
    assert "runs here instead" in refusal["message"]
    assert "chooses automatically" not in json.dumps(data["problems"])
    assert not data["valid"]


@pytest.mark.parametrize("version", RELEASES)
def test_every_kernel_list_says_vllms_load_time_error(version: str) -> None:
    """Each list a layer's kernels are walked from has vLLM's ``Failed to find a kernel``
    error, naming the layer family its function raises for, with the release's line."""
    data = releases.data_file(f"linear-{version}.json")
    lists = {s["list"] for s in data["selectors"].values() if "list" in s}
    assert lists == set(data["no_kernel_error"])
    for name in lists:
        said = data["no_kernel_error"][name]
        assert said["error"].startswith("ValueError: Failed to find a kernel that can implement")
        assert said["source"].startswith("vllm/model_executor/kernels/linear/__init__.py:")
    assert len({data["no_kernel_error"][n]["source"] for n in lists}) == len(
        {data["no_kernel_error"][n]["error"] for n in lists}
    )  # one raise per layer family


@pytest.mark.parametrize("version", RELEASES)
def test_a_backend_with_no_kernel_in_the_list_raises_where_the_release_does(
    version: str,
) -> None:
    """Every kernel list says what vLLM does when ``--linear-backend`` has none of its
    kernels there: raise (every list in 0.26.0 and 0.27.0, MXFP6's in 0.28.0) or warn and
    walk the whole list. Humming (Machete where the release has no Humming value) has no
    MXFP6 kernel on ROCm: refused at load where the
    release raises, a warning otherwise (also where MXFP6 layers walk no kernel list, as
    Quark's OCP MX layers in 0.26.0: the value is never read for them)."""
    data = releases.data_file(f"linear-{version}.json")
    lists = {s["list"] for s in data["selectors"].values() if "list" in s}
    assert lists == set(data["no_named_kernel_error"])
    for name in lists:
        said = data["no_named_kernel_error"][name]
        assert ("error" in said) is not said.get("falls_back", False)
        assert said["source"].startswith("vllm/model_executor/kernels/linear/__init__.py:")
    kinds = data["scheme_layers"]["mxfp6"]
    walked = {data["selectors"][data["layers"][k]["selector"]].get("list") for k in kinds}
    mxfp6 = [data["no_named_kernel_error"][w] for w in walked if w is not None]
    argv = ["--device", "mi355x", "--vllm-version", version, "--quant-scheme", "mxfp6"]
    choices = releases.data_file(f"vllm-{version}.json")["choices"]["LinearBackend"]
    value = "humming" if "humming" in choices else "machete"  # 0.24.0 has no 'humming'
    found = _resolve(*argv, "--linear-backend", value)
    (said,) = [p for p in found["problems"] if p["field"] == "linear_backend"]
    if mxfp6 and all("error" in m for m in mxfp6):
        assert said["severity"] == "error"
        assert mxfp6[0]["error"].format(value=value) in said["message"]
        assert not found["valid"]
    else:
        assert said["severity"] == "warning"
        assert "chooses automatically" in said["message"]


def test_the_refusal_is_vllms_for_the_issue_cases(tmp_path: Path) -> None:
    """The two launches of the issue: both refused in 0.33.0 (vLLM's source and its
    executed constraint cells agree)."""
    assert _raises_for("0.33.0", "rocm", "fp8_tensor/static_act", "aiter")
    assert _raises_for("0.33.0", "cuda", "w4a8_fp8/int4_fp8", "exllama")


def test_aiter_with_aiter_off_is_a_warning_not_a_refusal() -> None:
    """On MI355X, AITER's FP8 per-channel kernel runs once VLLM_ROCM_USE_AITER=1 is set
    in the deployment: not a refusal."""
    data = _resolve(
        "--device", "mi355x", "--vllm-version", "0.33.0", "--linear-backend", "aiter",
        "--quant-scheme", "fp8_channel",
    )  # fmt: skip
    said = [p for p in data["problems"] if p["field"] == "linear_backend"]
    assert said
    assert all(p["severity"] == "warning" for p in said)
