"""Releases kernelcfg has no data for, and the user's release folders.

A patch release of a known minor resolves with that minor's data under a warning; a
release outside the known ones is refused naming the nearest and how to add it; a
user's folder (``KERNELCFG_DATA_PATH``, from this process's environment only) adds
releases or stands in for kernelcfg's own, read bounded and checked. The folder tests
run kernelcfg in a subprocess: its release caches are per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.base.errors import UnknownVersionError
from kernelcfg.vllm import releases
from kernelcfg.vllm.releases import naming, search

from .cli_helpers import run

KNOWN = releases.known_versions()
NEWEST, OLDEST = KNOWN[-1], KNOWN[0]
PACKAGED = Path(releases.__file__).parent
NEW = "0.99.0"
"""A release no kernelcfg ships: its files made from the newest's, as a user adds them."""


def _kernelcfg(*words: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """kernelcfg in a fresh process, under this shell's environment less kernelcfg's own
    variables, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("KERNELCFG_VLLM")}
    base.pop(search.VARIABLE, None)
    return subprocess.run(
        [sys.executable, "-m", "kernelcfg", *words],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        check=False,
    )


def _release_files(
    folder: Path, version: str, *, kinds: tuple[str, ...] = ("vllm", "serve")
) -> None:
    """The newest release's files of ``kinds`` written into ``folder`` as ``version``'s."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        data = json.loads((PACKAGED / f"{kind}-{NEWEST}.json").read_text())
        data["vllm_version"] = version
        (folder / f"{kind}-{version}.json").write_text(json.dumps(data))


def _patch(version: str) -> str:
    major, minor, patch = version.split(".")
    return f"{major}.{minor}.{int(patch) + 1}"


NEWEST_OF_MINOR = tuple(v for v in KNOWN if _patch(v) not in KNOWN)
"""The newest known release of each minor: its next patch release is one kernelcfg has
no data for (0.25.1 where kernelcfg ships 0.25.1: it stands in for 0.25.2)."""


# ---------------------------------------------------------------- naming


@pytest.mark.parametrize("version", NEWEST_OF_MINOR)
def test_a_patch_release_resolves_with_its_minors_data_under_a_warning(version: str) -> None:
    asked = _patch(version)
    assert asked not in KNOWN
    done = run("resolve", "--device", "h100", "--vllm-version", asked, "--format", "json")
    own = run("resolve", "--device", "h100", "--vllm-version", version, "--format", "json")
    assert done.exit_code == 0, done.stderr
    data = done.json()
    assert data["vllm_version"] == version
    assert data["hash"] == own.json()["hash"]
    (warning,) = [p for p in data["problems"] if p["code"] == "release-stand-in"]
    assert warning["severity"] == "warning"
    assert asked in warning["message"]
    assert f"{version}'s" in warning["message"]
    assert "docs/releases.md" in warning["message"]
    strict = run("resolve", "--device", "h100", "--vllm-version", asked, "--strict")
    assert strict.exit_code == 1


@pytest.mark.parametrize(
    ("asked", "nearest", "where"),
    [
        (f"{NEWEST.split('.')[0]}.{int(NEWEST.split('.')[1]) + 1}", NEWEST, "newer than"),
        (f"{OLDEST.split('.')[0]}.{int(OLDEST.split('.')[1]) - 1}.3", OLDEST, "older than"),
    ],
)
def test_a_release_outside_the_known_ones_is_refused_naming_the_nearest(
    asked: str, nearest: str, where: str
) -> None:
    done = run("resolve", "--device", "h100", "--vllm-version", asked)
    assert done.exit_code == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: --vllm-version: kernelcfg has no data for vLLM")
    assert f"{where} the" in line
    assert f"({nearest})" in line
    major, minor, _ = nearest.split(".")
    assert f"--vllm-version {major}.{minor}" in line
    assert "docs/releases.md" in line
    assert search.VARIABLE in line
    assert ", ".join(KNOWN) in line
    assert ("upgrade kernelcfg" in line) == (where == "newer than")


def test_a_release_between_known_ones_names_both_neighbours() -> None:
    found = naming.refusal("0.31.0", ["0.30.0", "0.32.0"], "--vllm-version", "F")
    assert "between 0.30.0 and 0.32.0" in found.message
    assert "--vllm-version 0.30" in found.message


def test_a_badly_written_release_names_the_spelling_and_the_closest(
    clean_env: pytest.MonkeyPatch,
) -> None:
    del clean_env
    done = run("resolve", "--device", "h100", env={"KERNELCFG_VLLM_VERSION": f" {NEWEST}"})
    assert done.exit_code == 2
    assert "KERNELCFG_VLLM_VERSION: unknown vLLM version" in done.stderr
    major, minor, _ = NEWEST.split(".")
    assert f"did you mean '{major}.{minor}'" in done.stderr


@pytest.mark.parametrize("version", NEWEST_OF_MINOR)
def test_an_installed_patch_release_is_its_minors_and_a_newer_one_refused(version: str) -> None:
    chosen = releases._choose(None, None, _patch(version))
    assert (chosen.release.version, chosen.asked, chosen.source) == (
        version,
        _patch(version),
        "installed",
    )
    assert chosen.warning is not None
    assert _patch(version) in chosen.warning
    major = int(NEWEST.split(".")[0]) + 1
    with pytest.raises(UnknownVersionError) as info:
        releases._choose(None, None, f"{major}.0.0")
    assert f"vLLM {major}.0.0 is installed here" in info.value.message
    assert f"({NEWEST})" in info.value.message


def test_other_commands_take_a_patch_release_and_warn() -> None:
    asked = _patch(NEWEST)
    for words in (["lint-env"], ["schema"]):
        done = run(*words, "--vllm-version", asked)
        assert done.exit_code == 0, done.stderr
        assert f"warning: kernelcfg has no data for vLLM {asked}" in done.stderr
    oldest = NEWEST_OF_MINOR[0]
    compared = run("versions", _patch(oldest), asked, "--format", "json")
    assert compared.json()["old"] == oldest
    assert compared.json()["new"] == NEWEST


# ---------------------------------------------------------------- the user's folders


@pytest.mark.cli
def test_a_users_folder_adds_a_release_the_day_vllm_ships_it(tmp_path: Path) -> None:
    _release_files(tmp_path / "data", NEW)
    env = {search.VARIABLE: str(tmp_path / "nothing") + os.pathsep + str(tmp_path / "data")}
    version = _kernelcfg("--version", env=env)
    assert f"{NEW} from {tmp_path / 'data'}" in version.stdout
    done = _kernelcfg(
        "resolve", "--device", "h100", "--vllm-version", NEW, "--format", "json", env=env
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["vllm_version"] == NEW
    (note,) = [p for p in data["problems"] if p["code"] == "release-data"]
    assert str(tmp_path / "data") in note["message"]
    assert "ships none" in note["message"]
    listed = json.loads(_kernelcfg("versions", "--format", "json", env=env).stdout)["releases"]
    sources = {row["version"]: row["data_from"] for row in listed}
    assert sources[NEW] == str(tmp_path / "data")
    assert {v for v, s in sources.items() if s is None} == set(KNOWN)
    without = _kernelcfg("resolve", "--device", "h100", "--vllm-version", NEW)
    assert without.returncode == 2


@pytest.mark.cli
def test_a_users_file_stands_in_for_kernelcfgs_own_and_says_so(tmp_path: Path) -> None:
    data = json.loads((PACKAGED / f"vllm-{NEWEST}.json").read_text())
    data["choices"]["MoEBackend"].append("my_moe")
    (tmp_path / f"vllm-{NEWEST}.json").write_text(json.dumps(data))
    env = {search.VARIABLE: str(tmp_path)}
    words = ["resolve", "--device", "h100", "--vllm-version", NEWEST, "--moe-backend", "my_moe"]
    assert _kernelcfg(*words).returncode == 2  # kernelcfg's own file has no such choice
    done = _kernelcfg(*words, "--format", "json", env=env)
    assert done.returncode != 2, done.stderr
    (note,) = [p for p in json.loads(done.stdout)["problems"] if p["code"] == "release-data"]
    assert f"vllm-{NEWEST}.json" in note["message"]
    assert "in place of kernelcfg's own" in note["message"]


@pytest.mark.cli
def test_the_default_folder_is_under_xdg_data_home(tmp_path: Path) -> None:
    _release_files(tmp_path / "kernelcfg" / "releases", NEW)
    done = _kernelcfg("--version", env={"XDG_DATA_HOME": str(tmp_path)})
    assert NEW in done.stdout
    empty = _kernelcfg("--version", env={"XDG_DATA_HOME": str(tmp_path), search.VARIABLE: ""})
    assert NEW not in empty.stdout


def _broken(folder: Path, case: str) -> None:
    """A user's release file broken one way."""
    _release_files(folder, NEW, kinds=("vllm", "serve", "moe"))
    path = folder / f"moe-{NEW}.json"
    data: Any = json.loads(path.read_text())
    if case == "not json":
        path.write_text('{"format": 1,')
    elif case == "an array":
        path.write_text("[]")
    elif case == "another release":
        path.write_text(json.dumps({**data, "vllm_version": NEWEST}))
    elif case == "a key missing":
        path.write_text(json.dumps({k: v for k, v in data.items() if k != "oracles"}))
    elif case == "a key of another type":
        path.write_text(json.dumps({**data, "oracles": "triton"}))
    elif case == "too large":
        path.write_text(" " * (search.MAX_BYTES + 1))
    elif case == "a folder":
        path.unlink()
        path.mkdir()
    elif case == "not utf-8":
        path.write_bytes(b'{"a": "\xff"}')
    elif case == "no serve file":
        (folder / f"serve-{NEW}.json").unlink()


@pytest.mark.robustness
@pytest.mark.parametrize(
    "case",
    [
        "not json",
        "an array",
        "another release",
        "a key missing",
        "a key of another type",
        "too large",
        "a folder",
        "not utf-8",
        "no serve file",
    ],
)
def test_a_broken_users_file_is_one_error_naming_it(tmp_path: Path, case: str) -> None:
    _broken(tmp_path, case)
    path = tmp_path / f"{'vllm' if case == 'no serve file' else 'moe'}-{NEW}.json"
    done = _kernelcfg(
        "resolve", "--device", "h100", "--vllm-version", NEW, env={search.VARIABLE: str(tmp_path)}
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: release data file {path}")
    assert "Traceback" not in line


@pytest.mark.robustness
def test_a_folder_named_by_a_launch_or_a_scanned_file_is_never_searched(tmp_path: Path) -> None:
    _release_files(tmp_path / "data", NEW)
    named = f"{search.VARIABLE}={tmp_path / 'data'}"
    on_line = _kernelcfg("resolve", "--device", "h100", "--env", named, "--vllm-version", NEW)
    assert on_line.returncode == 2
    assert "no data for vLLM" in on_line.stderr
    batch = tmp_path / "lines.jsonl"
    batch.write_text(
        json.dumps(
            {"env": {search.VARIABLE: str(tmp_path / "data")}, "argv": ["--vllm-version", NEW]}
        )
        + "\n"
    )
    lines = _kernelcfg("resolve", "--device", "h100", "--batch", str(batch))
    assert json.loads(lines.stdout)["exit_code"] == 2
    script = tmp_path / "Dockerfile"
    script.write_text(f'FROM vllm\nENV {named}\nCMD ["vllm", "serve", "m"]\n')
    scanned = _kernelcfg(
        "scan", "--device", "h100", "--vllm-version", NEW, str(script), "--format", "json"
    )  # fmt: skip
    # the run's own --vllm-version is checked before any file is read: the file's ENV
    # never made the release known
    assert scanned.returncode == 2
    assert "no data for vLLM" in scanned.stderr
    known = _kernelcfg("scan", "--device", "h100", str(script), "--format", "json")
    (launch,) = json.loads(known.stdout)["lines"]
    assert launch["env"] == {search.VARIABLE: str(tmp_path / "data")}
    assert "release-data" not in {p["code"] for p in launch["problems"]}


@pytest.mark.robustness
def test_a_resolve_reads_only_the_release_it_asks_for(tmp_path: Path) -> None:
    _release_files(tmp_path, NEW, kinds=("vllm", "serve", "moe"))
    code = (
        "import sys, runpy\n"
        "seen = []\n"
        "sys.addaudithook(lambda e, a: seen.append(str(a[0])) if e == 'open' else None)\n"
        "sys.argv = ['kernelcfg', 'resolve', '--device', 'h100', '--vllm-version', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('kernelcfg', run_name='__main__')\n"
        "finally:\n"
        "    print(sorted({p.rsplit('/', 1)[-1] for p in seen if p.endswith('.json')}))\n"
    )
    env = {**os.environ, search.VARIABLE: str(tmp_path)}
    env.pop("KERNELCFG_VLLM_VERSION", None)
    opened = {}
    for version in (NEWEST, NEW):
        done = subprocess.run(
            [sys.executable, "-c", code, version],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        opened[version] = set(eval(done.stdout.strip().splitlines()[-1]))
    assert f"vllm-{NEWEST}.json" in opened[NEWEST]
    assert all(name.endswith(f"-{NEWEST}.json") for name in opened[NEWEST])
    mine = {p.name for p in tmp_path.iterdir()}
    references = {f"{k}-{v}.json" for k in ("vllm", "serve", "moe") for v in (OLDEST, NEWEST)}
    assert mine <= opened[NEW] <= mine | references  # the user's, and the shapes they follow
