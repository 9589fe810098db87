"""A resolution as tables for people (rich renderables): ``resolve --format table`` and
the ``--batch`` summary.

Every value a user could have written (flags, environment, a model's ``config.json``,
file names, batch ids) reaches rich through :func:`plain`: as plain text, never markup,
on one line with control characters escaped, and cut to a bound.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from kernelcfg.base.bounded import cut, one_line
from kernelcfg.base.problems import RUNS_INSTEAD
from kernelcfg.commands.pipeline import Failure
from kernelcfg.engine.resolution import Resolution
from kernelcfg.output.render import all_sources, as_data
from kernelcfg.vllm.kernel_config import hashing

__all__ = [
    "CELL",
    "Fitted",
    "fold",
    "plain",
    "summary_row",
    "summary_table",
    "table",
    "unsplit_width",
]

CELL = 1000
"""The most characters of one user-derived value a table shows (then a count)."""

_SOURCE_WORDS = {
    "flag": "--vllm-version",
    "environment": "KERNELCFG_VLLM_VERSION",
    "installed": "installed here",
    "newest": "newest known",
}


def plain(value: object, limit: int = CELL, style: str = "") -> Any:
    """``value`` as rich text that shows what it says: no markup, one line (control
    characters escaped), at most ``limit`` characters and then how many there were."""
    from rich.text import Text

    text = value if isinstance(value, str) else str(value)
    return Text(one_line(cut(text, limit)), style=style)


def fold(table: Any, *, names: int = 0) -> Any:
    """``table`` with every column wrapping long values instead of cutting them, so
    that an 80-column terminal (a CI log) still shows every value whole; its first
    ``names`` columns (field names, settings, ops) are never split inside a name."""
    for place, column in enumerate(table.columns):
        column.overflow = "fold"
        column.no_wrap = place < names
    return table


def _model_line(model: dict[str, Any]) -> str:
    """The model as one line of the table."""
    said = [f"model {model['id']}" if model["id"] else "model"]
    if model["architectures"]:
        said.append(", ".join(model["architectures"]))
    if model["quantization"] or model["quant_scheme"]:
        said.append(" / ".join(str(q) for q in (model["quantization"], model["quant_scheme"]) if q))
    line = "; ".join(said)
    return line + (f"  (from {model['source']})" if model["source"] else "")


def table(result: Resolution | Failure, *, strict: bool = False, walk: bool = False) -> Any:
    """A rich renderable for people: fields with their sources, dispatch, hash, problems;
    with ``walk``, the attention selector's candidates in order."""
    from rich.console import Group

    data = as_data(result, strict=strict)
    parts: list[Any] = [_headline(data)]
    model = data.get("model")
    if model:
        parts.append(plain(_model_line(model)))
    if isinstance(result, Resolution) and result.kernel_config is not None:
        parts += _config_tables(result, result.kernel_config)
    if data["hash"]:
        parts.append(_HashLine("kernel-config hash ", data["hash"]))
    parts += _selection_lines(data, walk=walk)
    parts += _compile_cache_lines(data.get("compile_cache"))
    notes = [  # what runs instead after a refusal in vLLM's words: on stderr, after it
        p for p in data["problems"] if p["severity"] == "info" and p["code"] != RUNS_INSTEAD
    ]
    for problem in notes:
        parts.append(plain(f"note: {problem['message']}", style="dim"))
    return Group(*parts)


def _unwrapped(label: str, value: str) -> Any:
    """``label value`` on one line whatever the width: a pick is one line for ``grep``."""
    from rich.text import Text

    line = Text.assemble((label, "bold"), plain(value))
    line.no_wrap = True
    line.overflow = "ignore"
    return line


class _HashLine:
    """A label and its hash: one line when the width allows; else (80 columns, a CI
    log) the label on its line and the hash under it, indented, whole, so that it is
    copied whole and no line is wider than the terminal."""

    def __init__(self, label: str, value: str) -> None:
        self.label = label
        """The label, bold, with its trailing blank."""
        self.value = value
        """The value: a hash, a pick."""

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        if len(self.label) + len(self.value) <= options.max_width:
            yield _unwrapped(self.label, self.value)
            return
        yield Text(self.label.rstrip(), style="bold")
        yield Text.assemble("  ", plain(self.value))

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        whole = len(self.label) + len(self.value)
        return Measurement(min(whole, options.max_width), whole)


