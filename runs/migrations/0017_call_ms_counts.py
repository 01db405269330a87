from django.db import migrations


def counted_call_times(apps, schema_editor):
    """Runs stored before: each agent's timed calls counted per operation or tool to three significant
    figures off the results' `call_ms` (what the fold keeps from now on: runs.stream.call_times)."""
    from runs.stream.call_times import SURFACES, fold_ms

    Event, Agent = apps.get_model("runs", "Event"), apps.get_model("runs", "Agent")
    for run_id in Agent.objects.order_by().values_list("run_id", flat=True).distinct():
        agents = {a.agent_id: a for a in Agent.objects.filter(run_id=run_id)}
        for agent in agents.values():
            agent.timing.pop("ms", None)
        timed = (Event.objects.filter(run_id=run_id, type__in=("api_result", "tool_result"), call_ms__isnull=False)
                 .order_by().values_list("agent_id", "type", "operation", "tool_name", "call_ms"))
        for agent_id, etype, operation, tool_name, ms in timed.iterator(chunk_size=5000):
            if agent_id in agents:
                surface = SURFACES[etype]
                fold_ms(agents[agent_id].timing, f"{surface}|{operation if surface == 'api' else tool_name}", ms)
        Agent.objects.bulk_update(list(agents.values()), ["timing"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0016_search_lexemes_postgresql'),
    ]

    operations = [
        migrations.RunPython(counted_call_times, migrations.RunPython.noop),
    ]
