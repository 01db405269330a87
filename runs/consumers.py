"""The live activity feed socket: ws/runs/<run>/feed/?after=<seq>.

The channel layer is a doorbell, not a log: a `run.event` message only says "something was
stored". The consumer always reads the database after its own cursor, so a dropped or coalesced
doorbell never loses an event and no event is sent twice.
"""

import asyncio
import logging
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from runs.doorbell import group_name
from runs.feed import FeedRenderer, run_state

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15  # as gg's own live stream: a beat while idle
ENDED_HTML = '<div id="feed-end" hx-swap-oob="true" data-ended="1">The run has ended; every stored event is shown.</div>'
HEARTBEAT_HTML = "<!-- heartbeat -->"  # a message with no elements: htmx swaps nothing


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
        self.renderer = FeedRenderer(self.run_pk)
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
                # The status is read before the events, so an ended run is closed only once
                # everything stored before it ended has been sent.
                _, live = await database_sync_to_async(run_state)(self.run_pk)
                sent = await self._drain()
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
        """Send everything stored after the cursor, one bounded batch per message; True if any."""
        sent = False
        while True:
            html, cursor = await database_sync_to_async(self._next_message)(self.cursor)
            if cursor == self.cursor:
                return sent
            self.cursor = cursor
            await self.send(text_data=html)
            sent = True

    def _next_message(self, after):
        rows, cursor = self.renderer.next_batch(after)
        if cursor == after:
            return "", after
        return self.renderer.render(rows, cursor), cursor
