"""The validation matrix: each rule the issue names, alone and all at once, shown inline by the
htmx endpoint and again on submit, each message beside the input that wrote the bad value."""

import html
import re

import pytest
from django.urls import reverse

from runs.models import Run, SavedConfiguration
from tests.launch_helpers import form_fields


def set_rac(fields, i=0, allowlist="files.read_file"):
    fields[f"agents.{i}.executionMode"] = ["responses_as_code"]
    fields[f"agents.{i}.programLanguage"] = ["python"]
    fields[f"agents.{i}.docViewTypes"] = ["return", "errors"]
    fields[f"agents.{i}.allowlist"] = [allowlist]


def add_worker(fields, i, slug, allowlist="read_file"):
    fields.update({f"agents.{i}.slug": [slug], f"agents.{i}.executionMode": ["tool_calling"],
                   f"agents.{i}.cap.read-file": ["on"], f"agents.{i}.cap.read-file.implementation": ["unlimited"],
                   f"agents.{i}.allowlist": [allowlist]})


def add_machine(fields, i, edge_to):
    fields.update({f"agents.{i}.slug": ["machine"], f"agents.{i}.executionMode": ["machine"],
                   f"agents.{i}.states.0.name": ["start"], f"agents.{i}.states.0.agent": ["root"],
                   f"agents.{i}.states.0.transitions.0.to": [edge_to],
                   f"agents.{i}.states.0.transitions.0.transfer": ["history"]})


def unknown_operation(f):
    set_rac(f, allowlist="files.read_file\nfiles.teleport")


def tool_name_in_operations(f):
    set_rac(f, allowlist="files.read_file\nread_file")


def operation_id_in_tools(f):
    f["agents.0.allowlist"] = ["read_file\nfiles.read_file"]


def transition_state_by_hand(f):
    set_rac(f, allowlist="files.read_file\ndelegation.transition_state")


def half_error_rate_pair(f):
    f["limits.maxErrorRate"] = ["0.2"]


def unknown_doc_view_flag(f):
    set_rac(f)
    f["agents.0.docViewTypes"] = ["return", "sideways"]


def roster_entry_without_scope(f):
    f["agents.0.subagents.0.agent"] = ["root"]
    f.pop("agents.0.subagents.0.scopes", None)


def fsm_edge_to_missing_state(f):
    add_machine(f, 1, "nowhere")


def duplicate_slugs(f):
    add_worker(f, 1, "root")


def task_over_the_bound(f):
    f["task"] = ["t" * (5 * 1024 * 1024)]  # its context_message was over the write path's 1 MiB line


# rule -> (the input the error must sit beside, words of its message)
RULES = {
    unknown_operation: ("agents.0.allowlist", "unknown operation 'files.teleport'"),
    tool_name_in_operations: ("agents.0.allowlist", "'read_file' is a tool name"),
    operation_id_in_tools: ("agents.0.allowlist", "'files.read_file' is an operation id"),
    transition_state_by_hand: ("agents.0.allowlist", "'delegation.transition_state' is given by where the agent stands"),
    half_error_rate_pair: ("limits.errorRateWindow", "maxErrorRate and errorRateWindow are set together"),
    unknown_doc_view_flag: ("agents.0.docViewTypes", "unknown docViewTypes flag 'sideways'"),
    roster_entry_without_scope: ("agents.0.subagents.0.scopes", "a roster entry needs at least one scope"),
    fsm_edge_to_missing_state: ("agents.1.states.0.transitions.0.to", "no state named 'nowhere'"),
    duplicate_slugs: ("agents.1.slug", "duplicate slug 'root'"),
    task_over_the_bound: ("task", "the task is at most 256 KiB (5,242,880 bytes given)"),
}


