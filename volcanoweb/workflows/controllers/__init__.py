"""Volcano's CronJob and JobFlow controllers, one module each: they read job phases and create/delete Jobs.

Their deviations from Volcano are listed in docs/controllers.md.

Both controllers create Jobs only through :func:`volcanoweb.jobs.services.apply_job` (so admission,
PodGroups and audit happen as for any other Job) and delete them through ``delete_job``. They never
drive job phases: the runtime's job controller does, and these controllers only read ``Job.phase``.

Every function takes the current time as ``now`` (timezone-aware) so tests can use a controllable
clock. Each sync runs in one transaction holding a row lock on the CronJob/JobFlow, so concurrent
ticks (beat + an embedded loop, two workers) serialise and the second one sees the first one's
``lastScheduleTime``: a start time is never run twice.

The runtime app holds its controllers the same way, in ``volcanoweb/runtime/controllers/``.
"""
