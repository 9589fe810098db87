"""The ``resolve`` command: vLLM's spellings, output formats, errors and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from .cli_helpers import run

pytestmark = pytest.mark.cli


def _resolved(*args: str) -> dict[str, object]:
    # the image, where FlashInfer's MoE kernels run (pip, the default, lacks them)
    result = run("resolve", "--device", "h100", "--install", "image", "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    data = result.json()
    return {k: data[k] for k in ("kernel_config", "parallel_config", "compilation", "hash")}


SPELLINGS = [
    (
        ["--moe-backend", "flashinfer_cutlass"],
        [
            ["--moe-backend=flashinfer_cutlass"],
            ["--moe_backend", "flashinfer_cutlass"],
            ["--moe-back", "flashinfer_cutlass"],
            ["--moe-backend", "FlashInfer-CUTLASS"],
            ["--kernel-config.moe_backend=flashinfer_cutlass"],
            ["--kernel_config.moe_backend", "flashinfer-cutlass"],
            ["--kernel-config", '{"moe_backend": "FLASHINFER_CUTLASS"}'],
            ["--kernel-config", '{"moe_backend": "triton"}', "--moe-backend", "flashinfer_cutlass"],
            ["--", "vllm", "serve", "some/model", "--moe-backend", "flashinfer_cutlass"],
        ],
    ),
    (
        ["--ir-op-priority.rms_norm=vllm_c,native"],
        [
            ["--ir-op-priority", '{"rms_norm": "vllm_c, native"}'],
            ["--ir_op_priority.rms_norm", "vllm_c, native"],
            ["--kernel-config.ir_op_priority.rms_norm", "vllm_c, native"],
            ["--kernel-config.ir_op_priority.rms_norm+", "vllm_c,native"],
            ["--ir-op-priority.rms_norm+=vllm_c", "--ir-op-priority.rms_norm+=native"],
        ],
    ),
    (["-O0"], [["-O=0"], ["-O", "0"], ["--optimization-level", "0"], ["--optimization_level=0"]]),
    (
        ["--enforce-eager"],
        [
            ["--enforce_eager"],
            ["-cc.mode=none", "-cc.cudagraph_mode=NONE", "--kernel-config.enable_jit_warmup=false"],
            [
                "--compilation-config",
                '{"mode": 0, "cudagraph_mode": 0}',
                "--kernel-config",
                '{"enable_jit_warmup": "off"}',
            ],
        ],
    ),
    (
        ["--monokernel"],
        [["--kernel-config.monokernel=true"], ["--kernel-config", '{"monokernel": "yes"}']],
    ),
    (
        ["--tensor-parallel-size", "2"],
        [["-tp", "2"], ["-tp=2"], ["--tensor_parallel_size=2"], ["--tensor-par", "2"]],
    ),
    (["--data-parallel-size", "4"], [["-dp", "4"], ["--data_parallel_size", "4"]]),
    (
        ["--enable-expert-parallel"],
        [["-ep"], ["--enable_expert_parallel"], ["--disable-expert-parallel", "-ep"]],
    ),
    (
        ["--all2all-backend", "deepep_low_latency"],
        [["--all2all-backend=deepep_low_latency"], ["--all2all_backend", "deepep_low_latency"]],
    ),
    (
        ["-cc.mode=none"],
        [
            ["-cc", '{"mode": "NONE"}'],
            ["--compilation-config.mode=0"],
            ["--compilation-config", '{"mode": "none"}'],
        ],
    ),
    (
        ["-cc.cudagraph_mode=FULL"],
        [
            ["-cc.cudagraph_mode=full"],
            ["-cc.cudagraph_mode=2"],
            ["--compilation_config", '{"cudagraph_mode": "Full"}'],
        ],
    ),
]


@pytest.mark.parametrize(("plain", "variants"), SPELLINGS, ids=[" ".join(p) for p, _ in SPELLINGS])
def test_spellings_resolve_like_their_plain_form(
    plain: list[str], variants: list[list[str]]
) -> None:
    expected = _resolved(*plain)
    assert expected != _resolved()
    for variant in variants:
        assert _resolved(*variant) == expected, variant


def test_autotune_spellings_resolve_alike() -> None:
    def autotune(*args: str) -> object:
        data = run("resolve", "--device", "h100", "--format", "json", *args).json()
        return data["kernel_config"]["enable_flashinfer_autotune"]

    assert autotune("-O0") is False
    for on in (
        ["-O1"],
        ["--enable-flashinfer-autotune"],
        ["--kernel-config.enable_flashinfer_autotune=yes"],
    ):
        assert autotune(*on) is True
    for off in (["--disable-flashinfer-autotune"], ["--no-enable-flashinfer-autotune"]):
        assert autotune(*off) is False


def test_dotted_keys_replace_a_whole_json_value() -> None:
    both = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--kernel-config.moe_backend=cutlass",
        "--kernel-config",
        '{"monokernel": true}',
    ).json()
    assert both["kernel_config"]["moe_backend"] == "cutlass"
    assert both["kernel_config"]["monokernel"] is False


def test_compilation_groups_replace_each_other() -> None:
    later = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "-cc.mode=0",
        "--compilation-config.backend=eager",
    ).json()
    assert later["compilation"]["mode"] == "VLLM_COMPILE"
    assert later["compilation"]["backend"] == "eager"


def test_yaml_config_file(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "moe-backend": "triton",
                "enable-flashinfer-autotune": False,
                "kernel-config": {"linear_backend": "marlin"},
            }
        )
    )
    result = run("resolve", "--device", "h100", "--format", "json", "--config", str(path))
    assert result.exit_code == 0
    data = result.json()
    assert data["kernel_config"]["moe_backend"] == "triton"
    assert data["kernel_config"]["linear_backend"] == "marlin"
    assert data["kernel_config"]["enable_flashinfer_autotune"] is True
    assert "false" in result.stderr
    override = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--config",
        str(path),
        "--kernel-config.monokernel=true",
        "--moe-backend",
        "cutlass",
    ).json()
    assert override["kernel_config"]["linear_backend"] == "auto"
    assert override["kernel_config"]["moe_backend"] == "cutlass"
    ignored = run("resolve", "--device", "h100", "--format", "json", f"--config={path}")
    assert ignored.json()["kernel_config"]["moe_backend"] == "auto"
    assert "ignored" in ignored.stderr


def test_local_model_folder_gives_architectures(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    result = run(
        "resolve",
        "--device",
        "b200",
        "--format",
        "json",
        "--",
        "vllm",
        "serve",
        str(model),
        "--moe-backend",
        "flashinfer_moe_ep_mega_deep_gemm",
        "--max-model-len",
        "4096",
    )
    assert result.exit_code == 1
    assert "DeepSeek-V4" in result.stderr
    with_arch = run(
        "resolve",
        "--device",
        "b200",
        "--format",
        "json",
        "--hf-config-path",
        str(model),
        "--moe-backend",
        "flashinfer_moe_ep_mega_deep_gemm",
        "--architecture",
        "DeepseekV4ForCausalLM",
        "--env",
        "VLLM_USE_BREAKABLE_CUDAGRAPH=0",
        "--quant-scheme",
        "mxfp4",
        "-ep",
    )
    assert with_arch.exit_code == 0, with_arch.stderr
    assert with_arch.json()["parallel_config"]["all2all_backend"] == "passthrough"


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--moe-backend", "flashinfer_trtlm"], 2, "did you mean 'flashinfer_trtllm'"),
        (["--moe-backnd", "triton"], 2, "did you mean '--moe-backend'"),
        (["--all2all-backend", "passthrough"], 2, "passthrough"),
        (["-O5"], 1, "optimisation level"),
        (["-O", "5"], 2, "unrecognized arguments: -O 5"),
        (["-cc.cudagraph_mode=BOGUS"], 2, "KeyError"),
        (["-cc.mode=3", "-cc.backend=foo"], 2, "Invalid backend for piecewise compilation"),
        (["--kernel-config", "{bad"], 2, "not valid JSON"),
        (["--kernel-config.moe-backend=triton"], 2, "did you mean 'moe_backend'"),
        (["--config", "/nonexistent/x.yaml"], 2, "cannot read"),
        (
            ["--kernel-config.enable_flashinfer_autotune=true", "--enable-flashinfer-autotune"],
            1,
            "mutually exclusive",
        ),
        (
            ["--kernel-config.enable_flashinfer_autotune=false", "--disable-flashinfer-autotune"],
            1,
            "mutually exclusive",
        ),
        (
            ["--ir-op-priority.rms_norm=native", "--kernel-config.ir_op_priority.rms_norm=native"],
            1,
            "only one allowed",
        ),
        (["--ir-op-priority.rms_norm=cuda"], 1, "registered: aiter, native, oink, vllm_c"),
        (["--enable-lora", "--moe-backend", "deep_gemm_mega_moe"], 1, "LoRA is not supported"),
        (["--enable", "x"], 2, "ambiguous option"),
    ],
)
def test_errors_and_exit_codes(args: list[str], code: int, needle: str) -> None:
    result = run("resolve", "--device", "h100", "--format", "json", *args)
    assert result.exit_code == code, result.stderr
    assert needle in result.stderr
    data = result.json()
    assert data["valid"] is False
    assert any(needle in p["message"] for p in data["problems"])
    assert "Traceback" not in result.stderr


def test_warnings_go_to_stderr_and_strict_fails_them() -> None:
    args = ("resolve", "--device", "h100", "--format", "json", "--all2all-backend", "pplx")
    loose = run(*args)
    assert loose.exit_code == 0
    assert "removed" in loose.stderr
    assert loose.json()["parallel_config"]["all2all_backend"] == "allgather_reducescatter"
    strict = run(*args, "--strict")
    assert strict.exit_code == 1
    assert strict.json()["valid"] is False


def test_quiet_prints_nothing() -> None:
    result = run("resolve", "--device", "h100", "--quiet", "--moe-backend", "nope")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == ""


@pytest.mark.parametrize("device", ["h100", "b200", "mi355x", "cpu", "intel-max-1550"])
def test_args_format_reproduces_the_hash(device: str) -> None:
    flags = [
        "--moe-backend",
        "Triton",
        "-O1",
        "--ir-op-priority.rms_norm=native",
        "-cc.cudagraph_mode=full",
        "--enforce-eager",
        "-tp",
        "2",
        "--kernel-config.linear_backend_per_quant.fp8=marlin",
    ]
    first = run("resolve", "--device", device, "--format", "json", *flags).json()
    canonical = run("resolve", "--device", device, "--format", "args", *flags).stdout
    import shlex

    again = run("resolve", "--device", device, "--format", "json", *shlex.split(canonical)).json()
    assert again["hash"] == first["hash"]
    assert again["kernel_config"] == first["kernel_config"]
    assert again["compilation"] == first["compilation"]


def test_args_never_emit_passthrough() -> None:
    flags = ["--moe-backend", "flashinfer_moe_ep_cutedsl", "-ep"]
    out = run("resolve", "--device", "b200", "--format", "args", *flags).stdout
    assert "passthrough" not in out
    assert "flashinfer_moe_ep_cutedsl" in out


def test_formats_parse() -> None:
    base = ("resolve", "--device", "mi300x", "--moe-backend", "aiter")
    as_json = run(*base, "--format", "json").json()
    as_yaml = yaml.safe_load(run(*base, "--format", "yaml").stdout)
    assert as_yaml == as_json
    env_lines = run(*base, "--format", "env").stdout.splitlines()
    env = dict(line.split("=", 1) for line in env_lines)
    assert env["KERNELCFG_HASH"] == as_json["hash"]
    assert env["KERNELCFG_MOE_BACKEND"] == "aiter"
    table = run(*base)
    assert as_json["hash"] in table.stdout
    assert table.exit_code == 0


def test_json_contract_keys() -> None:
    data = run("resolve", "--device", "h100", "--format", "json").json()
    assert list(data) == [
        "format_version",
        "vllm_version",
        "valid",
        "platform",
        "kernel_config",
        "parallel_config",
        "compilation",
        "ir_dispatch",
        "hash",
        "hash_scheme",
        "hash_factors",
        "problems",
        "vllm_version_source",
        "model",
        "attention_config",
        "attention_hash",
        "selection",
        "compile_cache",
    ]
    # no model: the env part alone, the config part unknown and why
    assert data["compile_cache"]["config_hash"] is None
    assert len(data["compile_cache"]["env_hash"]) == 64
    assert data["format_version"] == "1"
    assert data["hash_scheme"] == "hash_config"
    assert data["vllm_version_source"] == "newest"
    assert data["platform"]["source"] == "preset"
    assert len(data["hash"]) == 64


def test_batch_keeps_going_after_a_bad_line() -> None:
    lines = "\n".join(
        [
            json.dumps(["--moe-backend", "triton"]),
            "not json",
            json.dumps({"id": "x", "argv": ["--moe-backend", "bogus"]}),
            json.dumps({"id": 7, "argv": ["--device", "mi300x", "--moe-backend", "aiter"]}),
        ]
    )
    result = run("resolve", "--batch", "-", "--device", "h100", stdin=lines)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == [1, 2, "x", 7]
    assert [r["exit_code"] for r in rows] == [0, 2, 2, 0]
    assert rows[3]["platform"]["gfx_arch"] == "gfx942"
    assert rows[0]["platform"]["device"] == "NVIDIA H100 80GB HBM3"
    assert result.exit_code == 2


def test_version_and_help() -> None:
    version = run("--version")
    assert version.exit_code == 0
    assert "kernelcfg" in version.stdout
    helped = run("resolve", "--help")
    assert helped.exit_code == 0
    assert "--device" in helped.stdout
    assert "Exit codes" in helped.stdout


def test_duplicate_keys_warn_as_vllm_does() -> None:
    plain = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--moe-backend",
        "triton",
        "--moe_backend=cutlass",
    )
    assert "Found duplicate keys --moe-backend" in plain.stderr
    assert plain.json()["kernel_config"]["moe_backend"] == "cutlass"
    dotted = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--kernel-config.moe_backend=triton",
        "--kernel-config.moe_backend=cutlass",
    )
    assert "Found duplicate keys --kernel-config.moe_backend" in dotted.stderr
    short = run("resolve", "--device", "h100", "--format", "json", "-tp", "2", "-tp", "4")
    assert "duplicate" not in short.stderr
    assert short.json()["parallel_config"]["tensor_parallel_size"] == 4


def test_api_kernel_config_refusal_matches_the_flag() -> None:
    from kernelcfg.engine import resolution
    from kernelcfg.targets.presets import resolve_target
    from kernelcfg.vllm import releases
    from kernelcfg.vllm.inputs import Inputs

    release = releases.load(releases.known_versions()[-1])
    bad = {"moe_backend": "tritn"}
    cli = run("resolve", "--kernel-config", json.dumps(bad), "--device", "h100")
    assert cli.exit_code == 2
    result = resolution.resolve(Inputs(kernel_config=bad), resolve_target(device="h100"), release)
    [problem] = [p for p in result.problems if p.severity == "error"]
    assert problem.code == "invalid-kernel-config"
    assert problem.field == "moe_backend"
    assert problem.message in cli.stderr
    assert "did you mean 'triton'?" in problem.message
    assert result.exit_code() == 2


def test_unreadable_batch_file_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    result = run("resolve", "--batch", str(missing), "--device", "h100")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"error: --batch: cannot read {str(missing)!r}: No such file or directory\n"
    )


def test_batch_line_context_keys_and_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text(
        '{"id": "a", "device": "b200", "vllm_version": "0.33", "env": {"VLLM_X": "1"}, '
        '"argv": ["--moe-backend", "triton"]}\n'
        '{"id": "b", "devcie": "b200", "argv": []}\n'
    )
    result = run("resolve", "--batch", str(path), "--format", "json")
    a, b = (json.loads(line) for line in result.stdout.splitlines())
    assert a["platform"]["device"] == "NVIDIA B200"
    assert a["vllm_version"] == "0.33.0"
    assert b["exit_code"] == 2
    assert "did you mean 'device'" in b["problems"][0]["message"]
    assert result.exit_code == 2
    assert "2 results: 1 exit 0, 1 exit 2" in result.stderr


def test_batch_matrix_expands_every_line(tmp_path: Path) -> None:
    path = tmp_path / "lines.jsonl"
    path.write_text('{"id": "a", "argv": ["--moe-backend", "triton"]}\n')
    result = run(
        "resolve",
        "--batch",
        str(path),
        "--format",
        "json",
        "--matrix",
        "device=h100,mi300x",
        "--matrix",
        "vllm_version=0.33,0.34",
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(x["matrix"]["device"], x["vllm_version"]) for x in lines] == [
        ("h100", "0.33.0"),
        ("h100", "0.34.0"),
        ("mi300x", "0.33.0"),
        ("mi300x", "0.34.0"),
    ]
    bad = run("resolve", "--batch", str(path), "--matrix", "devcie=h100")
    assert bad.exit_code == 2
    assert "did you mean 'device'" in bad.stderr
    assert run("resolve", "--matrix", "device=h100").exit_code == 2


def test_repeated_env_and_architecture_never_warn() -> None:
    result = run(
        "resolve",
        "--device",
        "h100",
        "--env",
        "VLLM_USE_DEEP_GEMM=1",
        "--env",
        "VLLM_ROCM_USE_AITER=0",
        "--architecture",
        "A",
        "--architecture",
        "B",
        "--strict",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    assert "duplicate" not in result.stderr


def test_env_format_carries_the_exit_code_for_set_e_shells(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = tmp_path / "deploy.sh"
    script.write_text(
        "set -e\n"
        f'out="$({sys.executable} -m kernelcfg resolve --device h100 --moe-backend aiter '
        '--format env)" || true\n'
        'eval "$out"\n'
        'if [ "$KERNELCFG_EXIT" != 0 ]; then echo "refused: $KERNELCFG_EXIT"; exit 3; fi\n'
        "echo deployed\n"
    )
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 3
    assert "refused: 1" in done.stdout
    assert "deployed" not in done.stdout


def test_github_format_writes_each_problem_once() -> None:
    result = run("resolve", "--device", "h100", "--moe-backend", "aiter", "--format", "github")
    assert result.stdout.count("backend-cannot-run") == 1
    assert "aiter" not in result.stderr


def test_fail_on_policy() -> None:
    args = ("resolve", "--device", "h100", "--moe-backend", "aiter", "--format", "json")
    assert run(*args).exit_code == 1
    assert run(*args, "--fail-on", "never").exit_code == 0
    quiet_line = (
        "resolve",
        "--device",
        "b200",
        "--moe-backend",
        "flashinfer_trtllm",
        "--install",
        "image",
    )
    assert run(*quiet_line, "--strict", "--format", "json").exit_code == 0
    assert run(*quiet_line, "--fail-on", "warning", "--format", "json").exit_code == 0


@pytest.mark.parametrize(
    "command", ["resolve", "versions", "diff", "scan", "lint-env", "backends", "explain", "schema"]
)
def test_help_reads_at_80_columns(command: str) -> None:
    text = run(command, "--help", env={"COLUMNS": "80"}).stdout
    for line in text.splitlines():
        assert len(line) <= 80, line
        assert line.count("`") % 2 == 0, f"a code span broken across lines: {line!r}"


def _mixed_batch(tmp_path: Path, count: int) -> Path:
    """Good lines, refused lines, unusable lines and a line that is not UTF-8."""
    kinds = [
        '{"id": "ok-%d", "argv": ["--device", "h100", "--moe-backend", "triton"]}',
        '{"id": "refused-%d", "argv": ["--device", "mi300x", "--moe-backend", "deep_gemm"]}',
        '["--device", "b200", "--moe-backend", "nonsense-%d"]',
        '{"id": %d, "argv": "not a list"}',
        '["--moe-backend", "triton", "-O%d"]',
    ]
    text = "\n".join(kinds[i % len(kinds)].replace("%d", str(i % 4)) for i in range(count))
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(text.encode() + b"\n\xff\xfe\n" + text.encode() + b"\n")
    return path


@pytest.mark.parametrize("extra", [[], ["--matrix", "device=h100,cpu"], ["--fail-on", "never"]])
def test_batch_jobs_give_the_serial_output(tmp_path: Path, extra: list[str]) -> None:
    """Worker processes change nothing a reader sees: the same lines, in input order, the
    same exit code and the same tally (chunks span several workers)."""
    import subprocess
    import sys

    path = _mixed_batch(tmp_path, 700)
    runs = [
        subprocess.run(
            [sys.executable, "-m", "kernelcfg", "resolve", "--batch", str(path), *jobs, *extra],
            capture_output=True,
            text=True,
            check=False,
            env={"PATH": "/usr/bin:/bin", "KERNELCFG_DEVICE": ""},
        )
        for jobs in ([], ["--jobs", "3"], ["-j", "auto"])
    ]
    serial = runs[0]
    cells = 2 if "--matrix" in extra else 1
    assert serial.stdout.count("\n") == 1400 * cells + 1  # the unreadable line once
    for other in runs[1:]:
        assert other.stdout == serial.stdout
        # more workers than CPUs are capped, and the run says so: the one difference
        capped = [line for line in other.stderr.splitlines(True) if "note: --jobs" in line]
        assert len(capped) <= 1
        assert all(line.startswith("note: --jobs 3 capped at ") for line in capped)
        assert other.stderr.replace("".join(capped), "") == serial.stderr
        assert other.returncode == serial.returncode
    assert "Traceback" not in serial.stderr


@pytest.mark.parametrize("value", ["0", "-2", "many", "1000"])
def test_batch_jobs_refuses_a_bad_count(tmp_path: Path, value: str) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text('["--device", "h100"]\n')
    result = run("resolve", "--batch", str(path), "--jobs", value)
    assert result.exit_code == 2
    assert f"--jobs {value!r}: give a count from 1 to 256, or auto" in result.stderr
