"""Admission: how many attempts may be in flight, in all, per project and per destination host.

Each claimed row takes a slot of its project, of its destination host and of the process
(``SERVICE_WEBHOOK_PROJECT_CONCURRENCY``, ``SERVICE_WEBHOOK_HOST_CONCURRENCY``,
``SERVICE_WEBHOOK_CONCURRENCY``), or waits in the process's line for one; a row whose project
already has a full line is deferred (put back in the table, due a moment later, not an
attempt). So a project whose receiver hangs holds a few sending threads, never all of them.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import Counter, deque
from collections.abc import Callable

from django.conf import settings


class Slots:
    """Attempts in flight in this process: in all, per project and per destination host.

    An attempt whose project, host and process all have a free slot starts at once. One that
    does not waits in this process's line (started, in order, as slots free up: with a fast
    receiver, within milliseconds), unless its project already has ``WAIT_PER_SLOT`` times its
    cap waiting; then it is deferred. So a project whose receiver hangs holds its few slots and
    a bounded line, never a sending thread or a Celery thread of anyone else, and the sending
    pool's own queue stays empty (every started attempt has a thread).
    """

    WAIT_PER_SLOT = 4

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.total = 0
        self.projects: Counter[str] = Counter()
        self.hosts: Counter[str] = Counter()
        self.waiting: deque[tuple[str, str, Callable[[], object]]] = deque()
        self.waiting_by_project: Counter[str] = Counter()

    @staticmethod
    def caps() -> tuple[int, int, int]:
        """The process's, a project's and a host's caps, read once per admission or release
        (settings can change under a test, never in the middle of one)."""
        return (
            int(settings.SERVICE_WEBHOOK_CONCURRENCY),
            int(settings.SERVICE_WEBHOOK_PROJECT_CONCURRENCY),
            int(settings.SERVICE_WEBHOOK_HOST_CONCURRENCY),
        )

    def _free(self, project: str, host: str, caps: tuple[int, int, int]) -> bool:
        return (
            self.total < caps[0] and self.projects[project] < caps[1] and self.hosts[host] < caps[2]
        )

    def _take(self, project: str, host: str) -> None:
        self.total += 1
        self.projects[project] += 1
        self.hosts[host] += 1

    def admit(self, project: str, host: str, start: Callable[[], object]) -> bool:
        """Start now, or line up to start later: True; or neither (defer it): False."""
        caps = self.caps()
        with self.lock:
            if self._free(project, host, caps):
                self._take(project, host)
            else:
                limit = self.WAIT_PER_SLOT * caps[1]
                if self.waiting_by_project[project] >= limit:
                    return False
                self.waiting.append((project, host, start))
                self.waiting_by_project[project] += 1
                return True
        start()
        return True

    def give(self, project: str, host: str) -> None:
        """An attempt ended: free its slots and start whoever waits and now fits."""
        ready: list[Callable[[], object]] = []
        caps = self.caps()
        with self.lock:
            self.total -= 1
            for counter, key in ((self.projects, project), (self.hosts, host)):
                counter[key] -= 1
                if counter[key] <= 0:
                    del counter[key]
            if self.waiting:
                still: deque[tuple[str, str, Callable[[], object]]] = deque()
                for entry in self.waiting:
                    if self._free(entry[0], entry[1], caps):
                        self._take(entry[0], entry[1])
                        self.waiting_by_project[entry[0]] -= 1
                        if self.waiting_by_project[entry[0]] <= 0:
                            del self.waiting_by_project[entry[0]]
                        ready.append(entry[2])
                    else:
                        still.append(entry)
                self.waiting = still
        for start in ready:
            start()


@functools.cache
def slots() -> Slots:
    """This process's slots (a child of Celery's prefork pool starts with none in flight)."""
    return Slots()


os.register_at_fork(after_in_child=slots.cache_clear)
