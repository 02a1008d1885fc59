"""Faults on the distributed path, injected into a real `aoizora plan` of wan-tiny on v5e:2x4
(three shardings and the baselines: plan_few_shardings.py) run as a process of its own:

- a Ray worker killed mid-job: its job runs again, the plan is written and names it
  (planning.retries, one line at the end);
- this machine's raylet killed, a `ray://` cluster stopped: one line (what was lost, the
  results kept, the command that resumes), exit 75, nothing half-written, and the same
  command then finishes from the cache;
- a local compile worker killed: its jobs run again and are named;
- the cache on a full disk (a small tmpfs): the plan is right, one warning line with the
  count, no half-written entry, a rerun hits every entry that was written.

Each fault strikes once the cache holds a few entries, so it lands mid-plan. A cold run
takes 25-40 s on two shared cores; the module 4.5-7.5 minutes there (load 5-6), Ray's
starts included: 30-60 s a test, the stopped cluster up to 3.5 minutes when Ray's client
server is slow to serve the first connection (the test connects again once)."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

DRIVER = Path(__file__).with_name("plan_few_shardings.py")
RAY = Path(sys.executable).with_name("ray")
RESUMES = 75   # ExecutorLost.exit_code


def plan_command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, str(DRIVER), "plan", "--model", "wan-tiny", "--video", "tiny",
            "--topology", "v5e:2x4", "--top-k", "1", "--quiet", "--out", str(out), *extra]


def environment(cache: Path, **more: str) -> dict[str, str]:
    return {**os.environ, "AOIZORA_CACHE": str(cache), "RAY_USAGE_STATS_ENABLED": "0", **more}


def entries(cache: Path) -> int:
    """Finished results in the cache: programs and the compiler's refusals."""
    return len(glob.glob(f"{cache}/*/*.gz") + glob.glob(f"{cache}/*/*.failed.json"))


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def descendants(pid: int) -> list[int]:
    parent = {}
    for p in _pids():
        try:
            parent[p] = int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            pass
    found, grew = {pid}, True
    while grew:
        new = {p for p, pp in parent.items() if pp in found and p not in found}
        found |= new
        grew = bool(new)
    return sorted(found - {pid})


