"""Container images whose entry point is vLLM's OpenAI server.

A deployment that runs such an image often writes only the server's arguments (compose
``command:``, Kubernetes ``args:``, ``docker run IMAGE ARGS``): the image supplies
``vllm serve`` (older tags: ``python3 -m vllm.entrypoints.openai.api_server``, read the
same way). The image decides: vLLM's own (``vllm/vllm-openai*``, with its ``-cpu`` and
other variants, and ``rocm/vllm*``, under any registry), the images a run names
(``--image-entrypoint IMAGE=vllm``, ``IMAGE`` a name or a glob), and the images a
repository builds from a Dockerfile whose entry point is vLLM's (compose's ``build:``).

The images of one scan are set once for the readers (:func:`using`); every reader asks
:func:`is_server` and searches shell text with :func:`marker_in_shell`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache

__all__ = ["ENTRY_POINTS", "Images", "is_server", "marker", "marker_in_shell", "using"]

ENTRY_POINTS = ("vllm",)
"""What ``--image-entrypoint IMAGE=…`` may say an image starts: ``vllm`` (its entry
point is ``vllm serve``, or the old ``api_server`` module)."""

_OWN = re.compile(
    r"(?:[\w.-]+(?::\d+)?/)*(?:vllm/vllm-openai[\w.-]*|rocm/vllm[\w.-]*)"
    r"(?::[\w.-]+)?(?:@sha256:[0-9a-fA-F]+)?",
    re.IGNORECASE,
)
"""vLLM's own images, under any registry, with any tag or digest."""
_OWN_IN_TEXT = r"\bvllm/vllm-openai|\brocm/vllm"
_LAUNCH_IN_TEXT = r"\bvllm[ \t]+serve\b|\bvllm\.entrypoints\.openai\.api_server\b"


@dataclass(frozen=True)
class Images:
    """The images beyond vLLM's own whose entry point is the server."""

    named: tuple[str, ...] = ()
    """Names or globs a run gives (``--image-entrypoint``)."""
    built: frozenset[str] = frozenset()
    """Images the scanned repository builds from a Dockerfile whose entry point is
    vLLM's (a compose service's ``image:`` beside its ``build:``)."""

    def holds(self, reference: str) -> bool:
        """Whether ``reference`` (``name[:tag][@digest]``) is one of them."""
        if not (self.named or self.built):
            return False
        bare = _untagged(reference)
        if reference in self.built or bare in self.built:
            return True
        return any(
            name in (reference, bare) or fnmatch.fnmatchcase(reference, name) for name in self.named
        )


_NONE = Images()
_IMAGES: ContextVar[Images | None] = ContextVar("kernelcfg_images", default=None)


@contextmanager
def using(images: Images) -> Iterator[None]:
    """Read launches with ``images`` as vLLM's, beside vLLM's own."""
    token = _IMAGES.set(images)
    try:
        yield
    finally:
        _IMAGES.reset(token)


def current() -> Images:
    """The images the readers take as vLLM's now."""
    return _IMAGES.get() or _NONE


def is_server(reference: str) -> bool:
    """Whether an image ``reference`` starts vLLM's OpenAI server."""
    text = reference.strip()
    return bool(_OWN.fullmatch(text)) or current().holds(text)


def marker_in_shell() -> re.Pattern[str]:
    """Where a launch may start in shell text: ``vllm serve``, the old entry point, or
    one of the images (``docker run IMAGE ARGS``)."""
    return _marker_in_shell(current())


def marker() -> re.Pattern[str]:
    """Text that may hold a launch (a file without it is not read further)."""
    return _marker(current())


@cache
def _marker_in_shell(images: Images) -> re.Pattern[str]:
    return re.compile("|".join([_LAUNCH_IN_TEXT, _OWN_IN_TEXT, *_literal_parts(images)]))


@cache
def _marker(images: Images) -> re.Pattern[str]:
    return re.compile("|".join(["vllm", *_literal_parts(images)]))


def _literal_parts(images: Images) -> list[str]:
    """The fixed text each named or built image begins with, as patterns."""
    parts = {re.split(r"[*?\[]", name, maxsplit=1)[0] for name in images.named}
    parts |= {_untagged(name) for name in images.built}
    return [re.escape(part) for part in sorted(parts) if len(part) >= 2]


def _untagged(reference: str) -> str:
    """``reference`` without its tag and digest (a registry's port stays)."""
    name = reference.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name
