"""Tokens get a scope (existing ones keep their user's rights: admin), a parent, and an expiry: a token
that had none expires API_TOKEN_TTL_DAYS after this migration."""

from datetime import timedelta

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def expire_unbounded_tokens(apps, schema_editor):
    expires = timezone.now() + timedelta(days=settings.API_TOKEN_TTL_DAYS)
    apps.get_model("tenancy", "ApiToken").objects.filter(expires_at__isnull=True).update(expires_at=expires)


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy", "0003_feed_resource_version"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="parent",
            field=models.ForeignKey(
                blank=True,
                help_text="minted by",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="children",
                to="tenancy.apitoken",
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[
                    ("read", "Read only"),
                    ("submit", "Submit (write as a member)"),
                    ("admin", "Admin (all the user's rights)"),
                ],
                default="admin",
                max_length=10,
            ),
        ),
        migrations.RunPython(expire_unbounded_tokens, migrations.RunPython.noop),
    ]
