"""The live activity feed socket: ws/runs/<run>/feed/?after=<seq>[&agent=…&kind=…&op=…&failed=1&q=…][&rows=0].

The channel layer is a doorbell, not a log: a `run.event` message only says "something was
stored". The consumer always reads the database after its own cursor, so a dropped or coalesced
doorbell never loses an event and no event is sent twice.

Connections share the work: a window of rows (run, after, limit) is read and rendered once per
process (`WindowCache`), whoever asks, because stored events never change and a row depends only on
the log before it (`runs.feed.state.FeedState`).

The page holds a bounded window of rows and reads older ones over HTTP (`runs.feed.history`); the
socket follows the tail only, and the page steers it with small JSON messages:

* ``{"ack": <cursor>}`` after each message of rows it has read: a connection has at most
  `MAX_UNACKED` of them in flight, so neither a busy page nor a client that never reads is flooded
  (the rows wait in the database, not in the server's send buffer); the filter fields are applied
  by the server (`runs.feed.filters`);
* ``{"follow": <seq>|false, "epoch": n}``: follow the tail from `seq`, or stop sending rows (the
  window scrolled back). A follow is answered by a ``feed-follow`` marker carrying its epoch, so
  the page knows which messages come after it.

Without rows (``rows=0``, the header of every other tab; or while not following) the socket only
announces the run's last seq, at most once a second, and its end.
"""

import asyncio
import json
import logging
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from html import escape
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import Error as DatabaseFault, connection

from runs.feed import doorbell, search
from runs.feed.doorbell import MESSAGE_TYPE, group_name
from runs.feed.filters import FeedFilter
from runs.feed.html import render_rows
from runs.feed.windows import BATCH, read_window, run_state
from runs.models import Event, Run

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15  # as gg's own live stream: a beat while idle
# While doorbells pour in, a connection reads at most this often: each pass then carries more
# rows. Where connections share their windows (one process, many sockets on a run) a pass costs a
# connection little more than its send, but on the distributed path a run's few sockets per Daphne
# each read their own: 20 ms there doubled bench/scale's p50 and p99 against 50 ms.
PASS_SECONDS = 0.05
ANNOUNCE_SECONDS = 1.0  # without rows: at most one "something new" a second
MAX_UNACKED = 2  # messages of rows in flight, unacknowledged
STEER_MAX_CHARS = 256  # the longest steering message read
HEARTBEAT_HTML = "<!-- heartbeat -->"  # a message with no elements: htmx swaps nothing


# Window reads run on threads of their own, several at once: on Channels' one database thread, shared
# by every socket of the process, each run's read queued behind every other run's (and behind the
# connects' and the filters' queries), one at a time. Each thread keeps its connection from one read
# to the next (a read is one autocommit query after another: it holds no transaction open between
# reads). Opening and closing one per read, as database_sync_to_async does, was over a third of
# these threads' time under bench/feed.
READERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="feed-read")


class _Read:
    """One database read of a window, which every connection asking meanwhile awaits."""

    def __init__(self):
        self.started = False  # set by the database thread as its first step
        self.task = None


