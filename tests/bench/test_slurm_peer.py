"""The Slurm peer (``python -m bench peer-slurm``, ``bench e2e --peer slurm``): its configuration, the parsing
of what Slurm prints, the comparison, the clean-up, and one run of a real throw-away Slurm (20 jobs, 4 clients)
where Slurm is installed (``scripts/ensure-slurm.sh``, part of ``make test``). No timing is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from bench import cli, peers, slurmconf, slurmpeer
from bench.slurmconf import Layout
from tests.bench.runbench import run_bench

ROOT = Path(__file__).resolve().parents[2]

SDIAG = """\
*******************************************************
sdiag output at Thu Dec 03 11:59:23 2026 (1796299163)
*******************************************************
Server thread count:  3
Agent queue size:     0

Jobs submitted: 20
Jobs started:   19
Jobs completed: 18
Jobs canceled:  0
Jobs failed:    1

Job states ts:  Thu Dec 03 11:59:22 2026 (1796299162)
Jobs pending:   1
Jobs running:   0
"""


def test_the_configuration_is_the_design_notes_with_every_path_in_the_scratch_folder(tmp_path: Path) -> None:
    layout = Layout(tmp_path, 30010, 30014, host="ctl", node="vm", user="alice")
    conf = slurmconf.parse_conf(slurmconf.slurm_conf(layout))
    assert conf["SchedulerType"] == "sched/backfill"
    assert conf["SelectType"] == "select/cons_tres"
    assert conf["SelectTypeParameters"] == "CR_CPU_Memory"
    params = conf["SchedulerParameters"].split(",")
    assert {"batch_sched_delay=1", "default_queue_depth=1000", "defer", "bf_continue", "max_rpc_cnt=150"} == set(params)
    assert conf["SlurmdParameters"] == "config_overrides"
    assert conf["SlurmctldHost"] == "ctl(127.0.0.1)"
    assert conf["SlurmctldPort"] == "30010-30013"
    assert conf["SlurmdPort"] == "30014"
    assert conf["SlurmUser"] == conf["SlurmdUser"] == "alice"
    assert conf["NodeName"].split()[0] == "vm"
    assert "CPUs=128" in conf["NodeName"].split()
    assert conf["PartitionName"].split()[:2] == ["bench", "Nodes=vm"]
    assert conf["AuthInfo"] == f"socket={tmp_path}/munge/munge.socket.2"
    paths = [v for k, v in conf.items() if k.endswith(("File", "Location", "Dir"))]
    assert len(paths) == 6  # two pid files, two logs, the state and the spool
    assert all(Path(p).is_relative_to(tmp_path) for p in paths), paths
    assert (conf["MinJobAge"], conf["MaxJobCount"], conf["ReturnToService"]) == ("2", "20000", "2")


def test_parse_conf_refuses_a_line_without_a_value() -> None:
    with pytest.raises(ValueError, match="not a Key=value"):
        slurmconf.parse_conf("ClusterName=bench\nbogus\n")


def test_the_job_is_one_cpu_of_true_with_its_output_thrown_away() -> None:
    command = slurmconf.JOB_COMMAND
    assert command[0] == "sbatch"
    assert {"-n1", "-c1", "--mem=10", "-Q"} <= set(command)
    assert command[-2:] == ("--wrap", "true")
    assert [command[i + 1] for i, a in enumerate(command) if a in ("-o", "-e")] == ["/dev/null", "/dev/null"]


def test_queue_states_count_waiting_and_unfinished_jobs() -> None:
    states = slurmconf.queue_states("PENDING\nRUNNING\nPENDING\nCOMPLETING\nCOMPLETED\n\n")
    assert states == {"PENDING": 2, "RUNNING": 1, "COMPLETING": 1, "COMPLETED": 1}
    assert slurmconf.waiting(states) == 2
    assert slurmconf.unfinished(states) == 4
    assert slurmconf.waiting({}) == slurmconf.unfinished({}) == 0


def test_queue_states_refuse_what_is_not_a_state() -> None:
    with pytest.raises(ValueError, match="not a job state"):
        slurmconf.queue_states("slurm_load_jobs error: Unable to contact slurm controller\n")


def test_sdiag_gives_the_job_counters_and_refuses_output_without_them() -> None:
    assert slurmconf.sdiag_jobs(SDIAG) == {"submitted": 20, "started": 19, "completed": 18, "canceled": 0, "failed": 1}
    with pytest.raises(ValueError, match="started"):
        slurmconf.sdiag_jobs(SDIAG.replace("Jobs started:   19\n", ""))


def test_node_state() -> None:
    line = "NodeName=vm Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE+NOT_RESPONDING ThreadsPerCore=1"
    assert slurmconf.node_state(line) == "IDLE+NOT_RESPONDING"
    with pytest.raises(ValueError, match="no State="):
        slurmconf.node_state("Node vm not found")


def test_check_names_refused_lost_and_failed_jobs() -> None:
    good = {"submitted": 20, "started": 20, "completed": 20, "canceled": 0, "failed": 0}
    assert slurmconf.check(20, 20, good, 0) == []
    problems = slurmconf.check(19, 20, slurmconf.sdiag_jobs(SDIAG), 1)
    assert "1 of 20 sbatch calls failed" in problems
    assert "slurmctld counted 20 submissions, sbatch 19" in problems
    assert "18 of 19 jobs completed" in problems
    assert "1 jobs failed, 0 were cancelled" in problems
    assert "1 jobs were still in the queue at the end" in problems


def test_the_section_rates_count_from_the_first_sbatch_call() -> None:
    sub = {"start": 100.0, "end": 104.0, "latencies": [0.01 * (i + 1) for i in range(100)], "errors": []}
    waited = {"started": 105.0, "finished": 110.0, "states": {}, "polls": 12}
    good = {"submitted": 100, "started": 100, "completed": 100, "canceled": 0, "failed": 0}
    out = slurmconf.section(sub, waited, good, [])
    assert out["jobs_per_second"] == 20.0
    assert out["jobs_per_second_to_last_finished"] == 10.0
    assert out["submission"]["jobs_per_second"] == 25.0
    assert (out["submit_latency"]["Perc50"], out["submit_latency"]["Perc99"]) == (500.0, 990.0)
    assert out["ok"] is True
    never = slurmconf.section(sub, {**waited, "started": None, "finished": None}, good, ["late"])
    assert never["jobs_per_second"] is None
    assert never["ok"] is False


def test_strip_options_drops_the_comparisons_own_options() -> None:
    argv = ["--peer", "slurm", "--jobs", "2000", "--rounds=3", "--clients", "20", "--out", "x.json", "--ws-clients=0"]
    assert peers.strip_options(argv) == ["--jobs", "2000", "--clients", "20", "--ws-clients=0"]


def _figures(rate: float | None, ok: bool = True) -> dict[str, Any]:
    return {"ok": ok, "jobs_per_second": rate, "submit_latency_p50_ms": 1.0, "submit_latency_p99_ms": 2.0}


def test_compare_gives_the_ratio_per_round_and_of_the_medians() -> None:
    rounds = [
        {"volcanoweb": _figures(15.0), "slurm": _figures(60.0)},
        {"volcanoweb": _figures(12.0), "slurm": _figures(40.0)},
        {"volcanoweb": _figures(None, ok=False), "slurm": _figures(50.0)},
    ]
    out = peers.compare(rounds)
    assert [r["ratio_volcanoweb_to_slurm"] for r in out["rounds"]] == [0.25, 0.3, None]
    assert out["median_jobs_per_second"] == {"volcanoweb": 13.5, "slurm": 50.0}
    assert out["ratio_volcanoweb_to_slurm"] == 0.27
    assert out["ok"] is False
    assert "favours volcanoweb" in out["note"]


def test_e2e_with_the_peer_alternates_and_passes_the_same_jobs_and_clients(monkeypatch: Any, capsys: Any) -> None:
    calls: list[list[str]] = []

    def fake(argv: list[str]) -> dict[str, Any]:
        calls.append(argv[3:])
        if argv[3] == "e2e":
            return {
                "end_to_end": {"ok": True, "jobs_per_second": 15.0, "api_latency": {"Perc50": 90.0, "Perc99": 400.0}}
            }
        return {"peer": {"ok": True, "jobs_per_second": 60.0, "submit_latency": {"Perc50": 300.0, "Perc99": 900.0}}}

    monkeypatch.setattr(peers, "_run_json", fake)
    monkeypatch.setattr(slurmpeer, "missing_binaries", lambda: [])
    argv = ["e2e", "--peer", "slurm", "--jobs", "50", "--clients", "5", "--rounds", "2", "--ws-clients", "0"]
    assert cli.main(argv) == 0
    volcanoweb = ["e2e", "--jobs", "50", "--clients", "5", "--ws-clients", "0"]
    slurm = ["peer-slurm", "--jobs", "50", "--clients", "5"]
    assert calls == [volcanoweb, slurm, volcanoweb, slurm]
    report = json.loads(capsys.readouterr().out)["comparison"]
    assert report["ratio_volcanoweb_to_slurm"] == 0.25
    assert report["rounds"][0]["slurm"]["submit_latency_p99_ms"] == 900.0


def test_without_slurm_both_commands_say_so_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # sbatch and squeue live in /usr/bin: not on this PATH
    for argv in (["peer-slurm", "--jobs", "2"], ["e2e", "--peer", "slurm", "--jobs", "2"]):
        out = subprocess.run(
            [sys.executable, "-m", "bench", *argv], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        assert out.returncode == 2, out.stderr
        assert "make bench-peer" in out.stderr
        assert "sbatch" in out.stderr


def test_kill_marked_ends_every_process_of_the_run(tmp_path: Path) -> None:
    env = {**os.environ, slurmpeer.MARKER: str(tmp_path)}
    procs = [subprocess.Popen(["sleep", "300"], env=env) for _ in range(2)]
    other = subprocess.Popen(["sleep", "300"], env={**env, slurmpeer.MARKER: str(tmp_path / "other")})
    try:
        assert set(slurmpeer.marked_processes(str(tmp_path))) == {p.pid for p in procs}
        assert len(slurmpeer.kill_marked(str(tmp_path))) == 2
        for p in procs:
            p.wait(10)
        assert slurmpeer.marked_processes(str(tmp_path)) == {}
        assert other.poll() is None
    finally:
        for p in (*procs, other):
            p.kill()
            p.wait(10)


@pytest.mark.e2e
def test_a_real_throw_away_slurm_runs_every_job_and_leaves_nothing(tmp_path: Path) -> None:
    missing = slurmpeer.missing_binaries()
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)}): scripts/ensure-slurm.sh installs it")
    before = set(os.listdir(tempfile.gettempdir()))
    peer = run_bench("peer-slurm", "--jobs", "20", "--clients", "4", "--timeout", "240", timeout=290)["peer"]
    assert peer["ok"] is True, peer["problems"]
    assert peer["slurmctld_counters"] == {"submitted": 20, "started": 20, "completed": 20, "canceled": 0, "failed": 0}
    assert peer["submission"]["submitted"] == peer["submit_latency"]["count"] == 20
    assert peer["jobs_per_second"] > 0
    assert peer["scratch_folder_removed"] is True
    left = [n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("volcanoweb-slurm-")]
    assert left == []
    assert peer["stray_processes_killed"] == []  # the daemons' own shutdown ended every job and slurmstepd
    assert not _scratch_processes()


def _scratch_processes() -> list[str]:
    """Processes whose command line names a peer's scratch folder (munged, slurmctld and slurmd do)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "volcanoweb-slurm-" in cmd:
                found.append(cmd)
    return found
