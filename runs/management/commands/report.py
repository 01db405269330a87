"""manage.py report RUN [--json] — the run report: what the run pages show, as one document."""

import json

from django.core.management.base import BaseCommand, CommandError

from runs.access import run_resolve
from runs.pages.report import build_report


class Command(BaseCommand):
    help = ("Print the report of RUN (id or name): with --json the JSON document GET /api/runs/<run>/report "
            "returns; without it a short summary of the same document.")

    def add_arguments(self, parser):
        parser.add_argument("run", help="Run id or name.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the whole report as JSON.")

    def handle(self, *args, run, as_json=False, **options):
        target = run_resolve(run)
        if target is None:
            raise CommandError(f"No run {run!r}.")
        report = build_report(target)
        if as_json:
            self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2))
            return
        r = report["run"]
        c = r["counts"]
        self.stdout.write(f"{r['name']} ({r['status']}): {c['agents']} agents, {c['turns']} turns, {c['calls']} calls, "
                          f"{c['errorTurns']} error turns, {c['divergences']} divergences, {c['refused']} refused calls")
        for a in report["agents"]:
            self.stdout.write(f"  {a['agentId']:<24} {a['profileId'] or '-':<14} {a['executionMode'] or '-':<18} "
                              f"{a['programLanguage'] or '-':<11} turns {a['turns']:<4} calls {a['calls']}")
        for m in report["modules"]:
            cost = f", {m['costPerTurn']} tokens a turn over live windows" if m["costPerTurn"] is not None else ""
            unwritten = f", {m['neverWritten']} never written" if m["neverWritten"] is not None else ""
            self.stdout.write(f"  {m['kind']}: {m['stores']} stores, {m['holders']} holders ({m['liveHolders']} live), "
                              f"{m['shared']} shared{cost}{unwritten}")
        for d in report["divergences"]:
            self.stdout.write(f"  divergence {d['agentId']}: {d['declared']} -> {d['observed']}")
