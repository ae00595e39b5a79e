"""Every page in both colour schemes (issue 29, item 6): in dark mode an empty meter looks empty and labels and
secondary text keep a readable contrast (WCAG AA, 4.5:1) against what is behind them; screenshots of both."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PAGES, PASSWORD, demo, run_cycles  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Computes, in the page, the contrast of each visible text element of the kinds checked against the first
#: opaque background behind it, and the luminance of every meter's (empty) track.
PROBE = """
(selectors) => {
  function rgb(text) { const m = text.match(/[\\d.]+/g); return m ? m.map(Number) : [0, 0, 0, 0]; }
  function lum(c) {
    const v = c.slice(0, 3).map(x => {
      x /= 255;
      return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
  }
  function behind(el) {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length < 4 || c[3] > 0.5) return c;
    }
    return rgb(getComputedStyle(document.body).backgroundColor);
  }
  const low = [];
  for (const sel of selectors) {
    document.querySelectorAll(sel).forEach(el => {
      if (!el.offsetParent || !el.textContent.trim()) return;
      const a = lum(rgb(getComputedStyle(el).color)), b = lum(behind(el));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < 4.5) low.push(sel + " '" + el.textContent.trim().slice(0, 30) + "' " + ratio.toFixed(2));
    });
  }
  const meters = Array.from(document.querySelectorAll(".meter, .action-bar"))
    .map(m => lum(rgb(getComputedStyle(m).backgroundColor)));
  return {low: low, meters: meters};
}
"""
CHECKED = [
    "label",
    ".reason p",
    ".timeline .ev-msg",
    ".timeline .ev-obj",
    ".badge",
    ".meter-head",
    ".muted",
    "th",
    "pre.diff span",
]
#: The pages PAGES leaves out, so that every page of the product is seen in both schemes: a queue's history, the
#: recent cycles, the tokens, a CronJob's and a JobFlow's page, the 404 page, and the scheduler configuration with
#: its diff from the built-in one open (its added and removed lines kept their light colours on a dark ground).
MORE_PAGES = {
    "queue-history": "/queues/ml-training/insights/",
    "cycles": "/cycles/",
    "tokens": "/tokens/",
    "cronjob-detail": "/cronjobs/data/daily-report/",
    "jobflow-detail": "/jobflows/data/etl/",
    "not-found": "/jobs/ml/no-such-job/",
    "scheduler-diff": "/scheduler/",
}


def _workflows() -> None:
    """The cookbook's CronJob and the product's JobFlow template in namespace data, for their pages."""
    from pathlib import Path

    import yaml

    from volcanoweb.apply import apply_documents
    from volcanoweb.tenancy.access import SYSTEM

    root = Path(__file__).resolve().parents[2] / "volcanoweb" / "demo"
    docs = [yaml.safe_load((root / "cookbook" / "14-cronjob-daily-report.yaml").read_text())]
    docs += list(yaml.safe_load_all((root / "templates" / "15-jobflow-etl.yaml").read_text()))
    apply_documents(SYSTEM, [d for d in docs if d], default_namespace="data")


def _prepare(page: Any, name: str) -> None:
    """Open what a page shows only on a click: the queue editor's labels, the configuration's diff."""
    if name == "submit":
        page.wait_for_selector("[data-dry-run]")
    if name == "queue-edit":  # the editor's labels (Weight, Guarantee, Capability)
        page.locator("tr#q-ml-training").get_by_role("button", name="Edit ml-training").click()
        page.get_by_label("Weight").wait_for()
    if name == "scheduler-diff":
        page.get_by_text("Changes from built-in").first.click()
        page.locator("pre.diff .diff-add").first.wait_for()


def _check(page: Any, name: str, problems: dict[str, Any]) -> int:
    """Screenshot the page in both schemes; note its low contrasts and bright meters in the dark one. Returns the
    number of meters seen in the dark scheme."""
    meters = 0
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.reload()
        page.wait_for_load_state("load")
        _prepare(page, name)
        found = page.evaluate(PROBE, CHECKED)
        if scheme == "dark":
            meters += len(found["meters"])
            bright = [x for x in found["meters"] if x > 0.1]
            if found["low"] or bright:
                problems[name] = {"low contrast": found["low"][:8], "bright meters": bright[:4]}
            shot(page, f"{name}-dark")
        else:
            shot(page, name)
    return meters


def test_every_page_reads_in_the_dark_scheme(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    run_cycles()
    _workflows()
    problems: dict[str, Any] = {}
    page.goto("/login/")
    _check(page, "login", problems)
    login(page, "admin", PASSWORD)
    meters_seen = 0
    for name, url in {**PAGES, "queue-edit": "/queues/", **MORE_PAGES}.items():
        page.goto(url)
        meters_seen += _check(page, name, problems)
    assert meters_seen > 0  # the overview and the queues have meters
    assert not problems, problems
    guard.errors = [e for e in guard.errors if "status of 404" not in e]  # the 404 page's own status
    guard.check()
