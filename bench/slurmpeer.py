"""``python -m bench peer-slurm``: the same single-CPU jobs on a throw-away single-host Slurm, as a peer.

Installs nothing: where Debian's ``slurm-wlm`` and ``munge`` are installed (``make bench-peer`` installs
them), a run makes a scratch folder, writes a munge key and the slurm.conf of :mod:`bench.slurmconf`
there, starts munged (its own socket), slurmctld and slurmd in sessions of their own, submits N jobs of
``true`` from C concurrent ``sbatch`` clients, polls ``squeue`` until no job waits (the last one started)
and until every job has ended, checks ``sdiag``'s counters, then stops everything and removes the folder,
on failure and on Ctrl-C too. Every process it starts, and so every slurmstepd and job, carries
``VOLCANOWEB_SLURM_PEER=<folder>`` in its environment: the last step kills any such process still there.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import slurmconf
from bench.slurmconf import Layout

MARKER = "VOLCANOWEB_SLURM_PEER"
MUNGE_THREADS = 10
POLL_SECONDS = 0.1


def missing_binaries() -> list[str]:
    """The binaries of :data:`slurmconf.BINARIES` not on PATH (nor in /usr/sbin, where Debian puts daemons)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [b for b in slurmconf.BINARIES if shutil.which(b, path=path) is None]


def _binary(name: str) -> str:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return shutil.which(name, path=path) or name


def _free_ports(count: int) -> int:
    """The first of ``count`` consecutive free TCP ports on 127.0.0.1 (free when looked at)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = int(probe.getsockname()[1])
        if first + count > 65535:
            continue
        with contextlib.ExitStack() as stack:
            try:
                for port in range(first, first + count):
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return first
    raise RuntimeError(f"no {count} consecutive free ports found")


def layout_for(root: Path) -> Layout:
    """This host's layout: its short hostname as the controller, the current user as SlurmUser."""
    first = _free_ports(5)  # four for slurmctld, one for slurmd
    host = socket.gethostname().split(".", 1)[0]
    return Layout(root, first, first + 4, host=host, user=pwd.getpwuid(os.getuid()).pw_name)


