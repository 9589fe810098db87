"""``scan`` as a CI gate: every form a launch takes in deployment files, each read from a
real public file (``tests/data/scan-forms``, sources in its README), end to end in every
output format: the launches expected and nothing else, no crash, no false report."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .cli_helpers import run

pytestmark = pytest.mark.cli

FORMS = Path(__file__).parent / "data" / "scan-forms"
FORMATS = ("table", "json", "github", "junit", "sarif")


@dataclass(frozen=True)
class Form:
    """A folder of ``tests/data/scan-forms`` and what ``scan`` must find in it."""

    folder: str
    """The folder."""
    launches: list[tuple[str, int, int, list[str]]]
    """Each launch: file, line, exit code, words its argv starts with (after vllm serve)."""
    args: list[str] = field(default_factory=list)
    """Options for the run."""
    notes: set[str] = field(default_factory=set)
    """Note codes some launch carries."""


_IMAGE = {"image-entry-point"}
_ASSEMBLED = {"assembled-launch"}
_SRUN_MODEL = "/mnt/petrelfs/zhaoshitian/gveval_zhaoshitian/Qwen2.5-72B-Instruct"
_HELM_MODEL = "{{ $modelSpec.modelURL | quote }}"
CASES = [
    Form(
        "compose-string",
        [("docker-compose.yml", 5, 0, ["--model"]), ("docker-compose.yml", 22, 0, ["--model"])],
        notes=_IMAGE,
    ),
    Form(
        "compose-folded",
        [("docker-compose.yaml", 25, 0, ["--model", "Qwen/Qwen3-30B-A3B-Instruct-2507"])],
        notes=_IMAGE,
    ),
    Form("compose-list", [("vllm-compose.yml", 13, 0, ["--model", "mistralai/Mistral-7B-v0.3"])]),
    Form("compose-anchor", [("docker-compose.yml", 5, 0, ["--disable-log-requests"])]),
    Form(
        "compose-user-image",
        [("docker-compose.testnet.yml", 5, 0, ["--model"])],
        args=["--image-entrypoint", "manifoldlabs/vllm-openai=vllm"],
        notes=_IMAGE,
    ),
    Form("compose-rocm-shell", []),  # rocm/vllm-dev with command: /bin/bash is no launch
    Form("k8s-args", [("vllm-deployment.yaml", 34, 0, ["--model"])], notes=_IMAGE),
    Form("docker-run", [("run.sh", 7, 0, ["--model", "Qwen/Qwen2.5-Coder-0.5B-Instruct"])]),
    Form(
        "docker-run-user-image",
        [("vllm.sh", 8, 2, ["--model"])],
        args=["--image-entrypoint", "vastai/vllm*=vllm"],
    ),
    Form(
        "docker-run-image-var",
        [("start_decode.sh", 25, 0, ["meta-llama/Llama-3.1-8B-Instruct"])],
        args=["--image-entrypoint", "lmcache/vllm-openai=vllm"],
        notes=_ASSEMBLED,
    ),
    Form(
        "markdown-docker",
        [
            ("docker.cuda.inc.md", 13, 0, ["--model"]),
            ("docker.cuda.inc.md", 25, 0, ["--model"]),
            ("docker.cuda.inc.md", 40, 0, ["<args...>"]),
        ],
    ),
    Form(
        "markdown-rocm",
        [("docker.rocm.inc.md", 18, 0, ["--model"]), ("docker.rocm.inc.md", 47, 0, ["<args...>"])],
        args=["--image-entrypoint", "vllm-rocm=vllm"],
    ),
    Form(
        "dollar-at",
        [("entrypoint.sh", 3, 0, ["--host", "0.0.0.0", "--port", "8000", "$@"])],
        notes={"forwarded-words"},
    ),
    Form("srun", [("run_serve_llm.sh", 2, 0, [_SRUN_MODEL])]),
    Form("until", [("stt_server.sh", 1, 0, ["fsicoli/whisper-large-v3-pt-cv19-fleurs"])]),
    Form("python-list", [("start_service.py", 11, 0, ["model", "--host"])], notes=_ASSEMBLED),
    Form("python-conflict", [("start_service.py", 18, 0, ["model"])], notes=_ASSEMBLED),
    Form("python-fstring", [("vllm.py", 28, 0, ["--model", "${model}"])]),
    Form(
        "dockerfile-run",
        [("Dockerfile", 45, 0, ["--model"]), ("Dockerfile", 77, 0, ["--port"])],
        notes={"build-time-launch"},
    ),
    Form(
        "helm-template",
        [("deployment-vllm-multi.yaml", 131, 0, [_HELM_MODEL])],
        notes={"helm-template"},
    ),
]
"""The forms, by folder (the README says where each file comes from)."""


def _scan(root: Path, form: Form, fmt: str) -> Any:
    files = sorted(str(p) for p in (root / form.folder).iterdir())
    return run("scan", "--device", "h100", "--format", fmt, *form.args, "--", *files)


@pytest.fixture(scope="module")
def laid_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The forms as ``scan`` meets them: a Python file is stored as ``NAME.py.txt`` (the
    type checker would read it) and laid out as ``NAME.py``."""
    root = tmp_path_factory.mktemp("forms")
    for source in FORMS.iterdir():
        if source.is_dir():
            for path in source.iterdir():
                target = root / source.name / path.name.removesuffix(".txt")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(path.read_bytes())
    return root


