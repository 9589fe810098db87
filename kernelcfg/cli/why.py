"""``kernelcfg why FIELD``: the walk vLLM makes for a field left to its choice, in words."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kernelcfg.base.bounded import one_line
from kernelcfg.cli.app import app
from kernelcfg.cli.common import (
    VLLM_FLAGS_PASS_THROUGH,
    ListFormat,
    ListFormatOption,
    note_fallback,
    print_problems,
    refuse,
    write_json,
    write_text,
)

FIELDS = {
    "attention": "attention",
    "attention_backend": "attention",
    "moe_backend": "moe_backend",
    "moe": "moe_backend",
    "linear_backend": "linear_backend",
    "linear": "linear_backend",
    "sparse_indexer_topk_backend": "sparse_indexer_topk_backend",
    "topk": "sparse_indexer_topk_backend",
}
"""The names ``why`` takes, to the key of the resolve's ``selection``."""

_NEEDS = {
    "attention": "the model (a local folder, --hf-config-path, a hub id with --download, or "
    "--architecture) or an attention flag",
    "moe_backend": "an MoE model's config.json (a local folder, --hf-config-path, or a hub id "
    "with --download) and --moe-backend left on auto (or a value for it)",
    "linear_backend": "the model's quantisation (--quant-scheme, --quantization, or its "
    "config.json) and --linear-backend left on auto (or a value for it)",
    "sparse_indexer_topk_backend": "a model with a sparse indexer (index_topk in its "
    "config.json) and --sparse-indexer-topk-backend left on auto (or a value for "
    "it)",
}

_VERDICTS = {
    "attention": ("attention-needs-install", "attention-no-backend", "attention-backend-refused"),
    "moe_backend": ("moe-no-kernel",),
    "linear_backend": ("linear-no-kernel",),
}
"""The codes of the problem that carries a field's verdict under the install rule (an
error, or a warning naming the installs that refuse), per ``selection`` key."""


@app.command(
    context_settings=VLLM_FLAGS_PASS_THROUGH,
    epilog=(
        "Examples:\n\n"
        "  kernelcfg why attention --device rtx-pro-6000 --hf-config-path ./gpt-oss-20b\n\n"
        "  kernelcfg why moe_backend --device h100 --hf-config-path ./DeepSeek-R1 -tp 8\n\n"
        "  kernelcfg why linear_backend --device h100 --quant-scheme fp8_block\n\n"
        "  kernelcfg why topk --device b200 --hf-config-path ./DeepSeek-V3.2 -tp 8\n\n"
        "  kernelcfg why moe --device h100 --hf-config-path ./DeepSeek-R1 --moe-backend deep_gemm"
    ),
)
def why(
    field: Annotated[
        str,
        typer.Argument(
            help="attention, moe_backend (or moe), linear_backend (or linear) or "
            "sparse_indexer_topk_backend (or topk).",
            show_default=False,
        ),
    ],
    flags: Annotated[
        list[str] | None,
        typer.Argument(help="vLLM's flags and the target, as for resolve.", show_default=False),
    ] = None,
    fmt: ListFormatOption = ListFormat.table,
) -> None:
    """Why vLLM takes the backend it takes: every candidate, in vLLM's order, and why
    each one before the pick was passed over.

    The same walk as resolve's `selection` (JSON) and `--explain-sources` (table), for
    one field, in plain words; other installs (--install) are named where they pick
    differently. Exit 1 when vLLM finds nothing (it would raise while loading the model)
    under the install named (--install), or, with none named, under every install; where
    only some installs refuse, a warning names them and those that run (exit 0).

    A value named by flag (--moe-backend, --linear-backend,
    --sparse-indexer-topk-backend, or in --kernel-config) is walked through the checks
    resolve makes of it, in order (the flag, vLLM's start-up rules, the target, the
    install, the model), one line each, to the first that refuses it, and what runs
    instead; exit 1 where one refuses it, as resolve.
    """
    from kernelcfg.commands import pipeline
    from kernelcfg.flags import model_config

    key = FIELDS.get(field.strip().lstrip("-").replace("-", "_"))
    if key is None:
        raise refuse(f"why: unknown field {field!r}; fields: {', '.join(FIELDS)}", 2)
    result = pipeline.resolve_args(list(flags or []))
    if isinstance(result, pipeline.Failure):
        raise refuse(result.problem.message, result.problem.exit_code)
    note_fallback(result)
    print_problems(  # what was wrong with the model's files, as resolve says it
        [p.as_dict() for p in result.problems if p.code in model_config.CODES], quiet=False
    )
    picked = result.selection.get(key)
    named = _named_value(result, key) if picked is None else None
    if named is not None:
        from kernelcfg.engine.explicit import explicit_walk

        picked = explicit_walk(result, key, named)
    if picked is None:
        raise refuse(f"why {key}: nothing to walk; give {_NEEDS[key]}", 2)
    said: list[str] = []
    if named is not None:
        code = 1 if picked["status"] == "error" else 0
    else:
        code, said = _verdict(key, picked, result)
    if fmt is ListFormat.json:
        write_json(
            {
                "field": key,
                "vllm_version": result.release.version,
                "platform": result.target.as_dict(),
                **picked,
            }
        )
        raise typer.Exit(code)
    walk = _checked if named is not None else _words
    lines = [*walk(key, picked, result), *said]
    write_text("\n".join(one_line(line) for line in lines) + "\n")
    raise typer.Exit(code)


