"""``--config FILE``: the YAML file's keys as options, placed after the model, the way
vLLM's ``FlexibleArgumentParser`` expands it (and refuses what it refuses).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelcfg.base import bounded
from kernelcfg.base.errors import ArgumentError
from kernelcfg.base.problems import Problem
from kernelcfg.flags.serve_line.preprocess import token

__all__ = ["expand_config"]


def _load_yaml(path_text: str, notes: list[Problem]) -> list[str]:
    """``--config FILE``'s keys as options, the way vLLM's parser turns them."""
    if path_text.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        raise ArgumentError(
            f"--config: config file must be a .yaml or .yml file, got {path_text!r}",
            field="config",
        )
    path = Path(path_text)
    data = bounded.loads_yaml(bounded.read_text(path_text, "--config"), f"--config {path.name}")
    if data is None:
        raise ArgumentError(
            f"--config: {bounded.shown(path_text)} is empty; vllm serve stops on it "
            "(AttributeError)",
            field="config",
        )
    if not isinstance(data, dict):
        raise ArgumentError(
            f"--config: {path_text!r} must hold a mapping of option names to values",
            field="config",
        )
    origin = f"config file {path.name}"
    out: list[str] = []
    for key, value in data.items():
        name = f"--{key}"
        if isinstance(value, bool):
            if value:
                out.append(token(name, origin))
            else:
                notes.append(
                    Problem(
                        "warning",
                        "yaml-false-dropped",
                        str(key),
                        f"{path.name}: '{key}: false' is dropped by vllm serve (it has no "
                        f"--no-{key} at the top level); the setting keeps its default",
                    )
                )
        elif isinstance(value, list):
            if value:
                out.append(token(name, origin))
                out.extend(token(str(v), origin) for v in value)
        elif isinstance(value, dict):
            text = _yaml_json(value, path.name, key)
            out.extend([token(name, origin), token(text, origin)])
        else:
            out.extend([token(name, origin), token(_yaml_scalar(value, path.name, key), origin)])
    return out


def _yaml_scalar(value: Any, file: str, key: object) -> str:
    """A YAML scalar as vLLM passes it on (``str()``); binary and sets are refused."""
    if isinstance(value, bytes | set):
        raise ArgumentError(
            f"--config {file}: {key!s} holds a YAML {type(value).__name__}, which vllm serve "
            "cannot pass on as an option value",
            field=str(key),
        )
    try:
        return str(value)
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise ArgumentError(
            f"--config {file}: {key!s}: {bounded.reason(exc)}", field=str(key)
        ) from None


def _yaml_json(value: dict[Any, Any], file: str, key: object) -> str:
    """A YAML mapping as the JSON text vLLM makes of it; values JSON cannot hold refused."""
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(
            f"--config {file}: {key!s} holds a value JSON cannot carry "
            f"({bounded.reason(exc)}); vLLM itself would crash on it",
            field=str(key),
        ) from None


def expand_config(
    tokens: list[str], notes: list[Problem], *, insert_at: int, serve: bool
) -> list[str]:
    """``--config FILE``: its keys as options, placed after the model (vLLM's step)."""
    for t in tokens:
        if t.startswith("--config="):
            notes.append(
                Problem(
                    "warning",
                    "config-equals-ignored",
                    "config",
                    f"{bounded.shown(str(t))}: vLLM only reads '--config FILE' (with a space); "
                    "with '=' the file is silently ignored, and so kernelcfg ignores it",
                )
            )
    count = tokens.count("--config")
    if count == 0:
        return tokens
    if count > 1:
        raise ArgumentError(
            "--config: more than one config file specified (vllm serve stops: AssertionError)",
            field="config",
        )
    idx = tokens.index("--config")
    if idx + 1 >= len(tokens):
        raise ArgumentError(
            "--config: no config file specified (vllm serve stops: ValueError)", field="config"
        )
    loaded = _load_yaml(tokens[idx + 1], notes)
    rest = tokens[:idx] + tokens[idx + 2 :]
    if serve and insert_at == 0 and "--model" not in loaded:
        raise ArgumentError(
            "No model specified! Give the model first (vllm serve MODEL ...) or as 'model:' in "
            "the config file (vllm serve stops: ValueError)",
            field="model",
        )
    return rest[:insert_at] + loaded + rest[insert_at:]
