"""Runs inside a release's throwaway venv: vLLM's own ``vllm serve`` argument parser (the
one ``vllm serve`` builds, captured from ``vllm.entrypoints.cli.main.main()`` as
``scripts/release/serve_parser/dump.py`` does), then ``ServeSubcommand.validate``, then
``AsyncEngineArgs.from_cli_args`` and the kernel-config statements of
``EngineArgs.create_engine_config`` (read by AST from the installed release), on each
command line asked about.

Reads the request (JSON, stdin; written by ``scripts/release/execute/serve_parser.py``):
``{"cases": [{"id", "argv", "config_file"?}], "config_mark", "tmp_marker"}``; writes
``{"found": ..., "records": [{"id", "vllm"}]}`` (JSON, stdout) in the schema of real
vLLM's ``serve-parser-cases.json``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import enum
import importlib
import inspect
import io
import json
import logging
import os
import re
import sys
import tempfile
import textwrap
from typing import Any

from dump import capture


class _RefusedError(Exception):
    """argparse's ``error()``: the message it would print before exiting 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _refuse(self: argparse.ArgumentParser, message: str) -> Any:
    raise _RefusedError(message)


def _kernel_statements() -> tuple[list[ast.stmt], str, int]:
    """The statements of ``create_engine_config`` that build the kernel config: from
    ``kernel_config = copy.deepcopy(self.kernel_config)`` while each statement names
    ``kernel_config`` or ``ir_op_priority``."""
    arg_utils = importlib.import_module("vllm.engine.arg_utils")
    func = arg_utils.EngineArgs.create_engine_config
    lines, first = inspect.getsourcelines(func)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    flat: list[ast.stmt] = list(body)
    start = next(
        i
        for i, s in enumerate(flat)
        if isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "kernel_config" for t in s.targets)
    )
    chosen = []
    for stmt in flat[start:]:
        names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        attrs = {n.attr for n in ast.walk(stmt) if isinstance(n, ast.Attribute)}
        if "kernel_config" not in names and "ir_op_priority" not in attrs:
            break
        chosen.append(stmt)
    begin = first + chosen[0].lineno - 1
    end = first + chosen[-1].end_lineno - 1  # type: ignore[operator]
    return chosen, f"engine/arg_utils.py:{begin}-{end}", len(chosen)


