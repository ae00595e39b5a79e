"""Pods and PodGroups lose ``row_version``: the incremental snapshot keys its rows on ``resource_version``, the
change log's last revision of each row, which every change of a row moves whoever writes it (ADR 0029)."""

from typing import Any

from django.db import migrations

TABLES = ("jobs_pod", "jobs_podgroup")


def drop_triggers(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            if schema_editor.connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_row_version ON {table}")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_row_version")
        if schema_editor.connection.vendor == "postgresql":
            cursor.execute("DROP FUNCTION IF EXISTS jobs_bump_row_version()")


class Migration(migrations.Migration):
    dependencies = [("jobs", "0006_hypernode")]

    operations = [
        migrations.RunPython(drop_triggers, migrations.RunPython.noop),
        migrations.RemoveField(model_name="pod", name="row_version"),
        migrations.RemoveField(model_name="podgroup", name="row_version"),
    ]
