"""Runs inside a release's throwaway venv: vLLM's own ``envs.compile_factors()`` (the
environment's part of the compile-cache key) for each environment asked about.

Reads the request (JSON, stdin; written by ``scripts/release/execute/env_factors.py``):
``{"records": [{"id", "env"}], "placeholders": {"{SCRATCH}": path, ...}}``; writes
``{"found": ..., "records": [{"id", "factors", "env_hash", "skipped_by_parser_error"}]}``
(JSON, stdout). ``skipped_by_parser_error``: the variables hashed with no environment
that ``compile_factors`` left out there (their parser, or one they read, raised; vLLM
logs a warning).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import sys
from typing import Any


def _hash(factors: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(factors, sort_keys=True).encode()).hexdigest()


def _fill(value: str, placeholders: dict[str, str]) -> str:
    for mark, path in placeholders.items():
        value = value.replace(mark, path)
    return value


def _one(
    envs: Any, env: dict[str, str], placeholders: dict[str, str], hashed: Any = None
) -> dict[str, Any]:
    filled = {k: _fill(v, placeholders) for k, v in env.items()}
    os.environ.update(filled)
    try:
        factors = json.loads(json.dumps(envs.compile_factors(), sort_keys=True))
        # the hashed variables compile_factors() skipped: their parser (or one they
        # read) raised; those it ignores are never asked
        skipped = sorted(v for v in (hashed or ()) if v not in factors)
    finally:
        for name in filled:
            os.environ.pop(name, None)
    digest = _hash(factors)  # of the real paths, as vLLM hashed them
    text = json.dumps(factors, sort_keys=True)
    for mark, path in placeholders.items():
        text = text.replace(json.dumps(path)[1:-1], mark)
    shown = json.loads(text)  # the factors with the placeholders, as the inputs wrote them
    return {"factors": shown, "env_hash": digest, "skipped_by_parser_error": skipped}


def run(request: dict[str, Any]) -> dict[str, Any]:
    import torch
    import vllm
    from vllm import envs

    placeholders = dict(request.get("placeholders") or {})
    site = os.path.dirname(os.path.dirname(vllm.__file__))
    placeholders.setdefault("{SITE_PACKAGES}", site)
    baseline = _one(envs, {}, placeholders)["factors"]
    found = {
        "vllm": getattr(vllm, "__version__", None),
        "torch": torch.__version__,
        "declared_variables": len(envs.environment_variables),
        "ignored_declared": sorted(v for v in envs.environment_variables if v not in baseline),
        "hashed_undeclared": sorted(v for v in baseline if v not in envs.environment_variables),
    }
    records = []
    for record in request["records"]:
        one = _one(envs, record["env"], placeholders, hashed=baseline)
        records.append({"id": record["id"], **one})
    return {"found": found, "baseline": baseline, "records": records}


def main() -> None:
    request = json.load(sys.stdin)
    logging.disable(logging.CRITICAL)
    with contextlib.redirect_stdout(io.StringIO()):
        answer = run(request)
    json.dump(answer, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
