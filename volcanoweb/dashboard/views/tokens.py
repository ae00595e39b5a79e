"""The signed-in user's API tokens: name, scope, expiry, who minted them; revoke (and what they minted)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from volcanoweb.core.errors import ApiError
from volcanoweb.dashboard.views.common import error_info, page
from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.models import ApiToken


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    """Every token of the user, newest first, with its scope, expiry and parent (docs/adr/0025)."""
    user = request.user
    assert user.is_authenticated  # login_required
    tokens = list(ApiToken.objects.filter(user=user).select_related("parent").order_by("-created_at")[:200])
    return page(request, "dashboard/tokens.html", {"nav": "tokens", "tokens": tokens})


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke one of the user's tokens and every token it minted."""
    try:
        tenancy.revoke_token(request.user, token_id, actor=request.user)
    except ApiError as exc:
        return page(request, "dashboard/_error.html", {"error": error_info(exc)})
    return redirect("dashboard:tokens")
