"""``diff`` says what it compared: the kernel-config (and attention) hashes, factors of
vLLM's compile-cache key, never "the compile-cache hash" (``-tp 4`` and ``-tp 8`` have
the same kernel-config hash and different compile caches)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_helpers import run

pytestmark = pytest.mark.cli


@pytest.mark.parametrize(("a", "b"), [("-tp 4", "-tp 8"), ("-O1", "-O3")])
def test_diff_never_claims_the_same_compile_cache(a: str, b: str) -> None:
    done = run("diff", "--a", a, "--b", b, "--device", "h100")
    assert "same compile-cache hash" not in done.stdout
    assert "kernel-config" in done.stdout
    data = run("diff", "--a", a, "--b", b, "--device", "h100", "--format", "json").json()
    assert data["same_hash"]  # the kernel part is the same ...
    assert data["same_compile_cache_key"] is False  # ... the compile cache is not
    assert "the compile-cache key differs" in data["summary"]
    assert done.exit_code == 1


def test_resolve_help_names_the_kernel_config_hash() -> None:
    assert "kernel-config hash" in run("--help").stdout


R1 = str(Path(__file__).resolve().parent.parent / "docs" / "examples" / "deepseek-r1")
ACROSS = ["--a", "--vllm-version 0.33", "--b", "--vllm-version 0.34", "--device", "h100"]


def test_a_difference_never_reads_the_same_on_both_sides() -> None:
    """A variable one release declares as ``None`` and the other lacks reads ``absent vs
    null``; no finding's two values read alike (``absent vs absent``)."""
    data = run("diff", *ACROSS, "--hf-config-path", R1, "--format", "json").json()
    findings = data["compile_cache"]["findings"]
    assert len(findings) > 1
    for found in findings:
        said = found["message"].rsplit(": ", 1)[-1]
        if " vs " in said:
            left, right = said.split(" vs ", 1)
            assert left != right, found["message"]
    assert any(f["a"] is None and f["message"].endswith("absent vs null") for f in findings)


def test_across_releases_the_table_says_the_compile_cache_once() -> None:
    data = run("diff", *ACROSS, "--hf-config-path", R1, "--format", "json").json()
    done = run("diff", *ACROSS, "--hf-config-path", R1)
    lines = [line for line in done.stdout.splitlines() if line.startswith("compile-cache key")]
    assert len(lines) == 1
    assert "0.33.0 vs 0.34.0" in lines[0]
    more = len(data["compile_cache"]["findings"]) - 1
    assert f"{more:,} more differences" in done.stdout.replace("\n", " ")
    assert "absent vs absent" not in done.stdout
