"""How long a test waits for an event: its ordinary time, stretched by how busy the machine is
(the load per core when the wait starts, and ``PGMEM_TEST_PATIENCE`` times more when set), so a
loaded machine waits longer instead of failing a test that is not about time."""

from __future__ import annotations

import os


def patience(seconds: float) -> float:
    """``seconds`` as this machine, now, needs them."""
    busy = os.getloadavg()[0] / (os.cpu_count() or 1)
    return seconds * max(1.0, busy) * float(os.environ.get("PGMEM_TEST_PATIENCE", "1"))
