"""PostgreSQL with the change log stamped at commit (ADR 0024)."""
