"""The full-text index the write path keeps (runs.feed.search): a record is found by any word of its
string values, never by a key; what an operator types is words, never query syntax; rebuild and
delete keep the index in step with the log."""

import re

import pytest

from runs.feed import search
from runs.ingest import deletion, rebuild
from runs.ingest.writer import append, append_lines
from runs.models import Run

pytestmark = pytest.mark.django_db


def found(run, words):
    return sorted(search.matching_seqs(run.pk, words))


def test_a_record_is_found_by_the_words_of_its_values_in_its_own_run_only():
    run, other = Run.objects.create(name="a"), Run.objects.create(name="b")
    append(run, [
        {"type": "log", "message": "the zebra crossed"},
        {"type": "tool_call", "name": "write_file", "args": {"path": "notes/zebra.txt", "body": "<script>x</script>"}},
        {"type": "assistant_message", "text": "nothing to see"},
    ])
    append(other, [{"type": "log", "message": "zebra elsewhere"}])
    assert found(run, "zebra") == [1, 2]
    assert found(run, "ZEBRA crossed") == [1]  # every word, any case
    assert found(run, "write_file") == [2]
    assert found(run, "script") == [2]
    assert found(run, "agentId type message") == []  # keys are not text
    assert found(other, "zebra") == [1]
    assert search.matching_seqs(run.pk, "   ") is None


@pytest.mark.parametrize("typed", ['"', 'zebra"', "zebra OR nothing", "NEAR(zebra", "zeb*", "-zebra", "^zebra", "a:b", "(((", "\x00"])
def test_anything_typed_is_words_never_a_syntax_error(typed):
    run = Run.objects.create(name="s")
    append(run, [{"type": "log", "message": "the zebra crossed"}])
    assert isinstance(found(run, typed), list) if search.words(typed) else search.matching_seqs(run.pk, typed) is None


def test_lines_are_indexed_as_stored_and_rebuild_and_delete_follow_the_log():
    run = Run.objects.create(name="lines")
    append_lines(run, ['{"type":"log","message":"alpha"}', "not json", '{"type":"gg","event":{"type":"log","message":"beta"}}'])
    assert found(run, "alpha") == [1] and found(run, "beta") == [2]
    search.forget(run.pk)  # an index that drifted from the log
    assert found(run, "alpha") == []
    rebuild.rebuild_projections(run)
    assert found(run, "alpha") == [1] and found(run, "beta") == [2]
    deletion.run_delete(run)
    assert found(run, "alpha") == []


def test_rebuild_leaves_the_index_exactly_the_log_s_whatever_it_held():
    run, other = Run.objects.create(name="drifted"), Run.objects.create(name="beside")
    append(run, [{"type": "log", "message": "alpha"}, {"type": "log", "message": "beta"}])
    append(other, [{"type": "log", "message": "alpha"}])
    # A row holding the wrong text, one past the log: a rebuild puts each back to what the log says
    # (and leaves the rows that stand alone).
    search.index(run.pk, [(1, {"message": "gamma"}), (9, {"message": "delta"})], again=True)
    assert found(run, "gamma") == [1] and found(run, "delta") == [9]
    rebuild.rebuild_projections(run)
    assert found(run, "alpha") == [1] and found(run, "beta") == [2]
    assert found(run, "gamma") == [] and found(run, "delta") == []
    assert found(other, "alpha") == [1]


def test_the_index_answers_a_range_of_seqs_in_order_a_chunk_at_a_time():
    run, other = Run.objects.create(name="range"), Run.objects.create(name="other")
    append(run, [{"type": "log", "message": f"kiwi {i}" if i % 2 else "plum"} for i in range(1, 13)])
    append(other, [{"type": "log", "message": "kiwi"}] * 3)
    assert search.matching_seqs(run.pk, "kiwi") == [1, 3, 5, 7, 9, 11]
    assert search.matching_seqs(run.pk, "kiwi", before=10, limit=3, newest_first=True) == [9, 7, 5]
    assert search.matching_seqs(run.pk, "kiwi", after=3, limit=2) == [5, 7]
    assert search.matching_seqs(run.pk, "kiwi", after=3, before=9) == [5, 7]
    assert search.matching_seqs(run.pk, "kiwi", after=11) == [] and search.matching_seqs(other.pk, "kiwi") == [1, 2, 3]


@pytest.mark.parametrize("text", [
    "".join(map(chr, range(128))),  # every ASCII character: letters and digits are words, the rest separates
    "  notes/zebra.txt\tREAD_ME\n<script>x=1;</script> a-b_c  ",
    "Ünïcode naïve café", "mixed ascii and ß", "",
])
def test_postgresql_words_are_split_as_fts5_splits_them(text):
    """The words the tsvector holds: letters and digits, lowercased, one space apart."""
    assert search.lexemes(text) == " ".join(w.lower() for w in re.findall(r"[^\W_]+", text))
