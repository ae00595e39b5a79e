"""``python manage.py create_token USER [--name NAME]``: print a new API token for a user."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from volcanoweb.tenancy import services


class Command(BaseCommand):
    help = "Create an API token for USER and print it (it cannot be shown again)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="a label for the token")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no such user: {options['username']}")
        _, raw = services.create_token(user, options["name"])
        self.stdout.write(raw)
