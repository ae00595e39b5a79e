"""volcanoweb benchmarks: the scheduler core in-process (docs/performance.md), later end to end.

``python -m bench smoke`` (size S, correctness only), ``python -m bench core`` and
``python -m bench all``; see docs/performance.md.
"""
