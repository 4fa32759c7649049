"""Arguments of the reference's code that have no meaning here: accepted, so the chapter's code
runs as printed, and said once per process (docs/python.md)."""

from __future__ import annotations

import logging

log = logging.getLogger("hello_pgmem")

_said: set[str] = set()


def accepted_without_effect(argument: str, why: str) -> None:
    """Warn, the first time only, that ``argument`` is accepted and does nothing, and why."""
    if argument not in _said:
        _said.add(argument)
        log.warning("%s is accepted for the reference's code and has no effect: %s", argument, why)
