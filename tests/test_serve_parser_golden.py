"""Every line of vLLM 0.33.0's ``vllm serve`` parser vectors gets vLLM's decision.

Refused by vLLM (argparse, exit 2, or an exception while reading the arguments) →
kernelcfg exits 2. Accepted → kernelcfg exits 0 or 1, and the kernel-config fields
vLLM set from the line are the ones kernelcfg resolved. Each line runs as a single
command and as a ``--batch`` line holding ``--``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands.pipeline import Failure, Request, batch, resolve_args
from kernelcfg.output import render

from .conftest import GOLDEN

pytestmark = pytest.mark.golden

_FILE = GOLDEN / "vllm-0.33.0" / "serve-parser-cases.json"
_DATA: dict[str, Any] = json.loads(_FILE.read_text(encoding="utf-8"))
_CASES = _DATA["cases"]
_MARK = _DATA["meta"]["config_mark"]
_CONTEXT = ["--vllm-version", "0.33", "--platform", "cpu"]
_PLAIN_FIELDS = (
    "moe_backend",
    "linear_backend",
    "sparse_indexer_topk_backend",
    "monokernel",
    "linear_backend_per_quant",
    "enable_rocm_segmented_attn_autotune",
    "enable_cutedsl_warmup",
)


def _argv(case: dict[str, Any], folder: Path) -> list[str]:
    config = case.get("config_file")
    if config and config.get("written"):
        (folder / config["name"]).write_text(config["content"], encoding="utf-8")
    return [str(folder / a) if a.startswith(_MARK) else a for a in case["argv"]]


def _check(case: dict[str, Any], result: Any, code: int) -> None:
    expected = case["vllm"]
    where = f"case {case['id']}: {case['argv']} -> {expected.get('error')}"
    if not expected["accepted"]:
        assert code == 2, where + f" | kernelcfg {code}"
        return
    assert code in (0, 1), where + f" | {getattr(result, 'problem', None) or result.problems}"
    if code == 1 and expected.get("engine_error"):
        return
    config = result.kernel_config
    assert config is not None, where
    want = expected["kernel_config"]
    for name in _PLAIN_FIELDS:
        assert config[name] == want[name], (where, name)
    if want["enable_flashinfer_autotune"] is not None:
        assert config["enable_flashinfer_autotune"] == want["enable_flashinfer_autotune"], where
    for op, lst in want["ir_op_priority"].items():
        assert config["ir_op_priority"][op][: len(lst)] == lst, (where, op)
    assert result.parallel["tensor_parallel_size"] == expected["parallel"]["tensor_parallel_size"]
    assert result.parallel["data_parallel_size"] == expected["parallel"]["data_parallel_size"]
    assert (
        result.parallel["enable_expert_parallel"] == expected["parallel"]["enable_expert_parallel"]
    )


@pytest.mark.parametrize("case", _CASES, ids=[str(c["id"]) for c in _CASES])
def test_single_command(
    case: dict[str, Any], tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    del clean_env
    result = resolve_args([*_CONTEXT, "--", *_argv(case, tmp_path)], Request(environ={}))
    _check(case, result, render.exit_code_of(result))


def test_batch_lines(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": c["id"], "argv": [*_CONTEXT, "--", *_argv(c, tmp_path)]}) for c in _CASES
    ]
    got = list(batch(lines, request=Request(environ={})))
    assert [g.id for g in got] == [c["id"] for c in _CASES]
    for case, line in zip(_CASES, got, strict=True):
        result = line.result
        _check(case, result, render.exit_code_of(result))
        if isinstance(result, Failure):
            assert "\n" not in result.problem.message


def test_flags_read_from_the_memo_resolve_as_read_afresh(tmp_path: Path) -> None:
    """A line's flags are read once per distinct list of words, kernelcfg's own options
    aside: every case resolved for another platform from what was read for the first is
    the case resolved from scratch, byte for byte."""
    from kernelcfg.flags.serve_line.read import _READS

    request = Request(environ={})
    cuda = ["--vllm-version", "0.33", "--platform", "cuda", "--"]
    for case in _CASES:
        words = _argv(case, tmp_path)
        _READS._kept.clear()
        fresh = resolve_args([*cuda, *words], request)
        resolve_args([*_CONTEXT, "--", *words], request)
        again = resolve_args([*cuda, *words], request)
        assert render.json_body(again) == render.json_body(fresh), case["id"]
