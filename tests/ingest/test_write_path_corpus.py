"""The write path's regression corpus (issue 19): each line that once failed a whole chunk, a record
that once took a run's pages down, and a feed window that once outgrew a socket message — each now
held. On the embedded default; tests/ingest/test_write_path_postgres.py runs the same corpus on
PostgreSQL."""

import hashlib
import json

import pytest
from django.contrib.auth.models import Permission

from runs.feed.html import render_rows
from runs.feed.windows import FIELD_CHARS, WINDOW_CHARS, read_window
from runs.ingest import rebuild
from runs.ingest import writer as ingest
from runs.models import Event, RejectedLine
from runs.stream.record import MAX_DEPTH
from tests.ingest_helpers import BAD, GOOD, all_ok, nested, nested_text, new_run, page_statuses
from tests.streams import projection_dump

pytestmark = pytest.mark.django_db

def test_one_bad_line_never_costs_its_chunk_the_rest_is_stored(viewer_client):
    lines = []
    for i, (bad, _) in enumerate(BAD):
        lines += [GOOD[i % len(GOOD)], bad]
    run = new_run()
    result = ingest.append_lines(run, lines)
    assert (result.stored, result.rejected) == (len(BAD), len(BAD))
    reasons = dict(result.rejections)
    for i, (_, reason) in enumerate(BAD):
        assert reasons[2 * i + 2].startswith(reason), (i, reasons[2 * i + 2])
    assert [r.encode() for r in Event.objects.filter(run=run).values_list("raw", flat=True)] == lines[::2]
    assert RejectedLine.objects.filter(run=run).count() == len(BAD)
    previews = RejectedLine.objects.filter(run=run).values_list("raw", flat=True)
    assert all(p.encode("utf-8") for p in previews)  # every preview is text a column holds
    assert all_ok(page_statuses(viewer_client, run))
    before = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == before
    # re-importing the same lines stores nothing twice and keeps no rejection twice
    again = ingest.append_lines(run, lines)
    assert (again.stored, again.duplicates, RejectedLine.objects.filter(run=run).count()) == (0, len(BAD), len(BAD))


def test_records_handed_over_as_dicts_follow_the_same_rules():
    run = new_run()
    records = [{"type": "log", "agentId": "root"}, {"type": ["x"]}, {"type": "log", "agentId": "\ud800"},
               {"type": "log", "x": nested(MAX_DEPTH)}, {"type": "log", "x": nested(MAX_DEPTH - 1)}]
    result = ingest.append(run, records)
    assert (result.stored, result.rejected) == (2, 3)
    assert [n for n, _ in result.rejections] == [2, 3, 4]


