"""Run one program through the real guest and membrane, as an operator trying it against a profile.

Prints the operator's stream (NDJSON, one gg record a line), then a line `--- model ---`, then
exactly what the model would be told (its views, then the notices and the error).
"""

import json
import sys
import tempfile
from datetime import datetime, timezone
from itertools import count
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from runs.engine.sandbox.membrane import AgentContext
from runs.engine.sandbox.program import run_program
from runs.engine.spec import ENGINE_LANGUAGES
from runs.engine.tools.module_stores import ArchiveStore, BoardStore, MemoryStore, TaskStore
from runs.engine.tools.skills import SkillLibrary
from runs.engine.tools.workspace import Workspace
from surfaces.catalogue import BY_ID, CAPABILITIES
from surfaces.grants import Grants


class Command(BaseCommand):
    help = "Run a program through its arm's sandbox and the membrane; print the operator's stream and the model's view."

    def add_arguments(self, parser):
        parser.add_argument("file", help="the program's source file ('-' reads standard input)")
        parser.add_argument("--grant", action="append", default=[], metavar="OPERATION",
                            help="an operation the profile allows (repeatable); the capability that buys it is implied")
        parser.add_argument("--capability", action="append", default=[], metavar="ID",
                            help="a capability the profile enables, granting every operation it buys (repeatable)")
        parser.add_argument("--role", choices=["standard", "review"], default="standard")
        parser.add_argument("--workspace", help="the workspace directory (default: a fresh temporary one)")
        parser.add_argument("--timeout", type=float, default=30.0, help="timeoutSecs")
        parser.add_argument("--max-memory", type=int, default=256 * 1024 * 1024, help="maxMemoryBytes")
        parser.add_argument("--doc-view-types", default="return+errors")
        parser.add_argument("--language", choices=ENGINE_LANGUAGES, default="python",
                            help="the program's language (default: python)")

    def handle(self, *args, **options):
        source = self._source(options["file"])
        grants = self._grants(options["grant"], options["capability"], options["role"])
        root = Path(options["workspace"] or tempfile.mkdtemp(prefix="gg-workspace-"))
        ids = count(1)
        ctx = AgentContext(
            agent_id="root", grants=grants, workspace=Workspace(root), emit=self._emit, language=options["language"],
            doc_view_types=options["doc_view_types"], timeout_secs=options["timeout"],
            max_memory_bytes=options["max_memory"], mint_agent_id=lambda: f"agent-{next(ids)}",
            stores={"memories": MemoryStore("memories-0"), "tasks": TaskStore("tasks-0"), "board": BoardStore("board-0"),
                    "skills": SkillLibrary("skills-0", root), "archive": ArchiveStore("archive-0")},
            programs=[])
        outcome = run_program(ctx, source)
        self.stdout.write("--- model ---")
        for view in outcome.views:
            self.stdout.write(view.message() + "\n")
        if outcome.model_message:
            self.stdout.write(outcome.model_message)

    def _source(self, name):
        if name == "-":
            return sys.stdin.read()
        try:
            return Path(name).read_text()
        except OSError as exc:
            raise CommandError(f"cannot read {name}: {exc.strerror}") from None

    def _grants(self, operations, capabilities, role):
        unknown = [op for op in operations if op not in BY_ID] + [c for c in capabilities if c not in CAPABILITIES]
        if unknown:
            raise CommandError(f"unknown operation or capability: {', '.join(unknown)}")
        caps = set(capabilities)
        allowed = set(operations)
        for cap in capabilities:
            allowed |= set(CAPABILITIES[cap].operations)
        for op in operations:
            if BY_ID[op].binding.kind == "capability":
                caps.add(BY_ID[op].binding.capability)
        machine = "delegation.transition_state" in allowed
        return Grants(capabilities=sorted(caps), operations=sorted(allowed), role=role, machine=machine)

    def _emit(self, record):
        stamped = {"timestamp": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"), "sessionId": "run-program",
                   "agentId": "root", **record}
        self.stdout.write(json.dumps(stamped, ensure_ascii=False))
