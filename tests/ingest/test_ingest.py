"""The one write path: what is stored, what is rejected, idempotent re-import, columns, doorbell."""

import hashlib
import json
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.feed import doorbell
from runs.ingest import writer as ingest
from runs.models import Agent, Event, RejectedLine, Run
from tests.streams import HOSTILE_LINES, REAL_MOCK, STREAMS, import_stream

pytestmark = pytest.mark.django_db

MiB = 1024 * 1024


def new_run(name="r"):
    return Run.objects.create(name=name)


def rec(type_, agent=None, **fields):
    r = {"timestamp": "2026-08-03T00:00:00Z", "sessionId": "s"}
    if agent:
        r["agentId"] = agent
    r["type"] = type_
    r.update(fields)
    return r


# --- the real recorded stream (the check) --------------------------------------------


def test_real_mock_session_projects_to_what_gg_recorded():
    run, result = import_stream(REAL_MOCK)
    assert (result.stored, result.rejected, result.duplicates) == (14, 0, 0)
    assert Event.objects.filter(run=run).count() == 14
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == list(range(1, 15))
    agents = list(Agent.objects.filter(run=run))
    assert [a.agent_id for a in agents] == ["root"]
    root = agents[0]
    assert root.turns == 2 and run.turn_count == 2
    assert root.tool_calls == {"write_file": 1} and run.call_count == 1
    assert root.api_calls == {} and root.tool_failures == {}
    assert run.usage["tokens"] == {"uncachedInput": 2600, "cachedInput": None, "output": 240, "reasoning": None}
    assert Decimal(str(run.usage["cost"]["comparable"])) == Decimal("0.0063")
    assert Decimal(str(run.usage["cost"]["actual"])) == Decimal("0.0063")
    assert run.status == "completed"
    assert root.status == "done"  # reconciled at session_ended
    assert run.session_id == "fixture-session"
    assert run.summary["terminalStatus"] == "completed"
    assert run.started_at.isoformat().startswith("2026-07-24T04:34:39.067165")
    assert run.ended_at is not None and run.ended_at >= run.started_at
    # Event columns: the agent's turn number (null before its first turn_started), tool name, ok
    cols = list(Event.objects.filter(run=run).order_by("seq").values_list("type", "agent_id", "turn", "tool_name", "ok"))
    assert cols[0] == ("session_started", "root", None, "", None)
    assert cols[3] == ("turn_started", "root", 1, "", None)
    assert cols[6] == ("tool_call", "root", 1, "write_file", None)
    assert cols[7] == ("tool_result", "root", 1, "write_file", True)
    assert cols[8] == ("turn_started", "root", 2, "", None)
    assert cols[13] == ("session_ended", "root", 2, "", None)


def test_records_are_stored_exactly_as_received():
    raw_lines = REAL_MOCK.read_bytes().split(b"\n")[:-1]
    run, _ = import_stream(REAL_MOCK)
    stored = list(Event.objects.filter(run=run).order_by("seq").values_list("raw", "digest", "timestamp"))
    assert [r.encode() for r, _, _ in stored] == raw_lines
    assert stored[0][1] == hashlib.sha256(raw_lines[0]).hexdigest()
    assert stored[0][2] == "2026-07-24T04:34:39.067165231Z"  # gg's stamp, verbatim


# --- rejections ------------------------------------------------------------------------------


def test_malformed_tail_accounts_for_every_line():
    path = STREAMS / "malformed_tail.ndjson"
    lines = path.read_bytes().split(b"\n")
    assert not path.read_bytes().endswith(b"\n")  # the last record was cut off mid-write
    run, result = import_stream(path)
    assert result.stored + result.rejected == len(lines) == 11
    assert (result.stored, result.rejected) == (6, 5)
    reasons = dict(result.rejections)
    assert sorted(reasons) == [7, 8, 9, 10, 11]
    assert reasons[7] == "blank line"
    assert reasons[8].startswith("not JSON")
    assert reasons[9] == "not a JSON object (a JSON array)"
    assert reasons[10] == "not a JSON object (a JSON string)"
    assert reasons[11].startswith("not JSON")
    rows = list(RejectedLine.objects.filter(run=run).values_list("line_number", "reason", "raw"))
    assert [(n, r) for n, r, _ in rows] == result.rejections
    assert rows[1][2] == lines[7].decode()  # the text is kept
    assert rows[4][2].endswith('"name":"wri')
    assert run.rejected_count == 5 and run.last_seq == 6
    assert run.status == "running"  # no session_ended arrived


