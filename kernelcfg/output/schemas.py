"""JSON Schemas (draft 2020-12) of every command's JSON output.

One envelope for all: an object whose first key is ``format_version`` ("1"). These
describe the shapes a script may rely on; ``kernelcfg schema --of NAME`` prints one,
and the tests validate real outputs against each.
"""

from __future__ import annotations

from typing import Any

from kernelcfg.engine.explicit import CHECKS

__all__ = ["OUTPUTS", "output_schema"]

_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_PROBLEM: dict[str, Any] = {
    "type": "object",
    "required": ["severity", "code", "field", "message"],
    "properties": {
        "severity": {"enum": ["error", "warning", "info"]},
        "code": _STR,
        "field": _STR_OR_NULL,
        "message": _STR,
    },
}
_PROBLEMS = {"type": "array", "items": _PROBLEM}
_PLATFORM = {
    "type": ["object", "null"],
    "required": ["kind", "device", "capability", "gfx_arch", "source"],
    "properties": {
        "kind": {"enum": ["cuda", "rocm", "xpu", "cpu", "tpu"]},
        "device": _STR,
        "capability": _STR_OR_NULL,
        "gfx_arch": _STR_OR_NULL,
        "source": {"enum": ["flag", "preset", "environment", "detected", "fallback"]},
        "cpu": {
            "type": ["object", "null"],
            "description": "A CPU target's host features (null: not known, or no CPU)",
            "required": ["arch", "features", "macos", "source"],
            "properties": {
                "arch": _STR,
                "features": {"type": "array", "items": _STR},
                "macos": {"type": "boolean"},
                "source": {"enum": ["flag", "preset", "environment", "detected"]},
            },
        },
    },
}
_HASH = {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"}
_SELECTION: dict[str, Any] = {
    "type": "object",
    "required": [
        "requested",
        "status",
        "backend",
        "kernel",
        "value",
        "candidates",
        "install",
        "install_given",
        "install_source",
    ],
    "properties": {
        "requested": _STR,
        "status": {"enum": ["selected", "no_kernel", "error", "depends"]},
        "backend": _STR_OR_NULL,
        "kernel": _STR_OR_NULL,
        "value": _STR_OR_NULL,
        "candidates": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["backend", "kernel", "verdict", "reason"],
                "properties": {
                    "verdict": {"enum": ["ok", "refused", "unknown", "not_tried"]},
                    "if_asked": {"enum": ["ok", "refused"]},
                    "if_asked_reason": _STR_OR_NULL,
                },
            },
        },
        "install": {"enum": ["pip", "image", "minimal", "all"]},
        "install_given": {"type": "boolean"},
        "install_source": {"enum": ["flag", "environment", "default"]},
        "message": _STR_OR_NULL,
        "by_install": {"type": "object", "additionalProperties": _STR},
        "run_time": _STR,
    },
}
"""One field's selection: what vLLM takes and the candidates it walked."""
_RESOLVE: dict[str, Any] = {
    "type": "object",
    "required": [
        "format_version",
        "vllm_version",
        "valid",
        "platform",
        "kernel_config",
        "parallel_config",
        "compilation",
        "ir_dispatch",
        "hash",
        "hash_scheme",
        "hash_factors",
        "problems",
        "vllm_version_source",
        "model",
        "attention_config",
        "attention_hash",
        "selection",
        "compile_cache",
    ],
    "properties": {
        "format_version": {"const": "1"},
        "vllm_version": _STR_OR_NULL,
        "valid": {"type": "boolean"},
        "platform": _PLATFORM,
        "kernel_config": {"type": ["object", "null"]},
        "parallel_config": {"type": ["object", "null"]},
        "compilation": {"type": ["object", "null"]},
        "ir_dispatch": {"type": ["object", "null"]},
        "hash": _HASH,
        "hash_scheme": {"enum": ["compute_hash", "hash_config", None]},
        "hash_factors": {"type": ["object", "null"]},
        "problems": _PROBLEMS,
        "vllm_version_source": {"enum": ["flag", "environment", "installed", "newest", None]},
        "model": {
            "type": ["object", "null"],
            "required": ["id", "architectures", "quantization", "quant_scheme", "source"],
        },
        "attention_config": {"type": ["object", "null"]},
        "attention_hash": _HASH,
        "selection": {
            "type": ["object", "null"],
            "properties": {
                "attention": _SELECTION,
                "moe_backend": {
                    **_SELECTION,
                    "properties": {
                        **_SELECTION["properties"],
                        "checkpoint": _STR_OR_NULL,
                        "variant": _STR_OR_NULL,
                        "oracle": _STR_OR_NULL,
                        "moved": {"type": "array"},
                        "dropped": {"type": "array"},
                        "by_variant": {"type": "object", "additionalProperties": _STR},
                        "by_host": {
                            "type": "object",
                            "additionalProperties": _STR,
                            "description": "A CPU target whose features are not stated: "
                            "the picks on other hosts where they differ from the assumed "
                            "one's (x86_64 with AMX tiles)",
                        },
                        "runs": {
                            "type": "string",
                            "description": "Present where the experts class runs another "
                            "kernel in its place (zentorch_fused_moe on vLLM's Zen platform)",
                        },
                    },
                },
                "linear_backend": {
                    **_SELECTION,
                    "required": [*_SELECTION["required"], "scheme", "layers"],
                    "properties": {
                        **_SELECTION["properties"],
                        "runs": {
                            "type": "string",
                            "description": "Present where the kernel vLLM dispatches to runs "
                            "another in its place (zentorch_linear_unary on its Zen platform)",
                        },
                        "experts_only": {
                            "type": "string",
                            "description": "Present where the checkpoint's scheme covers "
                            "its MoE experts only (gpt-oss MXFP4): what the linear layers "
                            "are instead",
                        },
                    },
                },
                "sparse_indexer_topk_backend": {
                    **_SELECTION,
                    "required": [*_SELECTION["required"], "topk", "by_rows"],
                },
            },
        },
        "compile_cache": {
            "type": ["object", "null"],
            "description": "The launch's part of vLLM's compile-cache key: the env part "
            "always (it needs no model), the config part once the model's config.json is "
            "read; null only where the line could not be resolved.",
            "required": [
                "env_hash",
                "config_hash",
                "env_factors",
                "config_parts",
                "config_factors",
                "key",
                "directory",
                "reuses",
                "differences",
                "unknown",
            ],
            "properties": {
                "env_hash": _HASH,
                "config_hash": _HASH,
                "env_factors": {"type": ["object", "null"]},
                "config_parts": {"type": ["object", "null"]},
                "config_factors": {"type": ["object", "null"]},
                "key": _STR_OR_NULL,
                "directory": {"type": ["object", "null"]},
                "reuses": {"type": ["boolean", "null"]},
                "differences": {"type": "array"},
                "unknown": {
                    "type": "array",
                    "items": _STR,
                    "description": "Each part not known, as 'PART: why' (config: no "
                    "config.json, or transformers missing, the model extra; code and "
                    "compiler: no reference cache, give --compile-cache DIR).",
                },
            },
        },
        "sources": {"type": "object"},
        "other_options": {"type": "object"},
    },
}
_BATCH_LINE: dict[str, Any] = {
    **_RESOLVE,
    "required": [*_RESOLVE["required"], "id", "exit_code"],
    "properties": {
        **_RESOLVE["properties"],
        "exit_code": {"enum": [0, 1, 2, 70]},
        "matrix": {"type": "object", "additionalProperties": _STR},
    },
}


