"""Dashboard routes (mounted at "/")."""

from django.contrib.auth import views as auth_views
from django.urls import path

from volcanoweb.dashboard.views import (
    cluster,
    common,
    jobs,
    kubeconfig,
    logs,
    overview,
    queues,
    submit,
    tokens,
    workflows,
)

app_name = "dashboard"

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="registration/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("tenant/", common.switch_tenant, name="switch-tenant"),
    path("kubeconfig/", kubeconfig.download, name="kubeconfig"),
    path("tokens/", tokens.token_list, name="tokens"),
    path("tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token-revoke"),
    path("", overview.overview, name="overview"),
    path("queues/", queues.queue_list, name="queues"),
    path("queues/<slug:name>/usage/", queues.queue_usage, name="queue-usage"),
    path("queues/<slug:name>/edit/", queues.queue_edit, name="queue-edit"),
    path("queues/<slug:name>/preview/", queues.queue_preview, name="queue-preview"),
    path("queues/<slug:name>/state/", queues.queue_state, name="queue-state"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/bulk/", jobs.job_bulk, name="jobs-bulk"),
    path("jobs/<slug:namespace>/<str:name>/", jobs.job_detail, name="job"),
    path("jobs/<slug:namespace>/<str:name>/action/", jobs.job_action, name="job-action"),
    path("jobs/<slug:namespace>/<str:name>/pods/<str:pod>/logs/", logs.pod_log, name="pod-log"),
    path("submit/", submit.submit, name="submit"),
    path("submit/validate/", submit.validate, name="submit-validate"),
    path("submit/apply/", submit.apply, name="submit-apply"),
    path("submit/templates/<str:name>", submit.template_text, name="submit-template"),
    path("nodes/", cluster.nodes, name="nodes"),
    path("nodes/<str:name>/inject/", cluster.node_inject, name="node-inject"),
    path("nodes/<str:name>/pods/", cluster.node_pods, name="node-pods"),
    path("scheduler/", cluster.scheduler_config, name="scheduler"),
    path("scheduler/validate/", cluster.scheduler_validate, name="scheduler-validate"),
    path("cronjobs/", workflows.cronjobs, name="cronjobs"),
    path("cronjobs/<slug:namespace>/<str:name>/", workflows.cronjob_detail, name="cronjob"),
    path("cronjobs/<slug:namespace>/<str:name>/action/", workflows.cronjob_action, name="cronjob-action"),
    path("jobflows/", workflows.jobflows, name="jobflows"),
    path("jobflows/<slug:namespace>/<str:name>/", workflows.jobflow_detail, name="jobflow"),
    path("audit/", workflows.audit_log, name="audit"),
]
