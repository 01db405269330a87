"""The live activity feed socket: ws/runs/<run>/feed/?after=<seq>.

The channel layer is a doorbell, not a log: a `run.event` message only says "something was
stored". The consumer always reads the database after its own cursor, so a dropped or coalesced
doorbell never loses an event and no event is sent twice.

Connections share the work: a window of rows (run, after, limit) is read and rendered once per
process (`Windows`), whoever asks, because stored events never change and a row depends only on
the log before it (`runs.feed.FeedState`).
"""

import asyncio
import logging
from collections import OrderedDict
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from runs.doorbell import group_name
from runs.feed import BATCH, read_window, run_state

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15  # as gg's own live stream: a beat while idle
ENDED_HTML = '<div id="feed-end" hx-swap-oob="true" data-ended="1">The run has ended; every stored event is shown.</div>'
HEARTBEAT_HTML = "<!-- heartbeat -->"  # a message with no elements: htmx swaps nothing


class _Read:
    """One database read of a window, which every connection asking meanwhile awaits."""

    def __init__(self):
        self.started = False  # set by the database thread as its first step
        self.task = None


class Windows:
    """Process-wide: each window of a run's rows read and rendered once, for every connection.

    A full window (`limit` events) can never change and is kept (LRU). A shorter one is shared
    by everyone who asks while its read is pending; connections woken by one doorbell so stay at
    one cursor and keep sharing.
    """

    def __init__(self, size=64):
        self.size = size
        self.full = OrderedDict()  # (run, after, limit) -> Window
        self.states = OrderedDict()  # (run, seq) -> FeedState after seq: where the next window starts
        self.reads = {}  # (run, after, limit) -> _Read not finished yet

    async def get(self, run_pk, after, limit=BATCH):
        """(window, fresh). Fresh: its read had not started when asked, so it saw everything
        committed before the asker's doorbell. A read already under way may not have: the asker
        reads once more from the new cursor before resting."""
        key = (run_pk, after, limit)
        window = self.full.get(key)
        if window is not None:
            self.full.move_to_end(key)
            return window, True
        read = self.reads.get(key)
        if read is None:
            read = self.reads[key] = _Read()
            read.task = asyncio.ensure_future(self._read(key, read))
        fresh = not read.started
        # Shielded: one asker going away must not cancel the read the others await.
        return await asyncio.shield(read.task), fresh

    async def _read(self, key, read):
        run_pk, after, limit = key
        state = self.states.get((run_pk, after))

        def work():
            read.started = True
            return read_window(run_pk, after, limit, state.copy() if state else None)

        try:
            window, end = await database_sync_to_async(work)()
        finally:
            del self.reads[key]
        if end is not None:
            self._keep(self.states, (run_pk, window.cursor), end)
        if window.full:
            self._keep(self.full, key, window)
        return window

    def _keep(self, cache, key, value):
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > self.size:
            cache.popitem(last=False)


WINDOWS = Windows()


class FeedConsumer(AsyncWebsocketConsumer):
    heartbeat_seconds = HEARTBEAT_SECONDS

    async def connect(self):
        if not self.scope["user"].is_authenticated:
            await self.close()
            return
        self.run_pk = int(self.scope["url_route"]["kwargs"]["run"])
        exists, _ = await database_sync_to_async(run_state)(self.run_pk)
        if not exists:
            await self.close()
            return
        self.cursor = self._after()
        self.wake = asyncio.Event()
        self.group = group_name(self.run_pk)
        # Join before the first read: a doorbell rung between the read and the join would
        # otherwise be missed until the next one.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.pump = asyncio.create_task(self._pump())

    def _after(self):
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        try:
            return max(0, int(query.get("after", ["0"])[0]))
        except ValueError:
            return 0

    async def disconnect(self, code):
        pump = getattr(self, "pump", None)
        if pump is not None:
            pump.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None):
        pass  # the feed is one-way; the browser only reconnects with ?after=

    async def run_event(self, message):
        """The doorbell: wake the pump, which reads whatever is stored after the cursor."""
        self.wake.set()

    async def _pump(self):
        idle = False
        try:
            while True:
                self.wake.clear()  # before reading: a doorbell during the read means read again
                sent, live = await self._drain()
                if not live:
                    await self.send(text_data=ENDED_HTML)
                    await self.close(code=1000)
                    return
                if idle and not sent:
                    await self.send(text_data=HEARTBEAT_HTML)
                # An idle pass re-reads too: a writer whose doorbell never reaches this process
                # (another process on the in-memory layer) still shows up, at heartbeat pace.
                try:
                    await asyncio.wait_for(self.wake.wait(), self.heartbeat_seconds)
                    idle = False
                except asyncio.TimeoutError:
                    idle = True
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("feed for run %s failed at seq %s", self.run_pk, self.cursor)
            await self.close(code=1011)  # the browser reconnects from its last rendered seq

    async def _drain(self):
        """Send everything stored after the cursor, one bounded batch per message:
        (anything sent?, run still live?). The last window read is a fresh one, never a kept
        one, so its status was read before its events: an ended run is closed only once
        everything stored before it ended has been sent."""
        sent = False
        while True:
            window, fresh = await WINDOWS.get(self.run_pk, self.cursor)
            if window.cursor != self.cursor:
                self.cursor = window.cursor
                await self.send(text_data=window.html)
                sent = True
            if fresh and not window.full:
                return sent, window.live
