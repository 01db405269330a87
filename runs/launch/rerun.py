"""Where a re-run starts from: the configuration the run was launched or recorded with, or — for a
stream that carried no capability set — the closest starting point its agents tell of."""

import re

from runs.engine.spec import ENGINE_LANGUAGES
from runs.launch.fields import default_profile
from runs.launch.prefill import readable
from runs.launch.starter import starter_script
from runs.models import Run

SLUG = re.compile(r"[^a-z0-9-]+")


def rerun_spec(run: Run):
    """(spec, found): the run's own configuration and True, or one profile per profile its agents
    ran under (their mode and language as recorded, root first) and False."""
    spec = readable(run.launch_spec or run.capability_set)  # any stored shape: what the form can read
    spec.pop("name", None)  # run names are unique: the re-run gets its own
    if spec:
        return spec, True
    agents, seen = [], set()
    for agent in run.agents.order_by("depth", "pk"):
        slug = SLUG.sub("-", (agent.profile_id or agent.agent_id or "").lower()).strip("-") or f"agent-{len(agents)}"
        if slug in seen:
            continue
        seen.add(slug)
        profile = default_profile(slug, agent.profile_id or slug)
        if agent.execution_mode == "responses_as_code":
            profile["executionMode"] = "responses_as_code"
            profile["programLanguage"] = (agent.program_language if agent.program_language in ENGINE_LANGUAGES
                                          else ENGINE_LANGUAGES[0])
            profile.pop("tools", None)
        if agent.model_id:
            profile["modelId"] = agent.model_id
        agents.append(profile)
    agents = agents or [default_profile("root", "Root")]
    return {"task": "", "agents": agents, "limits": {},
            "provider": {"kind": "scripted", "script": starter_script(agents)}}, False
