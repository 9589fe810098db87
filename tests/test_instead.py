"""Issue 34: every refusal of an explicit backend (MoE, linear, top-k, attention,
all2all) names the values that run here instead, each checked by the rules that
refused, and what vLLM takes when the field is left to it (``auto``, or unset for
``--all2all-backend``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelcfg.commands.pipeline import Request, resolve_args
from kernelcfg.engine.resolution import Resolution
from kernelcfg.output import render

from .cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
R1 = str(ROOT / "docs" / "examples" / "deepseek-r1")
"""DeepSeek-R1's config.json: an MoE model, FP8 block-quantised, MLA attention."""

KINDS = {
    # kind: (the refused flag, its value, the rest of the line, the selection key)
    "moe": ("--moe-backend", "flashinfer_trtllm", ["--device", "h100", "--hf-config-path", R1]),
    "linear": (
        "--linear-backend",
        "flashinfer_cutlass",
        ["--device", "h100", "--hf-config-path", R1],
    ),
    "topk": (
        "--sparse-indexer-topk-backend",
        "aiter",
        ["--device", "h100", "--architecture", "DeepseekV32ForCausalLM"],
    ),
    "attention": (
        "--attention-backend",
        "FLASH_ATTN_MLA",
        ["--device", "a100", "--hf-config-path", R1],
    ),
    "all2all": (
        "--all2all-backend",
        "deepep_low_latency",
        ["--device", "h100", "--hf-config-path", R1, "-dp", "2", "--install", "pip"],
    ),
}
SELECTION = {
    "moe": "moe_backend",
    "linear": "linear_backend",
    "topk": "sparse_indexer_topk_backend",
    "attention": "attention",
}


def _resolve(args: list[str]) -> Resolution:
    result = resolve_args(args, Request(environ={}))
    assert isinstance(result, Resolution)
    return result


def _refusal(result: Resolution, flag: str) -> str:
    field = flag.removeprefix("--").replace("-", "_")
    found = [p.message for p in result.problems if p.severity == "error" and p.field == field]
    assert len(found) == 1, [p.message for p in result.problems]
    return found[0]


def _offered(message: str) -> list[str]:
    said = message.split("runs here instead: ")[1].split(";", maxsplit=1)[0]
    return [] if said == "no named value" else said.split(", ")


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_refusal_names_values_that_run_here(kind: str) -> None:
    flag, value, rest = KINDS[kind]
    refused = _resolve([*rest, flag, value])
    assert render.exit_code_of(refused) == 1
    offered = _offered(_refusal(refused, flag))
    assert offered, kind
    assert value not in offered
    for other in offered:  # none of them is refused by the rules that refused the first
        again = _resolve([*rest, flag, other])
        assert render.exit_code_of(again) == 0, (kind, other, again.problems)


@pytest.mark.parametrize("kind", [k for k in KINDS if k in SELECTION])
def test_a_refusal_names_the_auto_pick(kind: str) -> None:
    """Where vLLM's walk on auto picks a value by a name the flag takes, the refusal
    names that value: the pick ``resolve`` makes with the flag left out."""
    flag, value, rest = KINDS[kind]
    message = _refusal(_resolve([*rest, flag, value]), flag)
    picked = _resolve(rest).selection.get(SELECTION[kind]) or {}
    if picked.get("status") == "selected" and picked.get("value"):
        assert message.endswith(f"; auto picks {picked['value']}"), message
    else:
        assert message.endswith("; or leave it on auto"), message


def test_all2all_refusal_names_the_unset_value() -> None:
    flag, value, rest = KINDS["all2all"]
    message = _refusal(_resolve([*rest, flag, value]), flag)
    unset = _resolve(rest).parallel["all2all_backend"]
    assert message.endswith(f"; unset, vLLM takes {unset}")


def test_all2all_library_missing_follows_the_install_rule() -> None:
    """vLLM stops at start-up without the all2all manager's library: an error under the
    install judged, named or default; none under an install that has it."""
    flag, value, rest = KINDS["all2all"]
    default = [*rest[:-2], flag, value]
    for line in ([*rest, flag, value], default):
        assert render.exit_code_of(_resolve(line)) == 1
    image = _resolve([*rest[:-2], "--install", "image", flag, value])
    assert render.exit_code_of(image) == 0


def test_all2all_paired_with_a_self_dispatching_moe_backend() -> None:
    """A MoE backend that dispatches and combines itself takes no named all2all backend.
    The refusal keeps vLLM's own words; a note right after it offers no value and names
    the one vLLM binds when the flag is left unset."""
    from kernelcfg.base.problems import RUNS_INSTEAD

    rest = ["--device", "b200", "--moe-backend", "flashinfer_moe_ep_cutedsl", "-ep", "-dp", "2"]
    refused = _resolve([*rest, "--all2all-backend", "deepep_low_latency"])
    message = _refusal(refused, "--all2all-backend")
    assert "runs here instead" not in message  # vLLM's ValueError text, whole
    at = refused.problems.index(next(p for p in refused.problems if p.message == message))
    note = refused.problems[at + 1]
    assert (note.severity, note.code, note.field) == ("info", RUNS_INSTEAD, "all2all_backend")
    assert _offered(note.message) == []
    unset = _resolve(rest).parallel["all2all_backend"]
    assert unset != "allgather_reducescatter"  # the binding, not the default
    assert note.message.endswith(f"; unset, vLLM takes {unset}")
    done = run("resolve", *rest, "--all2all-backend", "deepep_low_latency", "--format", "json")
    lines = done.stderr.splitlines()  # on stderr, the note follows its refusal
    assert lines[lines.index(f"error: {message}") + 1] == f"note: {note.message}"


def test_values_that_may_run_are_named_when_none_is_sure() -> None:
    """Without the model's config.json, attention backends depend on it: the refusal
    names them as values that may run, not 'no named value'."""
    llama = ["--device", "h100", "--architecture", "LlamaForCausalLM"]
    result = _resolve([*llama, "--attention-backend", "FLASHMLA"])
    message = _refusal(result, "--attention-backend")
    assert "none for certain (may run: " in message
    assert "FLASH_ATTN" in message.split("may run: ")[1]


def test_a_per_quant_refusal_names_values_that_run_for_its_key() -> None:
    """A ``linear_backend_per_quant`` value is judged for its key's schemes: the refusal
    names the key (its field) and the values that run for them, none itself refused."""
    rest = ["--device", "h100", "--quant-scheme", "nvfp4"]

    def line(value: str) -> list[str]:
        return [
            *rest,
            "--kernel-config",
            f'{{"linear_backend_per_quant":{{"nvfp4_w4a4":"{value}"}}}}',
        ]

    refused = _resolve(line("flashinfer_trtllm"))
    (problem,) = [p for p in refused.problems if p.severity == "error"]
    assert problem.field == "linear_backend_per_quant.nvfp4_w4a4"
    offered = _offered(problem.message)
    assert offered
    for other in offered:
        assert render.exit_code_of(_resolve(line(other))) == 0, other
