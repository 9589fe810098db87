"""Launches in YAML: Kubernetes manifests (Helm templates too), compose files, GitHub
Actions workflows, every document of a stream.

A container is a mapping with ``command``/``args`` (Kubernetes: the program, then its
arguments) or a compose service (a mapping under the top-level ``services:``, or one with
``entrypoint``: ``entrypoint`` is the program, ``command`` its arguments); merge keys
(``<<: *defaults``) are followed. Lists are read word by word (no shell), a string is
split as compose splits it, ``sh -c SCRIPT`` reads the script as the shell would. A
container without a program of its own takes its image's entry point: when that is
vLLM's server (:mod:`.images`; for a compose ``build:``, the Dockerfile's own entry
point), its arguments alone are the launch, reported where they are written, with a
note. Its ``env`` (Kubernetes) or ``environment`` (compose) is the launch's environment.
Any other string holding a launch (a workflow's ``run:``, a ConfigMap's script) is read
as shell, variables assembled before they run included. Lines come from the loader's
marks, counted at ``\\n`` only. A Helm template is read as :mod:`.templates` renders it
(a note says so); one that still is not YAML is read as shell text.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from kernelcfg.base import bounded
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.flags.launches import assembled, images, repository, templates
from kernelcfg.flags.launches.shell import Word, commands
from kernelcfg.flags.launches.words import (
    Found,
    Note,
    exec_words,
    from_shell,
    from_words,
    image_note,
    runs_program,
)

__all__ = ["launches"]

_HAS_LAUNCH = re.compile(r"\bvllm\b")
_PROGRAM_KEYS = frozenset({"command", "args", "entrypoint"})
_TEMPLATE = Note(
    "helm-template",
    "a Helm template read before rendering: of an {{ if }} with an {{ else }} the {{ else }} "
    "branch is read, the list items an {{ if }} alone adds are left out, the words Helm fills "
    "in are named as unknown",
)


class _Places:
    """Offsets in the text to 1-based line and column, lines ending at ``\\n`` only
    (PyYAML's own marks also break lines at U+2028, U+0085 and a lone CR)."""

    def __init__(self, text: str) -> None:
        self.breaks = [match.start() for match in re.finditer("\n", text)]

    def of(self, mark: Any, *, next_line: bool = False) -> tuple[int, int]:
        """The line and column of a loader mark (with ``next_line``, the start of the
        line after it: where a block scalar's text begins)."""
        index = mark.index
        line = bisect.bisect_left(self.breaks, index)
        if next_line:
            return line + 2, 1
        start = self.breaks[line - 1] + 1 if line else 0
        return line + 1, index - start + 1


@dataclasses.dataclass
class _Doc:
    """What reading one file's documents needs."""

    path: str
    """The file."""
    places: _Places
    """Its lines."""
    restore: Callable[[str], str] = str
    """A scalar's text as written (a template's actions put back)."""
    notes: tuple[Note, ...] = ()
    """Notes for every launch of the file."""


def launches(text: str, path: str) -> Iterator[Found]:
    """Every launch in every document of a YAML file (the same launch reached twice
    through an alias, once)."""
    seen: set[tuple[int, int, tuple[str, ...]]] = set()
    for found in _launches(text, path):
        key = (found.line, found.column, tuple(found.argv))
        if key not in seen:
            seen.add(key)
            yield found


def _launches(text: str, path: str) -> Iterator[Found]:
    what = f"file {bounded.shown(path)}"
    doc = _Doc(path, _Places(text))
    if "{{" in text:  # a template's actions become placeholder words before YAML reads it
        template = templates.rendered(text)
        notes = (_TEMPLATE,) if template.branches else ()
        doc = _Doc(path, _Places(template.text), template.restore, notes)
        text = template.text
    try:
        documents = bounded.yaml_documents(text, what)
    except KernelcfgError:
        if doc.restore is str:
            raise
        yield from from_shell(doc.restore(text), path)  # not YAML even rendered
        return
    for document in documents:
        yield from _document(document, doc)


def _document(document: Any, doc: _Doc) -> Iterator[Found]:
    """The launches of one document: a walk of its nodes, compose services marked."""
    import yaml

    services = _services(document)
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            found: list[Found] = []
            stack.extend(reversed(_mapping(node, doc, found, service=id(node) in services)))
            yield from found
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node.value, str) and _HAS_LAUNCH.search(node.value):
            yield from _script(node, doc, {})


def _services(document: Any) -> set[int]:
    """The compose services of a document (the mappings under its ``services:``)."""
    import yaml

    if not isinstance(document, yaml.MappingNode):
        return set()
    node = _keys(document).get("services")
    if not isinstance(node, yaml.MappingNode):
        return set()
    return {id(value) for _, value in node.value if isinstance(value, yaml.MappingNode)}


