"""JSON Schemas (draft 2020-12) of a release's kernel config and of the kernel-relevant
keys of a vLLM ``--config`` YAML file.

They are stricter than vLLM on purpose: canonical value names only
(``flashinfer_trtllm``, not ``FlashInfer-TRTLLM``), real booleans (not ``"yes"``), IR
priorities as lists of registered providers. A file they accept, vLLM accepts with the
same meaning.
"""

from __future__ import annotations

from typing import Any

from kernelcfg.vllm.releases import Release

__all__ = ["config_file_schema", "kernel_config_schema"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
STRICTER = (
    "Stricter than vLLM: canonical names only (vLLM also takes other cases and '-' for "
    "'_'), booleans only as true/false (vLLM also takes 'yes', 'off', 0, 1), IR-op "
    "priorities as lists of registered providers (vLLM also splits a comma string)."
)


def _ir_schema(release: Release) -> dict[str, Any]:
    docs = release.rules.get("docs", {}).get("ir_ops", {})
    return {
        "type": "object",
        "description": release.rules.get("docs", {}).get("IrOpPriorityConfig", ""),
        "additionalProperties": False,
        "properties": {
            op: {
                "type": "array",
                "description": docs.get(op, ""),
                "items": {"enum": sorted(release.providers(op))},
            }
            for op in release.ir_ops
        },
    }


def _field_schema(release: Release, name: str) -> dict[str, Any]:
    facts = release.field_facts[name]
    schema: dict[str, Any]
    if facts.kind == "ir_op_priority":
        schema = _ir_schema(release)
    elif facts.kind == "bool":
        schema = {"type": ["boolean", "null"] if facts.nullable else "boolean"}
    elif facts.kind == "choice_map":
        schema = {
            "type": ["object", "null"],
            "minProperties": facts.min_length or 0,
            "additionalProperties": {"enum": list(release.choices(name))},
        }
    else:
        schema = {"enum": list(release.choices(name))}
    schema["description"] = facts.doc
    if facts.kind != "ir_op_priority":
        schema["default"] = facts.default
    return schema


def kernel_config_schema(release: Release) -> dict[str, Any]:
    """The schema of ``--kernel-config`` for ``release``."""
    return {
        "$schema": DRAFT,
        "$id": f"https://kernelcfg.invalid/vllm-{release.version}/kernel-config.json",
        "title": f"vLLM {release.version} KernelConfig",
        "description": f"{release.rules.get('docs', {}).get('KernelConfig', '')} {STRICTER}",
        "type": "object",
        "additionalProperties": False,
        "properties": {f.name: _field_schema(release, f.name) for f in release.kernel_fields},
    }


def config_file_schema(release: Release) -> dict[str, Any]:
    """The schema of the kernel-relevant keys of a ``vllm serve --config`` YAML file.

    Other keys are allowed (the file configures all of vLLM); the kernel ones are
    checked. Keys are the dashed option names, as vLLM's documentation writes them.
    """
    kernel = kernel_config_schema(release)
    fields = release.field_facts
    props: dict[str, Any] = {
        "kernel-config": {k: v for k, v in kernel.items() if not k.startswith("$")},
        "ir-op-priority": _ir_schema(release),
        "enforce-eager": {"type": "boolean"},
        "enable-lora": {"type": "boolean"},
        "enable-expert-parallel": {"type": "boolean"},
        "enable-fault-tolerance": {"type": "boolean"},
        "tensor-parallel-size": {"type": "integer", "minimum": 1},
        "data-parallel-size": {"type": "integer", "minimum": 1},
        "optimization-level": {"enum": [0, 1, 2, 3]},
        "all2all-backend": {
            "enum": [
                c
                for c in release.choices("all2all_backend")
                if c != release.constant("PASSTHROUGH_ALL2ALL_BACKEND")
            ]
        },
        "compilation-config": {
            "type": "object",
            "properties": {
                "mode": {
                    "enum": [
                        0,
                        1,
                        2,
                        3,
                        "NONE",
                        "STOCK_TORCH_COMPILE",
                        "DYNAMO_TRACE_ONCE",
                        "VLLM_COMPILE",
                    ]
                },
                "cudagraph_mode": {
                    "enum": ["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]
                },
                "backend": {"type": "string"},
            },
        },
        "hf-config-path": {"type": "string"},
        "quantization": {"type": "string"},
    }
    for name in ("moe_backend", "linear_backend", "sparse_indexer_topk_backend"):
        if name in fields:
            props[name.replace("_", "-")] = {"enum": list(release.choices(name))}
    if "enable_flashinfer_autotune" in fields:
        props["enable-flashinfer-autotune"] = {"const": True}
    if "monokernel" in fields:
        props["monokernel"] = {"const": True}
    return {
        "$schema": DRAFT,
        "$id": f"https://kernelcfg.invalid/vllm-{release.version}/config-file.json",
        "title": f"vLLM {release.version} serve --config (kernel-relevant keys)",
        "description": (
            "Kernel-relevant keys of a vLLM --config YAML file. 'false' for a flag is "
            "dropped by vllm serve, so boolean flags accept only true. " + STRICTER
        ),
        "type": "object",
        "properties": props,
    }
