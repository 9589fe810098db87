"""Issue 34: the host CPU's features are a target input. A CPU target states them
(a CPU preset, ``--cpu-features``, ``KERNELCFG_CPU_FEATURES``) or, when the target is
this machine, they are read from ``/proc/cpuinfo`` as vLLM's probes read them; the MoE
experts class, the attention pick (MLA: AMX_MLA or CPU_MLA), the zentorch world and the
start-up env writes all follow them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.targets import cpu
from kernelcfg.targets.presets import PRESETS, Target, with_cpu_features
from kernelcfg.vllm import releases

from .cli_helpers import run
from .test_attention_old import R1
from .test_moe_checkpoint import CT_W8A8_INT8, QWEN3_30B
from .test_verdict34 import QWEN3_MOE_T5

SAPPHIRE_RAPIDS = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    "flags\t\t: fpu sse2 avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16 "
    "avx512_fp16 amx_bf16 amx_tile amx_int8\n"
)
"""A Xeon 4th gen's /proc/cpuinfo, cut down to what vLLM's probes read."""
GENOA = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
    "flags\t\t: fpu sse2 avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16\n"
)
"""An AMD EPYC 4th gen's (Zen 4: AVX-512, no AMX)."""
GRAVITON = "processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd sve2 bf16\n"
"""An Arm server's (aarch64: the flags line is ``Features``)."""
RELEASES = releases.known_versions()
"""Every release kernelcfg has data for: one added later is checked without editing here."""


def _model(tmp_path: Path, name: str, config: dict[str, Any]) -> str:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def _resolve(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = run("resolve", "--format", "json", *args, env=env)
    assert done.exit_code in (0, 1), done.stderr
    data: dict[str, Any] = done.json()
    return data


def _experts(version: str) -> dict[str, Any]:
    found: dict[str, Any] = releases.data_file(f"moe-{version}.json")["experts"]
    return found


def _cpu_experts_class(version: str) -> bool:
    """Whether the release's unquantized MoE oracle walks experts classes on CPU (vLLM
    0.27.0 returns its CPU backend with none: the unquantized method's own CPU path)."""
    inline = releases.data_file(f"moe-{version}.json")["oracles"]["unquantized"]["inline"]
    cpu = [e for e in inline if e["when"] == {"kind": ["cpu"]}]
    return not cpu or cpu[0]["experts"] is not None


def _in_range(entry: dict[str, Any], version: str) -> bool:
    low, high = (releases.version_key(v) for v in entry["releases"])
    return low <= releases.version_key(version) <= high


def _needs_amx(condition: Any) -> bool:
    """Whether a condition of the MoE data asks for AMX tiles."""
    text = json.dumps(condition)
    return '"feature_off": "amx_tile"' in text


# Reading this machine's CPU as vLLM does


def test_cpuinfo_read_as_vllms_probes() -> None:
    spr = cpu.from_cpuinfo(SAPPHIRE_RAPIDS, "x86_64")
    assert spr.words["amx_tile"]
    assert spr.words["avx512_bf16"]
    assert spr.words["x86"]
    assert not spr.words["zen"]
    genoa = cpu.from_cpuinfo(GENOA, "x86_64")
    # vLLM's _is_amd_zen_cpu: AuthenticAMD with AVX-512 in /proc/cpuinfo
    assert genoa.words["zen"]
    assert not genoa.words["amx_tile"]
    arm = cpu.from_cpuinfo(GRAVITON, "aarch64")
    assert arm.words["arm"]
    assert not arm.words["x86"]
    assert not arm.words["avx512"]
    assert cpu.from_cpuinfo("", "arm64", "darwin").words["macos"]


def test_no_cpuinfo_says_why(tmp_path: Path) -> None:
    found = cpu.detect(tmp_path / "cpuinfo")
    assert isinstance(found, str)
    assert "cpuinfo" in found


def test_reading_the_cpu_never_imports_torch() -> None:
    code = (
        "import sys; from kernelcfg.targets import cpu; cpu.detect(); "
        "from kernelcfg.targets.presets import detect; "
        "print('torch' in sys.modules)"
    )
    env = {"KERNELCFG_DETECT_TORCH": "0", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.strip() == "False"


# Stating them


def test_cpu_features_are_shown() -> None:
    data = _resolve("--device", "epyc-genoa")
    host = data["platform"]["cpu"]
    assert host["arch"] == "x86_64"
    assert set(host["features"]) == set(PRESETS["epyc-genoa"].cpu.flags)  # type: ignore[union-attr]
    assert _resolve("--device", "cpu")["platform"]["cpu"] is None  # generic: not known
    assert _resolve("--device", "h100")["platform"]["cpu"] is None
    table = run("resolve", "--device", "cpu", "--cpu-features", "aarch64")
    assert "cpu aarch64;" in table.stdout


def test_cpu_features_flag_and_variable() -> None:
    flag = _resolve("--device", "cpu", "--cpu-features", "x86_64,amx,avx512")
    assert flag["platform"]["cpu"]["source"] == "flag"
    assert set(flag["platform"]["cpu"]["features"]) == {"amx", "avx512"}
    env = {"KERNELCFG_CPU_FEATURES": "aarch64"}
    found = _resolve("--device", "cpu", env=env)["platform"]["cpu"]
    assert (found["arch"], found["source"]) == ("aarch64", "environment")
    # a CPU preset states its own; the flag wins over it
    assert _resolve("--device", "xeon-spr", env=env)["platform"]["cpu"]["arch"] == "x86_64"
    over = _resolve("--device", "xeon-spr", "--cpu-features", "aarch64")["platform"]["cpu"]
    assert over["arch"] == "aarch64"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--device", "cpu", "--cpu-features", "amxx"], ["--cpu-features", "'amxx'", "'amx'"]),
        (["--device", "h100", "--cpu-features", "amx"], ["CPU targets only", "cuda"]),
        (["--device", "cpu", "--cpu-features", "aarch64,amx"], ["x86_64 features", "aarch64"]),
    ],
)
def test_bad_cpu_features_are_one_line(args: list[str], words: list[str]) -> None:
    done = run("resolve", *args)
    assert done.exit_code == 2
    (line,) = done.stderr.strip().splitlines()
    assert all(w in line for w in words), line