def _install_words(picked: dict[str, Any]) -> str:
    """The install a selection judged: ``--install pip``, ``(default)`` when not named."""
    default = picked.get("install_source") == "default"
    return f"--install {picked['install']}" + (" (default)" if default else "")


def _selection_lines(data: dict[str, Any], *, walk: bool) -> list[Any]:
    """The attention pick (and, with ``walk``, every candidate), the linear-kernel pick,
    the sparse-indexer top-k pick per decode rows, and the attention hash."""
    from rich.text import Text

    lines: list[Any] = []
    picked = (data.get("selection") or {}).get("attention")
    if picked:
        said = picked["backend"] or picked["status"]
        detail = ", ".join(
            str(p) for p in (picked["requested"], picked["kernel"], _install_words(picked)) if p
        )
        lines.append(_unwrapped("attention ", f"{said}  ({detail})"))
        if picked.get("message") and picked["status"] != "selected":
            lines.append(plain(f"  {picked['message']}"))
        for place, candidate in enumerate(picked["candidates"] if walk else (), 1):
            reason = f": {candidate['reason']}" if candidate["reason"] else ""
            lines.append(plain(f"  {place}. {candidate['backend']} {candidate['verdict']}{reason}"))
        for install, outcome in (picked.get("by_install") or {}).items():
            lines.append(plain(f"  with --install {install}: {outcome}", style="dim"))
        if picked.get("run_time"):
            lines.append(plain(f"  at run time: {picked['run_time']}", style="dim"))
    kernel = (data.get("selection") or {}).get("linear_backend")
    if kernel:
        said = kernel["kernel"] or kernel["status"]
        said += f" (running {kernel['runs']})" if kernel.get("runs") else ""
        value = f" (--linear-backend {kernel['value']})" if kernel["value"] else ""
        label = ", ".join(kernel["layers"]) if kernel.get("experts_only") else kernel["scheme"]
        lines.append(_unwrapped("linear layers ", f"{label}: {said}{value}"))
        if kernel.get("experts_only"):
            lines.append(plain(f"  {kernel['experts_only']}", style="dim"))
        if kernel["status"] == "depends":
            lines += [plain(f"  {kind}: {found}") for kind, found in kernel["layers"].items()]
        for install, outcome in (kernel.get("by_install") or {}).items():
            lines.append(plain(f"  with --install {install}: {outcome}", style="dim"))
    lines += _moe_lines((data.get("selection") or {}).get("moe_backend"), walk=walk)
    topk = (data.get("selection") or {}).get("sparse_indexer_topk_backend")
    if topk:
        bands = ", ".join(f"{b} ({rows} rows)" for rows, b in topk["by_rows"].items())
        lines.append(
            Text.assemble(
                ("sparse indexer top-k ", "bold"), plain(f"{bands}; index_topk {topk['topk']}")
            )
        )
    if data.get("attention_hash"):
        lines.append(_HashLine("attention hash ", data["attention_hash"]))
    return lines


def _compile_cache_lines(found: dict[str, Any] | None) -> list[Any]:
    """The compile-cache key (or the parts it waits for), the directory, and what
    separates the launch from the cache given."""

    if not found:
        return []
    if found["key"]:
        reuse = {True: "reuses the cache given", False: "does not reuse the cache given"}
        said = f"{found['key']}  ({reuse.get(found['reuses'], 'unknown')})"
    else:
        said = "unknown"
    lines: list[Any] = [_unwrapped("compile-cache key ", said)]
    if not found["key"]:
        lines += [plain(f"  unknown {why}") for why in found["unknown"]]
    lines.append(plain(f"  env hash {found['env_hash']}, config hash {found['config_hash']}"))
    jit = (found.get("directory") or {}).get("jit")
    if jit:
        lines.append(plain(f"  directory {jit}"))
    lines += [plain(f"  differs: {f['message']}") for f in found["differences"]]
    return lines