def test_the_depth_limit_is_one_rule_a_record_at_it_is_stored_and_read_everywhere(viewer_client, operator_client):
    deep = nested(MAX_DEPTH - 2)  # inside {"type":..., key: [...]} -> exactly MAX_DEPTH levels
    records = [
        {"type": "session_started", "capabilitySet": {"agents": [{"slug": "p", "x": nested(MAX_DEPTH - 4)}]},
         "x": deep},
        {"type": "session_summary", "summary": deep},
        {"type": "agent_spawned", "agentId": "root", "profileId": "p", "brief": "b"},
        {"type": "agent_modules", "agentId": "root", "modules": [
            {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created", "x": nested(MAX_DEPTH - 3)}]},
        {"type": "agent_surface", "agentId": "root", "tools": deep, "apis": deep, "withheld": deep},
        {"type": "memory_state", "agentId": "root", "moduleId": "memories-0", "memories": deep},
        {"type": "tool_call", "agentId": "root", "name": "read_file", "args": deep},
        {"type": "api_call", "agentId": "root", "operation": "files.read_file", "args": deep},
        {"type": "code_execution", "agentId": "root", "logs": deep, "apiCalls": deep},
        {"type": "brand_new_kind", "agentId": "root", "x": deep},
        {"type": "agent_transition", "agentId": "root", "kind": "fork", "toAgentId": "s1", "modules": deep},
        {"type": "usage", "agentId": "root", "tokens": {"output": 3, "x": nested(MAX_DEPTH - 3)}},
    ]
    lines = [json.dumps(r).encode() for r in records]
    run = new_run()
    result = ingest.append_lines(run, lines)
    assert (result.stored, result.rejected) == (len(lines), 0), result.rejections
    assert all_ok(page_statuses(viewer_client, run))
    assert operator_client.get(f"/runs/{run.pk}/rerun/").status_code in (200, 302)
    before = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == before


def _store_verbatim(run, raws):
    """Lines stored before today's rules (an older console wrote them): put in the log as they are."""
    Event.objects.bulk_create(
        Event(run=run, seq=run.last_seq + i, type="agent_surface", agent_id="root", raw=raw,
              digest=hashlib.sha256(raw.encode()).hexdigest())
        for i, raw in enumerate(raws, start=1))
    run.last_seq += len(raws)
    run.save(update_fields=["last_seq"])


def test_a_record_nested_940_deep_already_in_the_log_breaks_no_page_and_rebuild_works(viewer_client):
    # 1.9 KB, pushed by any token holder before the depth rule: it took most of the run's pages down
    deep = (f'{{"type":"agent_surface","agentId":"root","tools":{nested_text(940)},'
            f'"apis":[{{"path":"gg.files","functions":{nested_text(900)}}}]}}')
    assert len(deep) < 4000
    run = new_run()
    ingest.append_lines(run, GOOD)
    _store_verbatim(run, [deep, json.dumps({"type": [1], "agentId": "root"}), '{"type":"log","agentId":"\\ud800"}'])
    assert all_ok(page_statuses(viewer_client, run))
    stats = rebuild.rebuild_projections(run)
    assert stats["events"] == len(GOOD) + 3
    assert all_ok(page_statuses(viewer_client, run))
    rebuilt = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == rebuilt


def test_a_window_of_huge_rows_stays_a_bounded_socket_message_and_loses_nothing():
    huge = "x" * 100_000  # each far past a field; 40 of them far past a WebSocket frame's 1 MiB
    records = [{"type": "assistant_message", "agentId": "root", "text": f"{i} {huge}"} for i in range(40)]
    records += [{"type": "tool_call", "agentId": "root", "name": "write_file", "args": {"body": '"' * 400_000}},
                {"type": "code_execution", "agentId": "root", "logs": ["<" * 300_000], "ok": True}]
    run = new_run()
    assert ingest.append(run, records).stored == len(records)
    cursor, state, rows, messages = 0, None, [], 0
    while True:
        window, state = read_window(run.pk, cursor, state=state)
        if window.cursor == cursor:
            break
        messages += 1
        assert len(window.html.encode()) < 1024 * 1024 // 2
        rows += window.rows
        cursor = window.cursor
        assert window.full or cursor == run.last_seq  # a window cut short says there is more
    assert [row.seq for row in rows] == list(range(1, len(records) + 1)) and messages > 1
    for row in rows:
        for text in (row.detail, row.args, row.output):
            assert len(text) <= FIELD_CHARS + 40
    assert rows[0].detail.endswith(f"({len(records[0]['text']) - FIELD_CHARS:,} more characters)")
    assert WINDOW_CHARS * 6 + 200 * 400 < 1024 * 1024  # the bound holds whatever the escaping
    assert len(render_rows(rows[:1], 1)) < 100_000


def test_writes_only_into_a_run_the_user_may_write(client, django_user_model):
    from runs.models import IngestToken

    owner, other = (django_user_model.objects.create_user(n, password="pw") for n in ("owner", "other"))
    mine = new_run(source="api", created_by=owner)
    unowned = new_run()
    launched = new_run(source="engine", status="running", created_by=owner)
    key = {u: IngestToken.objects.create(user=u).key for u in (owner, other)}

    def post(run, user):
        return client.post(f"/api/runs/{run.pk}/events", b'{"type":"session_ended","status":"completed"}\n',
                           content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Bearer {key[user]}")

    assert post(mine, owner).status_code == 200
    for run, user in ((mine, other), (unowned, owner), (launched, owner), (launched, other)):
        response = post(run, user)
        assert response.status_code == 403 and run.name in response.json()["error"], (run.name, user)
    launched.refresh_from_db()
    assert launched.status == "running" and launched.last_seq == 0  # a forged session_ended changed nothing
    assert "has no owner: only a superuser" in post(unowned, owner).json()["error"]
    # the upload form refuses the same way, by name
    other.user_permissions.add(Permission.objects.get(codename="add_run"))  # importing needs it
    client.force_login(other)
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("x.ndjson", b'{"type":"log"}\n')
    response = client.post("/runs/import/", {"name": mine.name, "file": upload})
    assert response.status_code == 200 and "belongs to another user" in response.content.decode()
    assert Event.objects.filter(run=mine).count() == 1
