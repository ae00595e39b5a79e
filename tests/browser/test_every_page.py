"""Every page of the product in headless Chromium, in one walk: it renders (status, a visible heading, one skip
link), loads with the Content-Security-Policy enforced and no violation reported (so no inline script or handler is
left), and reads in both colour schemes (issue 29, item 6): in dark mode an empty meter looks empty and labels and
secondary text keep a readable contrast (WCAG AA, 4.5:1) against what is behind them. Screenshots of both schemes.

One walk rather than one per property: each page load costs Chromium about half a CPU-second, and the three walks
loaded the same pages four times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.browser.conftest import login, shot
from tests.browser.test_dashboard import PAGES, PASSWORD, demo, run_cycles  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Collects every securitypolicyviolation event of the page (inline script, handler, eval, off-origin load).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  var where = (e.sourceFile || "") + ":" + e.lineNumber;
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + where);
});
"""

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
#: The pages PAGES leaves out, so that every page of the product is seen: a queue's history, a job's insights, the
#: recent cycles, the tokens, a CronJob's and a JobFlow's page, the 404 page, the scheduler configuration with its
#: diff from the built-in one open (its added and removed lines kept their light colours on a dark ground), and the
#: queue editor open (its labels).
MORE_PAGES = {
    "queue-edit": "/queues/",
    "queue-history": "/queues/ml-training/insights/",
    "job-insights": "/jobs/ml/pytorch-distributed/insights/",
    "cycles": "/cycles/",
    "tokens": "/tokens/",
    "cronjob-detail": "/cronjobs/data/daily-report/",
    "jobflow-detail": "/jobflows/data/etl/",
    "not-found": "/jobs/ml/no-such-job/",
    "scheduler-diff": "/scheduler/",
}
#: Pages not of the dashboard's own making (drf-spectacular's Swagger UI, Django's admin): the policy only.
FOREIGN = {"api-docs": "/api/docs/", "admin": "/admin/"}
#: Pages seen in the light scheme alone (the job's insights page was never part of the dark-scheme review).
LIGHT_ONLY = {"job-insights"}


def _workflows() -> None:
    """The cookbook's CronJob and the product's JobFlow template in namespace data, for their pages."""
    from volcanoweb.apply import apply_documents
    from volcanoweb.tenancy.access import SYSTEM

    root = Path(__file__).resolve().parents[2] / "volcanoweb" / "demo"
    docs = [yaml.safe_load((root / "cookbook" / "14-cronjob-daily-report.yaml").read_text())]
    docs += list(yaml.safe_load_all((root / "templates" / "15-jobflow-etl.yaml").read_text()))
    apply_documents(SYSTEM, [d for d in docs if d], default_namespace="data")


def _loaded(page: Any, name: str) -> None:
    """Wait for what a page does after its load, and open what it shows only on a click."""
    page.wait_for_load_state("load")
    if name == "submit":
        page.wait_for_selector("[data-dry-run]")
    if name == "overview":
        page.wait_for_function("() => !document.querySelector('canvas.phase-chart') || window.Chart")
        page.wait_for_selector("#live-status[data-state=live]")  # the page's WebSocket is connected
    if name == "api-docs":
        page.wait_for_selector(".swagger-ui .info")  # its start-up script ran
    if name == "queue-edit":  # the editor's labels (Weight, Guarantee, Capability)
        page.locator("tr#q-ml-training").get_by_role("button", name="Edit ml-training").click()
        page.get_by_label("Weight").wait_for()
    if name == "scheduler-diff":
        page.get_by_text("Changes from built-in").first.click()
        page.locator("pre.diff .diff-add").first.wait_for()


def _policy(response: Any, name: str) -> None:
    policy = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy, (name, policy)
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0], (name, policy)


def _visit(page: Any, name: str, url: str, found: dict[str, Any]) -> None:
    """Load one page in the light scheme, then reload it in the dark one; note into ``found`` its policy violations
    (both loads), its low contrasts and bright meters (dark) and how many meters it has (dark)."""
    response = page.goto(url)
    assert response is not None, name
    assert response.status == (404 if name == "not-found" else 200), name
    _policy(response, name)
    _loaded(page, name)
    if name in PAGES:
        assert page.locator("h1").first.is_visible(), name
        assert page.locator("a.skip-link").count() == 1, name
    if name not in FOREIGN:
        shot(page, name)
    last = name in FOREIGN or name in LIGHT_ONLY
    if last:  # the page's last load: every resource and fragment asked for, so all its violations are in
        page.wait_for_load_state("networkidle")
    # (a violation reported after this point of a light load would still fail the test: Chromium logs it as a
    # console error, which the page's guard refuses)
    found["csp"][name] = page.evaluate("window.__csp")
    if last:
        return
    page.emulate_media(color_scheme="dark")
    response = page.reload()
    assert response is not None, name
    _loaded(page, name)
    probe = page.evaluate(PROBE, CHECKED)
    found["meters"] += len(probe["meters"])
    bright = [x for x in probe["meters"] if x > 0.1]
    if probe["low"] or bright:
        found["dark"][name] = {"low contrast": probe["low"][:8], "bright meters": bright[:4]}
    shot(page, f"{name}-dark")
    page.wait_for_load_state("networkidle")
    found["csp"][name] += page.evaluate("window.__csp")
    page.emulate_media(color_scheme="light")


def test_every_page_renders_under_the_policy_in_both_schemes(session: Any, demo: None) -> None:  # noqa: F811
    page, guard = session
    page.add_init_script(RECORD_VIOLATIONS)
    run_cycles()
    _workflows()
    found: dict[str, Any] = {"csp": {}, "dark": {}, "meters": 0}
    _visit(page, "login", "/login/", found)
    login(page, "admin", PASSWORD)
    for name, url in {**PAGES, **MORE_PAGES, **FOREIGN}.items():
        _visit(page, name, url, found)
    assert set(found["csp"]) == {"login", *PAGES, *MORE_PAGES, *FOREIGN}
    assert not {name: seen for name, seen in found["csp"].items() if seen}, found["csp"]
    assert found["meters"] > 0  # the overview and the queues have meters
    assert not found["dark"], found["dark"]
    # the tenant switch still submits on change without its former inline handler
    page.goto("/jobs/")
    if page.locator("#tenant-select").count():
        with page.expect_navigation():
            page.select_option("#tenant-select", index=1)
        assert page.evaluate("window.__csp") == []
    guard.errors = [e for e in guard.errors if "status of 404" not in e]  # the 404 page's own status
    guard.check()
