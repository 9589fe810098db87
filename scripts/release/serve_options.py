"""Write kernelcfg's ``vllm serve`` option data for one release from a parser dump.

``scripts/release/serve_parser/dump.py``, run inside a throwaway virtual environment that has
that vLLM release installed (``scripts/release/serve_parser/venv.sh``), writes every detail of
the parser ``vllm serve`` builds. This script keeps what kernelcfg's parser needs and
writes ``kernelcfg/vllm/releases/serve-X.Y.Z.json``:

- ``options``: per action, in the parser's order (the order sets argparse's ambiguity
  lists): every option string, the strings argparse names in messages, ``dest``, the
  action kind, ``nargs``, ``const``, the type (a code of :data:`TYPES`), ``choices``,
  whether the dotted syntax gives it a JSON object (``json``), the field names of a
  config dataclass that refuses unknown keys (``fields``, nested), and a deprecation
  note.
- ``positional``: MODEL (``model_tag``).

Usage: ``python scripts/release/serve_options.py DUMP.json [--check]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "kernelcfg" / "vllm" / "releases"

ACTIONS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_CountAction": "count",
    "_HelpAction": "help",
    "BooleanOptionalAction": "boolean",
    "EnableDisableAction": "boolean",
    "LoRAParserAction": "lora",
    "DeprecatedLogConfigFileAction": "store",
}
"""vLLM's action classes, by the kind kernelcfg's parser rebuilds."""

_SIMPLE_TYPES = {
    None: None,
    "int": "int",
    "float": "float",
    "str": "str",
    "json.loads": "json",
    "vllm.utils.argparse_utils.human_readable_int": "human_readable_int",
    "vllm.utils.argparse_utils.human_readable_int_or_auto": "human_readable_int_or_auto",
    "vllm.engine.arg_utils.union_dict_and_str": "union_dict_and_str",
    "vllm.engine.arg_utils.parse_reasoning_parser": "reasoning_parser",
    "lambda s: s.lower().replace('-', '_')": "lower_dash",
}
_OPTIONAL = re.compile(r"^vllm\.engine\.arg_utils\.optional_type\((.*)\)$")
_PARSE = re.compile(r"^vllm\.engine\.arg_utils\.parse_type\((.*)\)$")
_DATACLASS = re.compile(r"^vllm\.engine\.arg_utils\.<locals>\.parse_dataclass\(cls=([\w.]+)\)$")


def type_code(described: str | None) -> str | None:
    """vLLM's ``type=`` callable as a code: ``int``, ``optional:json``,
    ``dataclass:KernelConfig``, ``parse:json`` …"""
    if described in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[described]
    assert described is not None
    if described.startswith("lambda s: [int(device_id)"):
        return "device_ids"
    for pattern, prefix in ((_OPTIONAL, "optional:"), (_PARSE, "parse:")):
        match = pattern.match(described)
        if match:
            inner = type_code(match.group(1))
            return prefix + str(inner)
    match = _DATACLASS.match(described)
    if match:
        return "dataclass:" + match.group(1).rsplit(".", 1)[-1]
    raise ValueError(f"a type kernelcfg does not model: {described}")


def _option(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dest": raw["dest"],
        "strings": raw["option_strings"],
        "action": ACTIONS[raw["action"]],
    }
    if raw["visible_option_strings"] != raw["option_strings"]:
        out["names"] = raw["visible_option_strings"]
    if raw["nargs"] is not None and out["action"] in ("store", "append", "lora"):
        out["nargs"] = raw["nargs"]
    if raw["const"] is not None and out["action"] in ("store", "store_const", "append"):
        out["const"] = raw["const"]
    code = type_code(raw["type"])
    if code is not None:
        out["type"] = code
    if raw["choices"] is not None:
        out["choices"] = raw["choices"]
    if raw.get("negative_option_strings"):
        out["negative"] = raw["negative_option_strings"]
    if raw["takes_json"]:
        out["json"] = True
    if raw.get("dataclass_fields") is not None:
        out["fields"] = raw["dataclass_fields"]
    if raw.get("deprecated_in_help"):
        out["deprecated"] = raw.get("deprecation_note") or raw["help"]
    return out


def compact(dump: dict[str, Any]) -> dict[str, Any]:
    """The release's serve option data, from a full parser dump."""
    positional = dump["positionals"][0]
    return {
        "format": 1,
        "vllm_version": dump["vllm_version"],
        "python": dump["python_version"],
        "prog": dump["parser"]["prog"],
        "positional": {"dest": positional["dest"], "nargs": positional["nargs"]},
        "options": [_option(o) for o in dump["options"]],
    }


def render(data: dict[str, Any]) -> str:
    """The file's text: one option per line, so that a release diff reads well."""
    head = {k: v for k, v in data.items() if k != "options"}
    lines = [json.dumps(head, sort_keys=True)[:-1] + ', "options": [']
    options = [json.dumps(o, sort_keys=True) for o in data["options"]]
    lines += [f"  {o}," for o in options[:-1]] + [f"  {options[-1]}", "]}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", help="a parser dump (scripts/release/serve_parser/dump.py output)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--out", type=Path, help="where to write (default: the releases dir)")
    args = parser.parse_args()
    data = compact(json.loads(Path(args.dump).read_text(encoding="utf-8")))
    path: Path = args.out or OUT_DIR / f"serve-{data['vllm_version']}.json"
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from wheel_source import write_or_check  # a same_as file compares as the file it names

    return write_or_check(path, render(data), check=args.check)


if __name__ == "__main__":
    sys.exit(main())
