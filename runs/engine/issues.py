"""Board dispatch: `board.wait_for_issue` (and the `wait_for_issue` tool) runs an open issue to a
terminal status inside the call, the way wait_for_subagents runs children (Engine.block).

The issue's implementer — a top-level agent (no parent, depth 0) under the issue's `agentId` profile,
id `<ISSUE>.<attempt>i`, `issueId` on every record — works from a brief built from the issue. Its
`finish` moves the issue to `in_review` when the issue names reviewers (`reviewerIds`, the profile
slugs given to create_issue), else straight to `done`. Reviewers (`<ISSUE>.<attempt>i.<n>r`, review
role) run in turn; the first `request_changes` ends the round and sends a new implementer attempt back
to work with the items (`retries` + 1); every reviewer approving accepts the issue. An implementer
stopped by its own ceiling is retried the same way; once `retries` has reached the board's
`maxRetries` (project-management param, gg's default 1), the next failure fails the issue. Each move is a `board_state`;
`issue_review` and `worktree_merged` go on the issue's stream (the implementer attempt's).

Each issue's agents work in a real git worktree of the workspace on branch `gg/issue-<n>` (n in
dispatch order; runs.engine.worktrees): an accepted issue's branch is merged back (worktree_merged
merged, or conflicts when git could not), a failed one's discarded.
"""

from runs.engine.agents import Agent, Handle, message
from runs.engine.holdings import open_holdings
from runs.engine.tools.errors import ToolError
from runs.engine.worktrees import WorktreeError

TERMINAL = ("done", "failed")


def wait(engine, waiter, issue_id):
    """Dispatch `issue_id` if it is open and block `waiter` until it settles; '<ID> <status>: <summary>'."""
    if not isinstance(issue_id, str) or not issue_id.strip():
        raise ToolError("invalid-argument", "name the issue to wait for")
    board = waiter.store("board")
    issue = board.issue(issue_id)
    if issue["status"] == "open":
        unmet = [b for b in issue["blockedBy"] if board.issues.get(b, {}).get("status") != "done"]
        if unmet:
            raise ToolError("refused", f"{issue_id} is blocked by {', '.join(unmet)}, not yet done")
        if issue["agentId"] not in {p.slug for p in engine.spec.profiles}:
            raise ToolError("invalid-argument", f"{issue_id} names {issue['agentId']!r}, which is no profile's slug")
        max_retries = waiter.params("project-management").get("maxRetries", 1)
        try:
            engine.block(waiter, f"issue {issue_id}", lambda: _work(engine, board, issue, max_retries))
        except WorktreeError as exc:
            raise ToolError("io-error", f"{issue_id} could not be dispatched: {exc}") from None
    elif issue["status"] not in TERMINAL:
        raise ToolError("refused", f"{issue_id} is {issue['status']} inside another agent's wait")
    return f"{issue_id} {issue['status']}: {engine.issue_summaries.get(issue_id, '')}"


