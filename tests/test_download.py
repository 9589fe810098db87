"""``--download`` and ``kernelcfg fetch``: a hub id's config.json fetched into the
Hugging Face cache on request, against a local stand-in of the Hub
(:mod:`tests.fake_hub`) — never the real one: ``HF_ENDPOINT`` always names the
stand-in, and a connection anywhere but 127.0.0.1 fails the test."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.commands import pipeline
from kernelcfg.engine.resolution import Resolution

from .cli_helpers import Run, run
from .fake_hub import TOKEN, FakeHub, Repo, commit, serving, serving_as_hub

pytestmark = pytest.mark.cli

ROOT = Path(__file__).resolve().parent.parent
R1 = (ROOT / "docs" / "examples" / "deepseek-r1" / "config.json").read_bytes()
"""DeepSeek-R1's config.json as published (an fp8 block-quantised MoE)."""
LLAMA = json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}).encode()
MODELOPT_LEGACY = json.dumps(
    {
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
    }
).encode()
"""An ``hf_quant_config.json`` as ModelOpt 0.29 and before wrote it, beside a
config.json with no quantization_config."""

REPOS = {
    "deepseek-ai/DeepSeek-R1": Repo({"main": {"config.json": R1}, "v2": {"config.json": LLAMA}}),
    "meta-llama/Gated": Repo({"main": {"config.json": LLAMA}}, gated=True),
    "nvidia/Legacy-FP8": Repo(
        {"main": {"config.json": LLAMA, "hf_quant_config.json": MODELOPT_LEGACY}}
    ),
    "org/no-config": Repo({"main": {"README.md": b"weights elsewhere"}}),
}
SERVE_R1 = ["--", "vllm", "serve", "deepseek-ai/DeepSeek-R1", "-tp", "8"]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Any connection (or name look-up) beyond 127.0.0.1 is recorded, refused, and
    fails the test — also one that a library swallows."""
    reached: list[object] = []
    connect, lookup = socket.socket.connect, socket.getaddrinfo

    def local_connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in (
            "127.0.0.1",
            "::1",
        ):
            reached.append(address)
            raise ConnectionRefusedError(f"a test reached for {address}")
        connect(self, address)

    def local_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "::1", "localhost"):
            reached.append(host)
            raise socket.gaierror(f"a test looked up {host}")
        return lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", local_connect)
    monkeypatch.setattr(socket, "getaddrinfo", local_lookup)
    yield reached
    assert reached == []


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The stand-in, named by ``HF_ENDPOINT``, with a fresh cache under ``tmp_path``."""
    with serving_as_hub(REPOS, monkeypatch, tmp_path / "hf-home", tmp_path / "hub") as fake:
        yield fake


def _one_error(done: Run, *needles: str) -> str:
    """The one line a failed download is, exit 2, last on stderr after the progress
    lines (one per file asked, :func:`_progress`); it names every needle."""
    assert done.exit_code == 2, (done.stdout, done.stderr)
    *said, line = done.stderr.strip().splitlines()
    assert said == _progress(done), said
    assert not line.startswith("fetching "), line
    for needle in needles:
        assert needle in line, line
    return line


def _progress(done: Run) -> list[str]:
    """The progress lines on stderr (not a terminal: one plain line per file)."""
    return [line for line in done.stderr.splitlines() if line.startswith("fetching ")]


def test_a_public_repo_gives_its_model_facts(hub: FakeHub) -> None:
    done = run("resolve", "--device", "h100", "--format", "json", "--download", *SERVE_R1)
    assert done.exit_code == 0, done.stderr
    data = done.json()
    assert data["model"]["architectures"] == ["DeepseekV3ForCausalLM"]
    assert data["model"]["quant_scheme"] == "fp8_block"
    assert data["model"]["source"] == "Hugging Face cache"
    assert data["selection"]["moe_backend"]["backend"] == "TRITON"
    assert data["selection"]["linear_backend"]["backend"] == "cutlass"
    path = "/deepseek-ai/DeepSeek-R1/resolve/main/config.json"
    assert hub.asked("GET").count(path) == 1
    asked = len(hub.requests)
    again = run("resolve", "--device", "h100", "--format", "json", "--download", *SERVE_R1)
    assert again.json()["model"] == data["model"]
    assert len(hub.requests) == asked  # in the cache now: the Hub is not asked again