def _moe_lines(picked: dict[str, Any] | None, *, walk: bool) -> list[Any]:
    """The MoE pick (and, with ``walk``, vLLM's reorders and every candidate it tried)."""

    if not picked:
        return []
    said = picked["backend"] or picked["status"]
    inside = f", running {picked['runs']}" if picked.get("runs") else ""
    kernel = f" ({picked['kernel']}{inside})" if picked["kernel"] else ""
    value = f" (--moe-backend {picked['value']})" if picked["value"] else ""
    what = picked.get("variant") or picked.get("checkpoint") or ""
    lines: list[Any] = [_unwrapped("MoE layers ", f"{what}: {said}{kernel}{value}".lstrip(": "))]
    if picked.get("message") and picked["status"] != "selected":
        lines.append(plain(f"  {picked['message']}"))
    if walk:
        for moved in picked.get("moved", ()):
            lines.append(plain(f"  {moved['backend']} moved: {moved['reason']}", style="dim"))
        tried = [c for c in picked["candidates"] if c["verdict"] != "not_tried"]
        for place, candidate in enumerate(tried, 1):
            reason = f": {candidate['reason']}" if candidate["reason"] else ""
            lines.append(
                plain(
                    f"  {place}. {candidate['backend']} {candidate['kernel'] or ''} "
                    f"{candidate['verdict']}{reason}"
                )
            )
    for install, outcome in (picked.get("by_install") or {}).items():
        lines.append(plain(f"  with --install {install}: {outcome}", style="dim"))
    for host, outcome in (picked.get("by_host") or {}).items():
        lines.append(plain(f"  on another host ({host}): {outcome}", style="dim"))
    return lines


def _headline(data: dict[str, Any]) -> Any:
    """``vLLM 0.34.0 (…) on NVIDIA B200 (cuda 10.0; from preset)  valid``."""
    from rich.text import Text

    platform = data.get("platform") or {}
    head = Text()
    head.append(plain(f"vLLM {data['vllm_version'] or '?'}", style="bold"))
    if data.get("vllm_version_source"):
        head.append(f" ({_SOURCE_WORDS[data['vllm_version_source']]})")
    if platform:
        extra = platform.get("capability") or platform.get("gfx_arch") or _host(platform)
        head.append(
            plain(
                f" on {platform['device']} ({platform['kind']}{' ' + extra if extra else ''}; "
                f"from {platform['source']})"
            )
        )
    verdict = Text(
        "valid" if data["valid"] else "NOT VALID",
        style="green" if data["valid"] else "red bold",
    )
    return _Headline(head, verdict)


def _host(platform: dict[str, Any]) -> str:
    """A CPU target's host features, as ``--cpu-features`` takes them (``x86_64 amx
    avx512``), or that they are not known."""
    if platform.get("kind") != "cpu":
        return ""
    host = platform.get("cpu")
    if not host:
        return "features not known"
    return " ".join([host["arch"], *host["features"], *(["macos"] if host["macos"] else [])])


class _Headline:
    """The headline and its verdict: one line when the width allows; else the
    description wraps and the verdict stays whole on a line of its own, never
    ``NOT`` / ``VALID`` apart."""

    def __init__(self, head: Any, verdict: Any) -> None:
        self.head = head
        """What was resolved, for which target."""
        self.verdict = verdict
        """``valid`` or ``NOT VALID``."""

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        if len(self.head) + 2 + len(self.verdict) <= options.max_width:
            yield Text.assemble(self.head, "  ", self.verdict)
            return
        yield self.head
        yield self.verdict


class Fitted:
    """A table shown whole where it fits the terminal, else its narrow form, each built
    only when shown: the kernel-config table puts each field's source under its value
    when the four columns would split a value or a word of its source (an 80-column CI
    log with ``flashinfer_trtllm`` beside ``enable_rocm_segmented_attn_autotune``)."""

    def __init__(self, build: Callable[[bool], Any], need: int) -> None:
        self.build = build
        """The table, narrow (``True``) or wide."""
        self.need = need
        """The columns the wide form takes with no value and no word split."""

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield self.build(self.need > options.max_width)


