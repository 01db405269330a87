"""The full-text search on the scale path: PostgreSQL's `tsvector` index (runs_event_search, GIN,
the `simple` configuration), kept by the write path in the records' own transaction. The same
promises as on SQLite's FTS5 (tests/feed/test_search.py), checked on a real PostgreSQL database by a
`manage.py` of its own: found by the words of its values and never by a key, every word required,
no stemming, anything typed is words, the feed's filtered pages and live tail, rebuild and delete."""

import json

import pytest

from tests.ingest_helpers import manage

pytestmark = pytest.mark.scale

TYPED = ['"', 'zebra"', "zebra OR nothing", "zebra | nothing", "!zebra", "zebra & (", "zeb:*", "-zebra", "<->", "(((", "\\\\"]

SCRIPT = r"""
import json, re
from django.db import connection
from runs.feed import history, search
from runs.feed.filters import FeedFilter
from runs.ingest import deletion, rebuild
from runs.ingest.writer import append, append_lines
from runs.models import Run

def found(run, words):
    return sorted(search.matching_seqs(run.pk, words))

def page_seqs(run, q, **where):
    return [int(s) for s in re.findall(r'data-seq="(\d+)"', history.page(run.pk, FeedFilter(q=q), **where).html)]

out = {"vendor": connection.vendor}
with connection.cursor() as cursor:
    cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'runs_event_search_doc'")
    out["index"] = cursor.fetchone()[0]
run, other = Run.objects.create(name="a"), Run.objects.create(name="b")
append(run, [
    {"type": "log", "message": "the zebra crossed"},
    {"type": "tool_call", "name": "write_file", "args": {"path": "notes/zebra.txt", "body": "<script>x</script>"}},
    {"type": "assistant_message", "text": "nothing to see"},
])
append(other, [{"type": "log", "message": "zebra elsewhere"}])
for words in ("zebra", "ZEBRA crossed", "write_file", "script", "cross", "agentId type message"):
    out[words] = found(run, words)
out["other"] = found(other, "zebra")
words = Run.objects.create(name="words")
append(words, [{"type": "log", "message": "x² " + "é" * 1100 + " Zebra"}, {"type": "log", "message": "x 2"}])
out["words"] = {w: found(words, w) for w in ("x²", "X²", "x", "zebra", "é" * 1100)}
out["typed"] = {t: found(run, t) if search.words(t) else None for t in json.loads(TYPED)}
out["page"] = page_seqs(run, "zebra")
append(run, [{"type": "log", "message": "a zebra arrives live"}])  # the write path's own transaction
out["tail"] = page_seqs(run, "zebra", after=3)
lines = Run.objects.create(name="lines")
append_lines(lines, ['{"type":"log","message":"alpha"}', "not json", '{"type":"gg","event":{"type":"log","message":"beta"}}'])
out["lines"] = [found(lines, "alpha"), found(lines, "beta")]
search.forget(lines.pk)
out["forgotten"] = found(lines, "alpha")
with connection.cursor() as cursor:  # drifted further: a wrong row, and one past the log
    cursor.execute("INSERT INTO runs_event_search VALUES (%s, 2, 'stale'), (%s, 9, 'stale')", [lines.pk, lines.pk])
rebuild.rebuild_projections(lines)
out["rebuilt"] = [found(lines, "alpha"), found(lines, "beta"), found(lines, "stale")]
deletion.run_delete(lines)
out["deleted"] = found(lines, "alpha")
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM runs_event_search WHERE run_id = %s", [lines.pk])
    out["rows_left"] = cursor.fetchone()[0]
print(json.dumps(out))
"""


def test_the_tsvector_search_on_postgresql(pg_env):
    script = SCRIPT.replace("json.loads(TYPED)", repr(TYPED))
    out = json.loads(manage(pg_env, "shell", "-c", script).stdout.splitlines()[-1])
    assert out["vendor"] == "postgresql" and "gin (doc)" in out["index"]
    assert out["zebra"] == [1, 2]
    assert out["ZEBRA crossed"] == [1]  # every word, any case
    assert out["write_file"] == [2] and out["script"] == [2]
    assert out["cross"] == []  # `simple`: identifiers, not English — no stemming
    assert out["agentId type message"] == []  # keys are not text
    assert out["other"] == [1]
    # Split as FTS5 splits (`x²` one word, as PostgreSQL's parser does not); a word longer than a
    # tsvector holds is skipped, not an error.
    assert out["words"] == {"x²": [1], "X²": [1], "x": [2], "zebra": [1], "é" * 1100: []}
    assert all(v is None or isinstance(v, list) for v in out["typed"].values()), out["typed"]
    assert out["typed"]["zebra OR nothing"] == [] and out["typed"]["!zebra"] == [1, 2]  # words, not operators
    assert out["page"] == [1, 2] and out["tail"] == [4]
    assert out["lines"] == [[1], [2]] and out["forgotten"] == [] and out["rebuilt"] == [[1], [2], []]
    assert out["deleted"] == [] and out["rows_left"] == 0
