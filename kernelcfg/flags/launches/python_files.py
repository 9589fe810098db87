"""Launches in Python source: a literal argv list or tuple (``subprocess.Popen(["vllm",
"serve", MODEL, ...])``), or a literal command string run by a shell, read with the
standard library's parser (nothing is run or imported)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelcfg.flags.launches.words import Found, exec_words, from_shell, from_words

__all__ = ["launches"]

_COMMANDS = ("vllm serve", "python -m vllm.", "python3 -m vllm.")
"""How a literal command string that launches vLLM begins."""


def launches(text: str, path: str) -> Iterator[Found]:
    """Every literal launch in a Python file; a file Python cannot parse has none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple):
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            texts = [v for v in values if isinstance(v, str)]
            if len(texts) == len(node.elts) and "vllm" in " ".join(texts):
                first = node.elts[0] if node.elts else node
                words = exec_words(texts, first.lineno, first.col_offset + 1)
                yield from from_words(words, path)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.lstrip().startswith(_COMMANDS)
        ):
            yield from from_shell(node.value, path, node.lineno)
