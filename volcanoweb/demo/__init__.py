"""Demo tenants, users, queues and cookbook jobs (`manage.py seed_demo`)."""
