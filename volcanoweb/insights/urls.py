"""Routes of insights: API paths under /api/v1/ and dashboard pages (included before the API catch-all)."""

from __future__ import annotations

from django.urls import path

from volcanoweb.insights import api, views

app_name = "insights"

urlpatterns = [
    path("api/v1/queues/<str:name>/history", api.QueueHistoryView.as_view(), name="queue-history"),
    path("api/v1/queues/<str:name>/time-to-start", api.QueueTimeToStartView.as_view(), name="queue-time-to-start"),
    path(
        "api/v1/namespaces/<str:namespace>/jobs/<str:name>/timeline",
        api.JobTimelineView.as_view(),
        name="job-timeline",
    ),
    path(
        "api/v1/namespaces/<str:namespace>/jobs/<str:name>/suggestions",
        api.JobSuggestionsView.as_view(),
        name="job-suggestions",
    ),
    path("api/v1/audit/<int:audit_id>/effects", api.AuditEffectsView.as_view(), name="audit-effects"),
    path("api/v1/cycles", api.CycleListView.as_view(), name="cycles"),
    path("api/v1/cycles/<int:cycle>/snapshot", api.CycleSnapshotView.as_view(), name="cycle-snapshot"),
    path("queues/<slug:name>/insights/", views.queue_page, name="queue"),
    path("jobs/<slug:namespace>/<str:name>/insights/", views.job_insights, name="job"),
    path("insights/overview/", views.overview_history, name="overview"),
    path("cycles/", views.cycles_page, name="cycles"),
    path("cycles/<int:cycle>/snapshot", views.cycle_download, name="cycle-download"),
]
