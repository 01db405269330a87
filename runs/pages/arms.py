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


def arms_comparison(agents: list[Agent]) -> dict:
    """Agents grouped by (programLanguage, docViewTypes), side by side: calls per operation (tool
    names for tool-calling agents), docs_view and search_results tokens summed over every turn's
    context, turns and error turns. Read off the projections alone."""
    arms = {}
    for agent in agents:
        key = (agent.program_language, agent.doc_view_types)
        arm = arms.setdefault(key, {"language": key[0], "doc_view_types": key[1], "agents": [], "turns": 0,
                                    "error_turns": 0, "calls": Counter(), "docs_view": 0, "search_results": 0,
                                    "modes": set()})
        arm["agents"].append(agent)
        arm["modes"].add(agent.execution_mode)
        arm["turns"] += agent.turns
        arm["error_turns"] += agent.error_turn_count
        arm["calls"].update(agent.surface_calls)
        arm["docs_view"] += agent.context_bands.get("docs_view", 0)
        arm["search_results"] += agent.context_bands.get("search_results", 0)
    ordered = sorted(arms.values(), key=lambda a: (not a["language"], a["language"], a["doc_view_types"]))
    for arm in ordered:
        arm["modes"] = sorted(m for m in arm["modes"] if m)
        arm["label"] = (f"{arm['language']} · {arm['doc_view_types'] or 'docViewTypes unreported'}" if arm["language"]
                        else ", ".join(arm["modes"]) or "no surface reported")
        arm["call_count"] = sum(arm["calls"].values())
        arm["named"], arm["more"] = arm["agents"][:AGENTS_NAMED], max(len(arm["agents"]) - AGENTS_NAMED, 0)
    rank = {op.id: i for i, op in enumerate(OPERATIONS)}
    keys = sorted({k for arm in ordered for k in arm["calls"]}, key=lambda k: (k not in rank, rank.get(k, 0), k))
    table = [{"operation": k, "calls": [arm["calls"].get(k, 0) for arm in ordered]} for k in keys]
    return {"arms": ordered, "table": table}