@pytest.mark.parametrize("form", CASES, ids=[c.folder for c in CASES])
def test_each_form_finds_its_launches_and_nothing_else(laid_out: Path, form: Form) -> None:
    done = _scan(laid_out, form, "json")
    data = done.json()
    rows = [row for row in data["lines"] if row["argv"]]
    got = [(Path(r["file"]).name, r["line"], r["exit_code"]) for r in rows]
    assert got == [(name, line, code) for name, line, code, _ in form.launches]
    for row, (_, _, _, start) in zip(rows, form.launches, strict=True):
        assert row["argv"][:2] == ["vllm", "serve"]
        assert row["argv"][2 : 2 + len(start)] == start
    notes = {p["code"] for row in rows for p in row["problems"] if p["severity"] == "info"}
    assert form.notes <= notes
    assert done.exit_code == max([code for _, _, code, _ in form.launches], default=0)


@pytest.mark.parametrize("form", CASES, ids=[c.folder for c in CASES])
def test_each_form_in_every_format(laid_out: Path, form: Form) -> None:
    codes = set()
    for fmt in FORMATS:
        done = _scan(laid_out, form, fmt)
        codes.add(done.exit_code)
        assert "Traceback" not in done.stdout + done.stderr, fmt
        if fmt == "json":
            json.loads(done.stdout)
        elif fmt == "junit":
            ET.fromstring(done.stdout)
        elif fmt == "sarif":
            sarif = json.loads(done.stdout)
            assert all(r["locations"] for r in sarif["runs"][0]["results"])
        elif fmt == "github":
            assert all(line.startswith("::") for line in done.stdout.splitlines())
    assert len(codes) == 1, codes  # the exit code is the format's business of none


def test_no_false_report_on_the_real_files(laid_out: Path) -> None:
    """Only the refusals that are real (vLLM 0.34 removed ``--swap-space``) fail a line."""
    errors = []
    for form in CASES:
        for row in _scan(laid_out, form, "json").json()["lines"]:
            errors += [
                (form.folder, p["message"]) for p in row["problems"] if p["severity"] == "error"
            ]
    assert len(errors) == 1
    assert errors[0][0] == "docker-run-user-image"
    assert "--swap-space" in errors[0][1]


def test_credentials_in_the_real_files_stay_masked(laid_out: Path) -> None:
    for folder, secret in [("docker-run", "EMPTY"), ("until", "token-abc123")]:
        form = next(c for c in CASES if c.folder == folder)
        for fmt in FORMATS:
            assert secret not in _scan(laid_out, form, fmt).stdout, (folder, fmt)
    form = next(c for c in CASES if c.folder == "docker-run-user-image")
    assert "hoailb-vllm" not in _scan(laid_out, form, "junit").stdout


def test_without_naming_it_a_custom_image_is_not_taken_for_vllms(laid_out: Path) -> None:
    form = next(c for c in CASES if c.folder == "compose-user-image")
    assert _scan(laid_out, Form(form.folder, []), "json").json()["lines"] == []


def test_a_rocm_image_started_with_a_shell_is_no_launch(laid_out: Path) -> None:
    form = next(c for c in CASES if c.folder == "markdown-rocm")
    rows = _scan(laid_out, form, "json").json()["lines"]
    assert 69 not in [r["line"] for r in rows]  # docker run --entrypoint bash vllm-rocm


# The example, and the gate's policy


COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.34.0
    command: --model Qwen/Qwen3-30B-A3B --moe-backend deep_select
