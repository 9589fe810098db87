"""Issue 34: ``cache explain`` takes what ``diff`` takes (a saved ``resolve --format
json``, a ``--config`` YAML file), and both name a config field one way: vLLM's own
names, ``VllmConfig``'s attribute first (``parallel_config.tensor_parallel_size``),
whichever release keyed its factor tree otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_helpers import run

ROOT = Path(__file__).resolve().parent.parent
R1 = str(ROOT / "docs" / "examples" / "deepseek-r1")


def _save(path: Path, *flags: str) -> str:
    done = run("resolve", "--device", "h100", *flags, "--format", "json", "--", "vllm", "serve", R1)
    assert done.exit_code == 0, done.stderr
    path.write_text(done.stdout, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_cache_explain_takes_saved_resolves_as_diff_does(tmp_path: Path, version: str) -> None:
    a = _save(tmp_path / "a.json", "--vllm-version", version, "-tp", "4")
    b = _save(tmp_path / "b.json", "--vllm-version", version, "-tp", "8")
    explained = run("cache", "explain", a, b, "--format", "json")
    assert explained.exit_code == 1, explained.stderr
    diffed = run("diff", a, b, "--format", "json")
    assert diffed.exit_code == 1, diffed.stderr
    named = [(f["what"], f["a"], f["b"]) for f in explained.json()["findings"]]
    assert named == [
        (f["what"], f["a"], f["b"]) for f in diffed.json()["compile_cache"]["findings"]
    ]
    # 0.34's saved factor tree names the field; 0.33's saved output keeps each part's hash
    wanted = "parallel_config.tensor_parallel_size" if version == "0.34.0" else "parallel_config"
    assert wanted in [what for what, _, _ in named]
    assert explained.json()["a"]["label"] == f"saved resolve {a}"


def test_a_saved_resolve_against_its_own_launch_is_the_same_key(tmp_path: Path) -> None:
    a = _save(tmp_path / "a.json", "-tp", "4")
    done = run("cache", "explain", a, f"vllm serve {R1} -tp 4", "--device", "h100")
    assert done.exit_code == 0, done.stdout + done.stderr


def test_a_config_yaml_is_a_side(tmp_path: Path) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"model: {R1}\ntensor-parallel-size: 8\n", encoding="utf-8")
    a = _save(tmp_path / "a.json", "-tp", "4")
    done = run("cache", "explain", a, str(config), "--device", "h100", "--format", "json")
    assert done.exit_code == 1, done.stderr
    assert "parallel_config.tensor_parallel_size" in {f["what"] for f in done.json()["findings"]}


def test_a_saved_resolve_without_compile_cache_is_refused_in_one_line(tmp_path: Path) -> None:
    saved = tmp_path / "old.json"
    text = run("resolve", "--device", "h100", "--format", "json").stdout
    import json

    data = json.loads(text)
    del data["compile_cache"]
    saved.write_text(json.dumps(data), encoding="utf-8")
    done = run("cache", "explain", str(saved), str(saved))
    assert done.exit_code == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "holds no compile_cache" in done.stderr


def test_one_vocabulary_across_releases_and_commands() -> None:
    """The same flag change is named the same by diff and cache explain, for a release
    whose factor tree keys ``parallel`` (0.34) and one that keys ``parallel_config``."""
    seen = set()
    for version in ("0.33.0", "0.34.0"):
        for command in (
            ["cache", "explain", f"vllm serve {R1} -tp 4", f"vllm serve {R1} -tp 8"],
            ["diff", "--a", "-tp 4", "--b", "-tp 8", "--hf-config-path", R1],
        ):
            done = run(*command, "--device", "h100", "--vllm-version", version, "--format", "json")
            data = done.json()
            found = data["findings"] if "findings" in data else data["compile_cache"]["findings"]
            seen |= {f["what"] for f in found if f["part"] == "config"}
    assert seen == {"parallel_config.tensor_parallel_size", "parallel_config.world_size"}


def test_explain_takes_a_field_by_its_dotted_path_either_way() -> None:
    """``kernel_config.moe_backend`` as diff and cache explain print it, and
    ``kernel.moe_backend`` as 0.34's factor tree keys it: both the field."""
    plain = run("explain", "moe_backend", "--format", "json").json()
    for path in ("kernel_config.moe_backend", "kernel.moe_backend"):
        assert run("explain", path, "--format", "json").json() == plain
