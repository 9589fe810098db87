"""``kernelcfg fetch``: hub ids' config files put into the local Hugging Face cache ahead
of a run (a CI cache step), as ``--download`` fetches them, so that later runs read the
models' facts with no network."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from kernelcfg.base.errors import KernelcfgError
from kernelcfg.flags import hub, model_config

__all__ = ["Fetched", "fetch_all"]


@dataclass(frozen=True)
class Fetched:
    """One model asked for, and what became of it."""

    model: str
    """The hub id, as given."""
    path: str | None
    """The cached ``config.json``; ``None`` when it could not be fetched."""
    problem: str | None = None
    """Why it could not be fetched, as one line; ``None`` when it was."""


def fetch_all(
    models: Sequence[str], revision: str | None, environ: Mapping[str, str] | None = None
) -> Iterator[Fetched]:
    """Fetch each model's config files (at ``revision``) into the cache ``environ``
    names (default: this process's environment), in order; one failure stops none of
    the others."""
    environ = os.environ if environ is None else environ
    cache = model_config.hub_cache(environ)
    for model in models:
        if isinstance(cache, str):
            yield Fetched(model, None, f"{cache}: there is no Hugging Face cache to fetch into")
            continue
        try:
            path = hub.fetch(model, revision=revision, environ=environ, cache=cache)
        except KernelcfgError as exc:
            yield Fetched(model, None, exc.message)
            continue
        yield Fetched(model, path)
