"""The run's store registry: ids per kind, what each incarnation holds, and successions' accounts.

A store id is `<kind>-<n>`, minted per kind for the life of the run (`memories-0`, `memories-1`,
`board-0`). A `Holding` is one `agent_modules` row: the store an incarnation bound (or none, for a
kind its profile left off), how it came by it (`origin`), whether it may write it, and for
memories the declared `scope`.

Memories scopes resolve as gg does (spec/stream.md §4.20, console.md §4.6):
  isolated  -> a store of its own (origin created)
  shared    -> the run's one shared store (origin run)
  inherited -> the spawner's store, writable (origin inherited)
  read-only -> the spawner's store through a read-only handle (origin inherited, writable false)
With nothing to inherit (a root, or a spawner holding no memories) inheritance falls back to a
created store and reports `scope: inherited, origin: created` — the divergence the console shows.

Successions (`succeed`) report one row per kind with both store ids:
  exec  held by both -> carried (same store), predecessor only -> dropped, successor only ->
        initialized (fresh), neither -> absent; history always carried.
  fsm   as exec, but only the kinds the edge's transfer list names are carried.
  fork  history, tasks, skills, archive and isolated memories -> copied (new id, contents copied);
        shared / inherited / read-only memories and the board -> linked (same id).
"""

import copy
from collections import Counter
from dataclasses import dataclass

from runs.engine.spec import MODULE_KINDS
from runs.engine.tools.module_stores import ArchiveStore, BoardStore, MemoryStore, TaskStore
from runs.engine.tools.skills import SkillLibrary

# Which capability switches each kind on (history is every agent's window).
KIND_CAPABILITY = {"memories": "memories", "tasks": "tasks", "board": "project-management",
                   "skills": "skills", "archive": "agent-managed-context"}
RUN_WIDE = ("board",)  # one store for the whole run


class History:
    """The history module: the agent's context window as a list of messages."""

    kind = "history"

    def __init__(self, module_id, messages=()):
        self.module_id = module_id
        self.messages = list(messages)


@dataclass
class Store:
    id: str
    kind: str
    impl: object


@dataclass
class Holding:
    kind: str
    store: Store | None
    enabled: bool
    origin: str
    writable: bool = True
    scope: str | None = None
    handle: object = None  # what this holder's tools act on (a read-only view of a shared store)

    @property
    def module_id(self):
        return self.store.id if self.store else ""

    @property
    def impl(self):
        return self.handle if self.handle is not None else (self.store.impl if self.store else None)

    def row(self):
        return {"kind": self.kind, "moduleId": self.module_id, "enabled": self.enabled, "origin": self.origin,
                "writable": self.writable, "scope": self.scope}


class StoreRegistry:
    def __init__(self, skills_root):
        self.counters = Counter()
        self.run_wide = {}
        self.skills_root = skills_root

    def _mint(self, kind):
        n = self.counters[kind]
        self.counters[kind] += 1
        return f"{kind}-{n}"

    def create(self, kind, params):
        store_id = self._mint(kind)
        return Store(store_id, kind, self._make(kind, store_id, params))

    def copy(self, store):
        store_id = self._mint(store.kind)
        impl = copy.deepcopy(store.impl)
        impl.module_id = store_id
        return Store(store_id, store.kind, impl)

    def shared(self, kind, params):
        """The run's one store of a kind (the board; shared memories)."""
        if kind not in self.run_wide:
            self.run_wide[kind] = self.create(kind, params)
        return self.run_wide[kind]

    def _make(self, kind, store_id, params):
        if kind == "history":
            return History(store_id)
        if kind == "memories":
            return MemoryStore(store_id, strategy=params.get("implementation") or "scratchpad",
                               scope=params.get("scope", "isolated"), max_count=params.get("maxCount", 0),
                               max_len_per_memory=params.get("maxLenPerMemory", 0),
                               max_total_len=params.get("maxTotalLen", 0),
                               max_len_description=params.get("maxLenDescription", 0),
                               max_results=params.get("maxResults", 0))
        if kind == "tasks":
            return TaskStore(store_id, max_tasks=params.get("maxTasks", 100))
        if kind == "board":
            return BoardStore(store_id, max_epics=params.get("maxEpics", 50), max_issues=params.get("maxIssues", 2000))
        if kind == "skills":
            return SkillLibrary(store_id, self.skills_root, params.get("dir", ".gg/skills"))
        if kind == "archive":
            return ArchiveStore(store_id)
        raise ValueError(f"unknown module kind {kind!r}")