def _named_value(result: Any, key: str) -> str | None:
    """The value of a backend field named by flag or --kernel-config (``None`` on
    ``auto``; attention's explicit value is walked by its selector)."""
    if key == "attention" or result.inputs is None:
        return None
    config = result.kernel_config or {}
    inputs = result.inputs
    value = config.get(key) or getattr(inputs, key, "auto")
    if value in (None, "auto"):
        value = inputs.kernel_config.get(key)
    return None if value in (None, "auto") else str(value)


def _checked(key: str, picked: dict[str, Any], result: Any) -> list[str]:
    """A value named by flag, as lines: each check resolve makes, in order, to the first
    that refuses it, then the verdict (and what runs instead)."""
    flag = f"--{key.replace('_', '-')}"
    lines = [
        f"{key} on {result.target.device} (vLLM {result.release.version}, --install "
        f"{picked['install']}): {flag} {picked['requested']}, named",
        "resolve checks, in order:",
    ]
    verdicts = {
        "ok": "passes",
        "refused": "refuses it",
        "ignored": "vLLM ignores it",
        "unknown": "cannot tell here",
    }
    for place, check in enumerate(picked["checks"], 1):
        lines.append(
            f"  {place}. {check['check']} — {verdicts[check['verdict']]}: {check['reason']}"
        )
    if picked["status"] == "error":
        lines.append(f"vLLM refuses {flag} {picked['requested']}")
    elif picked["status"] == "ignored":
        lines.append(f"vLLM ignores {flag} {picked['requested']} and chooses automatically")
    elif picked["status"] == "depends":
        lines.append(f"vLLM may take {flag} {picked['requested']}: a check cannot tell here")
    else:
        lines.append(f"vLLM takes {flag} {picked['requested']}")
    if picked.get("instead"):
        lines.append(picked["instead"][0].upper() + picked["instead"][1:])
    return lines


def _verdict(key: str, picked: dict[str, Any], result: Any) -> tuple[int, list[str]]:
    """Where vLLM finds nothing: the exit code by the install rule (1 when its problem is
    an error: the install was named, or every install refuses; 0 when a warning) and a
    line naming the installs that refuse and those that run. An MoE ``no_kernel`` counts
    where the engine found that loading then fails (its problem says so)."""
    codes = _VERDICTS.get(key, ())
    found = [p for p in result.problems if p.code in codes]
    if picked["status"] != "error" and not (picked["status"] == "no_kernel" and found):
        return 0, []
    severity = "warning" if found and all(p.severity != "error" for p in found) else "error"
    outcomes = picked.get("by_install") or {}
    failed = {"error", "no_kernel"}
    works = [i for i, said in outcomes.items() if not failed & set(said.split("/"))]
    refusing = [i for i in outcomes if i not in works]
    line = (
        f"{severity}: vLLM raises with --install {' or '.join(refusing)}; with --install "
        f"{' or '.join(works)} it runs"
        if works
        else f"{severity}: vLLM raises under every install"
    )
    return (1 if severity == "error" else 0), [line]


