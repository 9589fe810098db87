"""Write ``kernelcfg/vllm/releases/attribute-maps.json``: each transformers config
class's ``attribute_map`` (the names a config answers to, and the key it stores), by
``model_type``, read from the installed transformers. A config.json saved by
transformers 5.x holds the stored key (``num_local_experts`` for a Qwen3-MoE); vLLM's
model code reads the alias (``num_experts``), which transformers resolves.

    .venv/bin/python scripts/release/attribute_maps.py
"""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

OUT = Path(__file__).resolve().parents[2] / "kernelcfg/vllm/releases/attribute-maps.json"


def main() -> None:
    maps: dict[str, dict[str, str]] = {}
    for model_type in sorted(CONFIG_MAPPING.keys()):
        try:
            cls = CONFIG_MAPPING[model_type]
        except Exception:
            continue
        found = {str(k): str(v) for k, v in (getattr(cls, "attribute_map", None) or {}).items()}
        if found:
            maps[model_type] = dict(sorted(found.items()))
    data = {
        "about": "transformers' attribute_map per model_type: alias -> the key a saved "
        "config.json holds (scripts/release/attribute_maps.py)",
        "transformers": transformers.__version__,
        "maps": maps,
    }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
