"""Progress on stderr: one line that updates itself in a terminal, one line per update (at most one
every few seconds, and the last) anywhere else."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

EVERY_S = 2.0


def progress_line(label: str, unit: str, stream: TextIO | None = None) -> Callable[[int, int], None]:
    """``progress(done, total)`` printing ``label: done of total unit``, updated in place on a
    terminal (ended by a newline once done reaches total), else a line at most every
    :data:`EVERY_S` seconds and at the end."""
    out = stream or sys.stderr
    terminal = out.isatty()
    last = [-EVERY_S]

    def progress(done: int, total: int) -> None:
        finished = done >= total
        now = time.monotonic()
        if not finished and now - last[0] < (0.2 if terminal else EVERY_S):
            return
        last[0] = now
        text = f"{label}: {done:,} of {total:,} {unit}"
        if terminal:
            out.write("\r" + text + ("\n" if finished else ""))
        else:
            out.write(text + "\n")
        out.flush()

    return progress
