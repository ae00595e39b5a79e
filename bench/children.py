"""Child processes for the bench's clients (socket readers, Kubernetes watches): a browser or an informer runs in
a process of its own, so the bench's clients must not share the GIL of the process that sends the REST requests.

Children are spawned (they import the standard library and their client library alone), each with a pipe: the
child's target gets its end first, then its own arguments.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

#: (process, the parent's end of its pipe)
Child = tuple[Any, Any]


def spawn(target: Callable[..., None], argsets: Sequence[tuple[Any, ...]]) -> list[Child]:
    """Start one child per argument tuple: ``target(pipe_end, *args)``."""
    context = multiprocessing.get_context("spawn")
    children: list[Child] = []
    for args in argsets:
        parent, child = context.Pipe()
        proc = context.Process(target=target, args=(child, *args), daemon=True)
        proc.start()
        child.close()
        children.append((proc, parent))
    return children


def gather(children: list[Child], message: Any) -> list[Any]:
    """Send ``message`` to every child, then take each one's answer (its last) and let it end."""
    for _, parent in children:
        parent.send(message)
    answers = []
    for proc, parent in children:
        answers.append(parent.recv())
        proc.join(10)
    return answers
