"""The images a repository builds from a Dockerfile whose entry point is vLLM's server,
by the names they are built under, so that a manifest running such an image by name
(``image: ghcr.io/org/server:1.2``) is read as the server's arguments.

A build names its image in ``docker build -t NAME [-f FILE] CONTEXT`` (``podman``,
``buildx`` too) written in a script, a workflow or a docs block; in a compose service's
``image:`` beside its ``build:``; and in a workflow step of ``docker/build-push-action``
(``with: {file, context, tags}``). The Dockerfile is read only when it lies inside the
repository; at most :data:`MAX_BUILDS` builds are followed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.flags.launches import repository
from kernelcfg.flags.launches.spans import Cursor

__all__ = ["MAX_BUILDS", "built_images"]

MAX_BUILDS = 256
"""The most builds followed in one scan."""
_BUILD = re.compile(r"\b(?:docker|podman)\s+(?:buildx\s+|image\s+)?build\b")
_TAKES_VALUE = frozenset(
    {"-t", "--tag", "-f", "--file", "--build-arg", "--target", "--platform", "--label",
     "--cache-from", "--cache-to", "--secret", "--ssh", "--network", "--progress", "-o",
     "--output", "--iidfile", "--add-host", "--build-context", "--shm-size"}
)  # fmt: skip


def built_images(paths: Iterable[str]) -> frozenset[str]:
    """The names of the images the files at ``paths`` build from a Dockerfile of their
    repository whose entry point is vLLM's server."""
    names: set[str] = set()
    count = 0
    for path in paths:
        try:
            text = bounded.read_text(path, "file")
        except KernelcfgError:
            continue
        if "build" not in text:
            continue
        for name, dockerfile, base in _builds(text, path):
            count += 1
            if count > MAX_BUILDS:
                return frozenset(names)
            if _is_servers(dockerfile, base, path):
                names.add(name)
    return frozenset(names)


def _builds(text: str, path: str) -> Iterator[tuple[str, str, str]]:
    """Each build a file writes: the image's name, its Dockerfile, the folder that
    Dockerfile is named relative to."""
    folder = os.path.dirname(os.path.abspath(path))
    if path.endswith((".yaml", ".yml")):
        yield from _yaml_builds(text, folder, repository.root_of(path))
    if _BUILD.search(text):
        yield from _shell_builds(text, repository.root_of(path))


def _shell_builds(text: str, root: str) -> Iterator[tuple[str, str, str]]:
    """``docker build -t NAME -f FILE CONTEXT`` commands (run from the repository root)."""
    cursor = Cursor(text)
    for match in _BUILD.finditer(text):
        command = cursor.command_at(match.start())
        if command is None:
            continue
        texts = [w.text for w in command.words]
        tags, dockerfile, context = _build_options(texts)
        for tag in tags:
            yield tag, dockerfile or os.path.join(context, "Dockerfile"), root


def _build_options(texts: list[str]) -> tuple[list[str], str | None, str]:
    """The tags, the ``-f`` file and the context of a build command's words."""
    tags: list[str] = []
    dockerfile: str | None = None
    context = "."
    at = next((i + 1 for i, t in enumerate(texts) if t == "build"), len(texts))
    while at < len(texts):
        option, eq, value = texts[at].partition("=")
        if option in _TAKES_VALUE:
            if not eq:
                value = texts[at + 1] if at + 1 < len(texts) else ""
                at += 1
            if option in ("-t", "--tag"):
                tags.append(value)
            elif option in ("-f", "--file"):
                dockerfile = value
        elif not texts[at].startswith("-"):
            context = texts[at]
        at += 1
    return tags, dockerfile, context


def _yaml_builds(text: str, folder: str, root: str) -> Iterator[tuple[str, str, str]]:
    """Compose services with ``build:`` and ``image:``; ``docker/build-push-action``
    steps."""
    try:
        data = bounded.loads_yaml(text, "file") if "---" not in text else None
    except KernelcfgError:
        return
    services = data.get("services") if isinstance(data, dict) else None
    for service in services.values() if isinstance(services, dict) else ():
        if isinstance(service, dict) and isinstance(service.get("image"), str):
            build = service.get("build")
            context, dockerfile = _build_of(build)
            if context is not None:
                yield service["image"], os.path.join(context, dockerfile), folder
    yield from _action_builds(data, root)


def _build_of(build: Any) -> tuple[str | None, str]:
    """A compose ``build:``'s context and Dockerfile."""
    if isinstance(build, str):
        return build, "Dockerfile"
    if isinstance(build, dict):
        return str(build.get("context", ".")), str(build.get("dockerfile", "Dockerfile"))
    return None, "Dockerfile"


def _action_builds(data: Any, root: str) -> Iterator[tuple[str, str, str]]:
    """``docker/build-push-action`` steps of a workflow."""
    jobs = data.get("jobs") if isinstance(data, dict) else None
    for job in jobs.values() if isinstance(jobs, dict) else ():
        steps = job.get("steps") if isinstance(job, dict) else None
        for step in steps if isinstance(steps, list) else ():
            uses = step.get("uses", "") if isinstance(step, dict) else ""
            given = step.get("with") if isinstance(step, dict) else None
            if not (isinstance(uses, str) and uses.startswith("docker/build-push-action")):
                continue
            if not isinstance(given, dict):
                continue
            context = str(given.get("context", "."))
            dockerfile = str(given.get("file", os.path.join(context, "Dockerfile")))
            tags = str(given.get("tags", ""))
            for tag in re.split(r"[\s,]+", tags):
                if tag and "${{" not in tag:
                    yield tag, dockerfile, root


def _is_servers(dockerfile: str, base: str, path: str) -> bool:
    """Whether a Dockerfile of the repository starts vLLM's server."""
    from kernelcfg.flags.launches.dockerfile import entry_point

    if "$" in dockerfile or "{{" in dockerfile:
        return False
    found = repository.resolve(dockerfile, base, repository.root_of(path))
    if found is None:
        return False
    try:
        entry = entry_point(bounded.read_text(found, "file"))
    except KernelcfgError:
        return False
    return entry is not None and entry[:2] == ["vllm", "serve"]