_UPGRADE_SIDE: dict[str, Any] = {
    "type": "object",
    "required": ["asked", "vllm_version", "hash", "hash_scheme", "exit_code", "notes", "refused"],
    "properties": {
        "asked": _STR,
        "vllm_version": _STR,
        "hash": _HASH,
        "hash_scheme": {"enum": ["compute_hash", "hash_config"]},
        "exit_code": {"enum": [0, 1, 2]},
        "notes": {"type": "array", "items": _STR},
        "refused": _STR_OR_NULL,
    },
}
"""One release of ``upgrade``: the release asked for and the data resolved with (a patch
release kernelcfg has no data for is resolved with its minor's; ``notes`` says so), the
launch's kernel-config hash and verdict there, and why it could not be read at all."""


def _envelope(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["format_version", *required],
        "properties": {"format_version": {"const": "1"}, **properties},
    }


OUTPUTS: dict[str, dict[str, Any]] = {
    "resolve": _RESOLVE,
    "batch-line": _BATCH_LINE,
    "versions": _envelope(
        ["releases"],
        {
            "releases": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": [
                        "version",
                        "fields",
                        "ir_ops",
                        "choices",
                        "hash_scheme",
                        "data_from",
                    ],
                    "properties": {"data_from": _STR_OR_NULL},
                },
            }
        },
    ),
    "versions-compare": _envelope(
        ["old", "new", "hash_scheme", "fields", "choices", "environment"],
        {"old": _STR, "new": _STR, "hash_scheme": {"type": ["object", "null"]}},
    ),
    "backends": _envelope(
        ["vllm_version", "platform", "install", "install_source", "backends"],
        {
            "platform": _PLATFORM,
            "install": {"enum": ["pip", "image", "minimal", "all"]},
            "install_source": {"enum": ["flag", "environment", "default"]},
            "backends": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["field", "value", "verdict", "reason", "quantisation_only"],
                    "properties": {
                        "verdict": {
                            "enum": ["runs", "cannot-run", "falls-back", "depends", "no-effect"]
                        }
                    },
                },
            },
        },
    ),
    "diff": _envelope(
        [
            "same_hash",
            "same_compile_cache_key",
            "summary",
            "a",
            "b",
            "hashed_differences",
            "not_hashed_differences",
            "compile_cache",
        ],
        {
            "same_hash": {"type": "boolean"},
            "same_compile_cache_key": {"type": ["boolean", "null"]},
            "summary": _STR,
            "compile_cache": {"type": "object", "required": ["same", "findings"]},
        },
    ),
    "upgrade": _envelope(
        [
            "from",
            "to",
            "platform",
            "model",
            "installs",
            "install_given",
            "summary",
            "kernels",
            "options",
            "warnings",
            "compile_cache",
            "exit_code",
        ],
        {
            "from": _UPGRADE_SIDE,
            "to": _UPGRADE_SIDE,
            "platform": _PLATFORM,
            "model": {
                "type": ["object", "null"],
                "required": ["id", "architectures", "quant_scheme"],
            },
            "installs": {"type": "array", "items": {"enum": ["pip", "image", "minimal", "all"]}},
            "install_given": {"type": "boolean"},
            "summary": _STR,
            "kernels": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["kernel", "installs", "from", "to", "changed", "why"],
                    "properties": {
                        "kernel": _STR,
                        "installs": {"type": "array", "items": _STR},
                        "from": _STR_OR_NULL,
                        "to": _STR_OR_NULL,
                        "changed": {"type": "boolean"},
                        "why": _STR_OR_NULL,
                    },
                },
            },
            "options": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["option", "change", "to", "message"],
                    "properties": {
                        "option": _STR,
                        "change": {"enum": ["gone", "renamed", "ambiguous", "deprecated"]},
                        "to": _STR_OR_NULL,
                        "message": _STR_OR_NULL,
                    },
                },
            },
            "warnings": {
                "type": "object",
                "required": ["appear", "disappear"],
                "properties": {"appear": _PROBLEMS, "disappear": _PROBLEMS},
            },
            "compile_cache": {
                "type": "object",
                "required": ["reusable", "why"],
                "properties": {"reusable": {"type": "boolean"}, "why": _STR},
            },
            "exit_code": {"enum": [0, 1, 2]},
        },
    ),
    "cache-explain": _envelope(
        ["a", "b", "same", "same_key", "compared", "not_compared", "findings"],
        {
            "same": {"type": "boolean"},
            "same_key": {"type": "boolean"},
            "findings": {
                "type": "array",
                "items": {"type": "object", "required": ["part", "what", "a", "b", "message"]},
            },
        },
    ),
    "explain": _envelope(
        ["field", "doc", "default", "hashed", "hash", "hashed_by"],
        {"field": _STR, "hash": {"enum": ["kernel_config", "attention"]}},
    ),
    "why": _envelope(
        ["field", "vllm_version", "platform", *_SELECTION["required"]],
        {
            **_SELECTION["properties"],
            "field": {
                "enum": [
                    "attention",
                    "moe_backend",
                    "linear_backend",
                    "sparse_indexer_topk_backend",
                ]
            },
            "platform": _PLATFORM,
            "checks": {
                "description": "A value named by flag: resolve's checks, in order, to the "
                "first that refuses it",
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["check", "verdict", "reason"],
                    "properties": {
                        "check": {"enum": list(CHECKS)},
                        "verdict": {"enum": ["ok", "refused", "ignored", "unknown"]},
                        "reason": _STR,
                    },
                },
            },
            "instead": _STR_OR_NULL,
            "status": {"enum": [*_SELECTION["properties"]["status"]["enum"], "ignored"]},
        },
    ),
    "lint-env": _envelope(
        ["vllm_version", "findings", "omitted"],
        {
            "findings": {
                "type": "array",
                "items": {
                    **_PROBLEM,
                    "required": [*_PROBLEM["required"], "value", "use_instead"],
                },
            },
            "omitted": {
                "type": "integer",
                "minimum": 0,
            },
        },
    ),
    "scan": _envelope(
        ["lines"],
        {
            "files": {"type": "integer", "minimum": 0},
            "exit_code": {"type": "integer", "minimum": 0},
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": [
                        "where",
                        "file",
                        "line",
                        "column",
                        "argv",
                        "env",
                        "unresolved",
                        "exit_code",
                        "problems",
                        "command",
                    ],
                    "properties": {
                        "problems": _PROBLEMS,
                        "file": _STR,
                        "line": {"type": ["integer", "null"]},
                        "column": {"type": ["integer", "null"]},
                        "argv": {"type": ["array", "null"], "items": _STR},
                        "env": {"type": ["object", "null"]},
                        "unresolved": {"type": ["array", "null"], "items": _STR},
                    },
                },
            },
        },
    ),
}
"""Each command's JSON output, by name (``versions-compare`` is ``versions OLD NEW``)."""


def output_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one command's JSON output."""
    return {
        "$schema": _DRAFT,
        "title": f"kernelcfg {name} --format json",
        **OUTPUTS[name],
    }
