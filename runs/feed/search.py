"""Full-text search over a run's records: the index the write path keeps, and the query the feed asks.

Each stored record's text — its string values, not its keys, so `agentId` or `type` match nothing —
is indexed in the transaction that stores it (`index`, called by `runs.ingest.writer`):

* SQLite (the embedded default): an FTS5 table `runs_event_fts(body)` whose rowid is
  ``run << 40 | seq``, so one run's rows are one rowid range (FTS5 answers range bounds from the
  index) and deleting a run is one range delete.
* PostgreSQL (the scale path): `runs_event_search(run_id, seq, doc tsvector)` with a GIN index. Text
  and query are split into lowercased words here as FTS5 splits them (`lexemes`) and the tsvector is
  those words as they are (``array_to_tsvector``, no positions: every word required, no phrase):
  identifiers, not English (no stemming, no stop words). PostgreSQL's parser is not asked: it would
  keep `notes/zebra.txt` one file token and drop `<script>` as a tag, and ``to_tsvector`` cost three
  times the whole statement's remaining work.

A query is the words an operator typed, each a literal (an FTS5 phrase, a quoted tsquery lexeme):
every word must occur; nothing typed is query syntax, so no input is a syntax error.
"""

import re

from django.db import connection

from runs.stream.record import loads_record

TEXT_LIMIT = 32 * 1024  # characters of one record indexed: a huge file body is found by its start
_SEQ_BITS = 40  # 1.1e12 seqs per run

SQLITE_TABLE = "CREATE VIRTUAL TABLE IF NOT EXISTS runs_event_fts USING fts5(body)"
POSTGRES_TABLE = [
    "CREATE TABLE IF NOT EXISTS runs_event_search (run_id integer NOT NULL, seq bigint NOT NULL,"
    " doc tsvector NOT NULL, PRIMARY KEY (run_id, seq))",
    "CREATE INDEX IF NOT EXISTS runs_event_search_doc ON runs_event_search USING gin (doc)",
]


def record_text(obj) -> str:
    """The string values of a record, depth first, one per line (at most TEXT_LIMIT characters)."""
    out = []
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, (dict, list)):
        _strings(obj.values() if isinstance(obj, dict) else obj, out, TEXT_LIMIT)
    return "\n".join(out)[:TEXT_LIMIT].replace("\x00", "\ufffd")


def _strings(values, out: list, room: int) -> int:
    """Append the strings under `values` to `out` in order until `room` characters are taken; what is
    left of it. (Recursion, not a stack: a record nests at most MAX_DEPTH levels.)"""
    for value in values:
        if room <= 0:
            break
        if isinstance(value, str):
            out.append(value)
            room -= len(value) + 1
        elif isinstance(value, dict):
            room = _strings(value.values(), out, room)
        elif isinstance(value, list):
            room = _strings(value, out, room)
    return room


