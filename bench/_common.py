"""Helpers the bench/ scripts share: a fresh Django database under var/bench/, and the one
machine-readable line each script ends with (scripts/bench reads it into its table)."""

import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def fresh_django(name):
    """Set Django up on an empty SQLite database in var/bench/<name>/ (migrated) and return it.
    GG_BENCH_VAR moves var/bench/ elsewhere (the load test runs bench/feed in its own tmp dir)."""
    var = Path(os.environ.get("GG_BENCH_VAR", REPO / "var" / "bench")) / name
    shutil.rmtree(var, ignore_errors=True)
    var.mkdir(parents=True)
    os.environ["GG_CONSOLE_VAR"] = str(var)
    os.environ["DJANGO_SETTINGS_MODULE"] = "gg_console.settings"
    os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(REPO))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return var / "db.sqlite3"


def report(benchmark, figure, baseline="", verdict=""):
    """The last line of a bench script: `BENCH {json}` with the row scripts/bench prints."""
    print("BENCH " + json.dumps(
        {"benchmark": benchmark, "figure": figure, "baseline": baseline, "verdict": verdict}))