# What they decide: the MoE experts, the zentorch world


@pytest.mark.parametrize("version", RELEASES)
def test_moe_experts_follow_the_host(tmp_path: Path, version: str) -> None:
    """An AMX host takes the AMX experts; an AMD EPYC (no AMX) passes over them, as
    vLLM's walk does, to the portable class. Where the release walks no experts class
    on CPU, no host has one."""
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    experts = _experts(version)
    picks = {}
    for device in ("xeon-spr", "epyc-genoa"):
        data = _resolve("--device", device, "--vllm-version", version, "--", "vllm", "serve", model)
        picks[device] = data["selection"]["moe_backend"]
    if not _cpu_experts_class(version):
        assert [p["kernel"] for p in picks.values()] == [None, None]
        assert {p["backend"] for p in picks.values()} == {"CPU"}
        return
    amx = picks["xeon-spr"]["kernel"]
    assert _needs_amx(experts[amx]["supports"]["current_device"])
    epyc = picks["epyc-genoa"]
    assert not _needs_amx(experts[epyc["kernel"]]["supports"]["current_device"])
    passed = {c["kernel"]: c for c in epyc["candidates"]}
    assert passed[amx]["verdict"] == "refused"
    assert "current device" in passed[amx]["reason"]


@pytest.mark.parametrize("version", RELEASES)
def test_zentorch_experts_on_a_zen_host_with_zentorch(tmp_path: Path, version: str) -> None:
    """vLLM's Zen platform (an AMD CPU with AVX-512 and zentorch importable: ``pip
    install vllm[zen]``, kernelcfg's ``--install all``) runs zentorch's experts where the
    release's INT8 oracle lists a zentorch class; elsewhere the Zen host's pick is the
    plain install's."""
    model = _model(tmp_path, "w8a8", {**QWEN3_30B, "quantization_config": CT_W8A8_INT8})
    experts = _experts(version)
    listed = releases.data_file(f"moe-{version}.json")["oracles"]["int8"]["backend_classes"]
    cpu = listed.get("CPU", [])  # 0.24.0's INT8 oracle has no CPU backend (Triton only)
    zentorch = [c for c in cpu if '"zentorch"' in json.dumps(experts[c]["supports"])]

    def kernel(*args: str) -> str | None:
        data = _resolve(*args, "--vllm-version", version, "--", "vllm", "serve", model)
        return data["selection"]["moe_backend"]["kernel"]  # type: ignore[no-any-return]

    zen = kernel("--device", "epyc-genoa", "--install", "all")
    if not zentorch:
        assert zen == kernel("--device", "epyc-genoa", "--install", "pip")
        return
    assert zen == zentorch[0]
    needs = json.dumps(experts[zentorch[0]]["supports"]["current_device"])
    assert '"has": "zentorch"' in needs
    assert '"feature_off": "zen"' in needs
    assert kernel("--device", "epyc-genoa", "--install", "pip") != zen
    assert kernel("--device", "xeon-spr", "--install", "all") != zen  # an Intel host


