"""``explain`` says which hash a field is part of, and how each release computes it."""

from __future__ import annotations

from .cli_helpers import run


def test_attention_backend_is_part_of_the_attention_hash_only() -> None:
    done = run("explain", "attention_backend")
    assert "part of the attention hash: True" in done.stdout
    assert "kernel-config hash" not in done.stdout
    data = run("explain", "attention_backend", "--format", "json").json()
    assert data["hash"] == "attention"
    assert data["hashed_by"]["0.34.0"] == "hash_config(AttentionConfig.compile_factors())"


def test_a_kernel_field_names_each_releases_hash_scheme() -> None:
    done = run("explain", "moe_backend")
    assert "part of the kernel-config hash: True" in done.stdout
    assert "hashed by: KernelConfig.compute_hash() (0.29.0-0.33.0)" in done.stdout
    assert "hashed by: hash_config(KernelConfig.compile_factors()) (0.34.0)" in done.stdout
    data = run("explain", "moe_backend", "--format", "json").json()
    assert data["hash"] == "kernel_config"
    assert set(data["hashed_by"]) == set(data["hashed"])