def _kernel_rows(result: Resolution, config: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Each kernel-config field (each IR op apart): name, value, source, hashed."""
    sources = all_sources(result)
    ignored = hashing.ignored_factors(result.release, config)
    ir_hashed = "sub-hash" if result.release.hash_scheme == "compute_hash" else "yes"
    rows = []
    for name, value in config.items():
        if name == "ir_op_priority":
            for op, lst in value.items():
                key = f"ir_op_priority.{op}"
                rows.append((key, ",".join(lst or []), sources[key], ir_hashed))
            continue
        hashed = "no" if name in ignored else "yes"
        rows.append((name, json.dumps(value), sources[name], hashed))
    return rows


def unsplit_width(
    rows: Sequence[Sequence[str]], heads: Sequence[str], wrapped: Sequence[int] = ()
) -> int:
    """The width a table of ``rows`` takes with no cell split but at the spaces of its
    ``wrapped`` columns (a source, "platform default"; a reason): the widest cell of each
    other column, the longest word of each wrapped one, one space either side of each
    cell, and the rules between and around them."""
    columns = list(zip(heads, *rows, strict=True))
    widths = [
        max(len(word) for cell in column for word in cell.split())
        if place in wrapped
        else max(len(cell) for cell in column)
        for place, column in enumerate(columns)
    ]
    return sum(widths) + 3 * len(widths) + 1


def _kernel_table(rows: list[tuple[str, str, str, str]], *, narrow: bool) -> Any:
    """The kernel-config table: four columns, or (``narrow``) the source in dim under
    each value."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="kernel config", title_justify="left", expand=False)
    table.add_column("field", no_wrap=True)
    table.add_column("value (from)" if narrow else "value", no_wrap=not narrow)
    if not narrow:
        table.add_column("from", style="dim")
    table.add_column("hashed", justify="center")
    fold(table, names=1 if narrow else 2)
    for name, value, source, hashed in rows:
        if narrow:
            cell = Text.assemble(plain(value), "\n", plain(source, style="dim"))
            table.add_row(plain(name), cell, hashed)
        else:
            table.add_row(plain(name), plain(value), plain(source), hashed)
    return table


def _config_tables(result: Resolution, config: dict[str, Any]) -> list[Any]:
    """The kernel config, the engine settings and the IR dispatch, one table each."""
    from rich.table import Table

    sources = all_sources(result)
    rows = _kernel_rows(result, config)
    need = unsplit_width(rows, ("field", "value", "from", "hashed"), wrapped=(2,))
    fields = Fitted(lambda narrow: _kernel_table(rows, narrow=narrow), need)
    other = Table(title="engine", title_justify="left")
    other.add_column("setting")
    other.add_column("value")
    other.add_column("from", style="dim")
    fold(other, names=1)
    for key, value in result.compilation.items():
        other.add_row(
            plain(f"compilation.{key}"), plain(value), plain(sources[f"compilation.{key}"])
        )
    for key, value in result.parallel.items():
        other.add_row(plain(key), plain(value), plain(sources[key]))
    tables = [fields, other]
    if result.ir_dispatch:
        dispatch = Table(title="IR dispatch on this target", title_justify="left")
        dispatch.add_column("op")
        dispatch.add_column("providers tried, in order")
        fold(dispatch, names=1)
        for op, chain in result.ir_dispatch.items():
            dispatch.add_row(plain(op), plain(" → ".join(chain)))
        tables.append(dispatch)
    return tables


def summary_row(
    result: Resolution | Failure, line_id: Any, code: int, *, strict: bool = False
) -> dict[str, Any]:
    """One ``--batch --format table`` row: id, target, verdict, hash prefix, first problem
    (the user's text already cut to what the table shows, so that rows stay small)."""
    data = as_data(result, strict=strict)
    platform = data.get("platform") or {}
    first = next(
        (p for p in data["problems"] if p["severity"] != "info"),
        None,
    )
    return {
        "id": cut(str(line_id), ID_CELL),
        "target": cut(f"{platform.get('device') or '?'}, vLLM {data['vllm_version'] or '?'}", CELL),
        "exit_code": code,
        "hash": (data["hash"] or "")[:12],
        "problem": cut(f"{first['severity']}: {first['message']}", CELL) if first else "",
    }


ID_CELL = 300
"""The most characters of a batch line's id the summary shows."""
SUMMARY_ROWS = 1000
"""The most rows the ``--batch`` summary table shows; the counts cover every line."""


def summary_table(rows: list[dict[str, Any]], counts: dict[int, int]) -> Any:
    """A rich table of ``--batch`` results, one row per line (the first
    :data:`SUMMARY_ROWS`), and the counts per exit code of every line."""
    from rich.console import Group
    from rich.table import Table

    table = fold(Table("id", "target", "exit", "hash", "first problem", title="kernelcfg --batch"))
    for row in rows[:SUMMARY_ROWS]:
        table.add_row(
            plain(row["id"]),
            plain(row["target"]),
            str(row["exit_code"]),
            row["hash"],
            plain(row["problem"]),
        )
    total = sum(counts.values())
    tally = ", ".join(f"{n:,} exit {code}" for code, n in sorted(counts.items()))
    shown = f" (the first {len(table.rows):,} shown)" if total > len(table.rows) else ""
    return Group(table, plain(f"{total:,} lines: {tally}{shown}" if total else "no lines"))
