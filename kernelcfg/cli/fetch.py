"""``kernelcfg fetch MODEL...``: models' config.json into the Hugging Face cache."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kernelcfg.base.bounded import one_line
from kernelcfg.cli.app import app
from kernelcfg.cli.common import write_text


@app.command(
    epilog=(
        "Examples:\n\n"
        "  kernelcfg fetch deepseek-ai/DeepSeek-R1 openai/gpt-oss-20b\n\n"
        "  kernelcfg fetch deepseek-ai/DeepSeek-R1 --revision main\n\n"
        "In CI, fill a cached folder once, then resolve with no network:\n\n"
        "  HF_HUB_CACHE=.hf kernelcfg fetch deepseek-ai/DeepSeek-R1\n\n"
        "  HF_HUB_CACHE=.hf HF_HUB_OFFLINE=1 kernelcfg scan --device h100 deploy/*.yaml\n\n"
        "Exit codes: 0 every model fetched; 2 one or more could not be (each says why on "
        "stderr)."
    ),
)
def fetch(
    models: Annotated[
        list[str],
        typer.Argument(help="Hub ids (org/name).", show_default=False),
    ],
    revision: Annotated[
        str | None,
        typer.Option(
            "--revision",
            help="The branch, tag or commit to fetch (vLLM's --revision); default main.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Put models' config.json into the local Hugging Face cache, so that later runs
    read their architectures and quantisation with no network.

    What `resolve --download` fetches, ahead of time: config.json, and beside it, when
    it holds no quantization_config, the hf_quant_config.json and
    quantization_config.json vLLM reads then; never weights (a few kilobytes a model).
    They go where huggingface_hub and vLLM keep them (HF_HUB_CACHE, else HF_HOME/hub,
    else ~/.cache/huggingface/hub); HF_TOKEN (else the stored login) opens a gated
    repository, HF_ENDPOINT names a mirror, HF_HUB_OFFLINE=1 only looks in the cache.
    Each file has 10 s to connect and 30 s in all, and is refused past 16 MiB. Prints
    the cached config.json of each model, one line each. Progress goes to stderr: a bar
    on a terminal, else (a pipe, CI) one line per file as it starts, with its deadline.
    """
    from kernelcfg.commands.fetch import fetch_all

    worst = 0
    for done in fetch_all(models, revision):
        if done.path is not None:
            write_text(one_line(done.path) + "\n")
        else:
            sys.stderr.write(f"error: {one_line(done.problem or '')}\n")
            worst = 2
    raise typer.Exit(worst)
