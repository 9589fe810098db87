"""``explain`` says which hash a field is part of, and how each release computes it."""

from __future__ import annotations

from kernelcfg.vllm import releases

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
    schemes = {
        v: releases.data_file(f"vllm-{v}.json")["kernel_config"]["hash_scheme"]
        for v in releases.known_versions()
    }
    old = [v for v, scheme in schemes.items() if scheme == "compute_hash"]
    new = [v for v, scheme in schemes.items() if scheme == "hash_config"]
    assert old
    assert new
    assert len(old) + len(new) == len(schemes)
    span = f"{old[0]}-{old[-1]}" if len(old) > 1 else old[0]
    assert f"hashed by: KernelConfig.compute_hash() ({span})" in done.stdout
    span = f"{new[0]}-{new[-1]}" if len(new) > 1 else new[0]
    assert f"hashed by: hash_config(KernelConfig.compile_factors()) ({span})" in done.stdout
    data = run("explain", "moe_backend", "--format", "json").json()
    assert data["hash"] == "kernel_config"
    assert set(data["hashed_by"]) == set(data["hashed"])


def test_the_ir_op_priority_counts_in_every_scheme() -> None:
    # compute_hash releases leave the field out of KernelConfig's own factors and add
    # IrOpPriorityConfig's hash as a sub-hash; hash_config nests its factors: both count
    data = run("explain", "ir_op_priority", "--format", "json").json()
    assert set(data["hashed"].values()) == {True}
    assert "part of the kernel-config hash: True" in run("explain", "ir_op_priority").stdout
    ignored = [v for v in data["hashed"] if "ir_op_priority" in releases.load(v).hash_ignored]
    assert ignored, "the releases that hash it as a sub-hash list it as ignored"
