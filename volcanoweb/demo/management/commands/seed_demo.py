"""Create the demo data once and print the demo logins."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from volcanoweb.demo.services import logins, seed_demo


class Command(BaseCommand):
    help = "Create demo tenants, users, the cookbook queues and a few cookbook jobs (once)."

    def handle(self, *args: Any, **options: Any) -> str:
        created = seed_demo()
        if options["verbosity"] > 0:
            self.stdout.write("demo data created" if created else "demo data already present")
        return "\n".join(["demo logins:", *logins()])