# What they decide: attention


@pytest.mark.parametrize("version", RELEASES)
def test_mla_attention_follows_the_host(tmp_path: Path, version: str) -> None:
    """CpuPlatform's MLA branch: the first of the release's list whose host features the
    host has (AMX_MLA with AMX tiles, CPU_MLA elsewhere); unknown: depends. A release
    with no CPU MLA backend refuses MLA on every host with its own error."""
    model = _model(tmp_path, "r1", R1)
    platform = releases.data_file(f"selector-{version}.json")["platforms"]["cpu"]
    if "mla_refused" in platform:
        assert "mla" not in platform["host"]
        for device in ("xeon-spr", "epyc-genoa", "cpu"):
            argv = ["--device", device, "--vllm-version", version, "--", "vllm", "serve", model]
            picked = _resolve(*argv)["selection"]["attention"]
            assert picked["status"] == "error", device
            assert platform["mla_refused"] in json.dumps(picked), device
        return
    order = platform["host"]["mla"]
    for device in ("xeon-spr", "epyc-genoa", "graviton4"):
        words = PRESETS[device].host_features or {}
        expected = next(s["backend"] for s in order if all(words[n] for n in s["needs"]))
        data = _resolve("--device", device, "--vllm-version", version, "--", "vllm", "serve", model)
        picked = data["selection"]["attention"]
        assert (picked["status"], picked["backend"]) == ("selected", expected), device
    generic = _resolve("--device", "cpu", "--vllm-version", version, "--", "vllm", "serve", model)
    every_host = not order[0]["needs"]  # the first asks nothing of the host: every host's
    said = generic["selection"]["attention"]
    assert said["status"] == ("selected" if every_host else "depends")


@pytest.mark.parametrize("version", RELEASES)
def test_quantized_kv_cache_needs_avx512_or_amx(tmp_path: Path, version: str) -> None:
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    args = ["--vllm-version", version, "--", "vllm", "serve", model, "--kv-cache-dtype", "fp8"]
    host = releases.data_file(f"selector-{version}.json")["platforms"]["cpu"]["host"]
    assert host["kv_quantized_source"].startswith("vllm/v1/attention/backends/cpu_attn.py:")
    for device in ("xeon-spr", "epyc-genoa", "graviton4"):
        words = PRESETS[device].host_features or {}
        runs = any(words[n] for n in host["kv_quantized_needs_any"])
        picked = _resolve("--device", device, *args)["selection"]["attention"]
        assert picked["status"] == ("selected" if runs else "error"), device


# What they decide: the start-up env writes


@pytest.mark.parametrize("version", RELEASES)
def test_start_up_layout_follows_the_host(tmp_path: Path, version: str) -> None:
    """VLLM_SSM_CONV_STATE_LAYOUT: written on the host feature the release asks torch
    for (AMX tiles in 0.27.0 and 0.28.0, AVX512-BF16 since 0.29.0): an AMD EPYC 4th gen
    has the second and not the first."""
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    (write,) = [
        w
        for w in releases.data_file("start-up-env.json")["writes"]
        if w["variable"] == "VLLM_SSM_CONV_STATE_LAYOUT" and _in_range(w, version)
    ]
    name = write["variable"]
    word = write["when"].removeprefix("host_")
    for device in ("xeon-spr", "epyc-genoa", "epyc-milan"):
        args = ["--device", device, "--vllm-version", version, "--", "vllm", "serve", model]
        key = _resolve(*args)["compile_cache"]
        assert not [u for u in key["unknown"] if u.startswith(f"env {name}")]
        assert key["env_factors"] is not None
        has = (PRESETS[device].host_features or {})[word]
        assert (key["env_factors"].get(name) == write["value"]) is has, device


@pytest.mark.parametrize("version", RELEASES)
def test_zentorch_runs_inside_the_portable_classes(tmp_path: Path, version: str) -> None:
    """On vLLM's Zen platform the portable experts class calls zentorch's fused MoE and
    the CPU GEMM dispatch zentorch's linear op (the release data's ``runs``): said. Every
    release states its CPU GEMM dispatch's; a release whose CPU MoE walks no experts
    class (0.27.0) runs no zentorch MoE."""
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    linear = releases.data_file(f"linear-{version}.json")["selectors"]["unquantized"]
    linear_runs = linear["dispatch_runs"]["cpu"][0]["kernel"]
    argv = ["--vllm-version", version, "--", "vllm", "serve", model]
    zen = _resolve("--device", "epyc-genoa", "--install", "all", *argv)["selection"]
    assert zen["linear_backend"]["runs"] == linear_runs
    if not _cpu_experts_class(version):
        assert "runs" not in zen["moe_backend"]
        return
    moe_runs = _experts(version)["CPUUnquantizedExperts"]["runs"][0]["kernel"]
    assert (zen["moe_backend"]["kernel"], zen["moe_backend"]["runs"]) == (
        "CPUUnquantizedExperts",
        moe_runs,
    )
    for device, install in (("epyc-genoa", "pip"), ("xeon-spr", "all")):
        plain = _resolve("--device", device, "--install", install, *argv)["selection"]
        assert "runs" not in plain["moe_backend"]
        assert "runs" not in plain["linear_backend"]
    table = run("resolve", "--device", "epyc-genoa", "--install", "all", *argv).stdout
    assert f"running {moe_runs}" in table


