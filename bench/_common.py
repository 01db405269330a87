"""Helpers the bench/ scripts share: a fresh Django database (SQLite under var/bench/, or a uniquely
named PostgreSQL database dropped at exit), and the one machine-readable line each script ends with
(scripts/bench reads it into its table).

Every bench runs the console as the product is served (scripts/serve): DEBUG off unless the caller's
DJANGO_DEBUG says otherwise. DEBUG on would time Django's debug cursor too (on SQLite it quotes each
query's parameters with one more query), and the Daphne and worker processes a bench starts inherit
this process's environment."""

import atexit
import json
import os
import shutil
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The scale path's server (the project's services): trust auth, user postgres.
POSTGRES = "postgresql://postgres@127.0.0.1:5432/"
DATABASES = ("sqlite", "postgres")


def postgres_database(name, template=None):
    """Create a PostgreSQL database no one else uses, empty or a copy of database `template` (which
    no connection may be using), dropped when the bench exits (its connections closed first); returns
    its URL."""
    import psycopg

    dbname = f"gg_bench_{name}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(POSTGRES + "postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"' + (f' TEMPLATE "{template}"' if template else ""))

    def drop():
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        with psycopg.connect(POSTGRES + "postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')

    atexit.register(drop)
    return POSTGRES + dbname


def fresh_django(name, database="sqlite", keep=False):
    """Set Django up on an empty, migrated database and return where it is: the SQLite file in
    var/bench/<name>/, or (``database="postgres"``) the URL of a new PostgreSQL database.
    ``keep`` (SQLite only) leaves an existing var/bench/<name>/ in place, migrated, for reuse.
    GG_BENCH_VAR moves var/bench/ elsewhere (the load test runs bench/feed in its own tmp dir)."""
    var = Path(os.environ.get("GG_BENCH_VAR", REPO / "var" / "bench")) / name
    if not keep:
        shutil.rmtree(var, ignore_errors=True)
    var.mkdir(parents=True, exist_ok=keep)
    os.environ["GG_CONSOLE_VAR"] = str(var)
    os.environ["DJANGO_SETTINGS_MODULE"] = "gg_console.settings"
    os.environ.setdefault("DJANGO_DEBUG", "0")  # as served; see the module's docstring
    os.environ.pop("DATABASE_URL", None)
    if database == "postgres":
        os.environ["DATABASE_URL"] = postgres_database(name)
    sys.path.insert(0, str(REPO))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return os.environ["DATABASE_URL"] if database == "postgres" else var / "db.sqlite3"


def report(benchmark, figure, baseline="", verdict=""):
    """The last line of a bench script: `BENCH {json}` with the row scripts/bench prints."""
    print("BENCH " + json.dumps(
        {"benchmark": benchmark, "figure": figure, "baseline": baseline, "verdict": verdict}))
