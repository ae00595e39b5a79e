"""Django's SQLite backend with the process's write transactions queued in arrival order (see ``base``)."""
