"""PostgreSQL: store cycle input blobs without TOAST compression (they are zlib-compressed already)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def external_storage(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute('ALTER TABLE "insights_cycleinput" ALTER COLUMN "data" SET STORAGE EXTERNAL')


class Migration(migrations.Migration):
    dependencies = [("insights", "0001_initial")]

    operations = [migrations.RunPython(external_storage, migrations.RunPython.noop)]
