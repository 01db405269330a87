"""Writing what one fold touched: new rows bulk-inserted, touched rows updated once each.

`update_rows` is one ``executemany`` UPDATE (the rebuild fixes Event columns with it too);
`insert_rows` one ``executemany`` INSERT of rows held as plain objects.
"""

from __future__ import annotations

import json
from math import isfinite

from django.db import connection, models

from runs.models import Agent, Holding, MemoryRevision, ModuleStore

_AGENT_UPDATE_FIELDS = [
    f.name
    for f in Agent._meta.concrete_fields
    if not f.primary_key and f.name not in ("run", "agent_id")
]
_STORE_UPDATE_FIELDS = ["kind", "snapshot_type", "snapshot", "snapshot_seq", "peak"]
_HOLDING_FIELDS = [f.name for f in Holding._meta.concrete_fields if not f.primary_key]


def flush(p) -> None:
    """Write every row the fold `p` (a `runs.ingest.fold.Projector`) touched, each once."""
    run = p.run
    if p.new_stores:
        ModuleStore.objects.bulk_create(list(p.new_stores.values()))
    if p.dirty_stores:
        update_rows(ModuleStore, [p.stores[m] for m in p.dirty_stores], _STORE_UPDATE_FIELDS)
    kinds_only = p.dirty_store_kinds - p.dirty_stores
    if kinds_only:
        update_rows(ModuleStore, [p.stores[m] for m in kinds_only], ["kind"])

    relink = []
    if p.new_agents:
        Agent.objects.bulk_create(list(p.new_agents.values()))
        # Children stored by an earlier batch whose parent arrived only now.
        orphans = in_chunks(
            Agent.objects.filter(run=run, parent__isnull=True).exclude(parent_agent_id=""),
            "parent_agent_id",
            set(p.new_agents),
        )
        for o in orphans:
            if o.agent_id not in p.agents:
                o.parent_id = p.new_agents[o.parent_agent_id].pk
                relink.append(o)
    # New agents were inserted with their final state; they need an update only for a link.
    touched = {aid for aid in p.dirty_agents if aid not in p.new_agents}
    for to, pred in p.pred_links.items():
        succ, before = p.agents[to], p.agents[pred]
        if succ.predecessor_id != before.pk:
            succ.predecessor_id = before.pk
            touched.add(to)
    for a in p.agents.values():
        if a.parent_agent_id and a.parent_id is None:
            parent = p.agents.get(a.parent_agent_id)
            if parent is not None and parent.pk is not None and parent is not a:
                a.parent_id = parent.pk
                touched.add(a.agent_id)
    to_update = [p.agents[aid] for aid in touched] + relink
    update_rows(Agent, to_update, _AGENT_UPDATE_FIELDS)

    if p.rosters:
        replaced = [p.agents[aid].pk for aid in p.rosters if aid not in p.new_agents]
        if replaced:
            Holding.objects.filter(agent_id__in=replaced).delete()
        holdings = []
        for aid, rows in p.rosters.items():
            agent_pk = p.agents[aid].pk
            for row in rows:
                store_mid = row.pop("store")
                holdings.append(
                    Holding(
                        agent_id=agent_pk,
                        store_id=p.stores[store_mid].pk if store_mid else None,
                        **row,
                    )
                )
        insert_rows(Holding, holdings, _HOLDING_FIELDS)  # bulk_create: its field layers cost more than the rows

    if p.memory_revisions:
        MemoryRevision.objects.bulk_create(p.memory_revisions)

    p.new_agents.clear()
    p.dirty_agents.clear()
    p.new_stores.clear()
    p.dirty_stores.clear()
    p.dirty_store_kinds.clear()
    p.rosters.clear()
    p.pred_links.clear()
    p.memory_revisions = []


def update_rows(model, objs, field_names, keys=None, **constants) -> None:
    """UPDATE each of `objs` setting `field_names`. A row is found by its pk (saved rows), or by its
    `keys` (attnames) and `constants` ({column attname: value}) together. On SQLite one
    ``executemany``; on PostgreSQL one ``UPDATE … FROM`` the rows as columns (`_columns`; a statement a row
    costs a round of parse, plan and execute on the server: a thousand pooled messages a chunk
    took half the append), whose rows are also asked for by their keys (``= ANY(keys)``): joined
    on the keys alone, the planner hash-joined the chunk's rows with every row of the run, a scan
    that grew with the run (at 150,000 events, 27,363 pooled messages read to update 271).

    What ``bulk_update`` does, without building a CASE expression per row and field (which costs
    far more than the write itself on a large batch).
    """
    if not objs:
        return
    fields = [model._meta.get_field(name) for name in field_names]
    keys = keys or (model._meta.pk.attname,)
    prep = _preparers(fields)
    attnames = [f.attname for f in fields]
    rows = [[p(getattr(obj, a)) for p, a in zip(prep, attnames)] + [getattr(obj, k) for k in keys] for obj in objs]
    qn = connection.ops.quote_name
    table = qn(model._meta.db_table)
    if connection.vendor == "postgresql":
        key_fields = [model._meta.get_field(k) for k in keys]
        columns = [qn(f.column) for f in fields + key_fields]
        keyed = list(zip(columns[len(fields):], key_fields))
        sql = "UPDATE {} AS t SET {} FROM {} AS v({}) WHERE {}".format(
            table,
            ", ".join(f"{c} = v.{c}::{_type(f)}" for c, f in zip(columns, fields)),
            _columns(len(columns)),
            ", ".join(columns),
            " AND ".join([f"t.{c} = v.{c}::{_type(f)}" for c, f in keyed] + [f"t.{qn(c)} = %s" for c in constants]
                         + [f"t.{c} = ANY(%s::{_type(f)}[])" for c, f in keyed]),
        )
        keys_values = [[row[i] for row in rows] for i in range(len(fields), len(columns))]
        with connection.cursor() as cursor:
            cursor.execute(sql, _json_columns(rows, len(columns)) + list(constants.values()) + keys_values)
        return
    sql = "UPDATE {} SET {} WHERE {}".format(
        table,
        ", ".join(f"{qn(f.column)} = %s" for f in fields),
        " AND ".join(f"{qn(c)} = %s" for c in (*keys, *constants)),
    )
    tail = list(constants.values())
    with connection.cursor() as cursor:
        cursor.executemany(sql, [row + tail for row in rows])


