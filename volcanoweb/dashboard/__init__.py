"""Server-rendered dashboard: pages, partials for htmx, and the live-update glue."""