class WindowCache:
    """Process-wide: each window of a run's rows read and rendered once, for every connection.

    The last read of each (run, after, limit) is kept (LRU). A full one (`limit` events) can never
    change. A shorter one serves whoever knows it is recent enough: a connection whose doorbells
    announced nothing past its end.
    """

    def __init__(self, size=64):
        self.size = size
        self.done = OrderedDict()  # (run, after, limit) -> FeedWindow
        self.states = OrderedDict()  # (run, seq) -> FeedState after seq: where the next window starts
        self.reads = {}  # (run, after, limit) -> _Read not finished yet

    async def get(self, run_pk, after, rung=None, limit=BATCH):
        """The window after seq `after`, complete up to `rung` (a seq a doorbell announced) or,
        with `rung` None, read from the database after this call (a poll).

        Returns (window, settled): settled when it covers what was asked; otherwise (a read
        already under way that ended short of `rung`) ask again from the window's cursor.
        """
        key = (run_pk, after, limit)
        window = self.done.get(key)
        if window is not None and (window.full or (rung is not None and window.cursor >= rung)):
            self.done.move_to_end(key)
            return window, True
        read = self.reads.get(key)
        if read is None:
            read = self.reads[key] = _Read()
            read.task = asyncio.ensure_future(self._read(key, read))
        # A read not started yet sees everything committed before this call.
        fresh = not read.started
        # Shielded: one asker going away must not cancel the read the others await.
        window = await asyncio.shield(read.task)
        return window, fresh or window.full or (rung is not None and window.cursor >= rung)

    async def _read(self, key, read):
        run_pk, after, limit = key
        state = self.states.get((run_pk, after))

        def read_once():  # on a copy of the state: a read that fails leaves the kept one as it was
            return read_window(run_pk, after, limit, state.copy() if state else None)

        def work():
            read.started = True
            try:
                return read_once()
            except DatabaseFault:
                # The kept connection may have gone bad since the last read (a server restarted, a
                # file closed under it): once more, on a new one. A fault of the read itself recurs.
                connection.close()
                return read_once()

        try:
            window, end = await asyncio.get_running_loop().run_in_executor(READERS, work)
        finally:
            del self.reads[key]
        if end is not None:
            self._keep(self.states, (run_pk, window.cursor), end)
        self._keep(self.done, key, window)
        return window

    def _keep(self, cache, key, value):
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > self.size:
            cache.popitem(last=False)


WINDOWS = WindowCache()


def ended_html(status="", reason=""):
    """The last message of an ended run's socket: its status and, for an interrupted run, why."""
    words = f"{status}: {reason}" if reason else status
    return (f'<div id="feed-end" hx-swap-oob="true" data-ended="1" data-status="{escape(status)}"'
            f' data-reason="{escape(reason)}">The run has ended ({escape(words)}); every stored record has been read.</div>')


def announce_html(seq):
    return f'<span id="feed-rung" data-seq="{int(seq)}"></span>'


def follow_html(epoch):
    return f'<span id="feed-follow" data-epoch="{int(epoch)}"></span>'


def run_ending(run_pk):
    """(status, end reason, last seq) of a run (("deleted", "", 0) once it is gone)."""
    row = Run.objects.filter(pk=run_pk).values_list("status", "end_reason", "last_seq").first()
    return row or ("deleted", "", 0)


def matching_seqs(run_pk, flt, after, upto):
    seqs = set(Event.objects.filter(flt.events(run_pk, words=False), seq__gt=after, seq__lte=upto).values_list("seq", flat=True))
    if flt.q:  # the index, asked for this window's seqs only
        seqs.intersection_update(search.matching_seqs(run_pk, flt.q, after=after, before=upto + 1))
    return seqs


