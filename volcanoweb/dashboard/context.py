"""Template context every page gets: how fast the simulated cluster's clock runs (durations depend on it), and
where its live socket connects."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest


def live_socket(request: HttpRequest) -> dict[str, Any]:
    """``live_port``: the port of the live processes pages open their socket on ("" for their own origin);
    ``live_revision``: the change-log revision the page was rendered at (``LiveRevisionMiddleware``), or None."""
    port = int(getattr(settings, "LIVE_PORT", 0) or 0)
    return {"live_port": str(port) if port else "", "live_revision": getattr(request, "live_revision", None)}


def sim_clock(request: HttpRequest) -> dict[str, Any]:
    """``sim_clock_speed`` (e.g. 10.0) when the cluster is the simulated one and its clock is not real time, else
    None; ``sim_clock_text`` says what that means for durations."""
    speed = float(getattr(settings, "SIM_CLOCK_SPEED", 1.0))
    if getattr(settings, "CLUSTER_BACKEND", "sim") != "sim" or speed == 1.0:
        return {"sim_clock_speed": None, "sim_clock_text": "", "sim_default_duration": ""}
    hour = 60 / speed
    text = (
        f"Simulated cluster, clock {speed:g}\u00d7 real time: pod run times and job durations pass {speed:g} times "
        f"faster (a 1 h job ends in {hour:g} minutes); times shown are wall-clock."
    )
    default = float(getattr(settings, "SIM_DEFAULT_DURATION", 0) or 0)
    return {"sim_clock_speed": speed, "sim_clock_text": text, "sim_default_duration": f"{default:g} s"}
