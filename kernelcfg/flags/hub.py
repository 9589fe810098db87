"""A model's config files fetched from the Hugging Face Hub, only when asked
(``--download``, ``KERNELCFG_DOWNLOAD=1``, ``kernelcfg fetch``).

Fetched: ``config.json`` and, when it holds no ``quantization_config``, the two files
vLLM then reads beside it — ``hf_quant_config.json`` (ModelOpt's older layout) and
``quantization_config.json`` (Intel Neural Compressor's); never weights. They are laid
into the standard Hugging Face cache the way ``huggingface_hub`` lays them
(``models--ORG--NAME/blobs``, ``snapshots/COMMIT``, ``refs/REVISION``), where
:mod:`kernelcfg.flags.model_config` (and vLLM) find them.

Where kernelcfg connects, with which credential, and where it writes come from the
caller alone: this process's environment (``HF_ENDPOINT``, ``HF_TOKEN`` or the stored
login, ``HF_HUB_OFFLINE``, the cache folder of ``HF_HUB_CACHE``/``HF_HOME``), never from
what a launch declares (its ``--env``, a scanned file's ``ENV`` or ``env:``): those
describe vLLM's container. What the server answers is checked before anything is
written: each request is bounded (:mod:`kernelcfg.base.bounded_http`), the commit it
names must be a commit hash and the blob's name a content hash, and every path written
must resolve inside the cache folder; otherwise nothing is written and the answer is
refused. Every failure is one :class:`ArgumentError` line naming the model and what to
do (exit 2). Each file's start and end are told to whoever listens
(:mod:`kernelcfg.base.progress`: the CLI's progress on stderr).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from kernelcfg.base import bounded, bounded_http, progress
from kernelcfg.base.answers import Answers
from kernelcfg.base.errors import ArgumentError, KernelcfgError
from kernelcfg.flags.hf_paths import hf_home

__all__ = ["CODE", "HUB_ID", "Hub", "fetch", "is_hub_id", "safe_revision", "settings"]

CODE = "model-download-failed"
"""The code of every failure to fetch a model's config files (exit 2)."""
HUB_ID = re.compile(r"[A-Za-z0-9_.-]{1,96}/[A-Za-z0-9_.-]{1,96}")
"""A Hub model id as kernelcfg looks for it (``org/name``)."""
DEFAULT_ENDPOINT = "https://huggingface.co"
"""The Hub, when ``HF_ENDPOINT`` names no mirror."""
_BESIDE = ("hf_quant_config.json", "quantization_config.json")
"""The files vLLM reads beside a config.json that holds no ``quantization_config``."""
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})
"""The values ``huggingface_hub`` takes as true for ``HF_HUB_OFFLINE``."""
_COMMIT = re.compile(r"[0-9a-f]{40}")
"""A commit hash, as the Hub's ``X-Repo-Commit`` names one."""
_CONTENT_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""An ``ETag`` that is a content hash (git's SHA-1, or LFS's SHA-256): the blob's name
``huggingface_hub`` gives it; any other ETag, the blob is named by its SHA-256."""
_MAX_TOKEN_FILE = 4096
_MAX_REVISION = 256
"""The longest revision kernelcfg asks for (a commit hash is 40 characters)."""


class Hub(NamedTuple):
    """Where and how to reach the Hub, from the caller's environment (a NamedTuple: a
    memo key)."""

    endpoint: str
    """The Hub's address (``HF_ENDPOINT``, no trailing ``/`` and no user name or
    password; else the Hub's own)."""
    login: str | None
    """``user:password`` written in ``HF_ENDPOINT`` (a mirror behind basic
    authentication), sent only where no token is."""
    named: bool
    """Whether ``HF_ENDPOINT`` named it."""
    token: str | None
    """``HF_TOKEN``, else the stored login's token; ``None``: none is sent."""
    offline: bool
    """``HF_HUB_OFFLINE``: nothing is asked of the network; only the cache answers."""

    @property
    def said(self) -> str:
        """The Hub as a message names it (a user name and password in it masked)."""
        if not self.named:
            return "the Hub"
        masked = self.endpoint.replace("://", "://***@", 1) if self.login else self.endpoint
        return f"HF_ENDPOINT {bounded.shown(masked)}"

    @property
    def credential(self) -> str | None:
        """The ``Authorization`` header sent to the Hub (and only there)."""
        if self.token:
            return f"Bearer {self.token}"
        if self.login:
            return "Basic " + base64.b64encode(unquote(self.login).encode()).decode()
        return None