def run_with_fault(command, env, cache: Path, after: int, strike) -> tuple:
    """Runs `command`; once the cache holds `after` entries, strike(process) -> the pids it
    killed (tried again until it kills one). (rc, stdout, stderr, killed, entries then)."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    killed, at = [], None
    try:
        while proc.poll() is None and not killed:
            if entries(cache) >= after:
                at = entries(cache)
                killed = strike(proc)
            time.sleep(0.05)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out, err, killed, at


def kill_first(proc, matches) -> list[int]:
    for pid in descendants(proc.pid):
        if matches(_cmdline(pid)):
            os.kill(pid, signal.SIGKILL)
            return [pid]
    return []


def run(command, env) -> tuple[int, str, str]:
    p = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def nothing_half_written(folder: Path, cache: Path) -> None:
    """No temporary file anywhere; every cache entry has both its text and its checksum."""
    assert not list(folder.rglob(".tmp-*"))
    texts = {p.with_suffix("") for p in cache.rglob("*.gz")}
    sums = {p.with_suffix("") for p in cache.rglob("*.json")
            if not p.name.endswith(".failed.json")}
    assert texts == sums


def lost_line(stderr: str, what: str, error: str, command: str) -> int:
    """The one line of an ExecutorLost (the last on stderr, no traceback); the count kept."""
    assert "Traceback" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    m = re.fullmatch(rf"aoizora plan: error: lost {re.escape(what)} mid-plan.*\({error}: .*\); "
                     r"kept the (\d+) results finished before it in the cache \S+ \(a rerun "
                     rf"reads them\); the same command resumes: aoizora plan .*{command}", last)
    assert m, last
    return int(m.group(1))


def resumed(out: Path, env, command: list[str], kept: int) -> dict:
    """Runs the same command again: it finishes, every result kept read from the cache."""
    for _ in range(2):   # see test_a_stopped_ray_cluster_...: Ray's client server, busy
        rc, stdout, stderr = run(command, env)
        if "cannot reach the Ray cluster" not in stderr:
            break
    assert rc == 0, stderr
    plan = json.loads(out.read_text())
    assert plan["planning"]["cache_hits"] >= kept > 0
    return plan


def test_a_killed_ray_worker_is_run_again_and_named(tmp_path):
    out, cache = tmp_path / "plan.json", tmp_path / "cache"
    rc, stdout, stderr, killed, _ = run_with_fault(
        plan_command(out, "--executor", "ray"), environment(cache), cache, 2,
        lambda p: kill_first(p, lambda c: c.startswith("ray::_ray_task")))
    assert killed and rc == 0, stderr
    retries = json.loads(out.read_text())["planning"]["retries"]
    assert len(retries) == 1 and "WorkerCrashedError" in retries[0]["why"], retries
    flat = " ".join(stdout.split())   # the line wraps at the terminal's width, words whole
    assert (f"retried 1 job(s) whose worker was lost: {retries[0]['job']} "
            "(planning.retries says why)") in flat
    nothing_half_written(tmp_path, cache)


def test_a_dead_raylet_is_one_line_and_the_same_command_resumes(tmp_path):
    out, cache = tmp_path / "plan.json", tmp_path / "cache"
    command, env = plan_command(out, "--executor", "ray"), environment(cache)
    rc, _, stderr, killed, _ = run_with_fault(
        command, env, cache, 4, lambda p: kill_first(p, lambda c: "raylet/raylet " in c))
    assert killed and rc == RESUMES, stderr
    kept = lost_line(stderr, "the Ray on this machine", "LocalRayletDiedError",
                     "--executor ray")
    assert kept == entries(cache)     # each result was stored as it arrived
    assert not out.exists()
    nothing_half_written(tmp_path, cache)
    resumed(out, env, command, kept)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A Ray head started with `ray start` on 127.0.0.1, in a temporary folder of its own
    (short: Ray's socket paths are limited), stopped by killing its own processes only
    (`ray stop` would stop every Ray on the machine)."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="ray", dir="/tmp")
        self.gcs, self.client = _free_port(), _free_port()
        self.address = f"ray://127.0.0.1:{self.client}"

    def start(self) -> None:
        subprocess.run([str(RAY), "start", "--head", "--port", str(self.gcs),
                        "--ray-client-server-port", str(self.client),
                        "--node-ip-address", "127.0.0.1", "--num-cpus", "2",
                        "--include-dashboard=false", "--disable-usage-stats",
                        "--temp-dir", self.folder], check=True, capture_output=True,
                       timeout=120, env={**os.environ, "RAY_AUTH_MODE": "disabled",
                                         # the client server's wait for the server it starts
                                         # per client (30 s: too short on a busy machine)
                                         "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "120"})

    def stop(self, *_) -> list[int]:
        mine = [p for p in _pids() if self.folder in _cmdline(p)
                or re.search(rf":{self.gcs}\b", _cmdline(p))]
        for p in mine:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return mine


@pytest.fixture
def cluster():
    c = Cluster()
    c.start()
    yield c
    c.stop()
    time.sleep(0.5)
    shutil.rmtree(c.folder, ignore_errors=True)


def test_a_stopped_ray_cluster_is_one_line_and_the_same_command_resumes(tmp_path, cluster):
    """Ray's client notices a cluster gone after its reconnection grace period (30 s by
    default; 3 s here)."""
    out, cache = tmp_path / "plan.json", tmp_path / "cache"
    command = plan_command(out, "--executor", cluster.address)
    env = environment(cache, RAY_AUTH_MODE="disabled", RAY_CLIENT_RECONNECT_GRACE_PERIOD="3")
    for _ in range(3):   # Ray's client server may fail to serve a new client on a busy
        # machine (its server per client not up in time): the plan, not yet faulted, again
        rc, _, stderr, killed, _ = run_with_fault(command, env, cache, 4, cluster.stop)
        if killed or "cannot reach the Ray cluster" not in stderr:
            break
    else:
        pytest.skip("Ray's client server served no client in three tries, before any fault: "
                    f"the fault could not be injected ({stderr.strip().splitlines()[-1]})")
    assert killed and rc == RESUMES, stderr
    kept = lost_line(stderr, f"the Ray cluster {cluster.address}", "ConnectionError",
                     f"--executor {cluster.address}")
    assert kept == entries(cache) and not out.exists()
    nothing_half_written(tmp_path, cache)
    cluster.start()
    resumed(out, env, command, kept)


def test_a_killed_local_worker_has_its_jobs_run_again_and_named(tmp_path):
    out, cache = tmp_path / "plan.json", tmp_path / "cache"
    rc, stdout, stderr, killed, _ = run_with_fault(
        plan_command(out), environment(cache), cache, 2,
        lambda p: kill_first(p, lambda c: "spawn_main" in c))
    assert killed and rc == 0, stderr
    retries = json.loads(out.read_text())["planning"]["retries"]
    assert retries and all(r["why"].startswith("its worker process died (BrokenProcessPool")
                           for r in retries), retries
    assert f"retried {len(retries)} job(s) whose worker was lost: " in " ".join(stdout.split())
    nothing_half_written(tmp_path, cache)


def _mount_namespace() -> list[str] | None:
    """The unshare command that gives a process a mount namespace of its own where it may
    mount a tmpfs (as root, or as the root of a user namespace), or None."""
    for command in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user",
                                              "--mount"]):
        try:
            if subprocess.run([*command, "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                              capture_output=True, timeout=30).returncode == 0:
                return command
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def test_a_full_cache_disk_is_one_warning_line_and_a_rerun_hits_what_was_written(tmp_path):
    """The cache on a 160 KB tmpfs (the plan's entries take about 550 KB), mounted in a
    namespace of its own; the plan runs twice there, and the cache is listed before the
    namespace (and its tmpfs) goes away."""
    unshare = _mount_namespace()
    if unshare is None:
        pytest.skip("no mount namespace here (unshare --mount refused, with or without a "
                    "user namespace): cannot mount a small tmpfs for the cache")
    cache, first, second = tmp_path / "cache", tmp_path / "first.json", tmp_path / "second.json"
    cache.mkdir()
    script = f"""
        mount -t tmpfs -o size=160k tmpfs {cache}
        "$@" --out {first} >{tmp_path}/out1 2>{tmp_path}/err1; echo $? >{tmp_path}/rc1
        find {cache} -type f | sort >{tmp_path}/listing
        "$@" --out {second} >{tmp_path}/out2 2>{tmp_path}/err2; echo $? >{tmp_path}/rc2
    """
    subprocess.run([*unshare, "sh", "-c", script, "sh", *plan_command(tmp_path / "x.json")],
                   env=environment(cache), check=True, timeout=400)
    read = lambda name: (tmp_path / name).read_text()
    assert read("rc1").strip() == "0", read("err1")
    warnings = [line for line in read("err1").splitlines() if "cache entr" in line]
    assert len(warnings) == 1, read("err1")
    m = re.fullmatch(rf"aoizora: warning: (\d+) cache entries could not be written to "
                     rf"{cache} \(No space left on device\): the results are good but a rerun "
                     r"computes them again; free space there or point AOIZORA_CACHE at a "
                     r"folder with room", warnings[0])
    assert m and int(m.group(1)) > 0, warnings
    listing = read("listing").split()
    assert listing and not [f for f in listing if "/.tmp-" in f]
    assert {f[:-3] for f in listing if f.endswith(".gz")} == {
        f[:-5] for f in listing if f.endswith(".json") and not f.endswith(".failed.json")}
    written = sum(f.endswith((".gz", ".failed.json")) for f in listing)
    assert read("rc2").strip() == "0", read("err2")
    a, b = (json.loads(p.read_text()) for p in (first, second))
    assert b["planning"]["cache_hits"] >= written > 0 and a["choice"] == b["choice"]
