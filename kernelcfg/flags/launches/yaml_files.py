"""Launches in YAML: Kubernetes manifests (Helm-rendered too), compose files, GitHub
Actions workflows, every document of a stream.

A mapping with ``command``/``args`` (Kubernetes) or ``entrypoint``/``command``
(compose) is a container: its words are joined, lists word by word (no shell), a
string split as compose splits it; ``sh -c SCRIPT`` reads the script as the shell
would; a container of vLLM's image (``image: vllm/vllm-openai``) without a command of its
own starts the server with its ``args``. Its ``env`` (Kubernetes) or ``environment``
(compose) is the launch's environment. Any other string holding a launch (a workflow's
``run:``, a ConfigMap's script) is read as shell. Lines come from the loader's marks,
counted at ``\\n`` only. A template that is not YAML until rendered (Helm's ``{{ }}``)
is read as shell text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.errors import KernelcfgError
from kernelcfg.flags.launches.shell import Word, commands
from kernelcfg.flags.launches.words import Found, exec_words, from_shell, from_words

__all__ = ["launches"]

_SERVER_IMAGE = re.compile(r"(?:[\w.-]+(?::\d+)?/)*vllm/vllm-openai(?:[:@]\S*)?")
_HAS_LAUNCH = re.compile(r"\bvllm\b")


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


def launches(text: str, path: str) -> Iterator[Found]:
    """Every launch in every document of a YAML file."""
    import yaml

    places = _Places(text)
    try:
        documents = bounded.yaml_documents(text, f"file {bounded.shown(path)}")
    except KernelcfgError:
        if "{{" not in text:
            raise
        yield from from_shell(text, path)  # a Helm template: YAML only once rendered
        return
    for document in documents:
        stack: list[Any] = [document]
        while stack:
            node = stack.pop()
            if isinstance(node, yaml.MappingNode):
                found: list[Found] = []
                stack.extend(reversed(_mapping(node, path, places, found)))
                yield from found
            elif isinstance(node, yaml.SequenceNode):
                stack.extend(reversed(node.value))
            elif isinstance(node.value, str) and _HAS_LAUNCH.search(node.value):
                yield from _script(node, path, places, {})


def _mapping(node: Any, path: str, places: _Places, found: list[Found]) -> list[Any]:
    """A mapping's launch, if it is a container that makes one (added to ``found``),
    and the value nodes still to walk."""
    import yaml

    keys = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    if not ({"command", "args", "entrypoint"} & keys.keys() or _server_image(keys)):
        return [v for _, v in node.value]
    words = _container_words(keys, places)
    found += from_words(words, path, _container_env(keys)) if words else []
    return [v for k, v in node.value if k.value not in ("command", "args", "entrypoint")]


def _server_image(keys: dict[str, Any]) -> bool:
    """Whether the container runs vLLM's image (whose entry point is the server)."""
    image = getattr(keys.get("image"), "value", None)
    return isinstance(image, str) and bool(_SERVER_IMAGE.fullmatch(image.strip()))


def _container_words(keys: dict[str, Any], places: _Places) -> list[Word]:
    """A container's words: its entry point (``command`` in Kubernetes, ``entrypoint``
    in compose, vLLM's image's own when it has neither) then its arguments."""
    if "entrypoint" in keys:
        head, tail = _words(keys["entrypoint"], places), _words(keys.get("command"), places)
    else:
        head, tail = _words(keys.get("command"), places), _words(keys.get("args"), places)
    if not head and _server_image(keys):
        if len(tail) == 1 and " " in tail[0].text.strip():  # one string: a command line
            return _split(tail[0].text, tail[0].line, tail[0].column)
        line, column = (tail[0].line, tail[0].column) if tail else (0, 0)
        head = exec_words(["vllm", "serve"], line, column)
    if not head and len(tail) == 1 and _HAS_LAUNCH.search(tail[0].text):
        return _split(tail[0].text, tail[0].line, tail[0].column)
    return head + tail


def _words(node: Any, places: _Places) -> list[Word]:
    """A ``command``/``args`` value as words: a list word by word, a string split."""
    import yaml

    if node is None:
        return []
    if isinstance(node, yaml.SequenceNode):
        words: list[Word] = []
        for item in node.value:
            if isinstance(item, yaml.ScalarNode):
                line, column = places.of(item.start_mark, next_line=item.style in ("|", ">"))
                words += exec_words([str(item.value)], line, column)
        return words
    if isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
        line, column = places.of(node.start_mark, next_line=node.style in ("|", ">"))
        return _split(node.value, line, column)
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


def _container_env(keys: dict[str, Any]) -> dict[str, str]:
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
                    env[pair["name"]] = pair["value"]
            elif isinstance(item, yaml.ScalarNode) and "=" in str(item.value):
                name, _, value = str(item.value).partition("=")
                env[name] = value
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(v, yaml.ScalarNode) and isinstance(k.value, str):
                env[k.value] = str(v.value)
    return env


def _script(node: Any, path: str, places: _Places, env: dict[str, str]) -> Iterator[Found]:
    """A string value read as shell (a workflow's ``run:``, a ConfigMap's script)."""
    line, _ = places.of(node.start_mark, next_line=node.style in ("|", ">"))
    yield from from_shell(node.value, path, line, env)