def _work(engine, board, issue, max_retries):
    """The issue's attempts: an implementer stopped by its ceiling, or a review asking for changes,
    sends a new attempt back to work while `retries` < maxRetries; past that the issue fails."""
    issue_id = issue["id"]
    branch = engine.branches.setdefault(issue_id, f"gg/issue-{len(engine.branches) + 1}")
    engine.worktrees.add(branch)
    items = None
    while True:
        attempt = engine.attempts.get(issue_id, 0)
        engine.attempts[issue_id] = attempt + 1
        implementer = _start(engine, issue, f"{issue_id}.{attempt}i", issue["agentId"], "standard",
                             _brief(issue, items), branch)
        issue.update(status="in_progress", assignedAgentId=implementer.id)
        _moved(implementer, board)
        engine.run_out([implementer.handle])
        handle = implementer.handle
        engine.issue_summaries[issue_id] = handle.summary
        if handle.status != "completed":
            items = [f"the previous attempt ({implementer.id}) stopped: {handle.summary}"]
        else:
            if not issue["reviewerIds"]:
                break
            issue["status"] = "in_review"
            _moved(implementer, board)
            items = _review(engine, issue, implementer, handle.summary, branch)
            if items is None:
                break
        outcome = "stopped" if handle.status != "completed" else "sent back by its review"
        if issue["retries"] >= max_retries:
            implementer.emit("log", level="warn", message=f"{issue_id}: attempt {implementer.id} {outcome}; "
                             f"no retries left (maxRetries {max_retries}), the issue fails")
            engine.worktrees.discard(branch)
            implementer.emit("worktree_merged", branch=branch, merged=False, conflicts=False)  # discarded
            issue["status"] = "failed"
            _moved(implementer, board)
            return
        implementer.emit("log", level="info", message=f"{issue_id}: attempt {implementer.id} {outcome}; retry "
                         f"{issue['retries'] + 1} of {max_retries}")
        issue.update(status="in_progress", retries=issue["retries"] + 1)  # the next attempt's dispatch reports it
    merged, conflicts = engine.worktrees.merge(branch)
    implementer.emit("worktree_merged", branch=branch, merged=merged, conflicts=conflicts)
    if conflicts:
        implementer.emit("log", level="warn", message=f"{issue_id}: {branch} conflicts with the workspace; its "
                         "work was accepted but not merged")
    issue["status"] = "done"
    engine.issues_done.add(issue_id)
    _moved(implementer, board)


def _review(engine, issue, implementer, summary, branch):
    """One review round: the issue's reviewers in turn. Returns the change items, or None when all approve."""
    implementer.emit("issue_review", phase="requested")
    engine.review_phases["requested"] += 1
    approvals = []
    brief = (f"Review the work on issue {issue['id']}: {issue['title']}.\nThe implementer "
             f"({implementer.id}) reported: {summary}\n\n{_brief(issue, None)}\n\n"
             "End with approve, or request_changes listing what must change.")
    for n, slug in enumerate(issue["reviewerIds"]):
        reviewer = _start(engine, issue, f"{implementer.id}.{n}r", slug, "review", brief, branch)
        engine.run_out([reviewer.handle])
        who = {"agentId": reviewer.id, "profileId": slug, "profile": reviewer.profile.name}
        kind, _, items = reviewer.handle.ending or (None, None, None)
        if kind == "approve":
            approvals.append(who)
            continue
        # A reviewer stopped by its ceiling returned no verdict: its round still asks for another pass.
        items = items or [f"the review by {reviewer.id} ended without a verdict ({reviewer.handle.status})"]
        implementer.emit("issue_review", phase="changes_requested", items=items, reviewer=who,
                         approvals=approvals or None)
        engine.review_phases["changes_requested"] += 1
        return items
    implementer.emit("issue_review", phase="approved", approvals=approvals)
    engine.review_phases["approved"] += 1
    return None


def _start(engine, issue, agent_id, slug, role, brief, branch):
    """Open one board-dispatched agent: top level (no parent, depth 0), scoped to the issue."""
    profile = engine.spec.profile(slug)
    agent = Agent(engine, agent_id, profile, role=role, brief=brief, issue_id=issue["id"], worktree=branch)
    agent.handle = Handle(agent)
    engine.open(agent, [message("user", brief, "user_prompt")], open_holdings(engine.registry, profile))
    return agent


def _brief(issue, items):
    parts = [f"Issue {issue['id']}: {issue['title']}"]
    for label, key in (("Description", "description"), ("In scope", "inScope"), ("Out of scope", "outOfScope"),
                       ("Completion criteria", "completionCriteria")):
        if issue.get(key):
            parts.append(f"{label}:\n{issue[key]}")
    if items:
        parts.append("A reviewer asked for these changes:\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(parts)


def _moved(agent, board):
    """gg moved an issue: the board's snapshot, on the issue's stream."""
    agent.emit("board_state", **{k: v for k, v in board.snapshot().items() if k != "type"})
    agent.engine.telemetry.flush()
