"""Every example the help texts and ``explain`` show is executed, and works."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelcfg.checks import constraints
from kernelcfg.cli import app
from kernelcfg.vllm import releases

from .cli_helpers import run
from .fake_hub import FakeHub, Repo, serving

pytestmark = pytest.mark.cli

_COMMANDS = "|".join(
    str(info.name or getattr(info.callback, "__name__", "")) for info in app.registered_commands
)
_EXAMPLE = re.compile(rf"kernelcfg (?:{_COMMANDS})\b[^`\n]*")


def _help_examples() -> list[str]:
    texts: list[str] = []
    for info in app.registered_commands:
        texts += [info.epilog or "", info.help or "", getattr(info.callback, "__doc__", "") or ""]
    found = []
    for text in texts:
        for match in _EXAMPLE.findall(text):
            found.append(match.strip().rstrip(".,"))
    return sorted(set(found))


HELP_EXAMPLES = _help_examples()


ROOT = Path(__file__).resolve().parent.parent


def _fixtures(folder: Path) -> None:
    (folder / "matrix.jsonl").write_text('["--moe-backend", "triton"]\n')
    for name, config in (
        ("gpt-oss-20b", (ROOT / "docs" / "examples" / "gpt-oss-20b" / "config.json").read_text()),
        ("DeepSeek-R1", (ROOT / "docs" / "examples" / "deepseek-r1" / "config.json").read_text()),
        ("DeepSeek-V3.2", json.dumps(_dsa_config())),
    ):
        (folder / name).mkdir(exist_ok=True)
        (folder / name / "config.json").write_text(config)
    saved = run("resolve", "--device", "h100", "--format", "json").stdout
    (folder / "yesterday.json").write_text(saved)
    (folder / "today.json").write_text(saved)
    for sub, name, text in (
        ("deploy", "a.yaml", 'command: ["vllm", "serve", "m", "-tp", "2"]\n'),
        ("scripts", "serve.sh", "vllm serve m --moe-backend triton\n"),
        ("k8s", "vllm.yaml", 'args: ["vllm", "serve", "m"]\n'),
    ):
        (folder / sub).mkdir(exist_ok=True)
        (folder / sub / name).write_text(text)


def _dsa_config() -> dict[str, object]:
    """A DeepSeek-V3.2 shaped config.json (MLA with a sparse indexer)."""
    return {
        "architectures": ["DeepseekV32ForCausalLM"],
        "model_type": "deepseek_v32",
        "num_attention_heads": 128,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "index_topk": 2048,
        "torch_dtype": "bfloat16",
    }


def test_there_are_help_examples() -> None:
    assert len(HELP_EXAMPLES) >= 10


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    """The models the examples fetch (``fetch``, ``--download``), served on 127.0.0.1:
    no example reaches the real Hub."""
    examples = ROOT / "docs" / "examples"
    repos = {
        "deepseek-ai/DeepSeek-R1": (examples / "deepseek-r1" / "config.json").read_bytes(),
        "openai/gpt-oss-20b": (examples / "gpt-oss-20b" / "config.json").read_bytes(),
    }
    with serving({k: Repo({"main": {"config.json": v}}) for k, v in repos.items()}) as fake:
        yield fake


@pytest.mark.parametrize("example", HELP_EXAMPLES)
def test_help_example_runs(example: str, tmp_path: Path, hub: FakeHub) -> None:
    _fixtures(tmp_path)
    command = example.replace("kernelcfg", f"{sys.executable} -m kernelcfg", 1)
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": "/usr/bin:/bin",
            "KERNELCFG_DETECT_TORCH": "0",
            "HF_ENDPOINT": hub.url,
            "HF_HOME": str(tmp_path / "hf-home"),
            "HF_HUB_CACHE": str(tmp_path / "hub"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "PYTHONPATH": str(ROOT),  # this checkout's kernelcfg, wherever the run is
        },
    )
    assert done.returncode in (0, 1), (example, done.stderr[-500:])
    assert "Traceback" not in done.stderr


def _explained() -> list[str]:
    names = []
    for field in constraints.FIELDS:
        names.append(field)
        names += [f"{field}={v}" for v in releases.load(None).choices(field)]
    return names


@pytest.mark.parametrize("what", _explained())
def test_explain_example_runs(what: str) -> None:
    data = run("explain", what, "--format", "json").json()
    if "example" not in data:
        return
    words = data["example"].split()[1:]
    result = run(*words, "--format", "json")
    assert result.exit_code == 0, (data["example"], result.stderr)
    json.loads(result.stdout)
