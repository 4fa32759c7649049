"""The LangGraph store's expiry: items put with a ``ttl`` (minutes) expire that long after their put,
or after a read that refreshes them; a sweep forgets the expired ones, now or every few minutes
in a thread of its own (LangGraph's ``start_ttl_sweeper``)."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

from langgraph.store.base import TTLConfig

log = logging.getLogger(__name__)

DEFAULT_SWEEP_MINUTES = 5.0


class Sweeper:
    """A thread that calls ``sweep`` every interval until stopped."""

    def __init__(self, sweep: Callable[[], int]) -> None:
        self.sweep = sweep
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(
        self, config: TTLConfig | None, minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``minutes`` (else the config's ``sweep_interval_minutes``, else 5); the
        future ends when the sweeper stops, and cancelling it stops the sweeper. Without a TTL
        configuration, or with a sweeper running, nothing starts."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if config is None or (self._thread is not None and self._thread.is_alive()):
            done.set_result(None)
            return done
        interval = float(minutes or config.get("sweep_interval_minutes") or DEFAULT_SWEEP_MINUTES) * 60
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    swept = self.sweep()
                    log.info("the store's sweep forgot %d expired items", swept)
                except Exception:  # the next sweep tries again; the log has this one's error
                    log.exception("the store's sweep failed")
            if not done.done():
                done.set_result(None)

        done.add_done_callback(lambda future: self._stop.set() if future.cancelled() else None)
        self._thread = threading.Thread(target=loop, name="pgmem-store-sweeper", daemon=True)
        self._thread.start()
        return done

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; whether it ended within ``timeout`` seconds (True when none ran)."""
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()