_NOT_WORD = re.compile(r"[\W_]+")  # FTS5's unicode61: letters and digits make words, the rest separates
_LEXEME_BYTES = 2047  # the longest word a tsvector holds (to_tsvector skips longer ones, as these are)
_MAYBE_LONG = re.compile(r"(?<![^ ])[^ ]{%d}" % (_LEXEME_BYTES // 4 + 1))  # tried at word starts only: linear


def lexemes(text: str) -> str:
    """`text`'s words for PostgreSQL, lowercased, one space apart: the index's and the query's."""
    words = _NOT_WORD.sub(" ", text).strip().lower()
    if _MAYBE_LONG.search(words):
        words = " ".join(w for w in words.split(" ") if len(w.encode()) <= _LEXEME_BYTES)
    return words


def _key(run_pk, seq):
    return (int(run_pk) << _SEQ_BITS) | int(seq)


def create_tables(conn) -> None:
    """The index's table on `conn` (a migration's schema editor connection)."""
    with conn.cursor() as cursor:
        for sql in POSTGRES_TABLE if conn.vendor == "postgresql" else [SQLITE_TABLE]:
            cursor.execute(sql)


def drop_tables(conn) -> None:
    with conn.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS " + ("runs_event_search" if conn.vendor == "postgresql" else "runs_event_fts"))


def index(run_pk, records, *, again=False) -> None:
    """Index [(seq, record object)] of run `run_pk` — inside the caller's transaction. The write path
    indexes seqs new to the run (on PostgreSQL one COPY, each doc the tsvector literal of its
    lexemes); `again` (rebuild, reindex) goes over seqs that may be indexed already: a row is written
    only when its text changed (a GIN entry costs far more than the comparison; FTS5 deletes a row by
    tokenizing it again, so rewriting an unchanged row costs twice its insert)."""
    if not records:
        return
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            rows = [(_key(run_pk, seq), record_text(obj)) for seq, obj in records]
            if again:
                cursor.execute("SELECT rowid, body FROM runs_event_fts WHERE rowid >= %s AND rowid <= %s",
                               [rows[0][0], rows[-1][0]])
                held = dict(cursor.fetchall())
                rows = [(key, text) for key, text in rows if held.get(key) != text]
            cursor.executemany("INSERT OR REPLACE INTO runs_event_fts (rowid, body) VALUES (%s, %s)", rows)
        elif again:  # one statement for the chunk, not one per record
            cursor.execute(
                "INSERT INTO runs_event_search AS i (run_id, seq, doc)"
                " SELECT %s, s, array_to_tsvector(string_to_array(t, ' '))"
                " FROM unnest(%s::bigint[], %s::text[]) AS u(s, t)"
                " ON CONFLICT (run_id, seq) DO UPDATE SET doc = EXCLUDED.doc WHERE i.doc <> EXCLUDED.doc",
                [run_pk, [seq for seq, _ in records], [lexemes(record_text(obj)) for _, obj in records]],
            )
        else:  # words one space apart, none with a quote, backslash or colon: a tsvector literal as they are
            with cursor.cursor.copy("COPY runs_event_search (run_id, seq, doc) FROM STDIN") as copy:
                for seq, obj in records:
                    copy.write_row((run_pk, seq, lexemes(record_text(obj))))


def forget(run_pk, *, after=0) -> None:
    """Drop run `run_pk`'s rows from the index (a deleted run), or those past seq `after` (what a
    rebuild's log no longer holds)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("DELETE FROM runs_event_search WHERE run_id = %s AND seq > %s", [run_pk, after])
        else:
            cursor.execute("DELETE FROM runs_event_fts WHERE rowid > %s AND rowid < %s",
                           [_key(run_pk, after), _key(int(run_pk) + 1, 0)])


def reindex(run_pk, chunk=2000) -> int:
    """Index run `run_pk`'s stored records again from the log (the migrations): how many."""
    after, total = 0, 0
    while True:
        with connection.cursor() as cursor:
            # A range of seqs (1..n, no gaps), not LIMIT: before ANALYZE the planner would read the rest.
            cursor.execute("SELECT seq, raw FROM runs_event WHERE run_id = %s AND seq > %s AND seq <= %s ORDER BY seq",
                           [run_pk, after, after + chunk])
            rows = cursor.fetchall()
        if not rows:
            forget(run_pk, after=after)
            return total
        index(run_pk, [(seq, _loads(raw)) for seq, raw in rows], again=True)
        total += len(rows)
        after = rows[-1][0]


def _loads(raw):
    """A stored line as every reader reads it; one no reader decodes (stored before a rule refused
    it) is indexed as its text."""
    try:
        return loads_record(raw)
    except ValueError:
        return raw


def words(query: str) -> list[str]:
    return [w for w in (query or "").replace("\x00", " ").split() if w][:16]


def matching_seqs_sql(run_pk, query: str, *, after=0, before=None, order=None, limit=None):
    """(sql, params) selecting the seqs of run `run_pk` between `after` and `before` (exclusive;
    None: the end) whose record holds every word of `query`, in `order` of seq ("ASC", "DESC";
    None: any, as a subquery for ``seq__in`` wants), at most `limit` of them; None when the query
    has no words."""
    terms = words(query)
    if not terms:
        return None

    def tail(column):
        return (f" ORDER BY {column} {order}" if order else "") + (f" LIMIT {int(limit)}" if limit is not None else "")

    if connection.vendor == "postgresql":
        tsquery = " & ".join(f"'{w}'" for w in lexemes(" ".join(terms)).split())  # no quote in a word
        upper = " AND seq < %s" if before is not None else ""
        return (f"SELECT seq FROM runs_event_search WHERE run_id = %s AND doc @@ %s::tsquery AND seq > %s{upper}"
                + tail("seq"), [int(run_pk), tsquery, int(after), *([int(before)] if before is not None else [])])
    phrase = " ".join('"' + t.replace('"', '""') + '"' for t in terms)
    upper = _key(run_pk, before) if before is not None else _key(int(run_pk) + 1, 0)
    return (f"SELECT rowid - {_key(run_pk, 0)} FROM runs_event_fts WHERE runs_event_fts MATCH %s AND rowid > %s"
            " AND rowid < %s" + tail("rowid"), [phrase, _key(run_pk, after), upper])


def matching_seqs(run_pk, query: str, *, newest_first=False, **bounds):
    """The seqs `matching_seqs_sql` selects, as a list in seq order (newest first when asked; None
    when the query has no words). The bounds and the limit go to the index, which reads its matches
    in seq order and stops there: a common word matched 168,000 records of the 1M-event run, and
    reading them all to show its last hundred took 40 ms."""
    found = matching_seqs_sql(run_pk, query, order="DESC" if newest_first else "ASC", **bounds)
    if found is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(*found)
        return [seq for (seq,) in cursor.fetchall()]
