"""Work a server process does after the request that asked for it: the engine's runs (embedded
default, `runs.launch.dispatch`) and run deletions (`runs.ingest.deletion`).

`ThreadPool` runs it in daemon threads of the process; `lease` marks a piece of work as owned by a live
process (Redis path only: processes that start sweep up work no live process holds).
"""

import queue
import threading
from contextlib import contextmanager

import redis
from django.conf import settings

LEASE_SECONDS = 30


class ThreadPool:
    """`size` daemon threads, started on the first `put`, calling `work(item)` for each item put."""

    def __init__(self, size: int, name: str, work):
        self.size, self.name, self.work = size, name, work
        self.queue = queue.Queue()
        self.lock = threading.Lock()
        self.threads = []

    def put(self, item):
        with self.lock:
            if not self.threads:
                for n in range(self.size):
                    # Daemon: a server shutting down does not wait; the next start sweeps up what is left.
                    t = threading.Thread(target=self._work, name=f"{self.name}-{n}", daemon=True)
                    t.start()
                    self.threads.append(t)
        self.queue.put(item)

    def _work(self):
        while True:
            item = self.queue.get()
            try:
                self.work(item)
            finally:
                self.queue.task_done()  # `unfinished_tasks` says when a thread has let go of it

    def busy(self):
        return self.queue.unfinished_tasks > 0


def redis_client():
    return redis.Redis.from_url(settings.REDIS_URL)


def unleased(pks: list, key: str) -> list:
    """Those of `pks` whose lease (`key`, formatted with each) no live process holds: all of them
    without Redis, where the only process that sweeps is the one server, starting."""
    if not settings.REDIS_URL or not pks:
        return pks
    held = redis_client().mget([key.format(pk) for pk in pks])
    return [pk for pk, lease in zip(pks, held) if lease is None]


@contextmanager
def lease(key: str, value: str = "running"):
    """Hold `key` while the block runs, refreshed by a heartbeat (Redis path only; without Redis the
    threads die with their server, and the server's next start is the only one that sweeps)."""
    if not settings.REDIS_URL:
        yield
        return
    client, stop = redis_client(), threading.Event()

    def heartbeat():
        while not stop.wait(LEASE_SECONDS / 3):
            client.set(key, value, ex=LEASE_SECONDS)

    client.set(key, value, ex=LEASE_SECONDS)  # held from here: the heartbeat only keeps it

    beat = threading.Thread(target=heartbeat, name=f"lease-{key}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join()
        client.delete(key)
