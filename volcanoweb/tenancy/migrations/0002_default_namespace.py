"""Create the Kubernetes ``default`` namespace (no tenant: platform admins only)."""

from django.db import migrations


def create_default_namespace(apps, schema_editor):
    apps.get_model("tenancy", "Namespace").objects.get_or_create(name="default")


class Migration(migrations.Migration):
    dependencies = [("tenancy", "0001_initial")]

    operations = [migrations.RunPython(create_default_namespace, migrations.RunPython.noop)]
