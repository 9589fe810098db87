"""A Hugging Face Hub stand-in on 127.0.0.1, so that no test reaches the real Hub.

It answers a ``GET`` (or ``HEAD``) of ``{endpoint}/{org}/{name}/resolve/{revision}/{file}``
as the Hub does, with the headers a client reads — ``X-Repo-Commit`` (the commit the
revision names), ``ETag`` (the blob's name in the cache) and ``Content-Length`` — and
refuses as the Hub does, with the ``X-Error-Code`` the Hub's clients read: ``GatedRepo``
(401 without an accepted token), ``RepoNotFound``, ``RevisionNotFound`` and
``EntryNotFound`` (404). Every request is counted. A test may replace ``answer`` to play
a hostile server: a body may then be an iterable of chunks (endless, or slow).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

TOKEN = "hf_test_token"
"""The one token the stand-in accepts for a gated repository."""


@dataclass
class Repo:
    """A model repository: its files at each revision (a branch or tag name)."""

    revisions: dict[str, dict[str, bytes]]
    """Files by name, per revision."""
    gated: bool = False
    """Whether only :data:`TOKEN` may read it."""


def commit(revision: str) -> str:
    """The commit hash a revision names (40 hex digits, as the Hub's)."""
    return hashlib.sha1(revision.encode()).hexdigest()


@dataclass
class FakeHub:
    """The repositories served, and the requests met."""

    repos: dict[str, Repo]
    """Repositories by id (``org/name``)."""
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    """Each request: method, path, and its ``Authorization`` header."""
    url: str = ""
    """Where it listens (``http://127.0.0.1:PORT``): the tests' ``HF_ENDPOINT``."""

    def answer(
        self, method: str, path: str, auth: str | None
    ) -> tuple[int, dict[str, str], bytes | Iterable[bytes]]:
        """Status, headers and body for one request."""
        self.requests.append((method, path, auth))
        parts = path.split("/", 5)
        if len(parts) != 6 or parts[3] != "resolve":
            return 404, {"X-Error-Code": "RepoNotFound"}, b""
        repo_id, revision, name = f"{parts[1]}/{parts[2]}", unquote(parts[4]), unquote(parts[5])
        repo = self.repos.get(repo_id)
        if repo is None:  # the Hub answers so for a private repository too
            return 404, {"X-Error-Code": "RepoNotFound"}, b""
        if repo.gated and auth != f"Bearer {TOKEN}":
            message = f"Access to model {repo_id} is restricted. You must have access to it."
            return 401, {"X-Error-Code": "GatedRepo", "X-Error-Message": message}, b""
        named = {commit(r): r for r in repo.revisions}
        files = repo.revisions.get(named.get(revision, revision))
        if files is None:
            return 404, {"X-Error-Code": "RevisionNotFound"}, b""
        sha = commit(named.get(revision, revision))
        if name not in files:
            return 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": sha}, b""
        body = files[name]
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{hashlib.sha1(body).hexdigest()}"',
            "Content-Length": str(len(body)),
            "Content-Type": "application/json",
        }
        return 200, headers, body

    def asked(self, method: str = "GET") -> list[str]:
        """The paths asked for with ``method``."""
        return [path for m, path, _ in self.requests if m == method]


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    """The request handler that asks ``hub`` for each answer."""

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            """The metadata request: headers only."""
            self._reply(send_body=False)

        def do_GET(self) -> None:
            """The download: headers and the file."""
            self._reply(send_body=True)

        def _reply(self, *, send_body: bool) -> None:
            """Send what ``hub`` answers."""
            status, headers, body = hub.answer(
                self.command, self.path, self.headers.get("Authorization")
            )
            self.send_response(status)
            if isinstance(body, bytes):
                headers.setdefault("Content-Length", str(len(body)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if not send_body:
                return
            chunks = [body] if isinstance(body, bytes) else body
            try:
                for chunk in chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError:  # the client hung up: what a cut-off download does
                return

        def log_message(self, format: str, *args: object) -> None:
            """Say nothing: the requests are counted instead."""
            del format, args

    return Handler


@contextmanager
def serving(repos: dict[str, Repo]) -> Iterator[FakeHub]:
    """A :class:`FakeHub` listening on 127.0.0.1 (a free port) while in the block."""
    hub = FakeHub(repos)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def serving_as_hub(
    repos: dict[str, Repo], monkeypatch: Any, home: Path, cache: Path
) -> Iterator[FakeHub]:
    """A :class:`FakeHub` as this process's Hub: every ``HF_*``, ``KERNELCFG_*`` and
    ``VLLM_*`` variable cleared, the failures kernelcfg remembers forgotten, and
    ``HF_ENDPOINT``, ``HF_HOME`` and ``HF_HUB_CACHE`` naming the stand-in and fresh
    folders."""
    from kernelcfg.base.answers import Answers
    from kernelcfg.flags import hub as hub_module

    for name in list(os.environ):
        if name.startswith(("HF_", "HUGGING_FACE", "KERNELCFG_", "VLLM_")):
            monkeypatch.delenv(name)
    monkeypatch.setattr(hub_module, "_FAILED", Answers(256))
    with serving(repos) as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setenv("HF_HOME", str(home))
        monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        yield fake
