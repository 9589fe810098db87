"""``import kernelcfg``, ``--help``, ``--version`` and a resolve with an explicit
target never import torch; the CLI path never imports rich for machine formats."""

from __future__ import annotations

import json
import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_import_does_not_import_torch() -> None:
    mods = _modules_after("import kernelcfg")
    assert "torch" not in mods
    assert "pydantic" not in mods


def test_resolution_with_explicit_target_does_not_import_torch() -> None:
    mods = _modules_after(
        "import kernelcfg\n"
        "r = kernelcfg.resolve_args(['--moe-backend', 'triton'], "
        "kernelcfg.Request(device='h100'))\n"
        "assert r.hash"
    )
    assert "torch" not in mods


def test_cli_json_path_imports_neither_torch_nor_rich() -> None:
    mods = _modules_after(
        "import sys\n"
        "sys.argv = ['kernelcfg', 'resolve', '--device', 'h100', '--format', 'json']\n"
        "from kernelcfg.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert "torch" not in mods
    assert "rich" not in mods


def test_a_hub_id_without_download_does_not_import_huggingface_hub() -> None:
    """``huggingface_hub`` is the ``hub`` extra, imported only to download: a hub id
    that is not cached costs no import (and no network) unless ``--download`` asks."""
    mods = _modules_after(
        "import os\n"
        "os.environ['HF_HUB_CACHE'] = '/nonexistent'\n"
        "import kernelcfg\n"
        "r = kernelcfg.resolve_args(['--', 'vllm', 'serve', 'deepseek-ai/DeepSeek-R1'], "
        "kernelcfg.Request(device='h100'))\n"
        "assert r.hash"
    )
    assert "kernelcfg.flags.hub" in mods
    assert "huggingface_hub" not in mods
