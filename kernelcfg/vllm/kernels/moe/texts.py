"""The reasons and messages of the fused-MoE selection data, filled the way vLLM formats
them: ``{name}`` fields from the layer's features, the quantisation keys as vLLM prints
them, ``FusedMoEParallelConfig``'s repr.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kernelcfg.vllm.kernels.words import Where, holds

__all__ = ["Texts", "fill", "parallel_repr"]

_FIELD = re.compile(r"\{([A-Za-z0-9_:]+)(!r)?\}")


def fill(template: str, values: Mapping[str, Any]) -> str:
    """``{name}`` / ``{name!r}`` from ``values``; ``{env:VAR}`` is kept for the caller."""

    def one(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in values:
            return found.group(0)
        value = values[name]
        return repr(value) if found.group(2) else str(value)

    return _FIELD.sub(one, template)


def parallel_repr(feats: Mapping[str, Any], extra: tuple[str, ...] = ()) -> str:
    """FusedMoEParallelConfig's dataclass repr (config.py:1015; ranks as on rank 0);
    ``extra``: the release's fields after ``enable_eplb`` (``parallel_config_extra_fields``)."""
    names = ("tp_size", "pcp_size", "dp_size", "ep_size")
    sizes = ", ".join(f"{n}={feats.get(n)}" for n in names)
    tail = "".join(f", {n}={feats.get(n)!r}" for n in extra)
    return (
        f"FusedMoEParallelConfig({sizes}, tp_rank=0, pcp_rank=0, dp_rank=0, ep_rank=0, "
        f"sp_size={feats.get('sp_size')}, use_ep={feats.get('use_ep')}, "
        f"all2all_backend={feats.get('all2all_backend')!r}, "
        f"enable_eplb={feats.get('enable_eplb')}{tail})"
    )


class Texts:
    """One release's MoE texts: its key strings, activation formats and parallel-config
    fields."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        """The release's MoE selection data (``moe-X.Y.Z.json``)."""

    def key(self, name: str | None, where: Where) -> str:
        """``str()`` of a QuantKey as vLLM prints it on ``where`` (fnuz on gfx94x)."""
        if name is None:
            return "None"
        text = str(self.data["key_strings"].get(name, name))
        fnuz = self.data["fp8_fnuz"]
        if holds(fnuz["when"], where, {}):
            text = text.replace(fnuz["replace"][0], fnuz["replace"][1])
        return text

    def fill(self, template: str, feats: Mapping[str, Any], where: Where, **more: Any) -> str:
        """A reason or message template filled the way vLLM formats it."""
        values: dict[str, Any] = dict(feats)
        fmt = self._format_value(feats.get("activation_format"))
        values.update(
            device_name=where.device_name or "(unknown)",
            weight_key=self.key(feats.get("weight_key"), where),
            activation_key=self.key(feats.get("activation_key"), where),
            parallel_config=parallel_repr(
                feats, tuple(self.data.get("parallel_config_extra_fields", ()))
            ),
            routing_method_int=self.data["routing_method_ints"].get(
                str(feats.get("routing_method"))
            ),
            activation_format_value=f"({fmt!r},)",
            activation_format_name=fmt,
            torch_version="<torch>",
        )
        values.update(more)
        return fill(template, values)

    def _format_value(self, layout: Any) -> str:
        """FusedMoEActivationFormat's value for a layout's ``activation_format``: the
        release's ``activation_formats`` map, else standard / batched_experts."""
        names = self.data.get("activation_formats", {"batched": "batched_experts"})
        return str(names.get(layout, "batched_experts" if layout == "batched" else "standard"))
