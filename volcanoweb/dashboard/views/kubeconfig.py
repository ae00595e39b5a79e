"""The "kubeconfig" button: download a kubeconfig with a new token for the signed-in user."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from volcanoweb.kubeapi import kubeconfig


@login_required
@require_POST
def download(request: HttpRequest) -> HttpResponse:
    """Return ``kubeconfig.yaml`` as an attachment (the token is shown only in this file)."""
    config, _ = kubeconfig.build(request, request.user, token_name="dashboard kubeconfig")
    token = kubeconfig.latest_token(request.user, "dashboard kubeconfig")
    response = HttpResponse(kubeconfig.dump(config, token), content_type="application/yaml")
    response["Content-Disposition"] = 'attachment; filename="kubeconfig.yaml"'
    return response
