"""runstack's supervisor: a process that dies is restarted with back-off (and logged); the others keep running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from volcanoweb.core.management.commands.runstack import Supervisor


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
