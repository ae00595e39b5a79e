"""The Content-Security-Policy in headless Chromium: every dashboard page (and the API docs, the admin)
loads with the policy enforced and no violation reported, so no inline script or handler is left."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import login
from tests.browser.test_dashboard import PAGES, PASSWORD, demo, run_cycles  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Collects every securitypolicyviolation event of the page (inline script, handler, eval, off-origin load).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  var where = (e.sourceFile || "") + ":" + e.lineNumber;
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + where);
});
"""


def test_every_page_passes_the_csp(session: Any, demo: None) -> None:  # noqa: F811 - the demo fixture
    page, guard = session
    page.add_init_script(RECORD_VIOLATIONS)
    run_cycles()
    login(page, "admin", PASSWORD)
    pages = {
        **PAGES,
        "queue-insights": "/queues/ml-training/insights/",
        "job-insights": "/jobs/ml/pytorch-distributed/insights/",
        "cycles": "/cycles/",
        "api-docs": "/api/docs/",
        "admin": "/admin/",
        "login": "/login/",
    }
    seen: dict[str, list[str]] = {}
    for name, url in pages.items():
        response = page.goto(url)
        assert response is not None, name
        assert response.status == 200, name
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy, (name, policy)
        assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0], policy
        page.wait_for_load_state("networkidle")
        if name == "api-docs":
            page.wait_for_selector(".swagger-ui .info")  # its start-up script ran
        if name == "overview":
            page.wait_for_selector("#live-status[data-state=live]")
        seen[name] = page.evaluate("window.__csp")
    assert all(not v for v in seen.values()), seen
    # the tenant switch still submits on change without its former inline handler
    page.goto("/jobs/")
    if page.locator("#tenant-select").count():
        with page.expect_navigation():
            page.select_option("#tenant-select", index=1)
        assert page.evaluate("window.__csp") == []
    guard.check()
