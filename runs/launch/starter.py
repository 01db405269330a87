"""Scripts built for the profiles on the form: the starter a first launch runs on, and the dry run
that reads a script against the profiles without launching.

The starter gives every profile replies that end its session the way its mode ends one — a
`finish` tool call, or a program calling the arm's `session.finish` — so the untouched form
launches a run that completes, with no model and no key.
"""

import json

from surfaces.arms import ARMS
from surfaces.catalogue import ENDINGS

from runs.demo import DEMO_DIR, demo_names
from runs.launch.fields import MACHINE, mode_of

STARTER_REPLIES = 5  # per profile: a profile spawned several times gets a reply for each instance
STARTER_SUMMARY = ("Started from the console's starter script: nothing was done. Choose a shipped demo, "
                   "paste a script or connect a model to do real work.")
ENDING_CALLS = frozenset(name for e in ENDINGS.values() for name in e.tools)
ENDING_OPERATIONS = frozenset(op for e in ENDINGS.values() for op in e.operations)
SPAWNS = ("spawn_subagent", "exec", "fork")
ROOT_AGENT_ID = "root"  # the engine's root agent (runs.engine.loop): a script entry under it comes first


def _program(language):
    call = ARMS[language].spell("session.finish") if language in ARMS else "gg.session.finish"
    if language in ("typescript", "javascript"):
        return f'import * as gg from "gg";\n\n{call}({json.dumps(STARTER_SUMMARY)});\n'
    return f"import gg\n\n{call}({json.dumps(STARTER_SUMMARY)})\n"


def starter_reply(profile):
    """The reply that ends a session of this profile at once, or None for a machine (no model)."""
    mode = mode_of(profile)
    if mode == MACHINE:
        return None
    if mode == "responses_as_code":
        return {"text": "Finishing at once.", "program": _program(profile.get("programLanguage") or "python")}
    return {"text": "Finishing at once.", "toolCalls": [{"name": "finish", "args": {"summary": STARTER_SUMMARY}}]}


def starter_script(agents):
    """{slug: [reply, ...]} for every profile a model answers for."""
    script = {}
    for profile in agents:
        if isinstance(profile, dict) and isinstance(profile.get("slug"), str):
            reply = starter_reply(profile)
            if reply is not None:
                script[profile["slug"]] = [reply] * STARTER_REPLIES
    return script


def is_starter(provider, agents):
    """Whether `provider` is exactly the starter script for these profiles (the form then shows it so)."""
    return (isinstance(provider, dict) and provider.get("kind") == "scripted" and "script" in provider
            and provider["script"] == starter_script(agents))


def _calls(reply):
    """What one reply does: the tool calls it makes, or the program it submits (first line kept)."""
    if not isinstance(reply, dict):
        return ["(not a reply object)"]
    calls = []
    if isinstance(reply.get("program"), str):
        ends = any(ARMS[lang].spell(op) in reply["program"] for lang in ARMS for op in ENDING_OPERATIONS)
        calls.append("a program" + (" that ends the session" if ends else ""))
    for call in reply.get("toolCalls") or []:
        if isinstance(call, dict):
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            target = f" → {args['agent']}" if call.get("name") in SPAWNS and isinstance(args.get("agent"), str) else ""
            calls.append(f"{call.get('name')}{target}")
    if reply.get("error"):
        calls.append(f"a scripted failure ({reply['error']})")
    return calls or ["text only (an error turn: no call)"]


def _ends(reply):
    if not isinstance(reply, dict):
        return False
    if any(isinstance(c, dict) and c.get("name") in ENDING_CALLS for c in reply.get("toolCalls") or []):
        return True
    program = reply.get("program")
    return isinstance(program, str) and any(ARMS[lang].spell(op) in program
                                            for lang in ARMS for op in ENDING_OPERATIONS)


def script_of(provider):
    """The script a scripted provider answers from (a demo's own file for a demo), or None."""
    provider = provider if isinstance(provider, dict) else {}
    if provider.get("kind") != "scripted":
        return None
    if "demo" in provider:
        demo = provider["demo"]
        return json.loads((DEMO_DIR / f"{demo}.script.json").read_text()) if demo in demo_names() else None
    return provider.get("script") if isinstance(provider.get("script"), dict) else None


def dry_run(spec):
    """Read the script against the profiles, launching nothing: per profile the replies its agents
    would get in order, whether they end the session, and where the script runs out. None when the
    provider is not a script (a demo's own script is read too)."""
    script = script_of(spec.get("provider"))
    if script is None:
        return None
    agents = [a for a in spec.get("agents") or [] if isinstance(a, dict)]
    slugs = [a.get("slug") for a in agents]
    spawned = {c.split(" → ", 1)[1] for replies in script.values() if isinstance(replies, list)
               for r in replies for c in _calls(r) if " → " in c}
    profiles, used = [], set(slugs)
    for i, profile in enumerate(agents):
        slug = profile.get("slug")
        if mode_of(profile) == MACHINE:
            profiles.append({"slug": slug, "machine": True})
            continue
        key = ROOT_AGENT_ID if i == 0 and ROOT_AGENT_ID in script else slug
        used.add(key)
        replies = script.get(key) if isinstance(script.get(key), list) else []
        rows = [{"n": n + 1, "calls": _calls(r), "ends": _ends(r)} for n, r in enumerate(replies)]
        ends = sum(row["ends"] for row in rows)
        if not rows:
            verdict = "no replies: its first turn fails (model_retry_exhausted)" if i == 0 or slug in spawned \
                else "no replies; nothing in the script starts it"
        elif not rows[-1]["ends"]:
            verdict = f"the script runs out after reply {len(rows)}: the next turn fails (model_retry_exhausted)"
        else:
            verdict = f"{ends} instance{'s' if ends != 1 else ''} can end {'their' if ends != 1 else 'its'} session"
        profiles.append({"slug": slug, "root": i == 0, "replies": rows, "verdict": verdict,
                         "runs_out": not rows or not rows[-1]["ends"]})
    return {"profiles": profiles, "unused": [key for key in script if key not in used]}


def script_refusal(spec):
    """(path, message) when the dry run finds the root agent without a reply (its first turn fails,
    ending the run at once with model_error), else None: what Launch and the live check refuse."""
    report = dry_run(spec)
    root = report["profiles"][0] if report and report["profiles"] else {}
    if not root.get("root") or root["replies"]:  # a machine root has no model: its states' profiles answer
        return None
    slug, provider = root["slug"], spec["provider"]
    names = ", ".join(key for key, replies in script_of(provider).items() if replies)
    if "demo" in provider:
        return "provider.demo", (
            f"the {provider['demo']} demo's script has replies for its own profiles ({names}), none for this "
            f"launch's root profile {slug!r}: the run would fail at its first turn. Start from the demo "
            "(a link at the top of this page) to launch it with its profiles.")
    if not names:
        return "provider.script", (f"the script has no replies: the root profile {slug!r} has none, so the run "
                                   "would fail at its first turn")
    return "provider.script", (f"the script has no replies for the root profile {slug!r} (it has replies for "
                               f"{names}): the run would fail at its first turn")
