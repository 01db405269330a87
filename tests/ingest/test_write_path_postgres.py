"""The write path's regression corpus on PostgreSQL (the scale path), where text and jsonb columns
are stricter than SQLite's: each line no column can hold is rejected with its reason, the rest of its
chunk stored, every page of the run answers, and rebuild gives the same projections."""

import pytest

from tests.ingest_helpers import BAD, GOOD, dump, manage, pages

pytestmark = pytest.mark.scale


def test_the_corpus_on_postgresql(pg_env, tmp_path):
    lines = []
    for i, (bad, _) in enumerate(BAD):
        lines += [GOOD[i % len(GOOD)], bad]
    stream = tmp_path / "corpus.ndjson"
    stream.write_bytes(b"\n".join(lines) + b"\n")
    out = manage(pg_env, "ingest", str(stream), "--run", "corpus").stdout.decode()
    assert out.strip() == f"stored {len(BAD)}, rejected {len(BAD)}"
    exported = tmp_path / "out.ndjson"
    manage(pg_env, "export", "corpus", "--output", str(exported))
    assert exported.read_bytes() == b"\n".join(lines[::2]) + b"\n"
    statuses = pages(pg_env)["corpus"]
    assert set(statuses.values()) == {200}, statuses
    before = dump(pg_env)["corpus"]
    manage(pg_env, "rebuild_projections", "corpus")
    assert dump(pg_env)["corpus"] == before