def test_without_download_nothing_is_asked_and_the_note_names_it(hub: FakeHub) -> None:
    done = run("resolve", "--device", "h100", "--format", "json", *SERVE_R1)
    assert done.exit_code == 0
    (note,) = [p for p in done.json()["problems"] if p["code"] == "model-not-local"]
    assert "--architecture" in note["message"]
    assert "--download" in note["message"]
    assert hub.requests == []


def test_the_variable_asks_as_the_flag_does(hub: FakeHub) -> None:
    done = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        *SERVE_R1,
        env={"KERNELCFG_DOWNLOAD": "1"},
    )
    assert done.json()["model"]["architectures"] == ["DeepseekV3ForCausalLM"]
    refused = run("resolve", "--device", "h100", *SERVE_R1, env={"KERNELCFG_DOWNLOAD": "maybe"})
    _one_error(refused, "KERNELCFG_DOWNLOAD", "'maybe'")


def test_a_gated_repo_without_a_token_is_one_line(hub: FakeHub) -> None:
    done = run(
        "resolve", "--device", "h100", "--download", "--", "vllm", "serve", "meta-llama/Gated"
    )
    _one_error(done, "'meta-llama/Gated' is a gated repository", "HF_TOKEN is not set")
    assert [auth for _, _, auth in hub.requests] == [None]


def test_a_gated_repo_with_a_token_is_read(hub: FakeHub) -> None:
    serve = ["--", "vllm", "serve", "meta-llama/Gated"]
    wrong = run("resolve", "--device", "h100", "--download", *serve, env={"HF_TOKEN": "hf_no"})
    _one_error(wrong, "gated", "the token in HF_TOKEN has no access to it")
    hub.requests.clear()
    done = run(
        "resolve",
        "--device",
        "h100",
        "--format",
        "json",
        "--download",
        *serve,
        env={"HF_TOKEN": TOKEN},
    )
    assert done.exit_code == 0, done.stderr
    assert done.json()["model"]["architectures"] == ["LlamaForCausalLM"]
    assert {auth for _, _, auth in hub.requests} == {f"Bearer {TOKEN}"}


@pytest.mark.parametrize(
    ("model", "needles"),
    [
        ("nobody/nothing", ["'nobody/nothing' is not a model repository on HF_ENDPOINT"]),
        ("org/no-config", ["'org/no-config' has no config.json on HF_ENDPOINT", "--architecture"]),
    ],
)
def test_a_missing_repo_or_file_is_one_line(hub: FakeHub, model: str, needles: list[str]) -> None:
    done = run("resolve", "--device", "h100", "--download", "--", "vllm", "serve", model)
    _one_error(done, *needles)


def test_a_revision_is_fetched_and_then_read_from_the_cache(hub: FakeHub) -> None:
    words = ["resolve", "--device", "h100", "--format", "json", *SERVE_R1]
    done = run(*words, "--revision", "v2", "--download")
    assert done.json()["model"]["architectures"] == ["LlamaForCausalLM"]
    first, *beside = hub.asked("GET")
    assert first == "/deepseek-ai/DeepSeek-R1/resolve/v2/config.json"
    at = f"/deepseek-ai/DeepSeek-R1/resolve/{commit('v2')}/"  # the files beside: same commit
    assert beside == [f"{at}hf_quant_config.json", f"{at}quantization_config.json"]
    asked = len(hub.requests)
    offline = {"HF_HUB_OFFLINE": "1"}
    for revision in ("v2", commit("v2")):  # the branch (refs/v2), or its commit's snapshot
        cached = run(*words, "--revision", revision, env=offline)
        assert cached.json()["model"]["architectures"] == ["LlamaForCausalLM"], revision
    assert len(hub.requests) == asked
    main = run(*words, "--download").json()  # no refs/main: main is fetched, not guessed
    assert main["model"]["architectures"] == ["DeepseekV3ForCausalLM"]
    missing = run(*words, "--revision", "v3", "--download")
    _one_error(missing, "'deepseek-ai/DeepSeek-R1' has no revision 'v3'", "--revision")


