"""The Material figures of a multi-agent stream, pinned: every figure the agent page's material section
and each turn page's window show (and the selectors' unrounded bills behind them), as the fold billed
them when this file was written (tests/fixtures/material_figures.json). However the pool is stored,
these must not move. The stream exercises the traps of residency billing: two agents, priced and
unpriced turns, compactions, a message pointed at before it is defined, a duplicate pointer, two
model calls in one turn with a message leaving between them, a turn with no prompt, a band change.

Regenerate (only when the billing itself is meant to change): MATERIAL_FIGURES_WRITE=1 pytest this file.
"""

import json
import os

import pytest
from django.urls import reverse

from runs.ingest import rebuild
from runs.ingest import writer as ingest
from runs.models import Agent, Run
from runs.pages.material import agent_material
from tests.pages_helpers import rows
from tests.paths import TESTS
from tests.streams import projection_dump, settled_pool

pytestmark = pytest.mark.django_db

FIGURES = TESTS / "fixtures" / "material_figures.json"
PRICES = {"acme/model": {"input": 1.0, "cached": 0.5, "output": 2.0, "reasoning": 2.0}}
TURNS = 14


def _msg(agent, mid, tokens, role="user", **extra):
    return {"type": "context_message", "agentId": agent, "id": mid, "role": role, "content": mid, "tokens": tokens,
            "toolCalls": [], "images": [], **extra}


def _prompt(agent, pointers, t, priced):
    tokens = {"uncachedInput": 90 * t + 13, "cachedInput": 11, "output": 0 if t % 4 == 0 else 5}
    if t % 7 == 3:
        tokens = {"output": 2}  # no input reported: each item billed its own estimate
    extra = {"cost": {"comparable": 0.0003 * t}} if priced and t % 2 else {}
    return {"type": "prompt", "agentId": agent, "request": [{"id": i, "source": s} for i, s in pointers],
            "tokens": tokens, **extra}


def stream():
    out = [{"type": "agent_spawned", "agentId": "root", "profileId": "lead", "modelId": "acme/model"},
           {"type": "agent_spawned", "agentId": "w1", "parentAgentId": "root", "profileId": "worker",
            "modelId": "nobody/knows"}]
    windows = {a: [(f"{a}-sys", "system")] for a in ("root", "w1")}
    for t in range(1, TURNS + 1):
        for a, priced in (("root", True), ("w1", False)):
            window = windows[a]
            out.append({"type": "turn_started", "agentId": a})
            if t == 1:
                out.append(_msg(a, f"{a}-sys", 300, "system"))
            if a == "w1" and t == 6:
                continue  # a turn with no prompt: the next one is not consecutive
            if t % 5 == 0:
                window[1:] = [(f"{a}-sum{t}", "history")]
                out.append(_msg(a, f"{a}-sum{t}", 40))
            if t == 4:
                out.append(_msg(a, f"{a}-late", 25))  # pointed at since turn 2, defined only now
            pointers = list(window)
            if 2 <= t <= 7:
                pointers.append((f"{a}-late", "history"))
            if t % 3 == 0:
                pointers.append((f"{a}-ghost", "history"))  # never defined
            if t in (5, 6):
                pointers.append(window[0])  # a duplicate pointer bills twice
            if t == 8:
                pointers[0] = (pointers[0][0], "pinned")  # the band its latest pointer placed it on
            if t == 9:  # two model calls in one turn; the latest reply leaves between them and returns
                out.append(_prompt(a, pointers, t, priced))
                out.append(_prompt(a, [p for p in pointers if p != window[-1]], t, priced))
            out.append(_prompt(a, pointers, t, priced))
            reply = (f"{a}-a{t}", "assistant")
            out.append(_msg(a, reply[0], 20 + 3 * t, "assistant"))
            out.append(_msg(a, f"{a}-t{t}", 50 + t, "tool", label=f"src/{t % 4}.py"))
            window += [reply, (f"{a}-t{t}", "file_view")]
    return out


def _rounded(value):
    return float(f"{value:.12g}") if isinstance(value, float) else value


def bills(run) -> dict:
    """Every pooled message's whole residency bill: an undefined one has cost 0.0 (not None) once a
    priced turn pointed at it, and can be estimated."""
    return {f"{m.agent_id} {m.message_id}": [_rounded(m.billed), _rounded(m.cost), m.estimated, m.spans]
            for m in settled_pool(run).values()}


def figures(client, run) -> dict:
    out = {"pool": bills(run)}
    for agent in Agent.objects.filter(run=run).order_by("agent_id"):
        html = client.get(reverse("runs:agent", args=(run.pk, agent.agent_id))).content.decode()
        material = agent_material(run, agent)
        out[agent.agent_id] = {
            "page": {attr: rows(html, attr) for attr in ("data-message", "data-band", "data-view", "data-tool")},
            "top": [{k: _rounded(row[k]) for k in ("message_id", "billed", "cost", "estimated", "resident", "arrived",
                                                   "band", "tokens")} for row in material["top"]],
            "totals": {k: _rounded(v) for k, v in material["totals"].items() if k in ("billed", "cost", "turns", "items")},
            "turns": {},
        }
        for n in range(1, agent.turns + 1):
            html = client.get(reverse("runs:turn", args=(run.pk, agent.agent_id, n))).content.decode()
            out[agent.agent_id]["turns"][n] = rows(html, "data-message")
    return json.loads(json.dumps(out))


def test_the_material_figures_are_the_ones_pinned(viewer_client, settings):
    settings.GG_MODEL_PRICES = PRICES
    run = Run.objects.create(name="material")
    ingest.append(run, stream(), chunk_lines=7)
    incremental = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == incremental
    got = figures(viewer_client, run)
    if os.environ.get("MATERIAL_FIGURES_WRITE"):
        FIGURES.write_text(json.dumps(got, indent=1) + "\n")
    assert got == json.loads(FIGURES.read_text())
