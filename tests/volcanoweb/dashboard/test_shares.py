"""The what-if water-filling mirrors Volcano's proportion plugin."""

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
