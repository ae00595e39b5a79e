"""The runtime's controllers, one module per controller: the job controller (``job.py`` and its parts
``job_*.py``), the podgroup controller (``podgroup.py``) and the queue controller (``queue.py``).

``runtime/services.py`` is their entry point (it locks the rows and hands them over); the workflows app
holds its CronJob and JobFlow controllers the same way, in ``volcanoweb/workflows/controllers/``.
"""