@pytest.mark.parametrize(
    "line, reason",
    [
        ("[1, 2]", "not a JSON object (a JSON array)"),
        ('"text"', "not a JSON object (a JSON string)"),
        ("42", "not a JSON object (a JSON number)"),
        ("null", "not a JSON object (a JSON null)"),
        ("true", "not a JSON object (a JSON boolean)"),
        ('{"type": "log", "x": NaN}', "not JSON"),
        ("{'type': 'log'}", "not JSON"),
        ("   ", "blank line"),
    ],
)
def test_lines_that_are_not_json_objects_are_rejected(line, reason):
    run = new_run()
    result = ingest.append_lines(run, ['{"type":"turn_started"}', line, '{"type":"turn_started"}'])
    assert (result.stored, result.rejected) == (2, 1)
    assert result.rejections[0][0] == 2
    assert result.rejections[0][1].startswith(reason)
    assert RejectedLine.objects.get(run=run).line_number == 2
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2]  # gapless


def test_line_over_one_mib_is_rejected_and_one_mib_is_not():
    prefix = b'{"type":"log","level":"info","message":"'
    suffix = b'"}'
    exactly = prefix + b"x" * (MiB - len(prefix) - len(suffix)) + suffix
    assert len(exactly) == MiB
    over = prefix + b"x" * (MiB - len(prefix) - len(suffix) + 1) + suffix
    body = exactly + b"\n" + over + b"\n" + b'{"type":"turn_started"}\n'
    run = new_run()
    import io

    result = ingest.append_stream(run, io.BytesIO(body))
    assert (result.stored, result.rejected) == (2, 1)
    assert result.rejections[0][0] == 2
    assert result.rejections[0][1] == f"line over 1 MiB ({MiB + 1:,} bytes)"
    assert len(Event.objects.get(run=run, seq=1).raw) == MiB
    assert len(RejectedLine.objects.get(run=run).raw) == RejectedLine.RAW_LIMIT
    # the same through str lines
    result = ingest.append_lines(new_run("s"), [over.decode()])
    assert result.rejected == 1 and "over 1 MiB" in result.rejections[0][1]


def test_a_huge_line_is_not_held_whole_in_memory():
    import io

    huge = b'{"type":"log","message":"' + b"y" * (5 * MiB) + b'"}\n{"type":"turn_started"}\n'
    lines = list(ingest.iter_lines(io.BytesIO(huge)))
    assert len(lines) == 2
    assert isinstance(lines[0], ingest.OversizeLine) and len(lines[0]) <= MiB + 2
    assert lines[0].size == len(huge.split(b"\n")[0])


def test_blank_lines_in_a_file_are_counted_and_the_final_terminator_is_not_a_line():
    import io

    run = new_run()
    result = ingest.append_stream(run, io.BytesIO(b'{"type":"turn_started"}\n\n{"type":"turn_started"}\n\n'))
    assert (result.stored, result.rejected) == (2, 2)
    assert result.rejections == [(2, "blank line"), (4, "blank line")]
    # a list of lines from text.split("\n") ends with an empty item that is not a line
    result = ingest.append_lines(new_run("split"), '{"type":"turn_started"}\n{"type":"turn_started"}\n'.split("\n"))
    assert (result.stored, result.rejected) == (2, 0)


def test_not_utf8_is_rejected():
    run = new_run()
    result = ingest.append_lines(run, [b'{"type":"log","message":"\xff\xfe"}', b'{"type":"turn_started"}'])
    assert (result.stored, result.rejected) == (1, 1)
    assert result.rejections[0][1].startswith("not UTF-8")