class FeedConsumer(AsyncWebsocketConsumer):
    heartbeat_seconds = HEARTBEAT_SECONDS
    pass_seconds = PASS_SECONDS

    async def connect(self):
        if not self.scope["user"].is_authenticated:
            await self.close()
            return
        self.run_pk = int(self.scope["url_route"]["kwargs"]["run"])
        exists, _ = await database_sync_to_async(run_state)(self.run_pk)
        if not exists:
            await self.close()
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.cursor = self._after(query)
        self.filter = FeedFilter.parse(query)
        self.following = query.get("rows", ["1"])[0] != "0"
        self.unacked = 0
        self.stalled = False  # the pump stopped with MAX_UNACKED messages in flight: an ack wakes it
        self.steer = None  # a follow the page asked for, applied by the pump between messages
        self.rung = 0  # the last seq a doorbell announced
        self.wake = asyncio.Event()
        self.group = group_name(self.run_pk)
        doorbell.listen_on(asyncio.get_running_loop())
        # Join before the first read: a doorbell rung between the read and the join would
        # otherwise be missed until the next one.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.pump = asyncio.create_task(self._pump())

    def _after(self, query):
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
        """The page's steering (module docstring); anything else is ignored, a long message unread
        (steering is a few dozen bytes; parsing Daphne's 1 MiB most took the event loop ~5 ms)."""
        if text_data is None or len(text_data) > STEER_MAX_CHARS:
            return
        try:
            message = json.loads(text_data)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if "ack" in message:
            self.unacked = max(0, self.unacked - 1)
            # Only an ack the pump stopped for wakes it: a pass per ack was a database read per message
            # per socket, which doubled bench/scale's distributed p50 (103 -> 181 ms).
            if self.stalled:
                self.stalled = False
                self.wake.set()
        if "follow" in message:
            follow, epoch = message["follow"], message.get("epoch", 0)
            if (follow is False or (isinstance(follow, int) and not isinstance(follow, bool) and follow >= 0)) \
                    and isinstance(epoch, int):
                self.steer = (follow, epoch)
                self.poll = True
                self.wake.set()

    async def dispatch(self, message):
        # A doorbell touches no database, so it skips Channels' close_old_connections before
        # each handler: a hop through the database thread per doorbell per connection, queued
        # in front of the window reads.
        if message["type"] == MESSAGE_TYPE:
            await self.run_event(message)
        else:
            await super().dispatch(message)

    async def run_event(self, message):
        """The doorbell: wake the pump, which reads whatever is stored after the cursor."""
        self.rung = max(self.rung, message["seq"])
        if "status" in message:
            self.poll = True  # a status is not a seq: only a read from now on sees it
        self.wake.set()

    async def _steer(self):
        follow, epoch = self.steer
        self.steer = None
        self.following = follow is not False
        if self.following:
            self.cursor = follow
        self.unacked, self.stalled = 0, False
        await self.send(text_data=follow_html(epoch))

    async def _pump(self):
        idle = False
        self.poll = True  # the first pass reads what is stored now
        loop = asyncio.get_running_loop()
        last_pass = -self.pass_seconds
        try:
            while True:
                pause = last_pass + (self.pass_seconds if self.following else ANNOUNCE_SECONDS) - loop.time()
                if pause > 0 and self.steer is None:
                    await asyncio.sleep(pause)  # doorbells meanwhile join this pass
                last_pass = loop.time()
                self.wake.clear()  # before reading: a doorbell during the read means read again
                if self.steer is not None:
                    await self._steer()
                # What this pass must cover: the doorbells' last seq, or (first pass, idle pass,
                # a status change) whatever is stored when it reads.
                rung = None if self.poll or idle else self.rung
                self.poll = False
                if rung is None or rung > self.cursor:
                    sent, live = await (self._drain(rung) if self.following else self._announce(rung))
                else:  # a doorbell for what this connection has already sent
                    sent, live = False, True  # (a status change always polls)
                if not live:
                    status, reason, _ = await database_sync_to_async(run_ending)(self.run_pk)
                    await self.send(text_data=ended_html(status, reason))
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

    async def _announce(self, rung):
        """Not following: say how far the run has got (no rows), and whether it is still live."""
        if rung is None:
            status, _, rung = await database_sync_to_async(run_ending)(self.run_pk)
            live = status in (Run.Status.QUEUED, Run.Status.RUNNING)
        else:
            live = True
        if rung > self.cursor:
            self.cursor = rung
            await self.send(text_data=announce_html(rung))
            return True, live
        return False, live

    async def _drain(self, rung):
        """Send everything stored after the cursor (up to `rung` at least), one bounded batch per
        message: (anything sent?, run still live?). Each window's status was read before its
        events, so an ended run is closed only once everything stored before it ended is sent.
        At most MAX_UNACKED messages are in flight: past that the pump waits for an ack (or a
        steer) with the rest still in the database."""
        sent = False
        while True:
            if self.steer is not None or self.unacked >= MAX_UNACKED:
                self.stalled = self.unacked >= MAX_UNACKED
                self.poll = True  # the next pass (an ack or the steer wakes it) reads on from here
                return sent, True
            window, settled = await WINDOWS.get(self.run_pk, self.cursor, rung)
            if window.cursor != self.cursor:
                await self.send(text_data=await self._message(window))
                self.cursor = window.cursor
                self.unacked += 1
                sent = True
            if settled and not window.full:
                return sent, window.live

    async def _message(self, window):
        """The window as this connection shows it: shared as rendered, or only the rows its filter keeps."""
        if not self.filter.active:
            return window.html
        rows = [r for r in window.rows if self.filter.keeps(r)]
        if rows and (self.filter.op or self.filter.q):
            wanted = await database_sync_to_async(matching_seqs)(self.run_pk, self.filter, self.cursor, window.cursor)
            rows = [r for r in rows if r.seq in wanted]
        return render_rows(rows, window.cursor)
