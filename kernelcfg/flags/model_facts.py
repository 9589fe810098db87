"""The facts kernelcfg reads from a model's ``config.json``, each with the JSON type it
must have: the one place where the file's values are checked, so that the readers
downstream (attention, MoE, linear kernels, quantisation schemes) never meet a value of
the wrong type.

:func:`typed` answers a copy of the file's mapping in which every fact kernelcfg reads
has its type or is absent. A fact of the wrong type (``"architectures": 1.5``, an AWQ
``"bits": "four"``, ``"num_experts": "8"``) is one warning naming the file and the key,
and is then treated as not given; keys kernelcfg does not read are kept as they are.
``null`` is a value where Hugging Face reads it as ``None`` (most model facts) and a
wrong type where the reader takes a default instead (a GPTQ or AWQ ``bits``).

What is kept is bounded: the first :data:`MAX_ARCHITECTURES` architectures, names of at
most :data:`MAX_NAME` characters, and at most :data:`MAX_WARNINGS` warnings a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernelcfg.base.bounded import one_line
from kernelcfg.base.problems import Problem

__all__ = ["MAX_ARCHITECTURES", "MAX_NAME", "MAX_WARNINGS", "MODEL", "Fact", "typed"]

MAX_ARCHITECTURES = 16
"""The most architectures kept from a ``config.json`` (real models list one)."""
MAX_NAME = 200
"""The longest name kept (an architecture, a model type, a quantisation method)."""
MAX_WARNINGS = 16
"""The most warnings one ``config.json`` gives; the rest are counted in one more."""


@dataclass(frozen=True)
class Fact:
    """The JSON type one key of ``config.json`` must have."""

    kind: str
    """``int``, ``number``, ``bool``, ``str``, ``names`` (a list of strings), ``ints``
    (a list of integers), ``map`` (a mapping, its keys checked by ``keys``), ``maps``
    (a mapping of such mappings), ``map_or_list`` (a mapping, or a list of them),
    ``flag_or_str`` (true/false or a word, as compressed-tensors' ``dynamic``)."""
    null: bool = True
    """Whether ``null`` is a value (Hugging Face's ``None``) rather than a wrong type."""
    keys: Mapping[str, Fact] = field(default_factory=dict)
    """For the mapping kinds: the facts of the keys inside."""
    keep: int | None = None
    """For ``names``: the most names kept."""


_WHAT = {
    "int": "a whole number",
    "number": "a number",
    "bool": "true or false",
    "str": "a string",
    "names": "a list of names",
    "ints": "a list of whole numbers",
    "map": "a mapping",
    "maps": "a mapping of mappings",
    "map_or_list": "a mapping or a list of mappings",
    "flag_or_str": "true, false or a string",
}
"""How a warning names each kind."""


def _is_int(value: Any) -> bool:
    """A JSON integer (``true`` is not one, though Python's ``bool`` is an ``int``)."""
    return type(value) is int


def _is_number(value: Any) -> bool:
    """A JSON number (not ``true`` or ``false``)."""
    return type(value) in (int, float)


_SCALARS: dict[str, Callable[[Any], bool]] = {
    "int": _is_int,
    "number": _is_number,
    "bool": lambda value: isinstance(value, bool),
    "flag_or_str": lambda value: isinstance(value, bool | str),
    "ints": lambda value: isinstance(value, list) and all(map(_is_int, value)),
}
"""The kinds checked by one test (strings are checked and bounded apart)."""

_INT, _NUMBER, _BOOL, _STR = Fact("int"), Fact("number"), Fact("bool"), Fact("str")
"""The kinds where ``null`` is a value."""
_INT_GIVEN, _BOOL_GIVEN, _STR_GIVEN = (
    Fact("int", null=False),
    Fact("bool", null=False),
    Fact("str", null=False),
)
"""The kinds where ``null`` is a wrong type: the reader takes a default for an absent key."""

_QUARK_SPEC = {
    "dtype": _STR,
    "qscheme": _STR,
    "is_dynamic": _BOOL,
    "group_size": _INT,
    "symmetric": _BOOL,
}
"""A Quark quantisation spec (``weight``, ``input_tensors``)."""
_QUARK_LAYER = {
    "weight": Fact("map_or_list", keys=_QUARK_SPEC),
    "input_tensors": Fact("map_or_list", keys=_QUARK_SPEC),
}
"""A Quark layer config (``global_quant_config``, each ``layer_quant_config``)."""
_CT_ARGS = {
    "num_bits": _INT_GIVEN,
    "type": _STR_GIVEN,
    "symmetric": _BOOL_GIVEN,
    "dynamic": Fact("flag_or_str", null=False),
    "strategy": _STR,
    "group_size": _INT,
    "block_structure": Fact("ints"),
    "scale_dtype": _STR,
}
"""compressed-tensors' ``QuantizationArgs`` (``weights``, ``input_activations``)."""
_CT_GROUP = {
    "targets": Fact("names"),
    "weights": Fact("map", keys=_CT_ARGS),
    "input_activations": Fact("map", keys=_CT_ARGS),
    "format": _STR,
}
"""One of compressed-tensors' (or ModelOpt's) ``config_groups``."""
_ALGO = {"quant_algo": _STR}
"""A ModelOpt entry naming its algorithm."""

QUANTIZATION: dict[str, Fact] = {
    "quant_method": _STR_GIVEN,
    "quant_algo": _STR,
    "moe_quant_algo": _STR,
    "activation_scheme": _STR,
    "store_dtype": _STR,
    "weight_block_size": Fact("ints"),
    "bits": _INT_GIVEN,
    "w_bit": _INT_GIVEN,
    "group_size": _INT_GIVEN,
    "q_group_size": _INT_GIVEN,
    "sym": _BOOL_GIVEN,
    "desc_act": _BOOL_GIVEN,
    "zero_point": _BOOL_GIVEN,
    "data_type": _STR,
    "act_data_type": _STR,
    "packing_format": _STR,
    "backend": _STR,
    "vllm_backend": _STR,
    "format": _STR,
    "producer": Fact("map", keys={"name": _STR}),
    "quantization": Fact("map", keys={**_ALGO, "quantized_layers": Fact("maps", keys=_ALGO)}),
    "quantized_layers": Fact("maps", keys=_ALGO),
    "config_groups": Fact("maps", keys=_CT_GROUP),
    "global_quant_config": Fact("map", keys=_QUARK_LAYER),
    "layer_quant_config": Fact("maps", keys=_QUARK_LAYER),
    "layer_type_quant_config": Fact("maps", keys=_QUARK_LAYER),
}
"""What kernelcfg reads of a ``quantization_config`` (or ``compression_config``)."""

MODEL: dict[str, Fact] = {
    "architectures": Fact("names", keep=MAX_ARCHITECTURES),
    "model_type": _STR,
    "dtype": _STR,
    "torch_dtype": _STR,
    "expert_dtype": _STR,
    "scoring_func": _STR,
    "topk_method": _STR,
    "moe_router_dtype": _STR,
    "norm_topk_prob": _BOOL,
    "swiglu_limit": _NUMBER,
    "attn_logit_softcapping": _NUMBER,
    **dict.fromkeys(
        (
            "hidden_size",
            "num_attention_heads",
            "head_dim",
            "kv_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
            "index_topk",
            "num_experts",
            "n_routed_experts",
            "num_local_experts",
            "moe_num_experts",
            "num_experts_per_tok",
            "intermediate_size",
            "moe_intermediate_size",
            "n_group",
            "num_hash_layers",
            "interleave_moe_layer_step",
        ),
        _INT,
    ),
    "quantization_config": Fact("map", keys=QUANTIZATION),
    "compression_config": Fact("map", keys=QUANTIZATION),
}
"""What kernelcfg reads of a model's ``config.json`` (and of its ``text_config``)."""
MODEL["text_config"] = Fact("map", keys=MODEL)


def typed(data: Mapping[str, Any], where: str) -> tuple[dict[str, Any], list[Problem]]:
    """``data`` (a parsed ``config.json``) with every fact kernelcfg reads of its type or
    absent, and the warnings for what was dropped or cut; ``where`` names the file."""
    check = _Check(where)
    kept = check.mapping(data, MODEL, "")
    return kept, check.problems()


_WRONG = object()
"""A value of the wrong type: the key is dropped."""


class _Check:
    """One file's check: its warnings, bounded."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.warnings: list[Problem] = []
        self.more = 0

    def warn(self, path: str, message: str) -> None:
        """One warning naming the file and the key (``path``)."""
        if len(self.warnings) >= MAX_WARNINGS:
            self.more += 1
            return
        key = one_line(path if len(path) <= MAX_NAME else path[:MAX_NAME] + "…")
        self.warnings.append(
            Problem(
                "warning",
                "model-config-value",
                "model",
                f'{self.where}: "{key}" {message}',
            )
        )

    def problems(self) -> list[Problem]:
        """The warnings, the ones past the bound counted in one more."""
        if not self.more:
            return self.warnings
        return [
            *self.warnings,
            Problem(
                "warning",
                "model-config-value",
                "model",
                f"{self.where}: {self.more:,} more values of the wrong type or size; "
                "kernelcfg ignored them too",
            ),
        ]

    def mapping(
        self, data: Mapping[str, Any], keys: Mapping[str, Fact], path: str
    ) -> dict[str, Any]:
        """A copy of ``data`` with the facts of ``keys`` checked (the others kept)."""
        kept = dict(data)
        for key, fact in keys.items():  # in the table's order: the warnings' order
            if key not in data:
                continue
            value = self.value(data[key], fact, path + key)
            if value is _WRONG:
                del kept[key]
            else:
                kept[key] = value
        return kept

    def value(self, value: Any, fact: Fact, path: str) -> Any:
        """``value`` as kept, or :data:`_WRONG` (after its warning)."""
        if value is None:
            found = None if fact.null else _WRONG
        elif fact.kind in _SCALARS:
            found = value if _SCALARS[fact.kind](value) else _WRONG
        elif fact.kind == "str":
            found = self.name(value, path) if isinstance(value, str) else _WRONG
        else:
            found = self.nested(value, fact, path)
        if found is _WRONG:
            self.warn(path, f"is {_shown(value)}, not {_WHAT[fact.kind]}; kernelcfg ignores it")
        return found

    def nested(self, value: Any, fact: Fact, path: str) -> Any:
        """A list of names, a mapping, a list of mappings, or a mapping of mappings,
        checked inside; :data:`_WRONG` when it is none of what ``fact`` allows."""
        if fact.kind == "names":
            return self.names(value, fact, path) if isinstance(value, list) else _WRONG
        if fact.kind == "map_or_list" and isinstance(value, list):
            if not all(isinstance(item, dict) for item in value):
                return _WRONG
            return [self.mapping(item, fact.keys, f"{path}[{i}].") for i, item in enumerate(value)]
        if not isinstance(value, dict):
            return _WRONG
        if fact.kind != "maps":
            return self.mapping(value, fact.keys, path + ".")
        kept: dict[str, Any] = {}
        for name, inner in value.items():
            if isinstance(inner, dict):
                kept[name] = self.mapping(inner, fact.keys, f"{path}.{name}.")
            else:
                self.value(inner, _MAP, f"{path}.{name}")
        return kept

    def names(self, value: list[Any], fact: Fact, path: str) -> Any:
        """A list of strings, the first ``fact.keep`` kept, each name bounded."""
        kept = value if fact.keep is None else value[: fact.keep]
        if not all(isinstance(name, str) for name in kept):
            return _WRONG
        if len(kept) < len(value):
            self.warn(
                path,
                f"holds {len(value):,} names; kernelcfg keeps the first {len(kept)}",
            )
        return [self.name(name, f"{path}[{i}]") for i, name in enumerate(kept)]

    def name(self, text: str, path: str) -> str:
        """``text`` cut to :data:`MAX_NAME` characters (with a warning when cut)."""
        if len(text) <= MAX_NAME:
            return text
        self.warn(
            path,
            f"is a name of {len(text):,} characters; kernelcfg keeps the first {MAX_NAME}",
        )
        return text[:MAX_NAME]


_MAP = Fact("map", null=False)
"""A member of a mapping of mappings."""


def _shown(value: Any) -> str:
    """A value as a warning shows it: JSON, cut; a large list or mapping by its size."""
    if isinstance(value, str):
        text = json.dumps(value[:60], ensure_ascii=False)
        return one_line(text) + (f"… ({len(value):,} characters)" if len(value) > 60 else "")
    if isinstance(value, list | dict):
        items = value.values() if isinstance(value, dict) else value
        if len(value) <= 4 and all(_is_small(item) for item in (*value, *items)):
            return one_line(json.dumps(value, ensure_ascii=False))
        kind = "a list" if isinstance(value, list) else "a mapping"
        return f"{kind} of {len(value):,} values"
    return json.dumps(value)


def _is_small(value: Any) -> bool:
    """A scalar shown whole in a warning (a short string, a number, true, false, null)."""
    return not isinstance(value, list | dict) and not (isinstance(value, str) and len(value) > 20)