def test_crlf_terminators_and_a_final_newline_are_not_content():
    run = new_run()
    result = ingest.append_lines(run, ['{"type":"turn_started"}\r\n', '{"type":"turn_started"}\n', ""])
    assert (result.stored, result.rejected) == (2, 0)
    assert set(Event.objects.filter(run=run).values_list("raw", flat=True)) == {'{"type":"turn_started"}'}


def test_unknown_type_is_stored_never_an_error():
    run = new_run()
    result = ingest.append(run, [rec("turn_started", "root"), rec("teleport", "agent-9", where="mars"), {"no": "type"}])
    assert (result.stored, result.rejected) == (3, 0)
    types = list(Event.objects.filter(run=run).order_by("seq").values_list("type", "agent_id", flat=False))
    assert types == [("turn_started", "root"), ("teleport", "agent-9"), ("", "root")]
    # the envelope of an unknown gg record still names its agent
    assert Agent.objects.filter(run=run, agent_id="agent-9").exists()


def test_wrapped_gg_records_are_projected_and_other_host_kinds_stored_not_projected():
    run, result = import_stream(STREAMS / "host_wrapped.ndjson")
    assert (result.stored, result.rejected) == (16, 0)
    types = list(Event.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert types.count("host:system") == 3
    assert {"host:agent", "host:read", "host:warning", "host:usage", "host:gg"} <= set(types)
    assert types.count("tool_call") == 1  # the host's "read" twin is not a second call
    root = Agent.objects.get(run=run)
    assert root.tool_calls == {"read_file": 1} and root.tool_failures == {"not-found": 1}
    assert run.call_count == 1 and run.turn_count == 1 and run.agent_count == 1
    # only gg's usage delta is summed, not the host's usage row
    assert run.usage["tokens"] == {"uncachedInput": 500, "cachedInput": 100, "output": 50, "reasoning": 5}
    assert run.status == "canceled"
    # the inner record's own stamp is the event's timestamp; the raw line keeps the wrapper
    ev = Event.objects.get(run=run, type="session_started")
    assert ev.timestamp.endswith(".500123456Z")
    assert json.loads(ev.raw)["type"] == "gg"
    host = Event.objects.filter(run=run, type="host:system").first()
    assert host.turn is None
    # the run started at the first gg record, not the host's setup rows
    assert run.started_at.isoformat().startswith("2026-02-01T09:00:02.500123")


# --- idempotent re-import --------------------------------------------------------------------


def test_reimport_stores_nothing_twice():
    run, first = import_stream(STREAMS / "malformed_tail.ndjson")
    with (STREAMS / "malformed_tail.ndjson").open("rb") as fh:
        again = ingest.append_stream(run, fh)
    assert (again.stored, again.duplicates, again.rejected) == (0, 6, 5)
    assert Event.objects.filter(run=run).count() == 6
    assert RejectedLine.objects.filter(run=run).count() == 5
    run.refresh_from_db()
    assert run.last_seq == 6 and run.rejected_count == 5


def test_reimport_of_a_longer_stream_stores_only_the_new_lines():
    lines = REAL_MOCK.read_bytes().split(b"\n")[:-1]
    run = new_run()
    ingest.append_lines(run, lines[:9])
    result = ingest.append_lines(run, lines)
    assert (result.stored, result.duplicates) == (5, 9)
    assert result.first_seq == 10 and result.last_seq == 14
    assert list(Event.objects.filter(run=run).order_by("seq").values_list("raw", flat=True)) == [
        line.decode() for line in lines
    ]


def test_a_stream_that_repeats_an_identical_line_keeps_every_repetition():
    line = '{"type":"log","level":"info","message":"tick"}'
    stream = ['{"type":"turn_started"}', line, line, line, '{"type":"turn_started"}']
    run = new_run()
    first = ingest.append_lines(run, stream)
    assert first.stored == 5
    again = ingest.append_lines(run, stream)
    assert (again.stored, again.duplicates) == (0, 5)
    # a later batch that legitimately carries the line a fourth time stores that one occurrence
    more = ingest.append_lines(run, [line] * 4)
    assert (more.stored, more.duplicates) == (1, 3)
    assert Event.objects.filter(run=run, raw=line).count() == 4


def test_dedupe_works_across_chunks_of_one_import():
    lines = REAL_MOCK.read_bytes().split(b"\n")[:-1]
    run = new_run()
    ingest.append_lines(run, lines[:3], chunk_lines=2)
    result = ingest.append_lines(run, lines + lines[:2], chunk_lines=4)
    # lines 1-3 were stored; 4-14 are new; the repeated 1-2 at the end are new occurrences
    assert (result.stored, result.duplicates) == (13, 3)
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == list(range(1, 17))


# --- append(records) -------------------------------------------------------------------------


def test_append_stores_compact_json_and_rejects_non_objects():
    run = new_run()
    record = {"type": "assistant_message", "agentId": "root", "text": "héllo <b>"}
    result = ingest.append(run, [record, ["not", "a", "dict"], {"type": "log", "bad": float("nan")}])
    assert (result.stored, result.rejected) == (1, 2)
    assert [n for n, _ in result.rejections] == [2, 3]
    assert Event.objects.get(run=run).raw == '{"type":"assistant_message","agentId":"root","text":"héllo <b>"}'


def test_event_columns_for_calls_and_results():
    run = new_run()
    ingest.append(run, [
        rec("api_call", "a", operation="files.read_file"),
        rec("turn_started", "a"),
        rec("api_call", "a", operation="files.read_file"),
        rec("api_result", "a", operation="files.read_file", ok=False, failure="not-found"),
        rec("api_call", "a", object="fs", function="readFile"),
        rec("api_result", "a", object="fs", function="readFile", ok=True),
        rec("tool_call", "b", name="shell", args={}),
        rec("tool_result", "b", name="shell", ok=False, failure="limit-exceeded"),
    ])  # fmt: skip
    cols = list(Event.objects.filter(run=run).order_by("seq").values_list("operation", "tool_name", "ok", "failure", "turn"))
    assert cols == [
        ("files.read_file", "", None, "", None),
        ("", "", None, "", 1),
        ("files.read_file", "", None, "", 1),
        ("files.read_file", "", False, "not-found", 1),
        ("fs.readFile", "", None, "", 1),
        ("fs.readFile", "", True, "", 1),
        ("", "shell", None, "", None),
        ("", "shell", False, "limit-exceeded", None),
    ]


def test_seq_is_gapless_across_chunks_and_calls():
    run = new_run()
    records = [rec("log", "root", level="info", message=str(i)) for i in range(25)]
    r1 = ingest.append(run, records[:10], chunk_lines=3)
    r2 = ingest.append(run, records[10:], chunk_lines=4)
    assert (r1.first_seq, r1.last_seq, r2.first_seq, r2.last_seq) == (1, 10, 11, 25)
    assert list(Event.objects.filter(run=run).order_by("seq").values_list("seq", flat=True)) == list(range(1, 26))
    run.refresh_from_db()
    assert run.last_seq == 25


def test_a_queued_run_is_running_from_its_first_record(django_capture_on_commit_callbacks, monkeypatch):
    rung = []
    monkeypatch.setattr(doorbell, "ring", lambda pk, seq, status=None: rung.append(status))
    run = Run.objects.create(name="q", status=Run.Status.QUEUED)
    with django_capture_on_commit_callbacks(execute=True):
        ingest.append(run, [{"type": "system", "stage": "start_container", "status": "started"}])
    assert run.status == "queued" and rung == [None]  # a host row does not start it
    with django_capture_on_commit_callbacks(execute=True):
        ingest.append(run, [rec("session_started")])
    assert run.status == "running" and rung[-1] == "running"


def test_the_callers_run_instance_is_refreshed():
    run = new_run()
    ingest.append(run, [rec("turn_started"), rec("session_ended", status="completed")])
    assert run.last_seq == 2 and run.status == "completed" and run.turn_count == 1


# --- the doorbell ----------------------------------------------------------------------------


def test_doorbell_rings_on_commit_with_the_last_seq(django_capture_on_commit_callbacks, monkeypatch):
    rung = []
    monkeypatch.setattr(doorbell, "ring", lambda pk, seq, status=None: rung.append((pk, seq, status)))
    run = new_run()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        ingest.append(run, [rec("turn_started"), rec("log", level="info", message="x")])
    assert rung == []  # nothing before the commit
    for cb in callbacks:
        cb()
    assert rung == [(run.pk, 2, None)]
    with django_capture_on_commit_callbacks(execute=True):
        ingest.append(run, [rec("session_ended", status="model_error")])
    assert rung[-1] == (run.pk, 3, "model_error")  # a status change is announced
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        ingest.append_lines(run, ["not json"])
    assert callbacks == [] and len(rung) == 2  # nothing stored: no ring


def test_doorbell_message_reaches_the_run_group():
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(doorbell.group_name(7), channel)
    doorbell.ring(7, 42)
    assert async_to_sync(layer.receive)(channel) == {"type": "run.event", "seq": 42}
    doorbell.ring(7, 43, "completed")
    assert async_to_sync(layer.receive)(channel) == {"type": "run.event", "seq": 43, "status": "completed"}
    assert doorbell.group_name(7) == "run-7"


def test_a_broken_channel_layer_does_not_fail_the_write(monkeypatch, django_capture_on_commit_callbacks):
    def boom():
        raise RuntimeError("no layer")

    monkeypatch.setattr(doorbell, "get_channel_layer", boom)
    run = new_run()
    with django_capture_on_commit_callbacks(execute=True):
        result = ingest.append(run, [rec("turn_started")])
    assert result.stored == 1


# --- bounded queries -------------------------------------------------------------------------


def _turns(n_turns, agents=("root", "agent-0", "agent-1")):
    out = []
    for i in range(n_turns):
        for a in agents:
            out += [
                rec("turn_started", a),
                rec("usage", a, profileId="p", modelId="m", tokens={"uncachedInput": 10, "output": 1}, cost={"comparable": 0.1}),
                rec("api_call", a, operation="files.read_file"),
                rec("api_result", a, operation="files.read_file", ok=i % 3 != 0, **({"failure": "not-found"} if i % 3 == 0 else {})),
                rec("memory_state", a, moduleId="memories-0", memories=[], i=i),
                rec("turn_outcome", a, outcome="progressed", consecutiveErrors=0, turns=i + 1),
            ]  # fmt: skip
    return out


def _append_queries(records):
    run = new_run(f"q{len(records)}")
    ingest.append(run, [rec("session_started", "root")] + [rec("agent_spawned", a, profileId="p", modelId="m", depth=0, cwd="/") for a in ("agent-0", "agent-1")])
    with CaptureQueriesContext(connection) as ctx:
        result = ingest.append(run, records)
    assert result.stored == len(records)
    return len(ctx.captured_queries)


def test_query_count_of_append_does_not_grow_with_events(django_assert_max_num_queries):
    small = _append_queries(_turns(2))  # 36 events, no feed checkpoint passed
    large = _append_queries(_turns(100))  # 1,800 events, one chunk, one checkpoint
    # Passing a feed checkpoint costs a chunk three queries (the last checkpoint, the events since,
    # one insert); nothing else depends on how many events the chunk holds.
    assert large == small + 3
    run = new_run("bound")
    # 16 since the fold keeps RefusalRows, + the checkpoints, + the Timeline's lanes, spans and buckets
    with django_assert_max_num_queries(23):
        ingest.append(run, _turns(100))


@pytest.mark.parametrize("odd_id", [[], {}, 0, False])
def test_a_roster_naming_a_stored_store_by_an_odd_id_in_a_later_append(odd_id):
    # The batch's preload and the fold must read a roster row's store id the same way: a store the
    # run already holds under the text of an odd id is found, not inserted a second time.
    run = new_run()
    row = {"kind": "history", "moduleId": odd_id, "enabled": True, "origin": "created", "writable": True}
    assert ingest.append(run, [rec("agent_modules", "a1", modules=[row])]).stored == 1
    assert ingest.append(run, [rec("agent_modules", "a2", modules=[row])]).stored == 1  # raised IntegrityError
    store = run.stores.get()
    assert store.module_id == json.dumps(odd_id) and store.holdings.count() == 2


def test_numbers_past_a_doubles_range_are_stored_verbatim_and_never_reach_a_projection_as_infinity():
    from runs.ingest import rebuild
    from tests.streams import projection_dump

    lines = [
        b'{"type":"session_started","capabilitySet":{"agents":[{"slug":"p"}],"limits":{"maxCost":1e400}}}',
        b'{"type":"agent_spawned","agentId":"root","profileId":"p","depth":1000000000000000000000000000000}',
        b'{"type":"usage","tokens":{"uncachedInput":1e400,"output":1.5e308},"cost":{"comparable":1e308}}',
        b'{"type":"usage","tokens":{"uncachedInput":7,"output":1.5e308},"cost":{"comparable":1e308}}',
        b'{"type":"slot_usage","profileId":"p","tokens":{"output":-1e400}}',
        b'{"type":"context_breakdown","bySource":[{"source":"system","tokens":1e308},{"source":"system","tokens":1e308}]}',
        b'{"type":"memory_state","moduleId":"memories-0","memories":[],"count":1e999}',
        b'{"type":"session_ended","status":"completed"}',
    ]
    run = new_run()
    result = ingest.append_lines(run, lines)
    assert (result.stored, result.rejected) == (len(lines), 0)
    assert b"".join(raw.encode() + b"\n" for raw in Event.objects.filter(run=run).values_list("raw", flat=True)) \
        == b"\n".join(lines) + b"\n"  # exactly as received
    run.refresh_from_db()
    assert run.capability_set["limits"]["maxCost"] is None
    # float(): PostgreSQL's jsonb gives 1.5e308 back written out in digits, which JSON reads as an int
    assert run.usage["tokens"]["uncachedInput"] == 7 and float(run.usage["tokens"]["output"]) == 1.5e308  # the sum overflowed
    assert float(run.usage["cost"]["comparable"]) == 1e308 and run.slot_usage["p|"]["tokens"] == {"output": None}
    root = run.agents.get(agent_id="root")
    assert root.depth == 0 and {k: float(v) for k, v in root.context_bands.items()} == {"system": 1e308}
    assert run.stores.get().snapshot["count"] is None
    before = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == before


def test_nul_characters_never_reach_a_column_and_the_line_is_stored_verbatim():
    run = new_run()
    result = ingest.append_lines(run, HOSTILE_LINES)
    assert (result.stored, result.rejected) == (4, 1)
    assert [r.encode() for r in Event.objects.filter(run=run).values_list("raw", flat=True)] == HOSTILE_LINES[:4]
    agent = run.agents.get(agent_id="a\ufffdb")
    assert Event.objects.get(run=run, seq=2).timestamp == "2026\ufffd"
    assert run.stores.get().snapshot["entries"][0]["preview"] == "\ufffdELF"
    run.refresh_from_db()
    assert run.capability_set["agents"][0]["slug"] == "p\ufffdq" and agent.profile_id == "p"
    assert RejectedLine.objects.get(run=run).raw == "\x7fELF\ufffd\ufffd\x01 not a record"
    # records handed over as dicts (the engine): the caller's dict is left as it was
    record = {"type": "log", "agentId": "x\x00", "message": "m"}
    ingest.append(run, [record])
    assert record["agentId"] == "x\x00" and run.agents.filter(agent_id="x\ufffd").exists()


def test_a_run_name_with_a_nul_is_refused_by_name():
    from runs.ingest import services

    with pytest.raises(ValueError, match="NUL"):
        services.run_get_or_create(name="a\x00b")


def test_the_planners_statistics_are_refreshed_at_each_doubling_of_a_run_from_4096():
    from runs.ingest.statistics import crossed

    assert [n for n in range(1, 70_000) if crossed(n - 1, n)] == [4096, 8192, 16384, 32768, 65536]
    assert crossed(0, 100_000) and crossed(4000, 4100)  # one chunk can cross one or more
    assert not crossed(4096, 8191) and not crossed(0, 4095)