def _words(key: str, picked: dict[str, Any], result: Any) -> list[str]:
    """The walk as lines of plain words."""
    took = picked["backend"] or picked["kernel"] or picked["status"]
    kernel = f" ({picked['kernel']})" if picked["kernel"] and picked["kernel"] != took else ""
    lines = [
        f"{key} on {result.target.device} (vLLM {result.release.version}, --install "
        f"{picked['install']}): {took}{kernel}"
    ]
    if picked.get("checkpoint"):
        lines.append(f"The checkpoint: {picked['checkpoint']}")
    lines += [f"vLLM moves {m['backend']}: {m['reason']}" for m in picked.get("moved", ())]
    dropped: dict[str, list[str]] = {}
    for d in picked.get("dropped", ()):
        dropped.setdefault(d["reason"], []).append(d["backend"])
    lines += [
        f"vLLM drops {', '.join(names)} before trying: {reason}"
        for reason, names in dropped.items()
    ]
    tried = [c for c in picked["candidates"] if c["verdict"] != "not_tried"]
    if tried:
        lines.append("vLLM tries, in order:")
    for place, (candidate, kernels) in enumerate(_grouped(tried), 1):
        verdict = {"ok": "taken", "refused": "passed over", "unknown": "depends"}.get(
            candidate["verdict"], candidate["verdict"]
        )
        reason = f": {candidate['reason']}" if candidate["reason"] else ""
        shown = "/".join(kernels) if key == "moe_backend" else None
        named = f" {shown}" if shown and shown != candidate["backend"] else ""
        lines.append(f"  {place}. {candidate['backend']}{named} — {verdict}{reason}")
    lines += _unreached([c for c in picked["candidates"] if c not in tried])
    if picked.get("message"):
        lines.append(picked["message"])
    for rows, backend in (picked.get("by_rows") or {}).items():
        lines.append(f"  {rows} decode rows: {backend}")
    others = {k: v for k, v in (picked.get("by_install") or {}).items() if k != picked["install"]}
    if others:
        lines.append("Other installs: " + "; ".join(f"{k} → {v}" for k, v in others.items()))
    flag = {"attention": "--attention-backend"}.get(key, f"--{key.replace('_', '-')}")
    if picked.get("value"):
        lines.append(f"To ask for it by name: {flag} {picked['value']}")
    elif picked["status"] == "selected" and picked["backend"]:
        lines.append(f"No {flag} value forces it: vLLM takes it only on auto")
    return lines


def _grouped(tried: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[str]]]:
    """The trials with the classes of one backend that vLLM refuses for the same reason
    in a row made one, so that a reason is said once."""
    out: list[tuple[dict[str, Any], list[str]]] = []
    for candidate in tried:
        same = ("backend", "verdict", "reason")
        last = out[-1][0] if out else None
        if last is not None and all(last[k] == candidate[k] for k in same):
            out[-1][1].append(candidate.get("kernel") or "")
        else:
            out.append((candidate, [candidate.get("kernel") or ""]))
    return out


def _unreached(later: list[dict[str, Any]]) -> list[str]:
    """The candidates vLLM never reached; with each one's answer when asked for by name."""
    if not later:
        return []
    if not any("if_asked" in c for c in later):
        return ["Never reached: " + ", ".join(dict.fromkeys(c["backend"] for c in later))]
    lines = ["Never reached (asked for by name, would it run here?):"]
    for candidate in later:
        said = "yes" if candidate.get("if_asked") == "ok" else f"no, {candidate['if_asked_reason']}"
        installs = candidate.get("if_asked_installs")
        if installs:
            said += f" (yes with --install {' or '.join(installs)})"
        lines.append(f"  {candidate['backend']} ({candidate['kernel']}): {said}")
    return lines
