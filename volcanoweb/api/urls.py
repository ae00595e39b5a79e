"""URLs of the REST API (/api/v1/...), the OpenAPI schema and the Swagger UI (served from the sidecar)."""

from __future__ import annotations

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from volcanoweb.api import views
from volcanoweb.api.resources import NAMESPACED
from volcanoweb.api.simulate import SimulateView

app_name = "api"

urlpatterns = [
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script under the CSP.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("api/v1/apply", views.ApplyView.as_view(), name="apply"),
    path("api/v1/simulate", SimulateView.as_view(), name="simulate"),
    path("api/v1/whoami", views.WhoAmIView.as_view(), name="whoami"),
    path("api/v1/namespaces", views.NamespaceListView.as_view(), name="namespaces"),
    path("api/v1/queues", views.QueueCollectionView.as_view(), name="queues"),
    path("api/v1/queues/<str:name>", views.QueueObjectView.as_view(), name="queue"),
    path("api/v1/queues/<str:name>/open", views.QueueOpenView.as_view(), name="queue-open"),
    path("api/v1/queues/<str:name>/close", views.QueueCloseView.as_view(), name="queue-close"),
    path("api/v1/priorityclasses", views.PriorityClassCollectionView.as_view(), name="priorityclasses"),
    path("api/v1/priorityclasses/<str:name>", views.PriorityClassObjectView.as_view(), name="priorityclass"),
    path("api/v1/hypernodes", views.HyperNodeCollectionView.as_view(), name="hypernodes"),
    path("api/v1/hypernodes/<str:name>", views.HyperNodeObjectView.as_view(), name="hypernode"),
    path("api/v1/events", views.EventListView.as_view(), name="events"),
    path("api/v1/namespaces/<str:namespace>/events", views.NamespacedEventListView.as_view(), name="namespaced-events"),
    path("api/v1/audit", views.AuditListView.as_view(), name="audit"),
    path("api/v1/scheduler-config", views.SchedulerConfigView.as_view(), name="scheduler-config"),
    path(
        "api/v1/scheduler-config/versions",
        views.SchedulerConfigVersionsView.as_view(),
        name="scheduler-config-versions",
    ),
    path(
        "api/v1/scheduler-config/versions/<int:version>/activate",
        views.SchedulerConfigActivateView.as_view(),
        name="scheduler-config-activate",
    ),
    path("api/v1/tokens", views.TokenCollectionView.as_view(), name="tokens"),
    path("api/v1/tokens/<int:token_id>", views.TokenObjectView.as_view(), name="token"),
    path(
        "api/v1/namespaces/<str:namespace>/jobs/<str:name>/commands",
        views.JobCommandsView.as_view(),
        name="job-commands",
    ),
    path(
        "api/v1/namespaces/<str:namespace>/cronjobs/<str:name>/suspend",
        views.CronJobSuspendView.as_view(),
        name="cronjob-suspend",
    ),
    path(
        "api/v1/namespaces/<str:namespace>/cronjobs/<str:name>/resume",
        views.CronJobResumeView.as_view(),
        name="cronjob-resume",
    ),
    path(
        "api/v1/namespaces/<str:namespace>/cronjobs/<str:name>/run", views.CronJobRunView.as_view(), name="cronjob-run"
    ),
]

for plural in NAMESPACED:
    urlpatterns += [
        path(f"api/v1/{plural}", views.AllNamespacesView.as_view(resource_name=plural), name=plural),
        path(
            f"api/v1/namespaces/<str:namespace>/{plural}",
            views.NamespacedCollectionView.as_view(resource_name=plural),
            name=f"namespaced-{plural}",
        ),
        path(
            f"api/v1/namespaces/<str:namespace>/{plural}/<str:name>",
            views.NamespacedObjectView.as_view(resource_name=plural),
            name=f"{plural[:-1]}",
        ),
    ]

# Any other path under /api/v1/ answers a Status 404. It lives in its own urlconf, included last in
# volcanoweb/urls.py, so that the other urlconfs' API routes (insights, kubeapi) are matched first.
# The Kubernetes API's other paths (/apis/..., /api/v2, /openapi/...) answer the same Status 404, never the HTML page.
fallback_urlpatterns = [
    re_path(r"^api/v1/.*$", views.NotFoundView.as_view(), name="not-found"),
    re_path(r"^(apis|openapi)/.*$", views.NotFoundView.as_view(), name="kube-not-found"),
    re_path(r"^api/(?!v1(/|$)).*$", views.NotFoundView.as_view(), name="kube-core-not-found"),
]
