"""Create the configured PostgreSQL database when it does not exist yet."""

from __future__ import annotations

from django.conf import settings


def ensure_database() -> bool:
    """Create the default database on a PostgreSQL server if missing; return True if created."""
    cfg = settings.DATABASES["default"]
    if not str(cfg["ENGINE"]).endswith("postgresql"):
        return False
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    params = {
        "host": cfg.get("HOST") or "127.0.0.1",
        "port": cfg.get("PORT") or 5432,
        "user": cfg.get("USER") or None,
        "password": cfg.get("PASSWORD") or None,
        "dbname": "postgres",
        "connect_timeout": 5,
    }
    with psycopg.connect(make_conninfo("", **params), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [cfg["NAME"]]).fetchone()
        if exists:
            return False
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(cfg["NAME"])))
        return True
