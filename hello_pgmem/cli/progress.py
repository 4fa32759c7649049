"""Progress on stderr: one line that updates itself in a terminal, one line per update (at most one
every few seconds, and the last) anywhere else."""

from __future__ import annotations

import sys
import time
from typing import TextIO

EVERY_S = 2.0


class ProgressLine:
    """``line(done, total)`` prints ``label: done of total unit``, updated in place on a terminal
    (ended by a newline once done reaches total), else a line at most every :data:`EVERY_S`
    seconds and at the end; ``line.finish(done, total)`` prints the last count whatever it is."""

    def __init__(self, label: str, unit: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.unit = unit
        self.out = stream or sys.stderr
        self.terminal = self.out.isatty()
        self.last = -EVERY_S

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < (0.2 if self.terminal else EVERY_S):
            return
        self.last = now
        self._write(done, total, done >= total)

    def finish(self, done: int, total: int) -> None:
        self._write(done, total, True)

    def _write(self, done: int, total: int, ends: bool) -> None:
        text = f"{self.label}: {done:,} of {total:,} {self.unit}"
        if self.terminal:
            self.out.write("\r" + text + ("\n" if ends else ""))
        else:
            self.out.write(text + "\n")
        self.out.flush()


def progress_line(label: str, unit: str, stream: TextIO | None = None) -> ProgressLine:
    """A :class:`ProgressLine` of ``label`` counting ``unit`` on ``stream`` (stderr)."""
    return ProgressLine(label, unit, stream)