class Cluster:
    """munged, slurmctld and slurmd of one scratch folder; ``stop`` leaves no process and no folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.layout = layout_for(root)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.env = {**os.environ, "SLURM_CONF": str(self.layout.conf), MARKER: str(root)}
        self.strays: list[str] = []  # what ``stop`` had to kill once the daemons were gone

    def start(self, timeout: float = 60.0) -> None:
        """Write the key and configuration, start the three daemons, wait until the node is idle."""
        for folder in self.layout.folders():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for folder in (self.root, self.root / "munge"):
            folder.chmod(0o711)  # munged wants its socket's folders searchable by all (and no one else writing)
        fd = os.open(self.layout.munge_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as key:
            key.write(os.urandom(1024))
        self.layout.conf.write_text(slurmconf.slurm_conf(self.layout))
        log = self.root / "log"
        self._daemon("munged", [*self._munged_args(), "-F"])
        self._wait(lambda: self.layout.munge_socket.exists(), timeout, "munged made no socket", log / "munged.log")
        conf = str(self.layout.conf)
        self._daemon("slurmctld", [_binary("slurmctld"), "-D", "-c", "-f", conf])
        self._daemon("slurmd", [_binary("slurmd"), "-D", "-f", conf, "-N", self.layout.node])
        self._wait(self._node_idle, timeout, "the node did not become idle", log / "slurmctld.log")

    def _munged_args(self) -> list[str]:
        m = self.root / "munge"
        return [
            _binary("munged"),
            f"--socket={self.layout.munge_socket}",
            f"--key-file={self.layout.munge_key}",
            f"--pid-file={m / 'munged.pid'}",
            f"--seed-file={m / 'munged.seed'}",
            f"--log-file={self.root / 'log' / 'munged.log'}",
            f"--num-threads={MUNGE_THREADS}",
        ]

    def _daemon(self, name: str, argv: list[str]) -> None:
        out = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - the child holds it
        with out:
            self.procs[name] = subprocess.Popen(
                argv,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _wait(self, ready: Any, timeout: float, what: str, log: Path) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [f"{n} exited with {p.returncode}" for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{'; '.join(dead)}: {self._tail(log)}{self._outputs()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} within {timeout:.0f} s: {self._tail(log)}{self._outputs()}")

    def _tail(self, path: Path) -> str:
        with contextlib.suppress(OSError):
            return path.read_text(errors="replace")[-2000:]
        return f"(no {path.name})"

    def _outputs(self) -> str:
        return "".join(f"\n[{n}] {self._tail(self.root / 'log' / f'{n}.out')}" for n in self.procs)

    def command(self, *argv: str, timeout: float = 30.0) -> str:
        """Run a Slurm client against this cluster; its stdout (raises on a non-zero exit)."""
        out = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        if out.returncode:
            raise RuntimeError(f"{' '.join(argv)} exited with {out.returncode}: {out.stderr.strip()[-500:]}")
        return out.stdout

    def _node_idle(self) -> bool:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            text = self.command("scontrol", "-o", "show", "node", self.layout.node, timeout=10)
            return slurmconf.node_state(text).startswith("IDLE")
        return False

    def stop(self) -> None:
        """Stop the daemons (slurm first, munged last), kill what is left of the run, remove the folder."""
        with contextlib.suppress(Exception):
            if all(self.procs[n].poll() is None for n in ("munged", "slurmctld") if n in self.procs):
                self.command("scontrol", "shutdown", timeout=15)
        for name in ("slurmd", "slurmctld", "munged"):
            if name in self.procs:
                _end(self.procs[name], 10.0 if name != "munged" else 5.0)
        self.strays = kill_marked(str(self.root))
        shutil.rmtree(self.root, ignore_errors=True)


def _end(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process's group, then SIGKILL it after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
    with contextlib.suppress(ProcessLookupError):  # what the group may still hold (forked children)
        os.killpg(proc.pid, signal.SIGKILL)


def marked_processes(value: str) -> dict[int, str]:
    """pid -> command line of the processes whose environment has ``MARKER=value``."""
    needle = f"{MARKER}={value}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return found


def kill_marked(value: str) -> list[str]:
    """SIGKILL every process marked with ``value``, until none is left; their command lines."""
    killed: list[str] = []
    for _ in range(20):
        found = marked_processes(value)
        if not found:
            break
        for pid, cmd in found.items():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(cmd.strip())
        time.sleep(0.1)
    return killed


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """A started cluster in a fresh scratch folder, stopped and removed on the way out, whatever happens.

    SIGTERM and SIGHUP are turned into KeyboardInterrupt meanwhile, so that they clean up as Ctrl-C does;
    while it stops, these three signals are ignored, so that a second Ctrl-C cannot cut the clean-up short."""
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in signals} if in_main else {}

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in previous:
        if sig != signal.SIGINT:
            signal.signal(sig, interrupt)
    root = Path(tempfile.mkdtemp(prefix="volcanoweb-slurm-"))
    peer: Cluster | None = None
    try:
        peer = Cluster(root)
        peer.start()
        yield peer
    finally:
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        if peer is not None:
            peer.stop()
        shutil.rmtree(root, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def version() -> str:
    """``slurmctld -V`` (e.g. ``slurm-wlm 22.05.8``)."""
    out = subprocess.run([_binary("slurmctld"), "-V"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or out.stderr.strip()


def submit(peer: Cluster, jobs: int, clients: int, stop: threading.Event) -> dict[str, Any]:
    """``jobs`` sbatch calls from ``clients`` threads (one call at a time each); latencies and failures."""
    lock = threading.Lock()
    numbers = iter(range(jobs))
    latencies: list[float] = []
    errors: list[str] = []

    def client() -> None:
        while not stop.is_set():
            with lock:
                i = next(numbers, None)
            if i is None:
                return
            t0 = time.perf_counter()
            try:
                out = subprocess.run(slurmconf.JOB_COMMAND, env=peer.env, capture_output=True, timeout=120, check=False)
                error = f"{i}: exit {out.returncode}: {out.stderr.decode(errors='replace').strip()[-300:]}"
            except (OSError, subprocess.TimeoutExpired) as exc:
                out, error = None, f"{i}: {exc!r}"
            dt = time.perf_counter() - t0
            with lock:
                if out is not None and out.returncode == 0:
                    latencies.append(dt)
                else:
                    errors.append(error)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():  # join in slices, so that Ctrl-C reaches the main thread
            t.join(0.5)
    return {"start": start, "end": time.perf_counter(), "latencies": latencies, "errors": errors}


def wait_queue(peer: Cluster, timeout: float) -> dict[str, Any]:
    """Poll ``squeue`` until no job waits (the last one started), then until every job has ended.

    Returns the perf_counter times of both (None when ``timeout`` ran out first) and the last states seen."""
    deadline = time.perf_counter() + timeout
    started = finished = None
    states: dict[str, int] = {}
    polls = 0
    while time.perf_counter() < deadline:
        states = slurmconf.queue_states(peer.command("squeue", "-h", "-o", "%T"))
        polls += 1
        now = time.perf_counter()
        if started is None and slurmconf.waiting(states) == 0:
            started = now
        if started is not None and slurmconf.unfinished(states) == 0:
            finished = now
            break
        time.sleep(POLL_SECONDS)
    return {"started": started, "finished": finished, "states": states, "polls": polls}


def counters(peer: Cluster, expected: int, timeout: float = 10.0) -> dict[str, int]:
    """sdiag's job counters, read again (up to ``timeout``) until ``expected`` jobs have completed."""
    deadline = time.monotonic() + timeout
    while True:
        found = slurmconf.sdiag_jobs(peer.command("sdiag"))
        if found["completed"] + found["failed"] + found["canceled"] >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _uptime() -> str:
    out = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(peer: Cluster, jobs: int, clients: int, timeout: float) -> dict[str, Any]:
    """One measured run on a started cluster: the report section (without params)."""
    stop = threading.Event()
    try:
        sub = submit(peer, jobs, clients, stop)
    finally:
        stop.set()
    waited = wait_queue(peer, timeout)
    submitted = len(sub["latencies"])
    found = counters(peer, submitted)
    problems = slurmconf.check(submitted, jobs, found, slurmconf.unfinished(waited["states"]))
    if waited["started"] is None:
        problems.append(f"jobs were still waiting after {timeout:.0f} s")
    return slurmconf.section(sub, waited, found, problems)


def run(jobs: int, clients: int, timeout: float = 1800.0) -> dict[str, Any]:
    """Start a throw-away cluster, measure, stop it: the ``peer`` section of the report."""
    params = {
        "jobs": jobs,
        "clients": clients,
        "job_command": " ".join(slurmconf.JOB_COMMAND),
        "slurm": version(),
        "scheduler_parameters": slurmconf.SCHEDULER_PARAMETERS,
        "munge_threads": MUNGE_THREADS,
        "poll_seconds": POLL_SECONDS,
    }
    report: dict[str, Any] = {"status": "measured", "params": params, "uptime_before": _uptime()}
    with cluster() as peer:
        params["node"] = f"{peer.layout.node}: {peer.layout.cpus} CPUs (declared), {peer.layout.memory_mb} MB"
        report["uptime_cluster_up"] = _uptime()
        report.update(measure(peer, jobs, clients, timeout))
        report["uptime_after"] = _uptime()
    report["stray_processes_killed"] = peer.strays
    report["scratch_folder_removed"] = not peer.root.exists()
    report["note"] = slurmconf.NOTE
    return report
