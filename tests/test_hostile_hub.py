"""What a pull request, a Hub mirror or a cache folder someone else wrote can do to the
machine that runs kernelcfg with ``--download``: reproduced as an attacker would, with a
stand-in Hub on 127.0.0.1 answering hostile headers and bodies, launches that name
their own ``HF_*`` variables, and links planted in the cache.

The rule under test: where kernelcfg connects, which credential it sends, and where it
reads and writes come from the caller (this process's environment) alone; what a
server answers is checked before anything is written."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelcfg.base import bounded_http

from .cli_helpers import Run, run
from .fake_hub import TOKEN, FakeHub, Repo, commit, serving, serving_as_hub
from .test_download import LLAMA, no_network  # noqa: F401 - the fixture, used by name

pytestmark = pytest.mark.cli

REPOS = {"meta-llama/Gated": Repo({"main": {"config.json": LLAMA}}, gated=True)}
SERVE = ["--", "vllm", "serve", "meta-llama/Gated"]
OTHER_TOKEN = "hf_the_launch_s_own_token"


@pytest.fixture
def caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The caller's Hub (``HF_ENDPOINT``), token and cache, in this process's
    environment."""
    with serving_as_hub(REPOS, monkeypatch, tmp_path / "hf-home", tmp_path / "ours") as fake:
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        yield fake


@pytest.fixture
def evil() -> Iterator[FakeHub]:
    """A server a launch names: it serves the same repositories, and records what it is
    sent."""
    with serving(REPOS) as fake:
        yield fake


def _files(root: Path) -> set[str]:
    """Every file and link under ``root``, relative."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def _one_error(done: Run, *needles: str) -> str:
    """The one error line, last on stderr, after a progress line per file asked."""
    assert done.exit_code == 2, (done.stdout, done.stderr)
    *said, line = done.stderr.strip().splitlines()
    assert all(s.startswith("fetching ") for s in said), said
    assert not line.startswith("fetching "), line
    for needle in needles:
        assert needle in line, line
    return line


# ------------------------------------------------ what a launch declares steers nothing


def _launch_env(evil: FakeHub, tmp_path: Path) -> dict[str, str]:
    return {
        "HF_ENDPOINT": evil.url,
        "HF_TOKEN": OTHER_TOKEN,
        "HF_HUB_CACHE": str(tmp_path / "theirs"),
        "HF_HOME": str(tmp_path / "theirs-home"),
        "HF_HUB_OFFLINE": "1",
    }


def _deployment_files(env: dict[str, str], folder: Path) -> list[Path]:
    """The same launch written in each kind of file a pull request can add, each
    declaring ``env`` for vLLM's container."""
    folder.mkdir()
    docker = folder / "Dockerfile"
    docker.write_text(
        "FROM vllm/vllm-openai:v0.34.0\n"
        + "".join(f"ENV {k}={v}\n" for k, v in env.items())
        + 'ENTRYPOINT ["vllm", "serve", "meta-llama/Gated"]\n'
    )
    shell = folder / "serve.sh"
    shell.write_text(
        " ".join(f"{k}={v}" for k, v in env.items()) + " vllm serve meta-llama/Gated\n"
    )
    pod = folder / "pod.yaml"
    pod.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "spec": {
                    "containers": [
                        {
                            "name": "vllm",
                            "image": "vllm/vllm-openai:v0.34.0",
                            "command": ["vllm", "serve", "meta-llama/Gated"],
                            "env": [{"name": k, "value": v} for k, v in env.items()],
                        }
                    ]
                },
            }
        )
    )
    compose = folder / "docker-compose.yml"
    compose.write_text(
        json.dumps(
            {
                "services": {
                    "vllm": {
                        "image": "vllm/vllm-openai:v0.34.0",
                        "entrypoint": ["vllm", "serve", "meta-llama/Gated"],
                        "environment": env,
                    }
                }
            }
        )
    )
    return [docker, shell, pod, compose]