def slot_errors(body):
    """{input name as its error slot's id: [messages]} from a rendered page or an OOB response."""
    out = {}
    for slot, inner in re.findall(r'<ul class="errorlist field-errors" id="err-f-([^"]+)"[^>]*>(.*?)</ul>', body, re.S):
        out[slot] = [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", inner, re.S)]
    return out


def slot(name):
    return re.sub(r"[^A-Za-z0-9_-]", "-", name)


@pytest.fixture
def valid_fields(operator_client):
    fields = form_fields(operator_client.get(reverse("runs:new")).content)
    fields["task"] = ["Do the work."]
    return fields


def check(operator_client, fields, expected):
    """Both the inline endpoint and the submit name exactly `expected`, each at its input."""
    inline = operator_client.post(reverse("runs:validate"), fields, HTTP_HX_REQUEST="true")
    submit = operator_client.post(reverse("runs:new"), {**fields, "action": "launch"})
    assert inline.status_code == 200 and submit.status_code == 400
    assert Run.objects.count() == 0
    for body in (inline.content.decode(), submit.content.decode()):
        errors = slot_errors(body)
        placed = [(name, m) for name, messages in errors.items() for m in messages]
        for name, words in expected:
            assert any(words in m for m in errors.get(slot(name), [])), (name, words, placed)
        assert len(placed) == len(expected), placed
        summary = re.search(r'<div class="launch-summary".*?</div>', body, re.S).group(0)
        assert f"<b>{len(expected)} problem" in summary


@pytest.mark.django_db
def test_the_valid_base_form_has_no_problem(operator_client, valid_fields):
    inline = operator_client.post(reverse("runs:validate"), valid_fields, HTTP_HX_REQUEST="true")
    assert "No problems found." in inline.content.decode()
    assert all(not messages for messages in slot_errors(inline.content.decode()).values())


@pytest.mark.django_db
@pytest.mark.parametrize("rule", list(RULES), ids=[r.__name__ for r in RULES])
def test_each_rule_alone(operator_client, valid_fields, rule):
    rule(valid_fields)
    check(operator_client, valid_fields, [RULES[rule]])


@pytest.mark.django_db
def test_every_rule_at_once_in_one_submission(operator_client, valid_fields):
    f = valid_fields
    set_rac(f, allowlist="files.teleport\nread_file\ndelegation.transition_state")
    f["agents.0.docViewTypes"] = ["return", "sideways"]
    roster_entry_without_scope(f)
    add_worker(f, 1, "root", allowlist="files.read_file")  # a duplicate slug, an operation id among tools
    add_machine(f, 2, "nowhere")
    half_error_rate_pair(f)
    task_over_the_bound(f)
    expected = [RULES[rule] for rule in RULES if rule not in (operation_id_in_tools, duplicate_slugs,
                                                                fsm_edge_to_missing_state)]
    expected += [("agents.1.allowlist", "'files.read_file' is an operation id"),
                 ("agents.1.slug", "duplicate slug 'root'"),
                 ("agents.2.states.0.transitions.0.to", "no state named 'nowhere'")]
    check(operator_client, f, expected)


@pytest.mark.django_db
def test_a_value_that_is_not_a_number_is_named_and_kept_as_typed(operator_client, valid_fields):
    valid_fields["limits.maxTurns"] = ["ten"]
    valid_fields["agents.0.cap.shell"] = ["on"]  # off by default (issue 19): its params count once it is on
    valid_fields["agents.0.cap.shell.params.maxLines"] = ["many"]
    response = operator_client.post(reverse("runs:new"), valid_fields)
    body = response.content.decode()
    errors = slot_errors(body)
    assert errors[slot("limits.maxTurns")] == ["a whole number"]
    assert errors[slot("agents.0.cap.shell.params.maxLines")] == ["a whole number"]
    assert 'value="ten"' in body and 'value="many"' in body


@pytest.mark.django_db
@pytest.mark.parametrize("name, typed, expected", [
    ("limits.maxTurns", "٣", "a whole number"),  # an Arabic-Indic three: int() reads it as 3
    ("limits.maxTurns", "1_000", "a whole number"),
    ("limits.maxCost", "٣.5", "a number"),
])
def test_a_number_is_ascii_digits_only(operator_client, valid_fields, name, typed, expected):
    valid_fields[name] = [typed]
    check(operator_client, valid_fields, [(name, expected)])
    assert f'value="{typed}"' in operator_client.post(reverse("runs:new"), valid_fields).content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("query", [{}, {"demo": "board"}, {"configuration": "saved"}])
def test_every_slot_the_live_check_refreshes_is_on_the_page(operator_client, operator, query):
    """An out-of-band swap with no element of its id is htmx:oobErrorNoTarget in the browser's console."""
    if query.get("configuration"):
        query = {"configuration": SavedConfiguration.objects.create(name="saved", spec={}, created_by=operator).pk}
    page = operator_client.get(reverse("runs:new"), query).content.decode()
    fields = form_fields(page)
    fields["limits.maxTurns"] = ["0"]  # an error, so the refresh writes a slot too
    inline = operator_client.post(reverse("runs:validate"), fields, HTTP_HX_REQUEST="true").content.decode()
    targets = re.findall(r'<[^>]* id="([^"]+)"[^>]*hx-swap-oob', inline)
    assert "err-f-limits-maxTurns" in targets and "err-f-configuration-loaded" not in targets
    assert [t for t in targets if f'id="{t}"' not in page] == []
