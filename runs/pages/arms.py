"""The Arms tab (templates/runs/arms.html): the within-run comparison of arms (seeds/000
"Per-agent arm fields"), read off the projections alone. Tests: tests/pages/test_arms.py.
"""

from __future__ import annotations

from collections import Counter

from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.models import Agent
from runs.pages.common import agent_values, run_context
from surfaces.catalogue import OPERATIONS


AGENTS_NAMED = 20  # an arm's agents named by link (the Agents tab lists them all; 12,983 links were 870 KB)
# What the comparison reads of an agent: decoding whole rows was 2.2 of the page's 2.3 s on 12,747 agents.
ARM_FIELDS = ("agent_id", "program_language", "doc_view_types", "execution_mode", "turns", "error_turn_count",
              "api_calls", "api_failures", "tool_calls", "tool_failures", "context_bands")


@require_GET
def arms_page(request, pk):
    run = run_or_404(pk)
    comparison = arms_comparison(agent_values(run, ARM_FIELDS))
    return render(request, "runs/arms.html", run_context(run, "arms", comparison=comparison))


def arm_group(language: str, doc_view_types: str, mode: str) -> str:
    """An agent's arm: its program language by the docs it was shown. An agent that writes no program
    runs no arm, and is grouped by what it is instead. (The Analysis page groups runs' agents by it too.)"""
    if language:
        return f"{language} · {doc_view_types or 'docViewTypes unreported'}"
    if mode == "tool_calling":
        return "no arm: tool calling"
    return f"no arm: {mode}" if mode else "no arm: no surface reported"


def arms_comparison(agents: list[Agent]) -> dict:
    """Agents grouped by arm (`arm_group`), side by side: calls per operation (tool
    names for tool-calling agents), docs_view and search_results tokens summed over every turn's
    context, turns and error turns. Read off the projections alone."""
    arms = {}
    for agent in agents:
        label = arm_group(agent.program_language, agent.doc_view_types, agent.execution_mode)
        arm = arms.setdefault(label, {"label": label, "language": agent.program_language,
                                      "doc_view_types": agent.doc_view_types, "modes": set(), "agents": [], "turns": 0,
                                      "error_turns": 0, "calls": Counter(), "docs_view": 0, "search_results": 0})
        arm["agents"].append(agent)
        arm["modes"].add(agent.execution_mode)
        arm["turns"] += agent.turns
        arm["error_turns"] += agent.error_turn_count
        arm["calls"].update(agent.surface_calls)
        arm["docs_view"] += agent.context_bands.get("docs_view", 0)
        arm["search_results"] += agent.context_bands.get("search_results", 0)
    ordered = sorted(arms.values(), key=lambda a: (not a["language"], a["label"]))
    for arm in ordered:
        arm["modes"] = sorted(m for m in arm["modes"] if m)
        arm["call_count"] = sum(arm["calls"].values())
        arm["named"], arm["more"] = arm["agents"][:AGENTS_NAMED], max(len(arm["agents"]) - AGENTS_NAMED, 0)
    rank = {op.id: i for i, op in enumerate(OPERATIONS)}
    keys = sorted({k for arm in ordered for k in arm["calls"]}, key=lambda k: (k not in rank, rank.get(k, 0), k))
    table = [{"operation": k, "calls": [arm["calls"].get(k, 0) for arm in ordered]} for k in keys]
    return {"arms": ordered, "table": table}