def test_a_launchs_environment_never_steers_the_download(
    caller: FakeHub, evil: FakeHub, tmp_path: Path
) -> None:
    """``HF_ENDPOINT``/``HF_TOKEN``/``HF_HUB_CACHE`` written by the launch (``--env``, a
    batch line's ``env``, a Dockerfile's ``ENV``, a shell assignment, a pod's ``env:``,
    compose's ``environment:``) describe vLLM's container: the request goes to the
    caller's Hub with the caller's token, into the caller's cache."""
    env = _launch_env(evil, tmp_path)
    words = [f"--env={k}={v}" for k, v in env.items()]
    done = run("resolve", "--device", "h100", "--format", "json", "--download", *words, *SERVE)
    assert done.exit_code == 0, done.stderr
    assert done.json()["model"]["architectures"] == ["LlamaForCausalLM"]
    line = json.dumps({"argv": SERVE[1:], "env": [f"{k}={v}" for k, v in env.items()]})
    batch = run("resolve", "--device", "h100", "--download", "--batch", "-", stdin=line)
    assert json.loads(batch.stdout)["model"]["architectures"] == ["LlamaForCausalLM"]
    for path in _deployment_files(env, tmp_path / "repo"):
        scanned = run("scan", "--device", "h100", "--download", "--format", "json", str(path))
        assert scanned.exit_code == 0, (path.name, scanned.stdout, scanned.stderr)
    assert evil.requests == []
    assert {auth for _, _, auth in caller.requests} == {f"Bearer {TOKEN}"}
    assert not (tmp_path / "theirs").exists()
    assert not (tmp_path / "theirs-home").exists()
    assert any(name.endswith("config.json") for name in _files(tmp_path / "ours"))


_VARIABLE = st.sampled_from(
    ["HF_ENDPOINT", "HF_TOKEN", "HF_HUB_CACHE", "HF_HOME", "HF_TOKEN_PATH", "XDG_CACHE_HOME"]
)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    names=st.lists(_VARIABLE, min_size=1, max_size=6, unique=True),
    form=st.integers(0, 3),
    config=st.booleans(),
)
def test_no_scanned_file_sends_anything_anywhere_but_the_callers_hub(
    caller: FakeHub, evil: FakeHub, tmp_path: Path, names: list[str], form: int, config: bool
) -> None:
    """Generated deployment files whose launches name ``HF_*`` variables (and a
    ``--config`` file outside the repository), scanned with ``--download``: no request
    leaves for any server but the caller's, and nothing is written outside the
    caller's cache."""
    case = tmp_path / f"case-{time.monotonic_ns()}"
    case.mkdir()
    outside = case / "outside"
    outside.mkdir()
    (outside / "hosts.yml").write_text("oauth_token: gho_secret\n")
    values = {
        "HF_ENDPOINT": evil.url,
        "HF_TOKEN": OTHER_TOKEN,
        "HF_TOKEN_PATH": str(outside / "token"),
    }
    env = {name: values.get(name, str(outside / name.lower())) for name in names}
    path = _deployment_files(env, case / "repo")[form]
    if config:
        path.write_text(
            path.read_text().replace(
                "meta-llama/Gated", "meta-llama/Gated --config " + str(outside / "hosts.yml"), 1
            )
        )
    before = _files(case)
    evil.requests.clear()
    run("scan", "--device", "h100", "--download", "--format", "json", str(path))
    assert evil.requests == []
    assert _files(case) == before
    assert not (case / "outside" / "token").exists()


# ------------------------------------------------------------ hostile answers


def _hostile(monkeypatch: pytest.MonkeyPatch, hub: FakeHub, **headers: str) -> None:
    """The caller's Hub answers config.json with ``headers`` over the right ones."""
    answer = hub.answer

    def hostile(method: str, path: str, auth: str | None) -> Any:
        status, found, body = answer(method, path, auth)
        found.update({k.replace("_", "-"): v for k, v in headers.items()})
        return status, found, body

    monkeypatch.setattr(hub, "answer", hostile)


