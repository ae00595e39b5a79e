"""Close open WebSockets the moment their credentials go: logout, token revocation, lost membership.

The receivers below send a ``live.revoke`` control message to the socket's control group (see
``live.groups``): the login session's on logout, the token's when it is revoked or expires by deletion, the
user's when a tenant membership is removed or changed, or the user is deactivated or deleted. The consumer
drops its buffer, leaves every group and closes with code 4401 (a browser signs in again and reconnects).
Messages are sent after the surrounding transaction commits.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from volcanoweb.live import groups

log = logging.getLogger(__name__)


def close_group(group: str) -> None:
    """Close every socket of ``group`` once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: _send(group))


def _send(group: str) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "live.revoke", "code": 4401}
    try:
        if isinstance(layer, InMemoryChannelLayer):
            async_to_sync(layer.group_send)(group, message)
        else:
            import asyncio

            from volcanoweb.live.broadcast import SEND_TIMEOUT, _loop

            asyncio.run_coroutine_threadsafe(layer.group_send(group, message), _loop()).result(SEND_TIMEOUT)
    except Exception:  # never break the logout or the revocation that caused it
        log.exception("could not close the live sockets of %s", group)


def _on_logout(sender: Any, request: Any = None, user: Any = None, **kwargs: Any) -> None:
    session = getattr(request, "session", None)
    key = getattr(session, "session_key", None)
    if key:
        close_group(groups.session_group(key))


def _on_token_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if instance.revoked_at is not None:
        close_group(groups.token_group(instance.pk))


def _on_token_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    close_group(groups.token_group(instance.pk))


def _on_membership_changed(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    if not created:  # removed, or its role changed: the socket reconnects with the new rights
        close_group(groups.user_group(instance.user_id))


def _on_user_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    if not created and not instance.is_active:
        close_group(groups.user_group(instance.pk))


def _on_user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    close_group(groups.user_group(instance.pk))


def connect() -> None:
    """Connect the receivers (called once from the tenancy app's ``ready``)."""
    from volcanoweb.tenancy.models import ApiToken, Membership

    user_logged_out.connect(_on_logout, dispatch_uid="live-logout")
    post_save.connect(_on_token_saved, sender=ApiToken, dispatch_uid="live-token-saved")
    post_delete.connect(_on_token_deleted, sender=ApiToken, dispatch_uid="live-token-deleted")
    post_save.connect(_on_membership_changed, sender=Membership, dispatch_uid="live-membership-saved")
    post_delete.connect(_on_membership_changed, sender=Membership, dispatch_uid="live-membership-deleted")
    post_save.connect(_on_user_saved, sender=get_user_model(), dispatch_uid="live-user-saved")
    post_delete.connect(_on_user_deleted, sender=get_user_model(), dispatch_uid="live-user-deleted")
