"""Add a vLLM release to kernelcfg with one command, and print the maintainer's to-do list.

    make release VERSION=0.28.0 [OUT=FOLDER]
    python scripts/release/release.py 0.28.0 [--out FOLDER] [--near 0.29.0]
        [--no-serve] [--no-execute]

1. the wheel of the release and of the nearest release kernelcfg knows, downloaded into
   ``$KERNELCFG_WHEELS`` (default /tmp/kernelcfg-wheels) unless already there;
2. every generator beside this file, on the new wheel: ``kernel_config.py`` (the
   ``rules`` taken from the release's own file when it exists, else from the nearest
   release's), ``attention_config.py``, ``compile_env.py``, ``compile_config.py``, and
   ``vllm serve``'s parser dumped in a throwaway venv (``serve_parser/venv.sh``: the
   release's pins are there; ``$KERNELCFG_SERVE_VENV``, default
   /tmp/kernelcfg-serve-venv) and turned into ``serve-X.Y.Z.json``;
3. the files read by hand (``moe-``, ``linear-``, ``selector-``, ``topk-``): a file the
   release already has is kept (a maintainer's edits are never overwritten); else it
   starts as the nearest release's, with the new version;
4. the release's own MoE selection executed (``execute/moe.py``), written as
   ``tests/golden/vllm-X.Y.Z/executed-moe.json`` (with ``--out``:
   ``FOLDER/executed-moe-X.Y.Z.json``), and compared with kernelcfg's picks on the new
   data (``tests/moe_executed.py``); into kernelcfg's own folder, also its linear,
   attention and top-k selection, its ``vllm.config.kernel`` (``KernelConfig``, the
   hash, the platform IR-op defaults: ``cases.json`` / ``platform-cases.json``,
   ``execute/config.py``), its ``vllm serve`` parser on real vLLM 0.33.0's parser lines
   and its ``envs.compile_factors()`` on real vLLM's environments (``execute/all.py``)
   and the tests that hold kernelcfg to them, for this release;
5. the to-do list: the vLLM source files that differ from the nearest release's, by
   the data file whose selection code they are (``source_diff.py``), and the executed
   cells kernelcfg disagrees with; the wall time.

Everything is written into a staging folder beside the destination and moved into place
file by file (``os.replace``) once every generator the release needs has succeeded:
an interrupted run leaves the old files whole, and a second run writes the same bytes.
A generator that does not apply to an old release (``compile_config.py`` before vLLM
had the code it reads) is reported and skipped; the release then resolves without that
part, as the packaged releases without it do.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import source_diff  # noqa: E402
from wheel_source import (  # noqa: E402
    RELEASES_DIR,
    SAME_AS,
    as_release,
    download_wheel,
    release_text,
    same_as_text,
)

HAND_READ = ("moe", "linear", "selector", "topk")
"""The data files a maintainer reads from the source (started from the nearest's)."""
NEEDED = ("vllm", "serve")
"""The files without which a release does not resolve: a failure stops the command."""
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_FILE = re.compile(r"^vllm-(\d+\.\d+\.\d+)\.json$")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def nearest(version: str, folders: Sequence[Path]) -> str:
    """The known release closest to ``version`` (by position among the known ones and
    the new one; the newer on a tie), never ``version`` itself."""
    known = sorted(
        {m.group(1) for d in folders if d.is_dir() for m in map(_FILE.match, os.listdir(d)) if m}
        - {version},
        key=_key,
    )
    if not known:
        raise SystemExit("no known release to start from")
    older = [v for v in known if _key(v) < _key(version)]
    newer = [v for v in known if _key(v) > _key(version)]
    if not newer:
        return older[-1]
    if not older:
        return newer[0]
    old, new = older[-1], newer[0]
    return old if _key(version)[:2] == _key(old)[:2] != _key(new)[:2] else new


@dataclass
class Run:
    """What the command did, for the summary."""

    version: str
    near: str
    out: Path
    staging: Path
    steps: list[tuple[str, float, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)

    def step(
        self,
        name: str,
        cmd: list[str],
        *,
        needed: bool,
        env: dict[str, str] | None = None,
        skipped: str = "not written, the release resolves without it",
    ) -> bool:
        """Run one generator; record its wall time and outcome."""
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.monotonic() - started
        if proc.returncode == 0:
            self.steps.append((name, wall, "ok"))
            return True
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["?"])[-1]
        verdict = "FAILED" if needed else skipped
        self.steps.append((name, wall, f"{verdict} (exit {proc.returncode}): {last[:300]}"))
        if needed:
            self.failed.append(name)
        return False


def _wheels_folder() -> Path:
    folder = Path(os.environ.get("KERNELCFG_WHEELS") or "/tmp/kernelcfg-wheels")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _nice() -> list[str]:
    return ["nice", "-n", "10"] if shutil.which("nice") else []


def _generate(run: Run, wheel: Path, serve: bool) -> None:
    py, v, st = [*_nice(), sys.executable], run.version, run.staging
    own = run.out / f"vllm-{v}.json"
    rules = own if own.is_file() else _known_file(run, f"vllm-{run.near}.json")
    run.step(
        "vllm (kernel_config.py)",
        [
            *py,
            str(HERE / "kernel_config.py"),
            str(wheel),
            "--rules-from",
            str(rules),
            "--out",
            str(st / f"vllm-{v}.json"),
        ],
        needed=True,
    )
    for kind, script in (
        ("attention", "attention_config.py"),
        ("env", "compile_env.py"),
        ("compile-config", "compile_config.py"),
    ):
        out = st / f"{kind}-{v}.json"
        run.step(
            f"{kind} ({script})",
            [*py, str(HERE / script), str(wheel), "--out", str(out)],
            needed=False,
        )
    if serve:
        _serve(run, wheel)


def _serve(run: Run, wheel: Path) -> None:
    venv = Path(os.environ.get("KERNELCFG_SERVE_VENV") or "/tmp/kernelcfg-serve-venv")
    env = {**os.environ, "VENV": str(venv), "KERNELCFG_WHEELS": str(wheel.parent)}
    serve = HERE / "serve_parser"
    if not run.step(
        "serve venv (serve_parser/venv.sh)",
        [*_nice(), "bash", str(serve / "venv.sh"), run.version],
        needed=True,
        env=env,
    ):
        return
    dump = run.staging / f".dump-{run.version}.json"
    clean = {k: val for k, val in env.items() if not k.startswith("VLLM_")}
    if run.step(
        "serve dump (serve_parser/dump.py)",
        [*_nice(), str(venv / "bin" / "python"), str(serve / "dump.py"), str(dump)],
        needed=True,
        env=clean,
    ):
        out = run.staging / f"serve-{run.version}.json"
        run.step(
            "serve (serve_options.py)",
            [sys.executable, str(HERE / "serve_options.py"), str(dump), "--out", str(out)],
            needed=True,
        )
    dump.unlink(missing_ok=True)


def _known_file(run: Run, name: str) -> Path:
    """A data file of a known release: the destination's, else kernelcfg's own."""
    for folder in (run.out, RELEASES_DIR):
        if (folder / name).is_file():
            return folder / name
    return RELEASES_DIR / name


def _hand_read(run: Run) -> None:
    """Keep the release's own hand-read files; start the missing ones from the nearest's."""
    for kind in HAND_READ:
        mine = run.out / f"{kind}-{run.version}.json"
        near = _known_file(run, f"{kind}-{run.near}.json")
        if mine.is_file():
            run.kept[kind] = f"{mine.name} kept as it is (edited for {run.version})"
        elif near.is_file():
            new = as_release(release_text(near), run.near, run.version, near)
            (run.staging / mine.name).write_text(new, encoding="utf-8")
            run.kept[kind] = f"{mine.name} started from {near.name}: to review"
        else:
            run.kept[kind] = f"none ({run.near} has none either)"


def _same_as(run: Run) -> list[str]:
    """A patch release's staged files that are its nearest's (of the same minor) byte for
    byte but the version line become files that say so (``same_as``, read by kernelcfg's
    loader as the named release's): one home per fact. The names of those files."""
    if _key(run.version)[:2] != _key(run.near)[:2]:
        return []
    made = []
    for path in sorted(run.staging.glob("*.json")):
        kind = path.name.removesuffix(f"-{run.version}.json")
        near = _known_file(run, f"{kind}-{run.near}.json")
        if path.name.startswith(".") or kind == path.name or not near.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if text != as_release(release_text(near), run.near, run.version, near):
            continue
        held = json.loads(near.read_text(encoding="utf-8"))
        path.write_text(same_as_text(run.version, held.get(SAME_AS, run.near)), encoding="utf-8")
        made.append(path.name)
    return made


def _publish(run: Run) -> list[str]:
    """Move the staged files into the destination, one atomic rename each."""
    moved = []
    for path in sorted(run.staging.glob("*.json")):
        if path.name.startswith("."):
            continue
        os.replace(path, run.out / path.name)
        moved.append(path.name)
    return moved


def _vectors_path(run: Run) -> Path:
    if run.out == RELEASES_DIR:
        return REPO / "tests" / "golden" / f"vllm-{run.version}" / "executed-moe.json"
    return run.out / f"executed-moe-{run.version}.json"


def _execute(run: Run) -> tuple[list[str], int]:
    """Execute the release's MoE selection; compare kernelcfg's picks on the new data."""
    target = _vectors_path(run)
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = run.staging / ".executed-moe.json"
    cmd = [
        *_nice(),
        sys.executable,
        str(HERE / "execute" / "moe.py"),
        run.version,
        "--out",
        str(staged),
    ]
    skipped = "not made, the files are written; no executed cells on the to-do list"
    if not run.step("executed MoE vectors (execute/moe.py)", cmd, needed=False, skipped=skipped):
        return ["Executed MoE vectors: not made (see the steps below)"], 0
    os.replace(staged, target)
    env = dict(os.environ)
    if run.out != RELEASES_DIR:
        env["KERNELCFG_DATA_PATH"] = str(run.out)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tests.moe_executed", str(target)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=False,
    )
    run.steps.append(
        (
            "kernelcfg against the executed cells",
            time.monotonic() - started,
            "ok" if proc.returncode == 0 else "FAILED",
        )
    )
    if proc.returncode != 0:
        return [f"Executed MoE cells: comparison failed: {proc.stderr.strip()[-300:]}"], 0
    found = json.loads(proc.stdout)
    shown = target.relative_to(REPO) if target.is_relative_to(REPO) else target
    lines = [
        f"Executed MoE cells ({shown}): "
        f"kernelcfg disagrees with {len(found['wrong'])} of {found['compared']} compared "
        f"({found['gaps']} left out: the simulation could not import a library; "
        f"{found['redirected']}: the quantisation method picks another oracle first)"
    ]
    for wrong in found["wrong"][:40]:
        lines.append(f"    {wrong['cell']}: kernelcfg {wrong['kernelcfg']}, vLLM {wrong['vllm']}")
    if len(found["wrong"]) > 40:
        lines.append(f"    … and {len(found['wrong']) - 40} more")
    return lines, len(found["wrong"])