"""


def test_arguments_for_vllms_image_are_refused_at_their_line(tmp_path: Path) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE, encoding="utf-8")
    done = run("scan", "--device", "h100", "--format", "github", str(path))
    assert done.exit_code == 2
    (error,) = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert "line=4" in error
    assert "deep_select" in error


def test_fail_on_never_means_never(tmp_path: Path) -> None:
    path = tmp_path / "serve.sh"
    path.write_text("vllm serve m --no-such-option 1\n", encoding="utf-8")
    for fmt in FORMATS:
        done = run("scan", "--device", "h100", "--fail-on", "never", "--format", fmt, str(path))
        assert done.exit_code == 0, fmt
    said = run("scan", "--device", "h100", "--fail-on", "never", str(path)).stdout
    assert "would exit 2" in said
    data = run("scan", "--device", "h100", "--fail-on", "never", "--format", "json", str(path))
    assert data.json()["exit_code"] == 0
    assert data.json()["lines"][0]["exit_code"] == 2


def test_notices_not_about_correctness_are_one_annotation(tmp_path: Path) -> None:
    for number in range(7):
        (tmp_path / f"s{number}.sh").write_text(f"vllm serve org/model-{number}\n", "utf-8")
    (tmp_path / "bad.sh").write_text("vllm serve m --moe-backend nope\n", "utf-8")
    done = run("scan", "--device", "h100", "--format", "github", str(tmp_path))
    lines = done.stdout.splitlines()
    local = [line for line in lines if "model-not-local" in line]
    assert len(local) == 1
    assert "7 launches" in local[0]
    assert "file=" not in local[0]
    assert sum(line.startswith("::error") for line in lines) == 1


# Folders and standard input


def _git(folder: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_a_folder_is_scanned_as_git_sees_it(tmp_path: Path) -> None:
    shutil.copytree(FORMS / "compose-folded", tmp_path / "deploy")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "serve.sh").write_text("vllm serve m --moe-backend nope\n", "utf-8")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "serve.sh").write_text("vllm serve m --bogus\n", "utf-8")
    (tmp_path / ".gitignore").write_text("build/\n", "utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG vllm serve m --bogus")
    _git(tmp_path, "init", "-q")
    done = run("scan", "--device", "h100", "--format", "json", str(tmp_path))
    files = sorted(Path(r["file"]).relative_to(tmp_path).as_posix() for r in done.json()["lines"])
    assert files == ["deploy/docker-compose.yaml", "scripts/serve.sh"]
    assert done.exit_code == 2


def test_a_folder_outside_git_skips_only_dot_git(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "serve.sh").write_text("vllm serve m --bogus\n", "utf-8")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(
        "jobs:\n  t:\n    steps:\n      - run: vllm serve m --max-model-len 1\n", "utf-8"
    )
    done = run("scan", "--device", "h100", "--format", "json", str(tmp_path))
    assert [Path(r["file"]).name for r in done.json()["lines"]] == ["ci.yml"]


def test_a_folder_past_the_file_limit_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelcfg.commands import scan_files

    monkeypatch.setattr(scan_files, "MAX_FILES", 3)
    for number in range(5):
        (tmp_path / f"s{number}.sh").write_text("vllm serve m\n", "utf-8")
    rows = run("scan", "--device", "h100", "--format", "json", str(tmp_path)).json()["lines"]
    assert len([r for r in rows if r["argv"]]) == 3
    assert "the first 3 files" in rows[-1]["problems"][0]["message"]


def test_standard_input_is_read_by_what_it_holds() -> None:
    done = run("scan", "--device", "h100", "--format", "json", "-", stdin=COMPOSE)
    (row,) = done.json()["lines"]
    assert (row["file"], row["line"], row["exit_code"]) == ("<stdin>", 4, 2)
    both = run("scan", "--device", "h100", "--files-from", "-", "-", stdin="x\n")
    assert both.exit_code == 2


def test_an_image_built_in_the_repository_is_vllms(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile.vllm").write_text(
        'FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nENTRYPOINT ["vllm", "serve"]\n', "utf-8"
    )
    (tmp_path / "compose.yaml").write_text(
        "services:\n  llm:\n    build: {context: ., dockerfile: docker/Dockerfile.vllm}\n"
        "    command: --model m --moe-backend nope\n",
        "utf-8",
    )
    (tmp_path / "build.sh").write_text(
        "docker build -f docker/Dockerfile.vllm -t ghcr.io/acme/llm:1.2 .\n", "utf-8"
    )
    (tmp_path / "k8s.yaml").write_text(
        "spec:\n  containers:\n  - image: ghcr.io/acme/llm:1.2\n    args: [--model, m, --bogus]\n",
        "utf-8",
    )
    _git(tmp_path, "init", "-q")
    rows = run("scan", "--device", "h100", "--format", "json", str(tmp_path)).json()["lines"]
    got = sorted((Path(r["file"]).name, r["line"], r["exit_code"]) for r in rows)
    assert got == [("Dockerfile.vllm", 2, 0), ("compose.yaml", 4, 2), ("k8s.yaml", 4, 2)]
    alone = run("scan", "--device", "h100", "--format", "json", str(tmp_path / "k8s.yaml"))
    assert alone.json()["lines"] == []  # named alone, nothing says the image is vLLM's
    compose = run("scan", "--device", "h100", "--format", "json", str(tmp_path / "compose.yaml"))
    assert [r["exit_code"] for r in compose.json()["lines"]] == [2]  # its build: is read


# Forms with no public file found in the index (see the README): written here


def test_exec_form_entrypoint_with_comment_lines_inside(tmp_path: Path) -> None:
    text = (
        "FROM vllm/vllm-openai:v0.34.0\n"
        'ENTRYPOINT ["vllm", "serve", \\\n'
        "    # the model\n"
        '    "Qwen/Qwen3-8B", \\\n'
        "\n"
        '    "--moe-backend", "nope"]\n'
    )
    path = tmp_path / "Dockerfile"
    path.write_text(text, "utf-8")
    (row,) = run("scan", "--device", "h100", "--format", "json", str(path)).json()["lines"]
    assert row["argv"] == ["vllm", "serve", "Qwen/Qwen3-8B", "--moe-backend", "nope"]
    assert row["exit_code"] == 2


def test_templates_are_judged_on_what_is_known_and_set_fills_them(tmp_path: Path) -> None:
    workflow = (
        "jobs:\n  serve:\n    steps:\n      - run: |\n"
        "          vllm serve ${{ matrix.model }} --tensor-parallel-size ${{ matrix.tp }}\n"
    )
    path = tmp_path / "ci.yml"
    path.write_text(workflow, "utf-8")
    (row,) = run("scan", "--device", "h100", "--format", "json", str(path)).json()["lines"]
    assert row["exit_code"] == 0
    assert row["unresolved"] == ["${{ matrix.model }}", "${{ matrix.tp }}"]
    filled = run("scan", "--device", "h100", "--format", "json", "--set", "matrix.tp=banana",
                 str(path))  # fmt: skip
    assert filled.json()["lines"][0]["exit_code"] == 2
    chart = tmp_path / "deployment.yaml"
    chart.write_text(
        "spec:\n  containers:\n  - image: vllm/vllm-openai\n"
        '    args: ["--model", "{{ .Values.model }}",\n'
        "           --moe-backend, {{ .Values.moe | quote }}]\n",
        "utf-8",
    )
    rows = run("scan", "--device", "h100", "--format", "json", str(chart)).json()["lines"]
    assert [r["exit_code"] for r in rows] == [0]
    set_ = run("scan", "--device", "h100", "--format", "json", "--set", "moe=nope", str(chart))
    assert set_.json()["lines"][0]["exit_code"] == 2


def test_a_launch_assembled_in_a_variable_with_optional_parts(tmp_path: Path) -> None:
    script = (
        'CMD="vllm serve m --max-model-len 4096"\n'
        'CMD="$CMD --moe-backend nope"\n'
        'if [ -n "$X" ]; then\n  CMD="$CMD --bogus"\nfi\n'
        'eval "$CMD"\n'
    )
    path = tmp_path / "run.sh"
    path.write_text(script, "utf-8")
    (row,) = run("scan", "--device", "h100", "--format", "json", str(path)).json()["lines"]
    assert row["line"] == 1
    assert row["exit_code"] == 2
    message = " ".join(p["message"] for p in row["problems"])
    assert "nope" in message
    assert "--bogus" not in message  # optional: under a condition
    assert "line 4" in message


def test_python_fstring_to_os_system_and_appended_lists(tmp_path: Path) -> None:
    code = (
        "import os, subprocess, sys\n"
        'os.system(f"vllm serve {model} --tensor-parallel-size {tp} --moe-backend nope")\n'
        'cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", m]\n'
        'cmd += ["--bogus"]\n'
        "cmd.append('--port')\n"
        "cmd.append(port)\n"
        "subprocess.Popen(cmd)\n"
    )
    path = tmp_path / "launch.py"
    path.write_text(code, "utf-8")
    rows = run("scan", "--device", "h100", "--format", "json", str(path)).json()["lines"]
    assert [(r["line"], r["exit_code"]) for r in rows] == [(2, 2), (3, 2)]
    assert rows[0]["unresolved"] == ["${model}", "${tp}"]
    assert rows[1]["argv"][-3:] == ["--bogus", "--port", "port"]