@pytest.mark.parametrize(
    ("headers", "needle"),
    [
        ({"X_Repo_Commit": "../../../../escape"}, "not a commit hash"),
        ({"X_Repo_Commit": "a" * 40 + "/../../escape"}, "not a commit hash"),
        ({"ETag": '"../../../escape"'}, "which could be a path"),
        ({"X_Linked_Etag": "/tmp/escape"}, "which could be a path"),
        ({"ETag": '"..\\\\..\\\\escape"'}, "which could be a path"),
    ],
)
def test_a_hostile_answer_writes_nothing(
    caller: FakeHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    headers: dict[str, str],
    needle: str,
) -> None:
    _hostile(monkeypatch, caller, **headers)
    done = run("fetch", "meta-llama/Gated")
    _one_error(done, needle, "refused", "nothing was written")
    assert not list(tmp_path.rglob("*escape*"))
    assert not (tmp_path / "ours").exists() or _files(tmp_path / "ours") == set()


def _body(
    monkeypatch: pytest.MonkeyPatch, hub: FakeHub, headers: dict[str, str], body: Any
) -> None:
    """The caller's Hub answers every file with ``headers`` and ``body``."""

    def answer(method: str, path: str, auth: str | None) -> Any:
        hub.requests.append((method, path, auth))
        return 200, {"X-Repo-Commit": commit("main"), **headers}, body

    monkeypatch.setattr(hub, "answer", answer)


def _endless() -> Iterator[bytes]:
    chunk = b" " * 1024 * 1024
    while True:
        yield chunk


def _drip() -> Iterator[bytes]:
    while True:
        yield b" "
        time.sleep(0.5)


@pytest.mark.parametrize(
    ("headers", "body", "needle"),
    [
        ({}, _endless, "more than 16,777,216 bytes"),
        ({"Content-Length": str(5 * 1024**3)}, lambda: iter([b"{}"]), "5,368,709,120 bytes"),
        ({"Content-Encoding": "gzip"}, lambda: iter([b"\x1f\x8b" + b"\0" * 100]), "compressed"),
        ({}, _drip, "no whole answer"),
    ],
    ids=["endless", "declared-huge", "gzip", "drip"],
)
def test_an_unbounded_answer_is_cut_off(
    caller: FakeHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    headers: dict[str, str],
    body: Any,
    needle: str,
) -> None:
    monkeypatch.setattr(bounded_http, "DEADLINE_SECONDS", 2.0)
    _body(monkeypatch, caller, headers, body())
    started = time.monotonic()
    done = run("fetch", "meta-llama/Gated")
    assert time.monotonic() - started < 8
    _one_error(done, "cannot download config.json", needle)
    assert not (tmp_path / "ours").exists()


