"""The runtime's controllers, one module per controller (``job*.py`` for the job controller's parts).

``runtime/services.py`` is their entry point (it locks the rows and hands them over); the workflows app
holds its CronJob and JobFlow controllers the same way, in ``volcanoweb/workflows/controllers/``.
"""
