"""Volcano's own scheduler unit-test cases, reproduced as data (see ``volcano_harness.py``).

Every case names the Go test function and case it reproduces (the test id is
``<package>:<GoTest>:<case name>``). Cases we decide differently are listed with their reason
in ``docs/scheduler.md``; for them our own outcome is asserted, and that it still differs.
"""

from __future__ import annotations

import pytest

from scheduler.config import ConfigError
from tests.scheduler.volcano_harness import (
    VolcanoCase,
    action_arg_problems,
    config_of,
    load_cases,
    outcome_problems,
    run_case,
    score_problems,
    victim_problems,
    victim_task_problems,
)

CASES = list(load_cases())


def test_every_case_names_its_go_test_and_is_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    for c in CASES:
        assert c.file.startswith("pkg/scheduler/"), c.file
        assert c.file.endswith("_test.go"), c.file
        assert c.go_test.startswith("Test"), c.go_test
        assert "expect" in c.data, f"{c.id}: no expectation"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_same_decisions_as_volcano(case: VolcanoCase) -> None:
    refused = case.data.get("ours", {}).get("config_error")
    if refused:
        # A configuration Volcano runs with (logging the problem) and we refuse at load time.
        assert str(case.data["deviation"]).strip(), "a deviation needs its reason"
        with pytest.raises(ConfigError) as err:
            config_of(case)
        assert refused in str(err.value)
        return
    if "action_args" in case.data["expect"]:
        # An action's argument parsing (Go's parseArguments).
        assert "deviation" not in case.data
        problems = action_arg_problems(case, case.data["expect"])
        assert not problems, f"{case.file} {case.go_test} / {case.name}:\n" + "\n".join(problems)
        return
    if "victim_task_count" in case.data["expect"]:
        # ssn.VictimTasks on an opened session.
        assert "deviation" not in case.data
        problems = victim_task_problems(case, case.data["expect"])
        assert not problems, f"{case.file} {case.go_test} / {case.name}:\n" + "\n".join(problems)
        return
    if "victims" in case.data["expect"]:
        # ssn.Preemptable / ssn.Reclaimable on an opened session.
        assert "deviation" not in case.data
        problems = victim_problems(case, case.data["expect"])
        assert not problems, f"{case.file} {case.go_test} / {case.name}:\n" + "\n".join(problems)
        return
    if {"scores", "predicates", "hypernode_scores"} & set(case.data["expect"]):
        # ssn.NodeOrderFn / ssn.PredicateFn on an opened session, before any action.
        assert "deviation" not in case.data
        problems = score_problems(case, case.data["expect"])
        assert not problems, f"{case.file} {case.go_test} / {case.name}:\n" + "\n".join(problems)
        return
    result = run_case(case)
    if "deviation" not in case.data:
        problems = outcome_problems(case, result, case.data["expect"])
        assert not problems, f"{case.file} {case.go_test} / {case.name}:\n" + "\n".join(problems)
        return
    # A documented deviation: our outcome is pinned, and it must still differ from Volcano's.
    assert str(case.data["deviation"]).strip(), "a deviation needs its reason"
    ours = outcome_problems(case, result, case.data["ours"])
    assert not ours, f"{case.id}: our documented outcome changed:\n" + "\n".join(ours)
    assert outcome_problems(case, result, case.data["expect"]), f"{case.id} now matches Volcano: promote it"