def test_a_batch_line_and_a_matrix_state_the_cpu() -> None:
    line = json.dumps({"id": "arm", "argv": ["--device", "cpu"], "cpu_features": "aarch64"})
    done = run("resolve", "--batch", "-", stdin=line + "\n")
    (found,) = [json.loads(t) for t in done.stdout.splitlines()]
    assert found["platform"]["cpu"]["arch"] == "aarch64"
    matrix = run(
        "resolve", "--batch", "-", "--device", "cpu", "--matrix", "cpu_features=x86_64 amx,ppc64le",
        stdin='["--vllm-version", "0.33.0"]\n',
    )  # fmt: skip
    arches = [json.loads(t)["platform"]["cpu"]["arch"] for t in matrix.stdout.splitlines()]
    assert arches == ["x86_64", "ppc64le"]


@pytest.mark.parametrize("version", RELEASES)
def test_unknown_host_says_what_other_hosts_pick(tmp_path: Path, version: str) -> None:
    """The generic ``cpu`` target does not state its host: the MoE pick is the release
    data's assumed host's (x86 with AMX), and the picks of other hosts are named; where
    the release walks no experts class on CPU, every host's pick is the same."""
    model = _model(tmp_path, "qwen3", QWEN3_MOE_T5)
    argv = ["--vllm-version", version, "--", "vllm", "serve", model]
    generic = _resolve("--device", "cpu", *argv)["selection"]["moe_backend"]
    if not _cpu_experts_class(version):
        assert (generic["backend"], generic["kernel"]) == ("CPU", None)
        assert "by_host" not in generic
        return
    stated = _resolve("--device", "cpu", "--cpu-features", "x86_64 avx512 avx512_bf16", *argv)
    kernel = stated["selection"]["moe_backend"]["kernel"]
    assert kernel != generic["kernel"]
    assert kernel in generic["by_host"]["x86_64 without AMX"]
    assert "by_host" not in stated["selection"]["moe_backend"]


def test_the_variable_wins_over_this_machine() -> None:
    """First to last: the flag, a CPU preset, KERNELCFG_CPU_FEATURES, this machine."""
    here = Target("cpu", "cpu", source="fallback", cpu=cpu.from_cpuinfo(GENOA, "x86_64"))
    env = {"KERNELCFG_CPU_FEATURES": "ppc64le"}
    found = with_cpu_features(here, None, env).cpu
    assert found is not None
    assert (found.arch, found.source) == ("ppc64le", "environment")
    assert with_cpu_features(PRESETS["xeon-spr"], None, env) == PRESETS["xeon-spr"]
    flagged = with_cpu_features(PRESETS["xeon-spr"], "aarch64", env).cpu
    assert flagged is not None
    assert (flagged.arch, flagged.source) == ("aarch64", "flag")


def test_amx_mla_asked_on_a_host_without_amx_is_ignored(tmp_path: Path) -> None:
    """vLLM takes CPU_MLA for an AMX_MLA asked on a host without AMX tiles (no log: both
    are its MLA backends): the value is ignored, never honoured."""
    model = _model(tmp_path, "r1", R1)
    order = releases.data_file("selector-0.33.0.json")["platforms"]["cpu"]["host"]["mla"]
    amx = order[0]["backend"]
    argv = ["--vllm-version", "0.33.0", "--attention-backend", amx]
    for device in ("xeon-spr", "epyc-genoa"):
        words = PRESETS[device].host_features or {}
        expected = next(s["backend"] for s in order if all(words[n] for n in s["needs"]))
        data = _resolve("--device", device, *argv, "--", "vllm", "serve", model)
        assert data["selection"]["attention"]["backend"] == expected
        ignored = [p for p in data["problems"] if p["code"] == "attention-backend-ignored"]
        assert bool(ignored) is (expected != amx), device
