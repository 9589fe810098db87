"""Every line of each release's ``vllm serve`` parser vectors gets that release's decision.

The vectors: real vLLM 0.33.0's (``golden/vllm-0.33.0/serve-parser-cases.json``, copied)
and, for every other release kernelcfg knows, the same lines judged by that release's own
parser (``scripts/release/execute/serve_parser.py``, which reproduces real vLLM's 0.33.0
file exactly). Refused by vLLM (argparse, exit 2, or an exception while reading the
arguments) → kernelcfg exits 2. Accepted → kernelcfg exits 0 or 1, and the kernel-config
fields vLLM set from the line are the ones kernelcfg resolved. Each line runs as a single
command and as a ``--batch`` line holding ``--``.

Real vLLM's file is checked whole; an executed one every ``SAMPLE``-th line (a fixed
sample, the same each run), whole with ``KERNELCFG_FULL_VECTORS=1`` (``make
releases-check``).
"""

from __future__ import annotations

import gzip
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands.pipeline import Failure, Request, batch, resolve_args
from kernelcfg.output import render
from kernelcfg.vllm import releases as known

from .conftest import GOLDEN

pytestmark = pytest.mark.golden

_NAME = "serve-parser-cases.json"
SAMPLE = 6
"""Every sixth line of an executed release's file (all of them under
``KERNELCFG_FULL_VECTORS=1``); real vLLM's own file is checked whole."""
_FULL = os.environ.get("KERNELCFG_FULL_VECTORS") == "1"


def _path(version: str) -> Path:
    """Real vLLM's file as copied (``.json``) or an executed one, packed (``.json.gz``)."""
    plain = GOLDEN / f"vllm-{version}" / _NAME
    return plain if plain.is_file() else plain.with_name(_NAME + ".gz")


RELEASES = tuple(v for v in known.known_versions() if _path(v).is_file())
"""The releases kernelcfg knows that have parser vectors: each is checked."""


@cache
def _data(version: str) -> dict[str, Any]:
    path = _path(version)
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data: dict[str, Any] = json.loads(raw)
    return data


def _cases(version: str) -> list[dict[str, Any]]:
    data = _data(version)
    cases: list[dict[str, Any]] = data["cases"]
    if "made_by" not in data["meta"] or _FULL:  # real vLLM's: every line
        return cases
    return cases[::SAMPLE]


def _context(version: str) -> list[str]:
    return ["--vllm-version", version, "--platform", "cpu"]


_PLAIN_FIELDS = (
    "moe_backend",
    "linear_backend",
    "sparse_indexer_topk_backend",
    "monokernel",
    "linear_backend_per_quant",
    "enable_rocm_segmented_attn_autotune",
    "enable_cutedsl_warmup",
    "enable_bf16x3_router_gemm",
    "enable_rocm_aiter_gemm_warmup",
    "rdna_hybrid_w4a16_prefill_dequant",
)
"""The fields kernelcfg resolves as vLLM set them from the line (those a release has)."""


def _argv(case: dict[str, Any], folder: Path, mark: str) -> list[str]:
    config = case.get("config_file")
    if config and config.get("written"):
        (folder / config["name"]).write_text(config["content"], encoding="utf-8")
    return [str(folder / a) if a.startswith(mark) else a for a in case["argv"]]


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
        if name in want:
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


_PARAMS = [(v, c) for v in RELEASES for c in _cases(v)]


@pytest.mark.parametrize(("version", "case"), _PARAMS, ids=[f"{v}-{c['id']}" for v, c in _PARAMS])
def test_single_command(
    version: str, case: dict[str, Any], tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    del clean_env
    mark = _data(version)["meta"]["config_mark"]
    argv = [*_context(version), "--", *_argv(case, tmp_path, mark)]
    result = resolve_args(argv, Request(environ={}))
    _check(case, result, render.exit_code_of(result))


def test_every_known_release_has_parser_vectors() -> None:
    """A release kernelcfg knows without parser vectors is one nobody checked: make them
    with ``scripts/release/execute/serve_parser.py`` (``make release`` does)."""
    assert tuple(known.known_versions()) == RELEASES


@pytest.mark.parametrize("version", RELEASES)
def test_batch_lines(version: str, tmp_path: Path) -> None:
    cases = _cases(version)
    mark = _data(version)["meta"]["config_mark"]
    context = _context(version)
    lines = [
        json.dumps({"id": c["id"], "argv": [*context, "--", *_argv(c, tmp_path, mark)]})
        for c in cases
    ]
    got = list(batch(lines, request=Request(environ={})))
    assert [g.id for g in got] == [c["id"] for c in cases]
    for case, line in zip(cases, got, strict=True):
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
    mark = _data("0.33.0")["meta"]["config_mark"]
    for case in _cases("0.33.0"):
        words = _argv(case, tmp_path, mark)
        _READS._kept.clear()
        fresh = resolve_args([*cuda, *words], request)
        resolve_args([*_context("0.33.0"), "--", *words], request)
        again = resolve_args([*cuda, *words], request)
        assert render.json_body(again) == render.json_body(fresh), case["id"]
