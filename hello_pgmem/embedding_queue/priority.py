"""A thread's CPU priority: the embedding workers beside a short lane run lower, so that the lane
has the cores first while both embed (Linux ``nice``, per thread, and inherited by the threads a
model starts from it)."""

from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger(__name__)

YIELD_NICE = 5
"""How much lower a worker beside a short lane runs: under contention the lane gets about three
times its CPU."""


def lower_priority() -> None:
    """Lower this thread's CPU priority by ``YIELD_NICE`` where the system allows it."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + YIELD_NICE))
    except (AttributeError, OSError) as exc:  # not Linux, or not allowed: the same priority
        log.debug("embedding worker: priority left as it is: %s", exc)
