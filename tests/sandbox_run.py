"""Run real programs through the real guest and membrane, for the sandbox/membrane tests.

Every record the membrane emits is validated against gg's schema as it is emitted."""

import textwrap
from itertools import count

from runs.engine.sandbox.membrane import AgentContext
from runs.engine.sandbox.program import run_program
from runs.engine.sandbox.guest import get_sandbox
from runs.engine.tools.module_stores import ArchiveStore, BoardStore, MemoryStore, TaskStore
from runs.engine.tools.skills import SkillLibrary
from runs.engine.tools.workspace import Workspace
from surfaces.catalogue import CAPABILITIES
from surfaces.grants import Grants
from tests.gg_schema import validate_record


class Run:
    def __init__(self, outcome, records, ctx):
        self.outcome, self.records, self.ctx = outcome, records, ctx

    def of(self, kind):
        return [r for r in self.records if r["type"] == kind]

    def logs(self, level=None):
        return [r["message"] for r in self.of("log") if level is None or r["level"] == level]


def context(tmp_path, capabilities=(), operations=None, role="standard", **options):
    records = []

    def emit(record):
        validate_record(record)
        records.append(record)

    ids = count(1)
    if operations is None:
        operations = {op for cap in capabilities for op in CAPABILITIES[cap].operations}
    stores = {"memories": MemoryStore("memories-0"), "tasks": TaskStore("tasks-0"), "board": BoardStore("board-0"),
              "skills": SkillLibrary("skills-0", tmp_path, "skills"), "archive": ArchiveStore("archive-0")}
    ctx = AgentContext(agent_id="root", grants=Grants(capabilities=list(capabilities), operations=operations, role=role,
                                                      machine=options.pop("machine", False)),
                       workspace=Workspace(tmp_path / "ws"), emit=emit, stores=stores,
                       mint_agent_id=lambda: f"agent-{next(ids)}", programs=[], **options)
    return ctx, records


def run(ctx_records, source):
    ctx, records = ctx_records
    start = len(records)
    outcome = run_program(ctx, textwrap.dedent(source), sandbox=get_sandbox(ctx.language))
    return Run(outcome, records[start:], ctx)
