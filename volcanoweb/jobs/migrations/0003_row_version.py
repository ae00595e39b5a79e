"""Pod and PodGroup rows get a ``row_version`` that a database trigger bumps on every change (ADR 0018).

The scheduler's snapshot reads the full rows only of the ids whose version moved since its last cycle.
"""

from typing import Any

from django.db import migrations, models


def install(apps: Any, schema_editor: Any) -> None:
    from volcanoweb.jobs import rowversion

    rowversion.install(schema_editor.connection)


def uninstall(apps: Any, schema_editor: Any) -> None:
    from volcanoweb.jobs import rowversion

    rowversion.uninstall(schema_editor.connection)


HELP = (
    "bumped by the database on every change of the row (a trigger, migration jobs 0003): "
    "the scheduler's snapshot re-reads only rows whose row_version moved"
)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0002_resourcequota"),
    ]

    operations = [
        migrations.AddField(
            model_name="pod",
            name="row_version",
            field=models.BigIntegerField(default=0, editable=False, help_text=HELP),
        ),
        migrations.AddField(
            model_name="podgroup",
            name="row_version",
            field=models.BigIntegerField(default=0, editable=False, help_text=HELP),
        ),
        migrations.RunPython(install, uninstall),
    ]
