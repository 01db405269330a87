"""gg's refusal lines (spec/stream.md §5) read without a database: the refused-call line, the cap's
count, and the names a line may quote an operation by (the agent's surface, else its arm's spelling).
The fold matches each refusal to its call with these (runs.ingest.fold_refusals)."""

from __future__ import annotations

import functools
import re

from surfaces.arms import ARMS, function_spelling, spell
from surfaces.catalogue import OPERATIONS

REFUSED_LINE = re.compile(r"the program's `(?P<name>[^`]+)` call was refused before it ran:\s*(?P<message>.*)", re.S)
SUPPRESSED_LINE = re.compile(r"(?P<n>\d+) further refused call\(s\) were not recorded")


@functools.cache
def _catalogue_names(language: str) -> dict[str, str]:
    """The catalogue's operations by id and by the arm's spelling: the same for every agent of a
    language, spelled once per process. An agent that has reported no arm (no surface yet, or one
    this console does not know) still wrote its program in one: any arm's spelling that names a
    single operation reads as it, so its refusal lines pair with their failed results."""
    names = {op.id: op.id for op in OPERATIONS}
    if language in ARMS:
        names.update({spell(language, op.id): op.id for op in OPERATIONS})
        return names
    spelled: dict[str, set] = {}
    for arm in ARMS:
        for op in OPERATIONS:
            spelled.setdefault(spell(arm, op.id), set()).add(op.id)
    names.update({name: ops.pop() for name, ops in spelled.items() if len(ops) == 1 and name not in names})
    return names


def names_to_operations(apis, language: str) -> dict[str, str]:
    """Every way an agent with this surface could have written an operation -> the operation."""
    # Any language no arm has is one key: the cache holds twelve entries whatever a stream reports.
    names = dict(_catalogue_names(language if language in ARMS else ""))
    for api in apis if isinstance(apis, list) else ():
        if isinstance(api, dict):
            functions = api.get("functions")
            for fn in functions if isinstance(functions, list) else ():
                if isinstance(fn, dict) and fn.get("operation") and isinstance(fn["operation"], str):
                    names.setdefault(function_spelling(api, fn, language), fn["operation"])
                    names.setdefault(str(fn.get("name")), fn["operation"])
    return names
