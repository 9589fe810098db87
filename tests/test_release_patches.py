"""Patch releases kernelcfg ships as releases of their own (0.25.1, 0.27.1: added by
``make release``), and the files that say a release's file is another's (``same_as``).

A shipped patch release resolves as itself: no ``release-stand-in`` warning, its own
version in the output, its minor's kernel picks and hash (its selection code did not
change: docs/releases.md, 'Patch releases'), the compile-cache parts its data gives known.
vLLM hashes its own version into the config part of the key, so a patch release whose
release has config data (a ``compile-config-`` file) gets another key than its minor's.
A ``same_as`` file reads as the file it names, under its own version; kernelcfg's own
point at kernelcfg's own only, and a user's is read bounded and checked as any other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm import releases
from kernelcfg.vllm.releases import search

from .cli_helpers import run
from .conftest import golden

KNOWN = releases.known_versions()
PATCHES = tuple(v for v in KNOWN if not v.endswith(".0"))
"""The patch releases kernelcfg ships (``pip index versions vllm``: 0.25.1, 0.27.1)."""
ALIASES = sorted(
    name
    for name in search.packaged_names()
    if name.endswith(".json")
    and (search.PACKAGED / name).stat().st_size < 1024
    and search.SAME_AS in json.loads((search.PACKAGED / name).read_text())
)
"""kernelcfg's own files that say they are another release's."""


def _minor(version: str) -> str:
    """The ``.0`` of ``version``'s minor."""
    return ".".join([*version.split(".")[:2], "0"])


