"""``diff`` says what it compared: the kernel-config (and attention) hashes, factors of
vLLM's compile-cache key, never "the compile-cache hash" (``-tp 4`` and ``-tp 8`` have
the same kernel-config hash and different compile caches)."""

from __future__ import annotations

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
