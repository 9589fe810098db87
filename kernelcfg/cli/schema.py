"""``kernelcfg schema``: JSON Schemas of the config classes and of every command's output."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from kernelcfg.cli.app import app
from kernelcfg.cli.common import named_release, refuse


class SchemaOf(StrEnum):
    """What ``schema`` describes."""

    kernel_config = "kernel-config"
    config_file = "config-file"
    resolve = "resolve"
    batch_line = "batch-line"
    versions = "versions"
    versions_compare = "versions-compare"
    backends = "backends"
    diff = "diff"
    upgrade = "upgrade"
    cache_explain = "cache-explain"
    explain = "explain"
    lint_env = "lint-env"
    scan = "scan"
    why = "why"


@app.command()
def schema(
    vllm_version: Annotated[
        str | None,
        typer.Option("--vllm-version", envvar="KERNELCFG_VLLM_VERSION", help="The release."),
    ] = None,
    of: Annotated[
        SchemaOf,
        typer.Option("--of", metavar="WHAT", help="What to describe (below)."),
    ] = SchemaOf.kernel_config,
) -> None:
    """Print a JSON Schema (draft 2020-12) for editors and check-jsonschema.

    --of kernel-config (default): what --kernel-config takes. --of config-file:
    the kernel-relevant keys of a vllm serve --config YAML file. Both are
    stricter than vLLM: canonical names and true/false only. --of resolve,
    batch-line, versions, versions-compare, backends, diff, upgrade, cache-explain,
    explain, lint-env, scan, why: the shape of that command's --format json output.
    """

    import json

    if of not in (SchemaOf.kernel_config, SchemaOf.config_file):
        from kernelcfg.output.schemas import output_schema

        sys.stdout.write(json.dumps(output_schema(of.value), indent=2) + "\n")
        return

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.vllm.kernel_config import schema as schema_mod

    try:
        release = named_release(vllm_version)
    except KernelcfgError as exc:
        raise refuse(exc.message, 2) from None
    build = (
        schema_mod.kernel_config_schema
        if of is SchemaOf.kernel_config
        else schema_mod.config_file_schema
    )
    sys.stdout.write(json.dumps(build(release), indent=2) + "\n")