def settings(environ: Mapping[str, str]) -> Hub:
    """The Hub as the caller's environment ``environ`` names it; an ``HF_ENDPOINT``
    that is not an ``http(s)://host`` address is one line (exit 2)."""
    given = environ.get("HF_ENDPOINT", "").strip().rstrip("/")
    offline = environ.get("HF_HUB_OFFLINE", "").strip().upper() in _TRUE
    if not given:
        return Hub(DEFAULT_ENDPOINT, None, False, _token(environ), offline)
    _check_endpoint(given)
    parts = urlsplit(given)
    login, _at, host = parts.netloc.rpartition("@")
    endpoint = urlunsplit(parts._replace(netloc=host))
    return Hub(endpoint, login or None, True, _token(environ), offline)


def _check_endpoint(endpoint: str) -> None:
    problem = None
    try:
        parts = urlsplit(endpoint)
        _ = parts.port  # a port that is no number raises here
    except ValueError as exc:
        problem = str(exc)
    else:
        if parts.scheme not in ("http", "https"):
            problem = "not an http:// or https:// address"
        elif not parts.hostname:
            problem = "no host"
    if problem is not None:
        raise ArgumentError(
            f"HF_ENDPOINT {bounded.shown(_masked(endpoint))} is not a Hub address "
            f"({problem}): set it to the mirror's http(s):// address, or unset it for the Hub",
            field="model",
            code=CODE,
        )


def _masked(url: str) -> str:
    """``url`` with a user name and password replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"//[^/@]*@", "//***@", url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _token(environ: Mapping[str, str]) -> str | None:
    """``HF_TOKEN``, else the token ``hf auth login`` stored (``HF_TOKEN_PATH``, else
    ``HF_HOME/token``, else ``~/.cache/huggingface/token``)."""
    token = environ.get("HF_TOKEN", "").strip()
    if token:
        return token
    path = environ.get("HF_TOKEN_PATH")
    if not path:
        home = hf_home(environ)
        if isinstance(home, str):  # no home folder known: no stored login
            return None
        path = str(home / "token")
    try:
        text = bounded.read_text(os.path.expanduser(path), "token", limit=_MAX_TOKEN_FILE)
    except (ArgumentError, OSError):
        return None
    return text.strip() or None


def is_hub_id(model: str) -> bool:
    """Whether ``model`` names a Hub repository (``org/name``) rather than a path here."""
    return (
        HUB_ID.fullmatch(model) is not None
        and all(part not in (".", "..") for part in model.split("/"))
        and not os.path.lexists(model)
    )


def safe_revision(revision: str) -> bool:
    """Whether ``revision`` can name a branch, tag or commit: the cache keeps a branch
    as ``refs/REVISION``, so it must never climb out (``..``), start at ``/`` or be
    empty."""
    parts = revision.split("/")
    return (
        len(revision) <= _MAX_REVISION
        and all(part not in ("", ".", "..") for part in parts)
        and not any(char in revision for char in "\\\0")
        and revision.isprintable()
    )


def fetch(model: str, *, revision: str | None, environ: Mapping[str, str], cache: Path) -> str:
    """Fetch ``model``'s ``config.json`` (and the files vLLM reads beside it) into the
    Hugging Face cache folder ``cache``, from the Hub the caller's ``environ`` names;
    return the cached ``config.json``'s path. Raises :class:`ArgumentError` (one line,
    exit 2) when it cannot. A failure is asked once per process: a batch that names a
    gated model on every line asks the Hub once."""
    if not is_hub_id(model):
        raise ArgumentError(
            f"{bounded.shown(model)} is not a Hugging Face model id (org/name, not a path "
            "here); only a hub id can be downloaded",
            field="model",
            code=CODE,
        )
    if revision is not None and not safe_revision(revision):
        raise ArgumentError(
            f"--revision {bounded.shown(revision)} is not a branch, tag or commit name",
            field="revision",
            code=CODE,
        )
    hub = settings(environ)
    key = (model, revision, hub, str(cache))
    failed = _FAILED.find(key)
    if failed is not None:
        raise _failed(failed)
    try:
        return _fetch(model, revision, hub, cache)
    except KernelcfgError as exc:
        _FAILED.keep(key, exc.message)
        raise


_FAILED: Answers[tuple[str, str | None, Hub, str], str] = Answers(256)
"""The failures met in this process, by model, revision, Hub and cache."""


def _fetch(model: str, revision: str | None, hub: Hub, cache: Path) -> str:
    """:func:`fetch`'s work, once the request is known to be asked."""
    if hub.offline:
        raise _failed(
            f"the config.json of {bounded.shown(model)}{_at(revision)} is not in the Hugging "
            f"Face cache ({bounded.shown(str(cache))}) and HF_HUB_OFFLINE is set: run "
            f"`kernelcfg fetch {model}` where the Hub can be reached, or unset HF_HUB_OFFLINE"
        )
    config = _download(hub, model, "config.json", revision or "main", revision)
    if config is None:
        raise _failed(_missing(model, f"no config.json{_at(revision)}", hub))
    files = {"config.json": (config.blob, config.body)}
    if not _has_quantization(config.body):
        for name in _BESIDE:
            found = _download(hub, model, name, config.commit, revision)
            if found is not None:
                files[name] = (found.blob, found.body)
    return _Store(cache, model).put(config.commit, revision, files)


