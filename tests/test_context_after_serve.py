"""kernelcfg's own options written after ``vllm serve`` stay kernelcfg's only where the
release's ``vllm serve`` would not read them as one of its options: argparse takes the
start of exactly one option string as that option (vLLM 0.25.0-0.30.0 read ``--device 1``
as ``--device-ids 1``), while the start of several is refused as ambiguous."""

from __future__ import annotations

import pytest

from kernelcfg.commands.pipeline import Request, resolve_args
from kernelcfg.flags.argv import CONTEXT_OPTIONS, FLAG_OPTIONS, context_after_serve
from kernelcfg.flags.serve_line.parser import options
from kernelcfg.output import render
from kernelcfg.vllm import releases

VERSIONS = releases.known_versions()


def _starting(version: str, name: str) -> list[str]:
    strings = options(releases.load(version)).strings
    return sorted(s for s in strings if s.startswith(name))


@pytest.mark.parametrize("version", VERSIONS)
def test_a_unique_start_of_a_vllm_option_is_vllms(version: str) -> None:
    own = context_after_serve(releases.load(version))
    for name in CONTEXT_OPTIONS:
        starting = _starting(version, name)
        vllms = name in starting or (len(starting) == 1 and name not in FLAG_OPTIONS)
        assert (name not in own) == vllms, (version, name, starting)


@pytest.mark.parametrize("version", VERSIONS)
def test_device_after_serve(version: str) -> None:
    """``--device 1`` after ``vllm serve``: vLLM's ``--device-ids`` where that is the one
    option it starts (the line resolves), else kernelcfg's ``--device`` (no such device)."""
    line = ["--vllm-version", version, "--platform", "cpu", "--", "vllm", "serve", "m"]
    result = resolve_args([*line, "--device", "1"], Request(environ={}))
    code = render.exit_code_of(result)
    if len(_starting(version, "--device")) == 1:
        assert code in (0, 1), (version, result)
    else:
        assert code == 2, version
        assert "--device: unknown device '1'" in result.problem.message  # type: ignore[union-attr]
