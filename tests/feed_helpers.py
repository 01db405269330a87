"""Helpers the feed tests share: runs stored through the real write path, a socket through the
real Channels stack (gg_console.asgi.application) with an operator's session cookie, and the seqs
and cursor read back from the messages it receives."""

import itertools
import json
import re

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from gg_console.asgi import application
from runs.ingest.writer import append
from runs.models import Run

ORIGIN = (b"origin", b"http://testserver")
_names = itertools.count()


@database_sync_to_async
def new_run(records=(), **fields):
    run = Run.objects.create(name=f"feed-{next(_names)}", **fields)
    if records:
        append(run, list(records))
    return run


@database_sync_to_async
def store(run, records):
    return append(run, list(records))


def logs(*messages, agent=None):
    return [{"type": "log", "level": "info", "message": m, **({"agentId": agent} if agent else {})} for m in messages]


def seqs(message):
    return [int(s) for s in re.findall(r'class="feed-row[^"]*" data-seq="(\d+)"', message)]


def cursor(message):
    return int(re.search(r'id="feed-cursor" hx-swap-oob="true" data-seq="(\d+)"', message).group(1))


async def connect(run, cookie, after=None, origin=ORIGIN):
    path = f"/ws/runs/{run.pk}/feed/" + (f"?after={after}" if after is not None else "")
    headers = [h for h in (origin, cookie) if h]
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect()
    return comm, connected


async def receive(comm, timeout=5):
    """One message, its rows acknowledged as the page does (a socket has at most
    `MAX_UNACKED` messages of rows in flight)."""
    message = await comm.receive_from(timeout=timeout)
    if 'id="feed-cursor"' in message:
        await comm.send_to(text_data=json.dumps({"ack": cursor(message)}))
    return message


async def receive_seqs(comm, count):
    """Receive messages until `count` rows arrived; returns every seq, in arrival order."""
    got = []
    while len(got) < count:
        got += seqs(await receive(comm))
    return got


@pytest.fixture
def cookie(operator):
    """The operator's session cookie, as a logged-in browser sends it."""
    client = Client()
    client.force_login(operator)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