class _File(NamedTuple):
    """One file as the Hub answered it."""

    commit: str
    """The commit the Hub says the revision is (a commit hash)."""
    blob: str
    """The name of its blob in the cache (a content hash)."""
    body: bytes
    """Its bytes."""


def _download(
    hub: Hub,
    model: str,
    name: str,
    asked: str,
    revision: str | None,
) -> _File | None:
    """One file of ``model`` at revision ``asked`` (``revision``: as the user named
    it); ``None`` when the repository lacks it."""
    url = f"{hub.endpoint}/{model}/resolve/{quote(asked, safe='')}/{name}"
    said = progress.Fetching(
        model,
        name,
        hub.said,
        bounded_http.CONNECT_SECONDS,
        bounded_http.DEADLINE_SECONDS,
        "start",
    )
    progress.report(said)
    try:
        answer = bounded_http.get(url, headers={"User-Agent": _AGENT}, credential=hub.credential)
    except bounded_http.HttpFailure as exc:
        raise _failed(
            f"cannot download {name} of {bounded.shown(model)} from {hub.said} "
            f"({bounded.cut(str(exc), 200)}): check the network, proxy or HF_ENDPOINT"
        ) from None
    finally:
        progress.report(dataclasses.replace(said, state="end"))
    if answer.status != 200:
        refusal = _refusal(answer, hub, model, name, revision)
        if refusal is None:
            return None
        raise _failed(refusal)
    commit = _commit(answer, hub, model, name)
    return _File(commit, _blob(answer, hub, model, name), answer.body)


def _blob(answer: bounded_http.Answer, hub: Hub, model: str, name: str) -> str:
    """The blob's name: the ETag when it is a content hash (as ``huggingface_hub``
    names it), else the body's SHA-256; an ETag that could be a path is refused."""
    headers = answer.headers
    etag = (headers.get("x-linked-etag") or headers.get("etag") or "").removeprefix("W/")
    etag = etag.strip().strip('"')
    if _CONTENT_HASH.fullmatch(etag):
        return etag
    if any(char in etag for char in "/\\") or ".." in etag or not etag.isprintable():
        raise _failed(
            f"{hub.said} named the blob of {name} of {bounded.shown(model)} "
            f"{bounded.shown(etag)}, which could be a path: the answer is refused and nothing "
            "was written"
        )
    return hashlib.sha256(answer.body).hexdigest()


_AGENT = "kernelcfg (config files only)"
"""What kernelcfg says it is."""


def _refusal(
    answer: bounded_http.Answer, hub: Hub, model: str, name: str, revision: str | None
) -> str | None:
    """Why the Hub refused, as one line, from its ``X-Error-Code`` (as
    ``huggingface_hub`` reads it); ``None`` for a file the repository lacks."""
    code = answer.headers.get("x-error-code", "")
    status = answer.status
    if code == "EntryNotFound" or (status == 404 and not code):
        return None
    if code == "GatedRepo":
        return (
            f"{bounded.shown(model)} is a gated repository and {_token_said(hub)}: accept "
            f"its terms on the model's Hub page, then set HF_TOKEN to a token of that account"
        )
    if code == "RepoNotFound" or (status == 401 and not code):
        return (
            f"{bounded.shown(model)} is not a model repository on {hub.said}, or it is "
            f"private and {_token_said(hub)}: check the id, or set HF_TOKEN to a token that "
            "can read it"
        )
    if code == "RevisionNotFound":
        return _missing(model, f"no revision {bounded.shown(revision)}", hub)
    return f"{hub.said} answered HTTP {status} for {name} of {bounded.shown(model)}" + _hint(status)


def _commit(answer: bounded_http.Answer, hub: Hub, model: str, name: str) -> str:
    """The commit the answer names (``X-Repo-Commit``, on the first answer when it
    was redirected): a commit hash, or the answer is refused."""
    commit = answer.first_headers.get("x-repo-commit") or answer.headers.get("x-repo-commit")
    if commit is None:
        raise _failed(
            f"{hub.said} answered {name} of {bounded.shown(model)} without the Hub's "
            "X-Repo-Commit header: it is not a Hugging Face Hub (check HF_ENDPOINT)"
        )
    if not _COMMIT.fullmatch(commit):
        raise _failed(
            f"{hub.said} named the commit of {bounded.shown(model)} "
            f"{bounded.shown(commit)}, not a commit hash: the answer is refused and nothing "
            "was written"
        )
    return commit


