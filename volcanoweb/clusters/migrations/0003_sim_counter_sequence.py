"""PostgreSQL: the sequence the simulated cluster numbers resourceVersions and pod uids from (ADR 0017).

It starts above both counters of the state row, so no number (and no pod uid) is given twice. SQLite keeps the
counters in the state row.
"""

from typing import Any

from django.db import migrations

SEQUENCE = "clusters_sim_counter"


def create_sequence(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE} AS bigint CACHE 1")
    state = apps.get_model("clusters", "SimState").objects.filter(pk=1).first()
    if state is not None:
        schema_editor.execute("SELECT setval(%s, %s)", [SEQUENCE, max(state.resource_version, state.seq, 1)])


def drop_sequence(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP SEQUENCE IF EXISTS {SEQUENCE}")


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0002_simpod_restart_count"),
    ]

    operations = [
        migrations.RunPython(create_sequence, drop_sequence),
    ]
