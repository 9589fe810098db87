"""One HTTP ``GET`` with limits, for the few small files kernelcfg downloads on request.

What a server answers is input like any other: it may be hostile (a mirror a user was
pointed at), slow or endless. So every answer here has a connect timeout
(:data:`CONNECT_SECONDS`, also the longest silence between two reads), an overall
deadline (:data:`DEADLINE_SECONDS`, headers included: a server that drips one byte a
second is cut off), a size cap (:data:`MAX_BODY_BYTES`, checked as the bytes arrive),
and no compression (``Accept-Encoding: identity``; a compressed answer is refused, so no
small body can unpack into a large one). Redirects are followed by kernelcfg's own rule:
``http``/``https`` only, at most :data:`MAX_REDIRECTS`, and the credential goes only to
the origin it was meant for. Built on the standard library's ``urllib`` (proxies from
the process environment, the system's certificate store), with no handler for other
schemes (``file:``, ``ftp:``, ``data:``).
"""

from __future__ import annotations

import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http.client import HTTPException, HTTPResponse
from urllib.parse import urljoin, urlsplit

__all__ = [
    "CONNECT_SECONDS",
    "DEADLINE_SECONDS",
    "MAX_BODY_BYTES",
    "MAX_REDIRECTS",
    "Answer",
    "HttpFailure",
    "get",
    "origin",
]

CONNECT_SECONDS = 10.0
"""The longest wait to connect, and the longest silence between two reads."""
DEADLINE_SECONDS = 30.0
"""The longest a whole answer (every redirect, the headers and the body) may take."""
MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest body read (16 MiB, as for any file kernelcfg reads); a larger one is
refused as it arrives."""
MAX_REDIRECTS = 5
"""The most redirects followed for one request."""
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Answer:
    """A whole answer: its status, its headers (names in lower case) and its body."""

    status: int
    """The HTTP status of the last answer (after redirects)."""
    headers: Mapping[str, str]
    """The last answer's headers, by lower-case name."""
    first_headers: Mapping[str, str]
    """The first answer's headers (a redirect's own headers say things too)."""
    body: bytes
    """The body, at most :data:`MAX_BODY_BYTES`."""


class HttpFailure(Exception):  # noqa: N818 - a failure of the exchange, not a bug
    """No usable answer: unreachable, too slow, too large, or not HTTP as asked. Its
    text is one line for a message."""


def origin(url: str) -> tuple[str, str, int | None]:
    """The scheme, host and port of ``url`` (the port ``None`` when it is the scheme's
    default): what must match for a credential to be sent."""
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    port = parts.port
    return parts.scheme, (parts.hostname or "").lower(), None if port == default else port


def get(
    url: str,
    *,
    headers: Mapping[str, str],
    credential: str | None = None,
    deadline: float | None = None,
    limit: int | None = None,
) -> Answer:
    """``GET url`` within the limits above; ``credential`` is an ``Authorization``
    header value sent to ``url``'s origin only; ``deadline`` and ``limit`` default to
    :data:`DEADLINE_SECONDS` and :data:`MAX_BODY_BYTES`. Raises :class:`HttpFailure`.

    The exchange runs in a worker thread so that the deadline holds while the server
    is still sending headers; a worker cut off by it is left to end on its own
    (its socket times out within :data:`CONNECT_SECONDS` of silence) and writes
    nothing anywhere."""
    deadline = DEADLINE_SECONDS if deadline is None else deadline
    limit = MAX_BODY_BYTES if limit is None else limit
    box: list[Answer | BaseException] = []
    done = threading.Event()
    stop = time.monotonic() + deadline

    def work() -> None:
        try:
            box.append(_exchange(url, headers, credential, stop, limit))
        except BaseException as exc:  # handed to the caller's thread, raised there
            box.append(exc)
        finally:
            done.set()

    threading.Thread(target=work, name="kernelcfg-download", daemon=True).start()
    if not done.wait(deadline):
        raise HttpFailure(f"no whole answer within {deadline:g} s")
    found = box[0]
    if isinstance(found, BaseException):
        if isinstance(found, HttpFailure):
            raise found
        raise HttpFailure(_said(found)) from None
    return found


def _said(exc: BaseException) -> str:
    """A network failure as a few words (no traceback, no repr of objects)."""
    if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException):
        return _said(exc.reason)
    if isinstance(exc, TimeoutError):
        return f"no answer for {CONNECT_SECONDS:g} s"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed: {exc.reason or type(exc).__name__}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _opener() -> urllib.request.OpenerDirector:
    """HTTP and HTTPS (through the process environment's proxies) and nothing else: no
    redirect handler (they are followed in :func:`_exchange`), no error processor (an
    error status is an answer like any other)."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.HTTPHandler(),
        urllib.request.HTTPSHandler(context=ssl.create_default_context()),
    ):
        opener.add_handler(handler)
    return opener


def _exchange(
    url: str, headers: Mapping[str, str], credential: str | None, stop: float, limit: int
) -> Answer:
    """The request and its redirects, the body read within ``limit`` and ``stop``."""
    opener = _opener()
    meant = origin(url)
    first: Mapping[str, str] | None = None
    for _hop in range(MAX_REDIRECTS + 1):
        if urlsplit(url).scheme not in ("http", "https"):
            raise HttpFailure(f"a redirect to a {urlsplit(url).scheme or 'relative'}: address")
        request = urllib.request.Request(url, headers={**headers, "Accept-Encoding": "identity"})
        if credential is not None and origin(url) == meant:
            request.add_unredirected_header("Authorization", credential)
        timeout = max(0.01, min(CONNECT_SECONDS, stop - time.monotonic()))
        try:
            response: HTTPResponse = opener.open(request, timeout=timeout)
        except (OSError, HTTPException, ValueError) as exc:
            raise HttpFailure(_said(exc)) from None
        with response:
            found = {name.lower(): value for name, value in response.getheaders()}
            first = found if first is None else first
            location = found.get("location")
            if response.status in _REDIRECTS and location:
                url = urljoin(url, location)
                continue
            body = _body(response, found, stop, limit)
        return Answer(response.status, found, first, body)
    raise HttpFailure(f"more than {MAX_REDIRECTS} redirects")


def _body(response: HTTPResponse, headers: Mapping[str, str], stop: float, limit: int) -> bytes:
    """The body as it arrives, refused past ``limit`` bytes or ``stop``."""
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise HttpFailure(f"a body compressed with {encoding!r}, which was not asked for")
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HttpFailure(f"a body of {int(declared):,} bytes (kernelcfg reads {limit:,} at most)")
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := response.read1(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise HttpFailure(f"a body of more than {limit:,} bytes (kernelcfg reads no more)")
            if time.monotonic() > stop:
                raise HttpFailure("no whole answer before the deadline")
            chunks.append(chunk)
    except (OSError, HTTPException) as exc:
        raise HttpFailure(_said(exc)) from None
    return b"".join(chunks)