def _params(profile, kind):
    cap = profile.capabilities.get(KIND_CAPABILITY.get(kind))
    return {"implementation": cap.implementation, **cap.params} if cap else {}


def _enabled(profile, kind):
    return kind == "history" or profile.enabled(KIND_CAPABILITY[kind])


def _memory_handle(store, scope, writable):
    """A holder's own view of a memories store: shares the notes, carries its own access."""
    if store is None:
        return None
    handle = copy.copy(store.impl)
    handle.scope, handle.writable = scope, writable
    return handle


def _memories(registry, profile, inherit_from):
    """Resolve a memories holding for a fresh holder; `inherit_from` is the spawner's holding."""
    params = _params(profile, "memories")
    scope = params.get("scope", "isolated")
    if scope == "shared":
        store, origin, writable = registry.shared("memories", params), "run", True
    elif scope in ("inherited", "read-only") and inherit_from is not None and inherit_from.store is not None:
        store, origin = inherit_from.store, "inherited"
        writable = scope == "inherited" and inherit_from.writable
    else:  # isolated, or inheritance with nothing to inherit: a store of its own
        store, origin, writable = registry.create("memories", params), "created", scope != "read-only"
    return Holding("memories", store, True, origin, writable, scope, _memory_handle(store, scope, writable))


def _fresh(registry, profile, kind, parent_holdings):
    if not _enabled(profile, kind):
        return Holding(kind, None, False, "profile")
    if kind == "memories":
        return _memories(registry, profile, (parent_holdings or {}).get("memories"))
    if kind in RUN_WIDE:
        return Holding(kind, registry.shared(kind, _params(profile, kind)), True, "run")
    origin = "profile" if kind == "skills" else "created"
    return Holding(kind, registry.create(kind, _params(profile, kind)), True, origin)


def open_holdings(registry, profile, parent_holdings=None):
    """What a root or a spawned subagent holds, kind by kind (disabled kinds included)."""
    return {kind: _fresh(registry, profile, kind, parent_holdings) for kind in MODULE_KINDS}


def _row(kind, disposition, before, after):
    row = {"kind": kind, "disposition": disposition}
    if before is not None and before.store is not None:
        row["fromModuleId"] = before.store.id
    if after is not None and after.store is not None:
        row["toModuleId"] = after.store.id
    return row


def succeed(registry, kind_of_succession, before, profile, transfer=None, parent_holdings=None):
    """(successor's holdings, agent_transition.modules) for exec / fsm / fork.

    `before` is the outgoing incarnation's holdings, `profile` the successor's profile (the same
    one for a fork), `transfer` an FSM edge's kinds, `parent_holdings` the holdings of whoever
    the successor would inherit memories from when a kind is initialized."""
    after, rows = {}, []
    for kind in MODULE_KINDS:
        held = before[kind].enabled and before[kind].store is not None
        wants = _enabled(profile, kind)
        if kind_of_succession == "fork":
            holding, disposition = _fork_kind(registry, before[kind]) if held else (
                Holding(kind, None, False, "profile"), "absent")
        elif held and wants and (kind_of_succession == "exec" or kind in (transfer or ()) or kind in RUN_WIDE):
            prev = before[kind]
            scope = _params(profile, "memories").get("scope") if kind == "memories" else None
            handle = _memory_handle(prev.store, scope, prev.writable) if kind == "memories" else None
            holding = Holding(kind, prev.store, True, "transferred", prev.writable, scope, handle)
            disposition = "carried"
        elif wants:
            holding, disposition = _fresh(registry, profile, kind, parent_holdings), "initialized"
        else:
            holding = _fresh(registry, profile, kind, parent_holdings)
            disposition = "dropped" if held else "absent"
        after[kind] = holding
        rows.append(_row(kind, disposition, before[kind] if held else None,
                         holding if disposition != "dropped" else None))
    return after, rows


def _fork_kind(registry, prev):
    """A fork's holding of one kind: linked where the store is the run's or the spawner's, else copied."""
    linked = prev.kind in RUN_WIDE or (prev.kind == "memories" and prev.scope in ("shared", "inherited", "read-only"))
    if linked:
        origin = "run" if prev.origin == "run" else "forked"
        return Holding(prev.kind, prev.store, True, origin, prev.writable, prev.scope, prev.handle), "linked"
    store = registry.copy(prev.store)
    handle = _memory_handle(store, prev.scope, prev.writable) if prev.kind == "memories" else None
    return Holding(prev.kind, store, True, "forked", prev.writable, prev.scope, handle), "copied"
