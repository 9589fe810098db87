"""``kernelcfg explain``: what a field means, per release, and what a value needs."""

from __future__ import annotations

from typing import Annotated

import typer

from kernelcfg.base.bounded import one_line
from kernelcfg.cli.app import app
from kernelcfg.cli.common import ListFormat, ListFormatOption, refuse, write_json, write_text


@app.command()
def explain(
    what: Annotated[
        str, typer.Argument(help="FIELD or FIELD=VALUE, e.g. moe_backend=flashinfer_trtllm.")
    ],
    fmt: ListFormatOption = ListFormat.table,
) -> None:
    """What a kernel-config field or value means, in which releases, and what it needs.

    Like `kubectl explain`: the field's meaning, its choices release by release, which
    hash it is part of and how each release computes it, and for a value its requirements (platform,
    GPU, quantisation, expert parallelism, environment), what vLLM does when they are
    not met, where in vLLM the rule lives, and an example.
    """
    import json

    from kernelcfg.base.errors import KernelcfgError
    from kernelcfg.checks import explain as explain_mod

    try:
        data = explain_mod.explain(what)
    except KernelcfgError as exc:
        raise refuse(exc.message, exc.exit_code) from None
    if fmt is ListFormat.json:
        write_json(data)
        return
    lines = [f"FIELD: {data['field']}  ({data['releases']}; flag {data['flag']})", ""]
    lines.append(f"  {data['doc']}")
    lines.append(f"  default: {json.dumps(data['default'])}")
    hashed = sorted({str(v) for v in data["hashed"].values()})
    which = "attention" if data["hash"] == "attention" else "kernel-config"
    lines.append(
        f"  part of the {which} hash: "
        + (
            hashed[0]
            if len(hashed) == 1
            else ", ".join(f"{k}: {v}" for k, v in data["hashed"].items())
        )
    )
    lines += [f"  hashed by: {how} ({span})" for how, span in _spans(data["hashed_by"])]
    if "value" in data:
        lines += ["", f"VALUE: {data['value']}  ({data['value_releases']})"]
        for key, value in data["requirements"].items():
            lines.append(f"  {key}: {json.dumps(value) if not isinstance(value, str) else value}")
        lines.append(f"  when unmet: {data['when_unmet']}")
        lines.append(f"  source: vllm/{data['source']}")
    elif "choices" in data:
        lines += ["", "CHOICES:"]
        lines += [f"  {c}  ({span})" for c, span in data["choices"].items()]
    if "example" in data:
        lines += ["", f"EXAMPLE: {data['example']}"]
    write_text("\n".join(_fit(one_line(line)) for line in lines) + "\n")


def _fit(line: str) -> str:
    """``line`` wrapped to a CI log's 80 columns, its continuation indented under it;
    the EXAMPLE command stays one line, to copy."""
    import textwrap

    if len(line) <= 80 or line.startswith("EXAMPLE: "):
        return line
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    return "\n".join(textwrap.wrap(line, 80, subsequent_indent=indent, break_on_hyphens=False))


def _spans(by_release: dict[str, str]) -> list[tuple[str, str]]:
    """Each distinct value of ``by_release`` and the releases that have it
    (``0.29.0-0.33.0``)."""
    found: dict[str, list[str]] = {}
    for release, value in by_release.items():
        found.setdefault(value, []).append(release)
    return [(value, f"{r[0]}-{r[-1]}" if len(r) > 1 else r[0]) for value, r in found.items()]