def _resolve(version: str, *more: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = run(
        "resolve", "--device", "h100", "--vllm-version", version, "--format", "json", *more,
        env=env,
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    data: dict[str, Any] = done.json()
    return data


def test_the_patch_releases_on_the_package_index_are_shipped() -> None:
    assert {"0.25.1", "0.27.1"} <= set(PATCHES)


@pytest.mark.parametrize("version", PATCHES)
def test_a_shipped_patch_release_resolves_as_itself(version: str) -> None:
    data, minor = _resolve(version), _resolve(_minor(version))
    assert data["vllm_version"] == version
    assert not [p for p in data["problems"] if p["code"] == "release-stand-in"]
    # the selection code did not change: the same picks and kernel-config hash
    assert data["hash"] == minor["hash"]
    assert data["selection"] == minor["selection"]
    # the env part is known (its envs.py is its minor's, so is the digest)
    cache, of_minor = data["compile_cache"], minor["compile_cache"]
    assert cache["env_hash"] is not None
    assert cache["env_hash"] == of_minor["env_hash"]
    assert not [u for u in cache["unknown"] if "vLLM hashes its version" in u]


@pytest.mark.parametrize("version", PATCHES)
def test_a_shipped_patch_release_has_its_minors_config_part(version: str) -> None:
    # vLLM hashes its version into the config part; kernelcfg has that part where the
    # release has a compile-config file (0.33.0 on), and the minor has none either
    has = releases.release_data("compile-config", version) is not None
    assert has == (releases.release_data("compile-config", _minor(version)) is not None)
    if not has:
        assert _resolve(version)["compile_cache"]["config_hash"] is None


@pytest.mark.parametrize("name", ALIASES)
def test_a_same_as_file_reads_as_the_release_it_names(name: str) -> None:
    raw = json.loads((search.PACKAGED / name).read_text())
    kind = name.rsplit("-", 1)[0]
    target = f"{kind}-{raw[search.SAME_AS]}.json"
    assert set(raw) <= {"vllm_version", search.SAME_AS, "about"}
    facts = json.loads((search.PACKAGED / target).read_text())
    assert search.SAME_AS not in facts  # one hop: the named file holds the facts
    assert releases.data_file(name) == {**facts, "vllm_version": raw["vllm_version"]}


def test_every_shipped_patch_release_file_is_a_same_as_file_or_its_own() -> None:
    # one home per fact: a patch release's file that says nothing its minor's does not
    # is a same_as file (what the release command writes), not a copy
    for version in PATCHES:
        for kind in search.kinds():
            name, of_minor = f"{kind}-{version}.json", f"{kind}-{_minor(version)}.json"
            if name not in search.packaged_names():
                assert of_minor not in search.packaged_names(), name
                continue
            own = json.loads((search.PACKAGED / name).read_text())
            if search.SAME_AS not in own:
                minor = json.loads((search.PACKAGED / of_minor).read_text())
                assert {**minor, "vllm_version": version} != own, name


# ---------------------------------------------------------------- a user's same_as files
PATCH = "0.34.1"
"""A patch of the newest release, added to a user's folder as same_as files."""


def _same_as_folder(folder: Path, version: str, of: str) -> None:
    """Files of ``version`` that say they are ``of``'s, of every kind the newest has."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind in sorted(search.kinds()):
        if f"{kind}-{releases.newest()}.json" in search.packaged_names():
            text = json.dumps({"vllm_version": version, search.SAME_AS: of})
            (folder / f"{kind}-{version}.json").write_text(text)


def _kernelcfg(*words: str, folder: Path) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KERNELCFG_")}
    return subprocess.run(
        [sys.executable, "-m", "kernelcfg", *words],
        capture_output=True,
        text=True,
        env={**base, search.VARIABLE: str(folder)},
        check=False,
    )


def test_a_user_patch_release_of_same_as_files_gets_its_own_compile_cache_key(
    tmp_path: Path,
) -> None:
    pytest.importorskip("transformers", reason="the model part is transformers' text")
    newest = releases.newest()
    assert PATCH.rsplit(".", 1)[0] == newest.rsplit(".", 1)[0]
    assert PATCH not in KNOWN
    _same_as_folder(tmp_path / "releases", PATCH, newest)
    model = tmp_path / "llama-3.1-8b"
    model.mkdir()
    vectors = golden("0.34.0", "compile-cache-launch")
    template = vectors["meta"]["model_templates"]["llama-3.1-8b"]["config_json"]
    (model / "config.json").write_text(json.dumps(template))
    found = {}
    for version in (newest, PATCH):
        done = _kernelcfg(
            "resolve", "--device", "h100", "--vllm-version", version, "--format", "json",
            "--", "vllm", "serve", str(model), folder=tmp_path / "releases",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        found[version] = json.loads(done.stdout)
    mine, minor = found[PATCH], found[newest]
    assert mine["vllm_version"] == PATCH
    assert not [p for p in mine["problems"] if p["code"] == "release-stand-in"]
    assert mine["hash"] == minor["hash"]
    cache, of_minor = mine["compile_cache"], minor["compile_cache"]
    assert cache["env_hash"] == of_minor["env_hash"] is not None
    # the version is the only factor that moved, and it moves the config hash
    assert cache["config_factors"] == {**of_minor["config_factors"], "version": PATCH}
    assert of_minor["config_factors"]["version"] == newest
    assert None is not cache["config_hash"] != of_minor["config_hash"]


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ({"vllm_version": PATCH, search.SAME_AS: "0.34"}, "not a release X.Y.Z"),
        ({"vllm_version": PATCH, search.SAME_AS: "0.34.0", "envs": {}}, "holds no envs"),
        ({"vllm_version": PATCH, search.SAME_AS: "0.88.0"}, "there is no other"),
        ({"vllm_version": PATCH, search.SAME_AS: PATCH}, "holds no facts"),
        ({"vllm_version": "0.34.2", search.SAME_AS: "0.34.0"}, "its name says"),
    ],
)
def test_a_broken_user_same_as_file_is_one_error_naming_it(
    tmp_path: Path, written: dict[str, Any], said: str
) -> None:
    _same_as_folder(tmp_path, PATCH, releases.newest())
    (tmp_path / f"env-{PATCH}.json").write_text(json.dumps(written))
    done = _kernelcfg("resolve", "--device", "h100", "--vllm-version", PATCH, folder=tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert f"env-{PATCH}.json" in line
    assert said in line


def test_a_user_same_as_chain_is_refused(tmp_path: Path) -> None:
    # one hop: 0.34.2 names 0.34.1, itself a same_as file
    _same_as_folder(tmp_path, PATCH, releases.newest())
    _same_as_folder(tmp_path, "0.34.2", PATCH)
    done = _kernelcfg("resolve", "--device", "h100", "--vllm-version", "0.34.2", folder=tmp_path)
    assert done.returncode == 2
    assert "holds no facts" in done.stderr


@pytest.mark.parametrize("name", [n for n in ALIASES if n.startswith("vllm-")])
def test_kernelcfgs_own_same_as_files_read_no_user_file(tmp_path: Path, name: str) -> None:
    # a user's file of the release named (standing in for kernelcfg's own) is not what
    # kernelcfg's own same_as file reads: a resolve for an own release reads no user file
    raw = json.loads((search.PACKAGED / name).read_text())
    kind = name.rsplit("-", 1)[0]
    target = f"{kind}-{raw[search.SAME_AS]}.json"
    (tmp_path / target).write_text('{"broken": true}')
    version = raw["vllm_version"]
    done = _kernelcfg("resolve", "--device", "h100", "--vllm-version", version, folder=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "release-data" not in done.stderr
    assert str(tmp_path) not in done.stdout


# ---------------------------------------------------------------- the catalogue's spans
def test_a_catalogue_span_ending_at_a_minor_holds_its_patch_releases() -> None:
    from kernelcfg.checks.requirements import _applies, for_release

    assert _applies("0.25.0", "0.25.1")
    assert _applies("0.25.0..0.27.0", "0.27.1")
    assert not _applies("0.26.0..0.27.0", "0.25.1")
    assert not _applies("0.25.0..0.26.0", "0.27.1")
    assert _applies("0.27.1", "0.27.1")
    assert not _applies("0.27.1", "0.27.0")  # a span naming a patch holds it alone
    # a patch release whose selection code changed gets a span of its own, after its minor's
    rule = {"needs": "x", "versions": {"0.25.0..0.27.0": {"needs": "y"}, "0.27.1": {"needs": "z"}}}
    assert for_release(rule, "0.27.0")["needs"] == "y"
    assert for_release(rule, "0.27.1")["needs"] == "z"
    assert for_release(rule, "0.28.0")["needs"] == "x"


def _empty(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    return not value


@pytest.mark.parametrize("version", PATCHES)
def test_versions_says_a_shipped_patch_changed_nothing_from_its_minor(version: str) -> None:
    data = run("versions", _minor(version), version, "--format", "json").json()
    assert _empty({k: v for k, v in data.items() if k not in ("format_version", "old", "new")})
    table = run("versions", _minor(version), version)
    assert table.exit_code == 0
    assert f"vLLM {_minor(version)} -> {version}: no change" in table.stdout
    changed = run("versions", "0.32", "0.33")
    assert "no change" not in changed.stdout
