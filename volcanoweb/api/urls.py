"""URLs of the REST API (/api/v1/...), the OpenAPI schema and the Swagger UI (served from the sidecar)."""

from __future__ import annotations

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from volcanoweb.api import (
    actions,
    apply,
    audit,
    events,
    hypernodes,
    namespaced,
    namespaces,
    notfound,
    priorityclasses,
    queues,
    schedulerconfig,
    tokens,
    whoami,
)
from volcanoweb.api.resources import NAMESPACED
from volcanoweb.api.simulate import SimulateView

app_name = "api"

urlpatterns = [
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script under the CSP.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("api/v1/apply", apply.ApplyView.as_view(), name="apply"),
    path("api/v1/simulate", SimulateView.as_view(), name="simulate"),
    path("api/v1/whoami", whoami.WhoAmIView.as_view(), name="whoami"),
    path("api/v1/namespaces", namespaces.NamespaceListView.as_view(), name="namespaces"),
    path("api/v1/queues", queues.QueueCollectionView.as_view(), name="queues"),
    path("api/v1/queues/<str:name>", queues.QueueObjectView.as_view(), name="queue"),
    path("api/v1/queues/<str:name>/open", queues.QueueOpenView.as_view(), name="queue-open"),
    path("api/v1/queues/<str:name>/close", queues.QueueCloseView.as_view(), name="queue-close"),
    path("api/v1/priorityclasses", priorityclasses.PriorityClassCollectionView.as_view(), name="priorityclasses"),
    path("api/v1/priorityclasses/<str:name>", priorityclasses.PriorityClassObjectView.as_view(), name="priorityclass"),
    path("api/v1/hypernodes", hypernodes.HyperNodeCollectionView.as_view(), name="hypernodes"),
    path("api/v1/hypernodes/<str:name>", hypernodes.HyperNodeObjectView.as_view(), name="hypernode"),
    path("api/v1/events", events.EventListView.as_view(), name="events"),
    path(
        "api/v1/namespaces/<str:namespace>/events", events.NamespacedEventListView.as_view(), name="namespaced-events"
    ),
    path("api/v1/audit", audit.AuditListView.as_view(), name="audit"),
    path("api/v1/scheduler-config", schedulerconfig.SchedulerConfigView.as_view(), name="scheduler-config"),
    path(
        "api/v1/scheduler-config/versions",
        schedulerconfig.SchedulerConfigVersionsView.as_view(),
        name="scheduler-config-versions",
    ),
    path(
        "api/v1/scheduler-config/versions/<int:version>/activate",
        schedulerconfig.SchedulerConfigActivateView.as_view(),
        name="scheduler-config-activate",
    ),
    path("api/v1/tokens", tokens.TokenCollectionView.as_view(), name="tokens"),
    path("api/v1/tokens/<int:token_id>", tokens.TokenObjectView.as_view(), name="token"),
    path(
        "api/v1/namespaces/<str:namespace>/jobs/<str:name>/commands",
        actions.JobCommandsView.as_view(),
        name="job-commands",
    ),
    path(
        "api/v1/namespaces/<str:namespace>/cronjobs/<str:name>/suspend",
        actions.CronJobSuspendView.as_view(),
        name="cronjob-suspend",
    ),
    path(
        "api/v1/namespaces/<str:namespace>/cronjobs/<str:name>/resume",
        actions.CronJobResumeView.as_view(),
        name="cronjob-resume",
    ),
    path(
        "api/v1/namespaces/<str:namespace>/cronjobs/<str:name>/run",
        actions.CronJobRunView.as_view(),
        name="cronjob-run",
    ),
]

for plural in NAMESPACED:
    urlpatterns += [
        path(f"api/v1/{plural}", namespaced.AllNamespacesView.as_view(resource_name=plural), name=plural),
        path(
            f"api/v1/namespaces/<str:namespace>/{plural}",
            namespaced.NamespacedCollectionView.as_view(resource_name=plural),
            name=f"namespaced-{plural}",
        ),
        path(
            f"api/v1/namespaces/<str:namespace>/{plural}/<str:name>",
            namespaced.NamespacedObjectView.as_view(resource_name=plural),
            name=f"{plural[:-1]}",
        ),
    ]

# Any other path under /api/v1/ answers a Status 404. It lives in its own urlconf, included last in
# volcanoweb/urls.py, so that the other urlconfs' API routes (insights, kubeapi) are matched first.
# The Kubernetes API's other paths (/apis/..., /api/v2, /openapi/...) answer the same Status 404, never the HTML page.
fallback_urlpatterns = [
    re_path(r"^api/v1/.*$", notfound.NotFoundView.as_view(), name="not-found"),
    re_path(r"^(apis|openapi)/.*$", notfound.NotFoundView.as_view(), name="kube-not-found"),
    re_path(r"^api/(?!v1(/|$)).*$", notfound.NotFoundView.as_view(), name="kube-core-not-found"),
]
