"""Create Volcano's built-in queues: root (not reclaimable) and default (reclaimable), both weight 1."""

from django.db import migrations

from volcanoweb.queues.builtin import ensure_builtin_queues


def create_builtin_queues(apps, schema_editor):
    ensure_builtin_queues(apps)


class Migration(migrations.Migration):
    dependencies = [("queues", "0001_initial")]

    operations = [migrations.RunPython(create_builtin_queues, migrations.RunPython.noop)]
