"""``resolve --batch --jobs N``: how many workers start (the CPUs this process may use:
its affinity mask and a cgroup CPU quota), and the lines made in this process when no
worker can start. Killed workers and a killed parent are in ``test_robustness.py``."""

from __future__ import annotations

import errno
import json
import multiprocessing.synchronize
from pathlib import Path

import pytest

from kernelcfg.output import parallel
from tests.cli_helpers import run


def _cgroups(tmp_path: Path, own: str, files: dict[str, str]) -> tuple[str, str]:
    """A fake cgroup mount (``files`` under it) and a fake ``/proc/self/cgroup``."""
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "own").write_text(own)
    return str(root), str(tmp_path / "own")


@pytest.mark.parametrize(
    ("own", "files", "cpus"),
    [
        ("0::/\n", {"cpu.max": "200000 100000\n"}, 2),
        ("0::/\n", {"cpu.max": "max 100000\n"}, None),
        ("0::/\n", {"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs: rounded up
        ("0::/\n", {"cpu.max": "5000 100000\n"}, 1),
        ("0::/\n", {"cpu.max": "garbage\n"}, None),
        ("0::/\n", {}, None),
        # the smallest quota on the way up from the process's own cgroup
        ("0::/a/b\n", {"a/cpu.max": "100000 100000", "a/b/cpu.max": "400000 100000"}, 1),
        # a container's own path is not under the mount: the levels that exist count
        ("0::/docker/abc\n", {"cpu.max": "300000 100000"}, 3),
        # cgroup v1, the cpu controller mounted apart or with cpuacct
        ("4:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, None),
        (
            "3:cpu,cpuacct:/job\n",
            {
                "cpu,cpuacct/job/cpu.cfs_quota_us": "400000\n",
                "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
            },
            4,
        ),
        ("", {"cpu.max": "100000 100000"}, None),  # no cgroups listed
    ],
)
def test_cpu_quota_is_read_from_the_processs_cgroups(
    tmp_path: Path, own: str, files: dict[str, str], cpus: int | None
) -> None:
    root, own_file = _cgroups(tmp_path, own, files)
    assert parallel.cpu_quota(root, own_file) == cpus


def test_cpu_quota_without_proc_is_none(tmp_path: Path) -> None:
    assert parallel.cpu_quota(str(tmp_path), str(tmp_path / "absent")) is None


def test_available_jobs_is_capped_by_the_quota(tmp_path: Path) -> None:
    """Whatever this machine's own cgroup paths, the quota at the mount's top counts."""
    files = {
        "cpu.max": "100000 100000",
        "cpu/cpu.cfs_quota_us": "100000",
        "cpu/cpu.cfs_period_us": "100000",
    }
    root, _ = _cgroups(tmp_path, "", files)
    for both in ("cpu,cpuacct", "cpuacct,cpu"):
        (Path(root) / both).symlink_to(Path(root) / "cpu")
    assert parallel.available_jobs(root) == 1
    assert parallel.available_jobs(str(tmp_path / "none")) >= 1


def _batch(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "many.jsonl"
    line = ["--device", "h100", "--moe-backend", "triton"]
    path.write_text("".join(json.dumps({"id": i, "argv": line}) + "\n" for i in range(count)))
    return path


def test_jobs_over_the_usable_cpus_are_capped_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "available_jobs", lambda: 2)
    path = _batch(tmp_path, 2 * parallel.CHUNK)
    capped = run("resolve", "--batch", str(path), "--jobs", "5")
    serial = run("resolve", "--batch", str(path), "--jobs", "1")
    assert capped.exit_code == 0
    assert capped.stdout == serial.stdout
    note = "note: --jobs 5 capped at 2, the CPUs this process may use\n"
    assert capped.stderr.count(note) == 1
    assert capped.stderr.replace(note, "") == serial.stderr
    assert "capped" not in run("resolve", "--batch", str(path), "--jobs", "2").stderr


def test_no_shared_memory_resolves_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No /dev/shm (absent, read-only or full): the pool's semaphores cannot be made; the
    lines are made here, the same, with one note."""

    def no_semaphore(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")

    path = _batch(tmp_path, 2 * parallel.CHUNK)
    serial = run("resolve", "--batch", str(path), "--jobs", "1")
    monkeypatch.setattr(parallel, "available_jobs", lambda: 2)
    monkeypatch.setattr(multiprocessing.synchronize.SemLock, "__init__", no_semaphore)
    alone = run("resolve", "--batch", str(path), "--jobs", "2")
    assert alone.exit_code == 0
    assert alone.stdout == serial.stdout
    assert alone.stderr.startswith(
        "note: --jobs 2: worker processes cannot start (their semaphores in /dev/shm: "
        "No such file or directory); resolving in this process\n"
    )
    assert alone.stderr.count("\n") == serial.stderr.count("\n") + 1