EXECUTED_TESTS = (
    "tests/test_linear_executed.py",
    "tests/test_attention_executed.py",
    "tests/test_topk_executed.py",
    "tests/test_verdicts_executed.py",
    "tests/test_golden_cases.py",
    "tests/test_golden_platform.py",
    "tests/test_serve_parser_golden.py",
    "tests/test_compile_env.py",
)
"""The tests that hold kernelcfg to a release's executed linear / attention / top-k /
verdict vectors, its KernelConfig / platform-default vectors and its ``vllm serve``
parser / compile-cache env vectors (the parser's every line:
``KERNELCFG_FULL_VECTORS=1``)."""


def _execute_others(run: Run) -> tuple[list[str], int]:
    """Execute the release's linear, attention and top-k selection and its KernelConfig
    (``execute/all.py``: ``tests/golden/vllm-X.Y.Z/executed-*.json``, the verdicts from
    them, ``cases.json`` and ``platform-cases.json``), then run the
    tests that compare kernelcfg with them for this release: each failing test is a cell
    class to explain."""
    cmd = [
        *_nice(),
        sys.executable,
        str(HERE / "execute" / "all.py"),
        run.version,
        "--only",
        "linear,attention,topk,config,serve_parser,env_factors",
    ]
    skipped = (
        "not made; no executed linear / attention / top-k / config / parser cells on the to-do list"
    )
    if not run.step(
        "executed linear/attention/top-k/config/serve parser/env (execute/all.py)",
        cmd,
        needed=False,
        skipped=skipped,
    ):
        return ["Executed vectors but MoE's: not made (see the steps)"], 0
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rf",
            "-k",
            run.version,
            *EXECUTED_TESTS,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "KERNELCFG_FULL_VECTORS": "1"},
        check=False,
    )
    failing = [
        ln.removeprefix("FAILED ") for ln in proc.stdout.splitlines() if ln.startswith("FAILED ")
    ]
    outcome = "ok" if not failing else f"{len(failing)} failing"
    run.steps.append(
        (
            "kernelcfg against the executed linear/attention/top-k/config/serve parser/env",
            time.monotonic() - started,
            outcome,
        )
    )
    lines = [
        f"Executed linear / attention / top-k / verdict / config / parser / env tests for "
        f"{run.version}: "
        f"{len(failing)} failing"
    ]
    lines += [f"    {name[:200]}" for name in failing]
    return lines, len(failing)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", help="the release, X.Y.Z")
    parser.add_argument("--out", type=Path, help="a user data folder (default: kernelcfg's own)")
    parser.add_argument("--near", help="the known release to start from (default: the nearest)")
    parser.add_argument("--no-serve", action="store_true", help="skip the serve-parser venv")
    parser.add_argument("--no-execute", action="store_true", help="skip the executed vectors")
    args = parser.parse_args(argv)
    if not _VERSION.match(args.version):
        parser.error(f"argument version: {args.version!r} is not X.Y.Z (such as 0.28.0)")
    started = time.monotonic()
    out: Path = (args.out or RELEASES_DIR).resolve()
    out.mkdir(parents=True, exist_ok=True)
    near = args.near or nearest(args.version, [out, RELEASES_DIR])
    wheels = _wheels_folder()
    new_wheel = download_wheel(args.version, wheels, _nice())
    near_wheel = download_wheel(near, wheels, _nice())
    with tempfile.TemporaryDirectory(dir=out, prefix=".release-") as tmp:
        run = Run(args.version, near, out, Path(tmp))
        _generate(run, new_wheel, serve=not args.no_serve)
        if run.failed:
            _summary(run, started)
            print(f"nothing written: {', '.join(run.failed)} failed", file=sys.stderr)
            return 1
        _hand_read(run)
        same = _same_as(run)
        moved = _publish(run)
        executed, wrong = ([], 0) if args.no_execute else _execute(run)
        if not args.no_execute and out == RELEASES_DIR:
            more, failing = _execute_others(run)
            executed += more
            wrong += failing
        cited = {k: _known_file(run, f"{k}-{near}.json") for k in (*HAND_READ, "vllm")}
        report = source_diff.compare(
            new_wheel,
            near_wheel,
            {k: release_text(p) for k, p in cited.items() if p.is_file()},
        )
    print(f"wrote into {out}: {', '.join(moved)}")
    if same:
        print(f"the same as {near}'s but the version, written as same_as files: {', '.join(same)}")
    print("\n".join(source_diff.render(report, args.version, near, run.kept)))
    print("\n".join(executed))
    print(
        f"Hand edits asked for: {source_diff.hand_edits(report)} changed source file(s) to review, "
        f"{wrong} executed cell(s) to explain"
    )
    _summary(run, started)
    return 0


def _summary(run: Run, started: float) -> None:
    for name, wall, outcome in run.steps:
        print(f"  {wall:7.1f} s  {name}: {outcome}")
    print(f"wall time: {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
