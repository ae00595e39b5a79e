"""A password change or reset ends the user's other sessions and closes their open WebSockets.

Django invalidates every session whose stored password hash no longer matches (the signed-in session that
changed it keeps going through ``update_session_auth_hash``); a WebSocket was authenticated once, at connect,
so the receiver below closes the user's sockets as soon as the new password is committed
(``live.revocation.close_group`` on the user's control group). Connected from the tenancy app's ``ready``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_init, post_save

from volcanoweb.live import groups, revocation

_LOADED = "_volcanoweb_loaded_password"


def _remember_password(sender: Any, instance: Any, **kwargs: Any) -> None:
    setattr(instance, _LOADED, instance.password)


def _on_user_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    loaded = getattr(instance, _LOADED, None)
    if not created and loaded is not None and loaded != instance.password:
        revocation.close_group(groups.user_group(instance.pk))
    setattr(instance, _LOADED, instance.password)


def connect() -> None:
    """Connect the receivers (once)."""
    user = get_user_model()
    post_init.connect(_remember_password, sender=user, dispatch_uid="tenancy-password-loaded")
    post_save.connect(_on_user_saved, sender=user, dispatch_uid="tenancy-password-changed")