def insert_rows(model, objs, field_names, *, on_conflict: str = "", **constants) -> None:
    """INSERT `objs` (any objects with the fields as attributes) as new rows of `model`, `constants`
    ({column attname: value}) the same on every row, no model instances: one ``executemany`` on
    SQLite, one ``INSERT … SELECT FROM`` the rows as columns on PostgreSQL (`_columns`, as `update_rows`).
    `on_conflict`: an ``ON CONFLICT …`` clause both databases read alike (an upsert)."""
    fields = [model._meta.get_field(name) for name in field_names]
    qn = connection.ops.quote_name
    columns = [f.column for f in fields] + list(constants)
    table = qn(model._meta.db_table)
    tail = list(constants.values())
    prep = _preparers(fields)
    attnames = [f.attname for f in fields]
    rows = [[p(getattr(obj, a)) for p, a in zip(prep, attnames)] for obj in objs]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            names = [qn(f.column) for f in fields]
            cursor.execute("INSERT INTO {} ({}) SELECT {} FROM {} AS v({})".format(
                table, ", ".join(qn(c) for c in columns),
                ", ".join([f"v.{n}::{_type(f)}" for n, f in zip(names, fields)] + ["%s"] * len(tail)),
                _columns(len(fields)), ", ".join(names)) + on_conflict, tail + _json_columns(rows, len(fields)))
        else:
            cursor.executemany("INSERT INTO {} ({}) VALUES ({})".format(
                table, ", ".join(qn(c) for c in columns), ", ".join(["%s"] * len(columns))) + on_conflict,
                [row + tail for row in rows])


def _columns(width) -> str:
    """``ROWS FROM (json_array_elements_text(%s::json), …)``: the rows of `width` columns, one
    parameter a column holding its values as a JSON array (`_json_columns`), each value read as text
    and cast to its column's type where it is used. Arrays of values (``unnest(%s::type[])``) were
    quoted element by element in Python by the driver's client-side binding: 13% of a PostgreSQL
    append, where the C JSON encoder writes a column at once and the server splits it."""
    return "ROWS FROM ({})".format(", ".join(["json_array_elements_text(%s::json)"] * width))


def _type(field) -> str:
    return field.db_type(connection)


def _json_columns(rows, width) -> list:
    """Rows as one JSON array a column (the parameters of `_columns`). A JSON value is its text
    (a JSON string), a moment its ISO text, a float that JSON has no number for (NaN, ±Infinity)
    the text PostgreSQL reads it from."""
    out = []
    for column in zip(*rows) if rows else [()] * width:
        try:
            out.append(json.dumps(column, ensure_ascii=False, allow_nan=False, default=_text))
        except ValueError:
            out.append(json.dumps([_text(v) if isinstance(v, float) and not isfinite(v) else v for v in column],
                                  ensure_ascii=False, default=_text))
    return out


def _text(value) -> str:
    """How a value JSON has no type for is written in `_json_columns` (PostgreSQL casts it back)."""
    if isinstance(value, float):
        return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


# A value already of its column's plain Python type is what get_db_prep_save would hand the driver;
# only other values (a str in an IntegerField, a datetime, a JSON value) go through the field. The
# field layers cost more than the UPDATE itself on a chunk of a thousand pooled messages.
_PLAIN = {models.CharField: str, models.TextField: str, models.IntegerField: int, models.FloatField: float,
          models.BooleanField: bool}


def _preparers(fields):
    out = []
    for f in fields:
        plain = next((t for cls, t in _PLAIN.items() if isinstance(f, cls)), None)
        if isinstance(f, models.JSONField) and type(f).get_db_prep_save is models.JSONField.get_db_prep_save:
            out.append(_json_preparer(f))
        elif plain is None:
            out.append(lambda v, f=f: f.get_db_prep_save(v, connection))
        else:
            out.append(lambda v, f=f, plain=plain: v if type(v) is plain or v is None else f.get_db_prep_save(v, connection))
    return out


def _json_preparer(field):
    """JSONField.get_db_prep_save without its layers: None is SQL NULL, anything else its JSON text
    (the backends' own adaptation: json.dumps with the field's encoder)."""
    encoder = field.encoder
    return lambda v: None if v is None else json.dumps(v, cls=encoder)


def in_chunks(queryset, field, values, size=500):
    """Rows of `queryset` whose `field` is in `values`, querying at most `size` values at a time."""
    values = list(values)
    out = []
    for i in range(0, len(values), size):
        out.extend(queryset.filter(**{f"{field}__in": values[i : i + size]}))
    return out