def test_offline_mode_reads_the_cache_and_asks_nothing(hub: FakeHub) -> None:
    offline = {"HF_HUB_OFFLINE": "1"}
    done = run("resolve", "--device", "h100", "--download", *SERVE_R1, env=offline)
    _one_error(
        done,
        "the config.json of 'deepseek-ai/DeepSeek-R1' is not in the Hugging Face cache",
        "HF_HUB_OFFLINE is set",
        "kernelcfg fetch",
    )
    assert hub.requests == []
    assert run("fetch", "deepseek-ai/DeepSeek-R1").exit_code == 0
    asked = len(hub.requests)
    cached = run(
        "resolve", "--device", "h100", "--format", "json", "--download", *SERVE_R1, env=offline
    )
    assert cached.exit_code == 0
    assert cached.json()["model"]["architectures"] == ["DeepseekV3ForCausalLM"]
    assert len(hub.requests) == asked


def test_fetch_prints_one_line_per_model(hub: FakeHub, tmp_path: Path) -> None:
    done = run("fetch", "deepseek-ai/DeepSeek-R1", "nobody/nothing", "meta-llama/Gated")
    assert done.exit_code == 2
    (path,) = done.stdout.splitlines()
    assert Path(path).is_relative_to(tmp_path / "hub")
    assert json.loads(Path(path).read_text())["architectures"] == ["DeepseekV3ForCausalLM"]
    errors = [line for line in done.stderr.splitlines() if line not in _progress(done)]
    assert len(errors) == 2
    assert "'nobody/nothing' is not a model repository" in errors[0]
    assert "'meta-llama/Gated' is a gated repository" in errors[1]
    assert run("fetch", "deepseek-ai/DeepSeek-R1", "--revision", "v2").exit_code == 0
    local = run("fetch", str(tmp_path))
    _one_error(local, "is not a Hugging Face model id")


def test_the_files_vllm_reads_beside_config_json_come_too(hub: FakeHub) -> None:
    """No quantization_config in config.json: vLLM's get_config takes
    hf_quant_config.json (ModelOpt's older layout); INC reads quantization_config.json."""
    result = pipeline.resolve_args(
        ["--device", "h100", "--download", "--", "vllm", "serve", "nvidia/Legacy-FP8"]
    )
    assert isinstance(result, Resolution)
    assert result.inputs is not None
    assert result.inputs.hf_config is not None
    quant = result.inputs.hf_config["quantization_config"]
    assert quant["producer"]["name"] == "modelopt"
    asked = hub.asked("GET")
    assert f"/nvidia/Legacy-FP8/resolve/{commit('main')}/hf_quant_config.json" in asked
    assert f"/nvidia/Legacy-FP8/resolve/{commit('main')}/quantization_config.json" in asked
    run("fetch", "deepseek-ai/DeepSeek-R1")  # its config.json holds a quantization_config
    assert not [p for p in hub.asked("GET") if p.startswith("/deepseek-ai/") and "quant" in p]


