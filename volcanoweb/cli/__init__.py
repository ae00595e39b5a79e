"""``vcctl``: a Volcano-compatible command-line client for the volcanoweb REST API."""