def test_headers_dripped_a_byte_at_a_time_meet_the_deadline(
    caller: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that never finishes its headers (one byte every 0.3 s, never silent
    long enough for a read timeout) is cut off by the overall deadline."""
    monkeypatch.setattr(bounded_http, "DEADLINE_SECONDS", 1.5)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def drip() -> None:
        connection, _ = server.accept()
        with connection:
            connection.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.is_set():
                try:
                    connection.sendall(b"X")
                except OSError:
                    return
                time.sleep(0.3)

    threading.Thread(target=drip, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    started = time.monotonic()
    try:
        done = run("fetch", "meta-llama/Gated")
    finally:
        stop.set()
        server.close()
    assert time.monotonic() - started < 5
    _one_error(done, "no whole answer within 1.5 s")


def test_a_redirect_to_another_host_carries_no_token(
    caller: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's token goes to the caller's Hub only, never along a redirect."""
    with serving(REPOS) as elsewhere:
        monkeypatch.setitem(
            elsewhere.repos, "meta-llama/Gated", Repo(REPOS["meta-llama/Gated"].revisions)
        )

        def redirect(method: str, path: str, auth: str | None) -> Any:
            caller.requests.append((method, path, auth))
            return 302, {"Location": elsewhere.url + path, "X-Repo-Commit": commit("main")}, b""

        monkeypatch.setattr(caller, "answer", redirect)
        done = run("fetch", "meta-llama/Gated")
    assert done.exit_code == 0, done.stderr
    assert {auth for _, _, auth in caller.requests} == {f"Bearer {TOKEN}"}
    assert elsewhere.requests
    assert {auth for _, _, auth in elsewhere.requests} == {None}


# ------------------------------------------------------------ the caller's own settings


@pytest.mark.parametrize("endpoint", ["http://[::1", "ftp://mirror", "http://:80", "http://h:x"])
def test_a_bad_endpoint_is_one_line(caller: FakeHub, endpoint: str) -> None:
    done = run("fetch", "meta-llama/Gated", env={"HF_ENDPOINT": endpoint})
    _one_error(done, "HF_ENDPOINT", "is not a Hub address")
    assert caller.requests == []


def test_a_bad_endpoint_in_a_launch_is_not_read(caller: FakeHub, tmp_path: Path) -> None:
    launch = tmp_path / "serve.sh"
    launch.write_text("HF_ENDPOINT='http://[::1' vllm serve meta-llama/Gated\n")
    done = run("scan", "--device", "h100", "--download", "--format", "json", str(launch))
    assert done.exit_code == 0, done.stderr


def test_a_password_in_the_endpoint_is_never_shown(caller: FakeHub) -> None:
    host = caller.url.removeprefix("http://")
    done = run("fetch", "nobody/nothing", env={"HF_ENDPOINT": f"http://user:s3cret@{host}"})
    line = _one_error(done, "is not a model repository", "***@")
    assert "s3cret" not in line


# ------------------------------------------------------------ a cache someone else wrote


def test_a_model_folder_linked_outside_the_cache_is_refused(
    caller: FakeHub, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "ours").mkdir()
    (tmp_path / "ours" / "models--meta-llama--Gated").symlink_to(outside)
    done = run("fetch", "meta-llama/Gated")
    _one_error(done, "outside the cache", "nothing was written")
    assert list(outside.iterdir()) == []


def test_a_blobs_folder_linked_outside_the_cache_is_refused(
    caller: FakeHub, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "ours" / "models--meta-llama--Gated"
    folder.mkdir(parents=True)
    (folder / "blobs").symlink_to(outside)
    done = run("fetch", "meta-llama/Gated")
    _one_error(done, "outside the cache")
    assert list(outside.iterdir()) == []


def test_a_planted_snapshot_link_is_replaced_not_followed(caller: FakeHub, tmp_path: Path) -> None:
    """A snapshot's config.json linked to a file outside the cache, with no
    ``refs/main``: ``--download`` fetches and lays the file anew; the outside file is
    neither read nor written."""
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"architectures": ["Outside"]}))
    snapshot = tmp_path / "ours" / "models--meta-llama--Gated" / "snapshots" / commit("main")
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to(outside)
    done = run("resolve", "--device", "h100", "--format", "json", "--download", *SERVE)
    assert done.exit_code == 0, done.stderr
    assert done.json()["model"]["architectures"] == ["LlamaForCausalLM"]
    assert json.loads(outside.read_text()) == {"architectures": ["Outside"]}
    link = os.readlink(snapshot / "config.json")
    assert link.startswith("../../blobs/")


# ------------------------------------------------------------ paths a scanned file names


def test_a_scanned_launchs_model_path_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    """``vllm serve /home/runner/…`` in a pull request's file names a folder of vLLM's
    container: kernelcfg reads a model folder (or ``--hf-config-path``) only inside the
    scanned repository."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({"architectures": ["OutsideSecret"]}))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "model").mkdir()
    (repo / "model" / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (repo / "serve.sh").write_text(
        f"vllm serve {outside}\n"
        f"vllm serve org/m --hf-config-path {outside}\n"
        f"vllm serve {repo / 'model'}\n"
    )
    done = run("scan", "--device", "h100", "--format", "json", str(repo / "serve.sh"))
    first, second, third = done.json()["lines"]
    for line in (first, second):
        assert "OutsideSecret" not in json.dumps(line)
        assert "model-not-read" in {p["code"] for p in line["problems"]}
    assert not {"model-not-read", "model-not-local"} & {p["code"] for p in third["problems"]}
    typed = run(
        "resolve", "--device", "h100", "--format", "json", "--", "vllm", "serve", str(outside)
    )
    assert typed.json()["model"]["architectures"] == ["OutsideSecret"]  # the user's own line