def test_a_non_hub_endpoint_is_one_line(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint that answers without the Hub's headers is named as no Hub."""
    with serving({}) as other:
        monkeypatch.setattr(other, "answer", lambda *_: (200, {"Content-Length": "0"}, b""))
        done = run("fetch", "deepseek-ai/DeepSeek-R1", env={"HF_ENDPOINT": other.url})
    _one_error(done, "without the Hub's X-Repo-Commit header", "check HF_ENDPOINT")


def test_a_refused_connection_is_one_line_at_once(hub: FakeHub) -> None:
    """Nothing listens: one line, no retries (huggingface_hub's took ~25 s)."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    started = time.monotonic()
    done = run("fetch", "deepseek-ai/DeepSeek-R1", env={"HF_ENDPOINT": f"http://127.0.0.1:{port}"})
    assert time.monotonic() - started < 5
    _one_error(done, "cannot download config.json of 'deepseek-ai/DeepSeek-R1'", "refused")


def test_every_command_that_reads_a_model_takes_download(hub: FakeHub, tmp_path: Path) -> None:
    why = run("why", "moe", "--device", "h100", "--download", *SERVE_R1)
    assert why.exit_code == 0, why.stderr
    assert "TRITON" in why.stdout
    launch = tmp_path / "serve.sh"
    launch.write_text("vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --moe-backend cutlass\n")
    scanned = run("scan", "--device", "h100", "--download", "--format", "json", str(launch))
    (row,) = scanned.json()["lines"]
    assert "model-not-local" not in {p["code"] for p in row["problems"]}
    lines = "\n".join(
        json.dumps(["--", "vllm", "serve", model, "-tp", "8"])
        for model in ("deepseek-ai/DeepSeek-R1", "meta-llama/Gated")
    )
    batch = run("resolve", "--batch", "-", "--device", "h100", "--download", stdin=lines)
    good, gated = (json.loads(line) for line in batch.stdout.splitlines())
    assert good["selection"]["moe_backend"]["backend"] == "TRITON"
    assert gated["exit_code"] == 2
    assert "gated" in gated["problems"][0]["message"]
    diffed = run(
        "diff",
        "--device",
        "h100",
        "--download",
        "--a",
        "--moe-backend triton -- vllm serve deepseek-ai/DeepSeek-R1",
        "--b",
        "--moe-backend cutlass -- vllm serve deepseek-ai/DeepSeek-R1",
    )
    assert diffed.exit_code == 1, diffed.stderr


def test_download_takes_no_value(hub: FakeHub) -> None:
    _one_error(run("resolve", "--device", "h100", "--download=yes"), "--download: takes no value")


def test_downloading_needs_no_extra_package(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard library fetches: without huggingface_hub, a download still works."""
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    done = run("resolve", "--device", "h100", "--format", "json", "--download", *SERVE_R1)
    assert done.exit_code == 0, done.stderr
    assert done.json()["model"]["architectures"] == ["DeepseekV3ForCausalLM"]


@pytest.mark.slow
def test_fetch_then_resolve_offline_in_fresh_processes(hub: FakeHub, tmp_path: Path) -> None:
    """As a CI job does it: fill the cache, then read it with the network off; each
    process reads the variables as it starts (huggingface_hub at its import)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_CACHE": str(tmp_path / "ci-cache"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "KERNELCFG_DETECT_TORCH": "0",
        "PYTHONPATH": str(ROOT),
    }

    def kernelcfg(*words: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kernelcfg", *words],
            env={**env, **extra},
            capture_output=True,
            text=True,
            check=False,
        )

    fetched = kernelcfg("fetch", "deepseek-ai/DeepSeek-R1")
    assert fetched.returncode == 0, fetched.stderr
    asked = len(hub.requests)
    done = kernelcfg(
        "resolve", "--device", "h100", "--format", "json", *SERVE_R1, HF_HUB_OFFLINE="1"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["selection"]["moe_backend"]["backend"] == "TRITON"
    assert len(hub.requests) == asked


def test_a_hub_id_as_hf_config_path_is_read_in_place_of_the_model(hub: FakeHub) -> None:
    """vLLM reads the config from ``--hf-config-path`` when given, a hub id too."""
    serve = ["--", "vllm", "serve", "org/weights", "--hf-config-path", "deepseek-ai/DeepSeek-R1"]
    done = run("resolve", "--device", "h100", "--format", "json", *serve)
    (note,) = [p for p in done.json()["problems"] if p["code"] == "model-not-local"]
    assert note["field"] == "hf_config_path"
    assert "--download" in note["message"]
    fetched = run("resolve", "--device", "h100", "--format", "json", "--download", *serve)
    assert fetched.json()["model"]["architectures"] == ["DeepseekV3ForCausalLM"]
    assert {path.split("/")[1] for path in hub.asked("GET")} == {"deepseek-ai"}


def test_a_snapshot_without_config_json_is_fetched_into(hub: FakeHub, tmp_path: Path) -> None:
    """Another tool fetched one file of the model (a README): its config.json is not in
    the cache, and ``--download`` fetches it into the same snapshot."""
    folder = tmp_path / "hub" / "models--deepseek-ai--DeepSeek-R1"
    (folder / "snapshots" / commit("main")).mkdir(parents=True)
    (folder / "snapshots" / commit("main") / "README.md").write_text("hi")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit("main"))
    done = run("resolve", "--device", "h100", "--format", "json", "--download", *SERVE_R1)
    assert done.json()["model"]["architectures"] == ["DeepseekV3ForCausalLM"]
    assert (folder / "snapshots" / commit("main") / "config.json").exists()


def test_a_revision_that_is_a_path_is_refused(hub: FakeHub) -> None:
    done = run("resolve", "--device", "h100", "--download", *SERVE_R1, "--revision", "../../x")
    _one_error(done, "--revision '../../x' is not a branch, tag or commit name")
    assert hub.requests == []


def test_the_stored_login_opens_a_gated_repo(hub: FakeHub, tmp_path: Path) -> None:
    """No ``HF_TOKEN``: the token ``hf auth login`` stored in ``HF_HOME/token`` is sent,
    to the caller's Hub only."""
    (tmp_path / "hf-home").mkdir()
    (tmp_path / "hf-home" / "token").write_text(TOKEN + "\n")
    done = run("fetch", "meta-llama/Gated")
    assert done.exit_code == 0, done.stderr
    assert {auth for _, _, auth in hub.requests} == {f"Bearer {TOKEN}"}


# ------------------------------------------------ progress, on stderr only


def test_each_file_fetched_says_so_on_stderr_with_its_deadline(hub: FakeHub) -> None:
    """Not a terminal (a pipe, a CI log): one plain line per file, as it starts, with
    the deadline; stdout holds only the command's own output."""
    from kernelcfg.base import bounded_http

    done = run("fetch", "nvidia/Legacy-FP8")
    assert done.exit_code == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1  # the cached config.json, nothing else
    said = _progress(done)
    asked = hub.asked("GET")
    assert len(said) == len(asked) == 3  # config.json and the two files beside it
    assert said == done.stderr.splitlines()
    for line, path in zip(said, asked, strict=True):
        assert line.startswith(f"fetching {path.rsplit('/', 1)[1]} of 'nvidia/Legacy-FP8' ")
        assert f"{bounded_http.DEADLINE_SECONDS:g} s in all" in line
        assert f"{bounded_http.CONNECT_SECONDS:g} s without an answer" in line


def test_machine_output_never_mixes_with_progress(hub: FakeHub) -> None:
    done = run("resolve", "--device", "h100", "--format", "json", "--download", *SERVE_R1)
    assert done.exit_code == 0, done.stderr
    assert done.json()["model"]["architectures"] == ["DeepseekV3ForCausalLM"]  # JSON alone
    assert len(_progress(done)) == len(hub.asked("GET")) >= 1
    quiet = run(
        "resolve",
        "--device",
        "h100",
        "--quiet",
        "--download",
        "--",
        "vllm",
        "serve",
        "nvidia/Legacy-FP8",
    )
    assert (quiet.stdout, quiet.stderr) == ("", "")


def test_a_failure_comes_after_its_progress_line(hub: FakeHub) -> None:
    done = run("fetch", "meta-llama/Gated")
    line = _one_error(done, "is a gated repository")
    assert _progress(done) == done.stderr.splitlines()[:-1]
    assert len(_progress(done)) == 1
    assert "gated" in line


def test_on_a_terminal_a_bar_shows_and_goes(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a person's terminal a rich bar (time taken, the deadline) stands while the file
    comes, and is cleared once it is in: no plain lines."""
    from kernelcfg.cli import progress

    shown: list[str] = []
    monkeypatch.setattr(progress, "_on_terminal", lambda: True)
    real = progress._Listener.__call__

    def watched(self: Any, event: Any) -> None:
        real(self, event)
        if self.bar is not None:
            shown.append(str(self.bar.columns[0].text_format))
            shown.append(str(self.bar.columns[-1].text_format))

    monkeypatch.setattr(progress._Listener, "__call__", watched)
    done = run("fetch", "deepseek-ai/DeepSeek-R1")
    assert done.exit_code == 0, done.stderr
    from kernelcfg.base.bounded_http import DEADLINE_SECONDS

    deadline = f"(gives up after {DEADLINE_SECONDS:g} s)"
    assert shown == ["fetching config.json of deepseek-ai/DeepSeek-R1", deadline]
    assert _progress(done) == []
    assert len(done.stdout.splitlines()) == 1
