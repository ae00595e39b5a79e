"""The what-if shares run the scheduler's own proportion water-filling (``scheduler.proportion``)."""

from __future__ import annotations

import math

from volcanoweb.dashboard.shares import QueueDemand, deserved_shares


def test_weights_split_the_cluster_when_every_queue_is_busy() -> None:
    out = deserved_shares({"cpu": 120.0}, [QueueDemand("a", 2), QueueDemand("b", 1)])
    assert math.isclose(out["a"]["cpu"], 80)
    assert math.isclose(out["b"]["cpu"], 40)


def test_capability_caps_and_the_rest_flows_to_others() -> None:
    out = deserved_shares({"cpu": 100.0}, [QueueDemand("a", 1, capability={"cpu": 10}), QueueDemand("b", 1)])
    assert math.isclose(out["a"]["cpu"], 10)
    assert math.isclose(out["b"]["cpu"], 90)


def test_request_bounds_the_share_and_guarantee_is_a_floor() -> None:
    out = deserved_shares(
        {"cpu": 100.0},
        [
            QueueDemand("small", 5, request={"cpu": 5}),
            QueueDemand("big", 1, guarantee={"cpu": 30}, request={"cpu": 200}),
        ],
    )
    assert math.isclose(out["small"]["cpu"], 5)
    assert math.isclose(out["big"]["cpu"], 95)


def test_empty_cluster_gives_nothing() -> None:
    assert deserved_shares({}, [QueueDemand("a", 1)]) == {"a": {}}


def test_a_capability_of_zero_is_unlimited_as_for_the_scheduler() -> None:
    out = deserved_shares({"cpu": 100.0}, [QueueDemand("a", 1, capability={"cpu": 0}), QueueDemand("b", 1)])
    assert math.isclose(out["a"]["cpu"], 50)


def test_guarantees_of_idle_queues_are_held_back() -> None:
    """Σ guarantees counts every queue (the scheduler's session does), also one without demand."""
    alone = deserved_shares({"cpu": 100.0}, [QueueDemand("a", 1)])
    assert math.isclose(alone["a"]["cpu"], 100)
    held = deserved_shares({"cpu": 100.0}, [QueueDemand("a", 1)], total_guarantee={"cpu": 40})
    assert math.isclose(held["a"]["cpu"], 60)


def test_pods_and_extended_resources_keep_the_schedulers_dimension_order() -> None:
    from volcanoweb.dashboard.shares import dimensions

    assert dimensions(["nvidia.com/gpu", "memory", "cpu", "pods", "ephemeral-storage"]) == (
        "cpu",
        "memory",
        "pods",
        "ephemeral-storage",
        "nvidia.com/gpu",
    )
    out = deserved_shares(
        {"cpu": 64000.0, "nvidia.com/gpu": 8.0},
        [
            QueueDemand("gpu", 1, request={"cpu": 8000, "nvidia.com/gpu": 8}),
            QueueDemand("cpu", 1, request={"cpu": 100000}),
        ],
    )
    assert math.isclose(out["gpu"]["cpu"], 8000)
    assert math.isclose(out["gpu"]["nvidia.com/gpu"], 8, abs_tol=0.1)  # the scheduler's tolerance
    assert math.isclose(out["cpu"]["cpu"], 56000, abs_tol=0.1)
    assert out["cpu"]["nvidia.com/gpu"] == 0


def test_the_plugin_and_the_dashboard_share_one_function() -> None:
    from scheduler.plugins import shares as plugin
    from scheduler.proportion import water_fill
    from volcanoweb.dashboard import shares

    assert plugin.water_fill is water_fill
    assert shares.water_fill is water_fill