def _name(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.name
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, (str, int)) else value.name
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _message(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _compilation(engine_args: Any) -> dict[str, Any]:
    cc = engine_args.compilation_config
    get = cc.get if isinstance(cc, dict) else lambda k, d=None: getattr(cc, k, d)
    level = getattr(engine_args, "optimization_level", None)
    return {
        "backend": _name(get("backend")),
        "cudagraph_mode": _name(get("cudagraph_mode")),
        "mode": _name(get("mode")),
        "optimization_level": None
        if level is None
        else (level.name if isinstance(level, enum.Enum) else str(level)),
        "optimization_level_int": _level_int(level),
    }


def _level_int(level: Any) -> int | None:
    """The -O level as the number vLLM reads it as (``3.0`` is 3), None for a word."""
    if level is None:
        return None
    try:
        return int(float(level))
    except (TypeError, ValueError):
        return None


def _kernel_fields(kernel_config: Any) -> dict[str, Any]:
    from dataclasses import asdict, fields

    out: dict[str, Any] = {}
    for f in fields(kernel_config):
        value = getattr(kernel_config, f.name)
        if f.name == "ir_op_priority":
            value = {op: list(v) for op, v in asdict(value).items()}
        out[f.name] = _jsonable(value)
    return out


def _kernel_hash(kernel_config: Any) -> str:
    if hasattr(kernel_config, "compute_hash"):
        return kernel_config.compute_hash()
    from vllm.config.utils import hash_config

    return hash_config(kernel_config)


class Judge:
    def __init__(self, statements: list[ast.stmt]) -> None:
        self.top, self.serve, self.command = capture()
        arg_utils = importlib.import_module("vllm.engine.arg_utils")
        self.arg_utils = arg_utils
        module = ast.Module(body=statements, type_ignores=[])
        self.code = compile(module, "<create_engine_config: kernel config>", "exec")

    def kernel_config(self, engine_args: Any) -> Any:
        scope = dict(vars(self.arg_utils))
        scope["self"] = engine_args
        exec(self.code, scope)  # vLLM's own statements, from its wheel
        return scope["kernel_config"]

    def judge(self, argv: list[str]) -> dict[str, Any]:
        try:
            args = self.top.parse_args(argv[1:])
        except _RefusedError as exc:
            # the line argparse prints after "error:" (a pydantic report's first line)
            first = exc.message.split("\n")[0]
            return {"accepted": False, "error": first, "exit_code": 2, "stage": "argparse"}
        except SystemExit as exc:  # --help, --version
            code = exc.code if isinstance(exc.code, int) else 2
            return {"accepted": code == 0, "exit_code": code, "stage": "exit"}
        except Exception as exc:
            return {"accepted": False, "error": _message(exc), "exit_code": 1, "stage": "read-args"}
        out: dict[str, Any] = {"accepted": True, "exit_code": 0}
        if getattr(args, "model_tag", None) is not None:  # ServeSubcommand.cmd does so first
            args.model = args.model_tag
        try:
            self.command.validate(args)
        except Exception as exc:
            out["validate_error"] = _message(exc)
        try:
            engine_args = self.arg_utils.AsyncEngineArgs.from_cli_args(args)
        except Exception as exc:
            out["engine_error"] = f"engine args: {_message(exc)}"
            return out
        out["model"] = engine_args.model
        out["enforce_eager"] = engine_args.enforce_eager
        out["compilation"] = _compilation(engine_args)
        out["parallel"] = {
            "all2all_backend": _jsonable(getattr(engine_args, "all2all_backend", None)),
            "data_parallel_size": engine_args.data_parallel_size,
            "enable_expert_parallel": engine_args.enable_expert_parallel,
            "tensor_parallel_size": engine_args.tensor_parallel_size,
        }
        try:
            kernel_config = self.kernel_config(engine_args)
        except Exception as exc:
            out["engine_error"] = f"kernel config: {_message(exc)}"
            return out
        out["kernel_config"] = _kernel_fields(kernel_config)
        try:
            out["kernel_hash"] = _kernel_hash(kernel_config)
        except Exception as exc:
            out["kernel_hash"] = None
            out["kernel_hash_error"] = _message(exc)
        return out


def _argv(case: dict[str, Any], folder: str, mark: str) -> list[str]:
    config = case.get("config_file")
    if config and config.get("written"):
        with open(os.path.join(folder, config["name"]), "w", encoding="utf-8") as fh:
            fh.write(config["content"])
    return [os.path.join(folder, a) if a.startswith(mark) else a for a in case["argv"]]


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _untmp(value: Any, folder: str, marker: str) -> Any:
    """Paths of this machine out of a verdict: the config files' folder as ``marker``,
    vLLM's install folder as ``<site-packages>``, memory addresses masked."""
    if isinstance(value, str):
        site = os.path.dirname(os.path.dirname(importlib.import_module("vllm").__file__))
        value = value.replace(folder, marker).replace(site, "<site-packages>")
        return _ADDRESS.sub(" at 0x…", value)
    if isinstance(value, dict):
        return {k: _untmp(v, folder, marker) for k, v in value.items()}
    if isinstance(value, list):
        return [_untmp(v, folder, marker) for v in value]
    return value


def _packages() -> dict[str, str]:
    from importlib import metadata

    names = ("vllm", "torch", "pydantic", "pydantic_core", "transformers", "fastapi", "PyYAML")
    out = {}
    for name in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[name] = metadata.version(name)
    return out


def run(request: dict[str, Any]) -> dict[str, Any]:
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    statements, where, count = _kernel_statements()
    judge = Judge(statements)
    argparse.ArgumentParser.error = _refuse  # type: ignore[method-assign]
    vllm = importlib.import_module("vllm")
    from vllm.platforms import current_platform

    found = {
        "vllm": getattr(vllm, "__version__", None),
        "kernel_config_statements": f"{where} ({count} statements, read by AST)",
        "platform": type(current_platform).__name__,
        "packages": _packages(),
    }
    records = []
    mark, marker = request["config_mark"], request["tmp_marker"]
    with tempfile.TemporaryDirectory(prefix="kc-serve-") as folder:
        for case in request["cases"]:
            argv = _argv(case, folder, mark)
            with contextlib.redirect_stderr(io.StringIO()):
                verdict = judge.judge(argv)
            records.append({"id": case["id"], "vllm": _untmp(verdict, folder, marker)})
    return {"found": found, "records": records}


def main() -> None:
    request = json.load(sys.stdin)
    logging.disable(logging.CRITICAL)
    with contextlib.redirect_stdout(io.StringIO()) as chatter:
        answer = run(request)
    del chatter
    json.dump(answer, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