class _Store:
    """A model's folder of the Hugging Face cache, written so that every path stays
    inside the cache folder and every file is whole or absent."""

    def __init__(self, cache: Path, model: str) -> None:
        org, name = model.split("/")
        self.cache = str(cache)
        self.model = model
        self.folder = os.path.join(self.cache, f"models--{org}--{name}")

    def put(self, commit: str, revision: str | None, files: Mapping[str, tuple[str, bytes]]) -> str:
        """Write ``files`` (by name: the blob's name and the bytes) as the snapshot
        ``commit``, and ``refs/REVISION`` naming it; the cached ``config.json``'s path."""
        try:
            os.makedirs(self.cache, exist_ok=True)
            root = os.path.realpath(self.cache)
            for blob, body in files.values():
                self._write(root, os.path.join("blobs", blob), body)
            for name, (blob, _body) in files.items():
                self._link(root, os.path.join("snapshots", commit, name), blob)
            if revision != commit:
                self._write(root, os.path.join("refs", revision or "main"), commit.encode())
        except OSError as exc:
            raise _failed(
                f"cannot write the config.json of {bounded.shown(self.model)} into the Hugging "
                f"Face cache ({bounded.shown(self.cache)}): {exc.strerror or bounded.reason(exc)}"
                "; set HF_HUB_CACHE (or HF_HOME) to a folder this user can write"
            ) from None
        return os.path.join(self.folder, "snapshots", commit, "config.json")

    def _inside(self, root: str, relative: str) -> str:
        """The path of ``relative`` (under the model's folder), its folders made one by
        one, each checked to resolve inside ``root`` before anything is made in it (a
        link planted in the cache leads nowhere else)."""
        path = self.cache
        for part in [os.path.basename(self.folder), *relative.split(os.sep)[:-1]]:
            path = os.path.join(path, part)
            if not os.path.lexists(path):
                with contextlib.suppress(FileExistsError):  # another run made it meanwhile
                    os.mkdir(path)
            real = os.path.realpath(path)
            if os.path.commonpath((root, real)) != root:
                raise _failed(
                    f"the Hugging Face cache folder of {bounded.shown(self.model)} leads to "
                    f"{bounded.shown(real)}, outside the cache ({bounded.shown(root)}): nothing "
                    "was written; remove the link there"
                )
        return os.path.join(self.folder, relative)

    def _write(self, root: str, relative: str, body: bytes) -> None:
        """``body`` as the file ``relative``, whole: written beside it, then renamed."""
        path = self._inside(root, relative)
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".kernelcfg-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(body)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise

    def _link(self, root: str, relative: str, blob: str) -> None:
        """``relative`` as a link to ``blobs/BLOB`` (as ``huggingface_hub`` lays a
        snapshot), made beside it and renamed over whatever was there."""
        path = self._inside(root, relative)
        target = os.path.relpath(os.path.join(self.folder, "blobs", blob), os.path.dirname(path))
        temporary = os.path.join(os.path.dirname(path), f".kernelcfg-{os.getpid()}-{blob[:16]}")
        if os.path.lexists(temporary):
            os.unlink(temporary)
        os.symlink(target, temporary)
        os.replace(temporary, path)


def _failed(message: str) -> ArgumentError:
    """A failure to fetch, as the error every caller reports (exit 2)."""
    return ArgumentError(message, field="model", code=CODE)


def _missing(model: str, what: str, hub: Hub) -> str:
    """What is missing on the Hub (``'org/name' has no config.json on the Hub``), and
    what to do."""
    return (
        f"{bounded.shown(model)} has {what} on {hub.said}: check the model id and "
        "--revision; kernelcfg reads a model's config.json only (else give --architecture, "
        "or a local --hf-config-path)"
    )


def _at(revision: str | None) -> str:
    """`` at revision 'r'``, or nothing for the default branch."""
    return f" at revision {bounded.shown(revision)}" if revision else ""


def _token_said(hub: Hub) -> str:
    """What the request carried, in words."""
    return "the token in HF_TOKEN has no access to it" if hub.token else "HF_TOKEN is not set"


def _hint(status: int) -> str:
    """What to do about an HTTP status the Hub answered with."""
    if status in (401, 403):
        return ": set HF_TOKEN to a token that can read it"
    if status == 429:
        return ": too many requests; wait, or set HF_TOKEN (a logged-in user may ask more)"
    if status >= 500:
        return ": the Hub is failing; try again later"
    return ""


def _has_quantization(body: bytes) -> bool:
    """Whether the fetched config.json holds a ``quantization_config`` (then vLLM reads
    no file beside it); a file kernelcfg cannot read says so later, where it is read."""
    try:
        data = bounded.loads_json(bounded.decode(body, "config.json"), "config.json")
    except KernelcfgError:
        return True
    return isinstance(data, dict) and data.get("quantization_config") is not None