def _keys(node: Any, depth: int = 0) -> dict[str, Any]:
    """A mapping's keys and values, merge keys (``<<: *base``) followed; its own keys win."""
    import yaml

    keys: dict[str, Any] = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        if key.value == "<<" and depth < bounded.MAX_DEPTH:
            merged = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for base in reversed(merged):
                if isinstance(base, yaml.MappingNode):
                    keys.update(_keys(base, depth + 1))
    keys.update(
        (k.value, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value != "<<"
    )
    return keys


def _mapping(node: Any, doc: _Doc, found: list[Found], *, service: bool) -> list[Any]:
    """A mapping's launch, if it is a container that makes one (added to ``found``),
    and the value nodes still to walk."""
    keys = _keys(node)
    image = _image(keys, doc)
    if not (_PROGRAM_KEYS & keys.keys() or image):
        return [v for _, v in node.value]
    words, notes = _container_words(keys, doc, image, compose=service or "entrypoint" in keys)
    if words:
        found += from_words(words, doc.path, _container_env(keys, doc), notes=notes)
    return [v for k, v in node.value if getattr(k, "value", None) not in _PROGRAM_KEYS]


class _Server(NamedTuple):
    """An image whose entry point is vLLM's server."""

    name: str
    """Its name, or the Dockerfile it is built from."""
    entry_point: list[str]
    """Its entry point's words (``vllm serve``, and any arguments the entry point
    gives)."""


def _image(keys: dict[str, Any], doc: _Doc) -> _Server | None:
    """The image of a container when its entry point is vLLM's server."""
    value = getattr(keys.get("image"), "value", None)
    if isinstance(value, str) and images.is_server(doc.restore(value)):
        return _Server(value.strip(), ["vllm", "serve"])
    build = keys.get("build")
    return None if build is None else _built(build, doc)


def _built(build: Any, doc: _Doc) -> _Server | None:
    """The image a compose ``build:`` makes, when it names a Dockerfile of the
    repository whose entry point is vLLM's server."""
    import yaml

    context, dockerfile = ".", "Dockerfile"
    if isinstance(build, yaml.ScalarNode) and isinstance(build.value, str):
        context = build.value
    elif isinstance(build, yaml.MappingNode):
        keys = _keys(build)
        context = str(getattr(keys.get("context"), "value", ".") or ".")
        dockerfile = str(getattr(keys.get("dockerfile"), "value", dockerfile) or dockerfile)
    if not doc.path or "{{" in context + dockerfile or "://" in context:
        return None
    base = os.path.join(os.path.dirname(os.path.abspath(doc.path)), context)
    found = repository.resolve(dockerfile, base, repository.root_of(doc.path))
    if found is None:
        return None
    from kernelcfg.flags.launches.dockerfile import entry_point

    try:
        entry = entry_point(bounded.read_text(found, "file"))
    except KernelcfgError:
        return None
    if entry is None:
        return None
    name = os.path.relpath(found, os.path.dirname(os.path.abspath(doc.path)))
    return _Server(f"built from {name}", entry)


def _container_words(
    keys: dict[str, Any], doc: _Doc, image: _Server | None, *, compose: bool
) -> tuple[list[Word], tuple[Note, ...]]:
    """A container's words (its program, then its arguments) and the notes on how they
    were read: compose's ``entrypoint`` + ``command``, Kubernetes' ``command`` +
    ``args``, the image's entry point (vLLM's server) when it has no program of its own."""
    if compose:
        head = _words(keys.get("entrypoint"), doc)
        tail = _words(keys.get("command"), doc)
    else:
        head, tail = _words(keys.get("command"), doc), _words(keys.get("args"), doc)
    if head:
        return head + tail, doc.notes
    if len(tail) == 1 and _HAS_LAUNCH.search(tail[0].text):  # one string: a command line
        tail = _split(tail[0].text, tail[0].line, tail[0].column)
    if image is None or not tail or runs_program(tail):
        return tail, doc.notes
    where = tail[0]
    head = exec_words(image.entry_point, where.line, where.column)
    return head + tail, (*doc.notes, image_note(image.name))


def _words(node: Any, doc: _Doc) -> list[Word]:
    """A ``command``/``args`` value as words: a list word by word, a string split."""
    import yaml

    if node is None:
        return []
    if isinstance(node, yaml.SequenceNode):
        words: list[Word] = []
        for item in node.value:
            if isinstance(item, yaml.ScalarNode):
                line, column = doc.places.of(item.start_mark, next_line=item.style in ("|", ">"))
                words += exec_words([doc.restore(str(item.value))], line, column)
        return words
    if isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
        line, column = doc.places.of(node.start_mark, next_line=node.style in ("|", ">"))
        return _split(doc.restore(node.value), line, column)
    return []


def _split(text: str, line: int, column: int) -> list[Word]:
    """A command string split into words as compose splits it (shell quoting)."""
    words: list[Word] = []
    for command in commands(text, line):
        words += command.words
        break
    return [
        Word(w.text, w.unresolved, w.line, column if w.line == line else w.column) for w in words
    ]


def _container_env(keys: dict[str, Any], doc: _Doc) -> dict[str, str]:
    """A container's variables: Kubernetes ``env: [{name, value}]``, compose
    ``environment: {K: V}`` or ``["K=V"]`` (references to other sources are left out)."""
    import yaml

    env: dict[str, str] = {}
    node = keys.get("env") or keys.get("environment")
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            if isinstance(item, yaml.MappingNode):
                pair = {k.value: v.value for k, v in item.value if isinstance(v, yaml.ScalarNode)}
                if isinstance(pair.get("name"), str) and isinstance(pair.get("value"), str):
                    env[doc.restore(pair["name"])] = doc.restore(pair["value"])
            elif isinstance(item, yaml.ScalarNode) and "=" in str(item.value):
                name, _, value = doc.restore(str(item.value)).partition("=")
                env[name] = value
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(v, yaml.ScalarNode) and isinstance(k.value, str):
                env[doc.restore(k.value)] = doc.restore(str(v.value))
    return env


def _script(node: Any, doc: _Doc, env: dict[str, str]) -> Iterator[Found]:
    """A string value read as shell (a workflow's ``run:``, a ConfigMap's script), the
    commands it assembles in variables included."""
    line, _ = doc.places.of(node.start_mark, next_line=node.style in ("|", ">"))
    text = doc.restore(node.value)
    for found in from_shell(text, doc.path, line, env):
        yield dataclasses.replace(found, notes=(*found.notes, *doc.notes))
    if "=" in text:
        yield from assembled.launches(text, doc.path, line, env)
