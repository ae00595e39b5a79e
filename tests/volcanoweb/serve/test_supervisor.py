"""runstack's supervisor: a process that dies is restarted with back-off (and logged); the others keep running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from volcanoweb.serve.management.commands.runstack import Supervisor


class FakeProc:
    counter = 100

    def __init__(self, cmd: list[str]) -> None:
        FakeProc.counter += 1
        self.pid, self.cmd, self.returncode = FakeProc.counter, cmd, None
        self.signals: list[int] = []

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)
        self.returncode = -sig

    def wait(self, timeout: float | None = None) -> int:
        return self.returncode or 0

    def kill(self) -> None:
        self.returncode = -9


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(clock: Clock) -> tuple[Supervisor, list[str], list[FakeProc]]:
    logs: list[str] = []
    spawned: list[FakeProc] = []

    def spawn(cmd: list[str]) -> Any:
        spawned.append(FakeProc(cmd))
        return spawned[-1]

    commands = {"web": ["uvicorn"], "worker": ["celery", "worker"], "beat": ["celery", "beat"]}
    return Supervisor(commands, spawn=spawn, log=logs.append, clock=clock), logs, spawned


def test_a_dead_worker_is_restarted_after_a_back_off_and_the_others_are_untouched() -> None:
    clock = Clock()
    supervisor, logs, spawned = make(clock)
    supervisor.start_all()
    web, worker, beat = spawned
    worker.returncode = -9  # kill -9 of the controller worker
    supervisor.tick()
    assert any("worker exited with status -9; restarting it in 1s" in line for line in logs), logs
    assert web.signals == []
    assert beat.signals == []
    assert supervisor.children["web"].proc is web
    clock.now += 0.5
    supervisor.tick()
    assert len(spawned) == 3  # still backing off
    clock.now += 0.6
    supervisor.tick()
    assert len(spawned) == 4
    assert spawned[3].cmd == ["celery", "worker"]
    assert supervisor.children["worker"].proc is spawned[3]


def test_crashes_in_a_row_double_the_wait_up_to_the_cap_and_a_long_run_resets_it() -> None:
    clock = Clock()
    supervisor, _logs, _spawned = make(clock)
    supervisor.start_all()
    waits = []
    for _ in range(7):
        supervisor.children["beat"].proc.returncode = 1  # type: ignore[union-attr]
        supervisor.tick()
        waits.append(supervisor.children["beat"].restart_at - clock.now)  # type: ignore[operator]
        clock.now = supervisor.children["beat"].restart_at  # type: ignore[assignment]
        supervisor.tick()
    assert waits == [1, 2, 4, 8, 16, 30, 30]
    clock.now += 61  # ran long enough: the next crash starts the back-off again
    supervisor.children["beat"].proc.returncode = 1  # type: ignore[union-attr]
    supervisor.tick()
    assert supervisor.children["beat"].restart_at == clock.now + 1


def test_stop_all_terminates_every_running_child() -> None:
    supervisor, _logs, spawned = make(Clock())
    supervisor.start_all()
    supervisor.stop_all(grace=0.1)
    assert all(proc.signals == [signal.SIGTERM] for proc in spawned)


def test_real_processes_survive_a_sibling_killed_with_sigkill() -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    logs: list[str] = []
    supervisor = Supervisor(
        {"web": sleeper, "worker": sleeper},
        spawn=lambda cmd: subprocess.Popen(cmd),
        log=logs.append,
        base=0.05,
    )
    supervisor.start_all()
    try:
        web, worker = supervisor.children["web"].proc, supervisor.children["worker"].proc
        assert web is not None
        assert worker is not None
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(5)
        for _ in range(100):  # at most ~5 s; normally two ticks
            supervisor.tick()
            restarted = supervisor.children["worker"].proc
            if restarted is not None and restarted is not worker:
                break
            time.sleep(0.05)
        restarted = supervisor.children["worker"].proc
        assert restarted is not None
        assert restarted is not worker
        assert restarted.poll() is None
        assert web.poll() is None  # the web process was never touched
        assert supervisor.children["web"].proc is web
        assert any(f"worker exited with status -{signal.SIGKILL}" in line for line in logs), logs
    finally:
        supervisor.stop_all(grace=2)


#: A "master" that starts a "worker" holding a listening port (as uvicorn's master starts its workers), then
#: waits. The worker writes a marker once it has the port; one that cannot bind it exits (Address already in use).
MASTER = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]])
time.sleep(120)
"""
WORKER = """
import os, socket, sys, time
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen()
open(os.path.join(sys.argv[2], f"bound-{os.getpid()}"), "w").close()
time.sleep(120)
"""


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for its reaper (the first worker's parent, the killed master, is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def _wait_for(predicate: Any, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds  # a deadline to give up, not a speed requirement
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_a_master_killed_with_sigkill_takes_its_workers_along_and_restarts_on_the_same_port(tmp_path: Any) -> None:
    """Issue 28: kill -9 of uvicorn's master left its workers holding the port; every restart then failed with
    "Address already in use". The supervisor starts each child in a process group of its own and kills the
    group when the leader dies, so the restarted master's worker binds the port again."""
    from volcanoweb.serve.management.commands.runstack import GroupProcess

    port = _free_port()
    command = [sys.executable, "-c", MASTER, WORKER, str(port), str(tmp_path)]
    logs: list[str] = []
    supervisor = Supervisor({"web": command}, spawn=lambda cmd: GroupProcess(cmd), log=logs.append, base=0.05)
    supervisor.start_all()
    try:
        assert _wait_for(lambda: len(list(tmp_path.glob("bound-*"))) == 1)
        (first_worker,) = [int(p.name.split("-")[1]) for p in tmp_path.glob("bound-*")]
        master = supervisor.children["web"].proc
        assert master is not None
        os.kill(master.pid, signal.SIGKILL)
        master.wait(5)

        def restarted_and_bound() -> bool:
            supervisor.tick()
            return len(list(tmp_path.glob("bound-*"))) == 2

        assert _wait_for(restarted_and_bound), logs
        assert supervisor.children["web"].proc is not master
        assert any("the rest of its process group was killed" in line for line in logs), logs
        assert _dead(first_worker)
    finally:
        supervisor.stop_all(grace=2)
