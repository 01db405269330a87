"""The module stores: memories, tasks, board, archive (skills: runs.engine.tools.skills).

Each store has an id `<kind>-<n>` (minted by the engine) and `snapshot()` returns the matching
`*_state` record (stream.md §4.26) without the envelope. Stores are plain in-memory objects;
the engine decides which agents hold which store.
"""

import re

from runs.engine.tools.errors import MAX_MEMORY_BODY_BYTES, MAX_MEMORY_DESCRIPTION_BYTES, ToolError, bounded

# A store is held in the server's memory and recorded whole after each change: a program creating
# issues of 40 MB took a server to 5.4 GB and every page to seconds. Each text of a task, an epic or
# an issue is at most errors.MAX_HANDED_ON_BYTES (64 KiB), and a store's text in all at most this.
MAX_STORE_CHARS = 16 * 1024 * 1024


def _text(value, what):
    """A task's, an epic's or an issue's text, bounded (anything else is left to its own checks)."""
    return bounded(value, what) if isinstance(value, str) else value


def _texts(values, what):
    return [_text(v, what) for v in values or []]


def _within(chars, what):
    if chars > MAX_STORE_CHARS:
        raise ToolError("limit-exceeded", f"{what} would hold over {MAX_STORE_CHARS:,} characters of text in all")


def _chars(entries):
    return sum(len(v) for e in entries for v in e.values() if isinstance(v, str))


def _lines(text):
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _cap(value):
    return value or None  # 0 means unlimited; the snapshot writes null


class MemoryStore:
    """Named notes. Strategy: scratchpad | markdown | keyword-search; scope per memories capability."""

    kind = "memories"

    def __init__(self, module_id, strategy="scratchpad", scope="isolated", writable=True, max_count=0,
                 max_len_per_memory=0, max_total_len=0, max_len_description=0, max_results=0):
        self.module_id, self.strategy, self.scope, self.writable = module_id, strategy, scope, writable
        self.max_count, self.max_len_per_memory, self.max_total_len = max_count, max_len_per_memory, max_total_len
        self.max_len_description, self.max_results = max_len_description, max_results
        self.memories = {}  # name -> {description, body, code, on_use, revision}
        self.peak = {"count": 0, "totalLen": 0, "totalLines": 0}

    def _writable(self):
        if not self.writable:
            raise ToolError("refused", "this agent holds the memories read-only")

    def _check(self, name, description, body):
        if not name or not name.strip():
            raise ToolError("invalid-argument", "a memory needs a name")
        bounded(body, "a memory's body", MAX_MEMORY_BODY_BYTES)
        bounded(description, "a memory's description", MAX_MEMORY_DESCRIPTION_BYTES)
        if self.max_len_per_memory and len(body) > self.max_len_per_memory:
            raise ToolError("limit-exceeded", f"the body is over {self.max_len_per_memory} characters")
        if self.max_len_description and len(description) > self.max_len_description:
            raise ToolError("limit-exceeded", f"the description is over {self.max_len_description} characters")

    def _store(self, memory, change):
        name = memory["name"]
        self._check(name, memory.get("description", ""), memory.get("body", ""))
        previous = self.memories.get(name)
        entry = {"description": memory.get("description", ""), "body": memory.get("body", ""),
                 "code": memory.get("code"), "on_use": memory.get("on_use"),
                 "revision": (previous["revision"] + 1) if previous else 1}
        _within(sum(len(m["body"]) + len(m["description"]) for m in {**self.memories, name: entry}.values()),
                "the memories")
        others = sum(len(m["body"]) for n, m in self.memories.items() if n != name)
        if self.max_total_len and others + len(entry["body"]) > self.max_total_len:
            raise ToolError("limit-exceeded", f"the memories would exceed {self.max_total_len} characters in total")
        if previous is None and self.max_count and len(self.memories) >= self.max_count:
            raise ToolError("limit-exceeded", f"this store holds at most {self.max_count} memories")
        self.memories[name] = entry
        self._note_peak()
        return self.revision(name, change)

    def _note_peak(self):
        count, total, lines = len(self.memories), self.total_len(), self.total_lines()
        self.peak = {"count": max(self.peak["count"], count), "totalLen": max(self.peak["totalLen"], total),
                     "totalLines": max(self.peak["totalLines"], lines)}

    def write(self, memory):
        """Create or overwrite (scratchpad write_memory)."""
        self._writable()
        return self._store(memory, "updated" if memory.get("name") in self.memories else "written")

    def create(self, memory):
        self._writable()
        if memory.get("name") in self.memories:
            raise ToolError("conflict", f"a memory named {memory['name']} already exists")
        return self._store(memory, "written")

    def update(self, memory):
        self._writable()
        if memory.get("name") not in self.memories:
            raise ToolError("not-found", f"there is no memory named {memory.get('name')}")
        return self._store(memory, "updated")

    def read(self, name):
        if name not in self.memories:
            raise ToolError("not-found", f"there is no memory named {name}")
        return self.memories[name]["body"]

    def edit(self, name, search, replace):
        self._writable()
        body = self.read(name)
        count = body.count(search) if search else 0
        if count == 0:
            raise ToolError("not-found", f"the text to replace does not occur in {name}")
        if count > 1:
            raise ToolError("conflict", f"the text to replace matched {count} times in {name}")
        memory = dict(self.memories[name], name=name, body=body.replace(search, replace, 1))
        return self._store(memory, "updated")

    def delete(self, name):
        self._writable()
        if name not in self.memories:
            raise ToolError("not-found", f"there is no memory named {name}")
        del self.memories[name]
        return {"name": name, "revision": 0, "change": "deleted", "description": "", "body": "", "len": 0, "lines": 0}

    def search(self, keywords):
        words = [k.lower() for k in keywords if k.strip()]
        if not words:
            raise ToolError("invalid-argument", "give at least one keyword")
        hits = []
        for name, memory in self.memories.items():
            haystack = f"{name}\n{memory['description']}\n{memory['body']}".lower()
            matched = [w for w in words if w in haystack]
            if matched:
                first = haystack.find(matched[0])
                hits.append({"name": name, "description": memory["description"], "matched": matched,
                             "occurrences": sum(haystack.count(w) for w in matched),
                             "excerpt": f"{name}\n{memory['description']}\n{memory['body']}"[max(0, first - 60):first + 140]})
        hits.sort(key=lambda h: (-len(h["matched"]), -h["occurrences"], h["name"]))
        return hits[:self.max_results or None]

    def revision(self, name, change):
        memory = self.memories[name]
        return {"name": name, "revision": memory["revision"], "change": change, "description": memory["description"],
                "body": memory["body"], "len": len(memory["body"]), "lines": _lines(memory["body"])}

    def total_len(self):
        return sum(len(m["body"]) for m in self.memories.values())

    def total_lines(self):
        return sum(_lines(m["body"]) for m in self.memories.values())

    def usage(self):
        index = sum(len(n) + len(m["description"]) for n, m in self.memories.items())
        return {"count": len(self.memories), "max_count": _cap(self.max_count), "total_chars": self.total_len(),
                "max_total_chars": _cap(self.max_total_len), "index_chars": index, "max_index_chars": None}

    def snapshot(self):
        return {"type": "memory_state", "moduleId": self.module_id, "strategy": self.strategy,
                "memories": [{"name": n, "description": m["description"], "len": len(m["body"]),
                              "lines": _lines(m["body"])} for n, m in self.memories.items()],
                "count": len(self.memories), "totalLen": self.total_len(), "totalLines": self.total_lines(),
                "peak": dict(self.peak),
                "caps": {"maxCount": _cap(self.max_count), "maxLenPerMemory": _cap(self.max_len_per_memory),
                         "maxTotalLen": _cap(self.max_total_len), "maxLenIndex": None,
                         "maxLenDescription": _cap(self.max_len_description), "maxResults": _cap(self.max_results)},
                "scope": self.scope, "writable": self.writable}


def _blocking_cycle(items, start, blocked_by):
    """Whether making `start` blocked by `blocked_by` closes a cycle in items {id: {"blockedBy": [...]}}."""
    stack, seen = list(blocked_by), set()
    while stack:
        current = stack.pop()
        if current == start:
            return True
        if current in seen or current not in items:
            continue
        seen.add(current)
        stack.extend(items[current]["blockedBy"])
    return False


class TaskStore:
    """The agent's own task list: a DAG of tasks with pending / in_progress / done."""

    kind = "tasks"

    def __init__(self, module_id, max_tasks=100):
        self.module_id, self.max_tasks = module_id, max_tasks
        self.tasks = {}

    def _get(self, task_id):
        if task_id not in self.tasks:
            raise ToolError("not-found", f"there is no task {task_id}")
        return self.tasks[task_id]

    def _blockers(self, task_id, blocked_by):
        for other in blocked_by:
            if other not in self.tasks:
                raise ToolError("not-found", f"there is no task {other} to be blocked by")
        if task_id in blocked_by or _blocking_cycle(self.tasks, task_id, blocked_by):
            raise ToolError("conflict", f"blocking {task_id} on {', '.join(blocked_by)} would make a cycle")

    def add(self, task):
        task_id = (task.get("id") or "").strip()
        if not task_id or not (task.get("title") or "").strip():
            raise ToolError("invalid-argument", "a task needs an id and a title")
        if task_id in self.tasks:
            raise ToolError("conflict", f"a task {task_id} already exists")
        if len(self.tasks) >= self.max_tasks:
            raise ToolError("limit-exceeded", f"the task list holds at most {self.max_tasks} tasks")
        blocked_by = list(task.get("blocked_by") or [])
        self._blockers(task_id, blocked_by)
        self.tasks[task_id] = {"id": task_id, "title": _text(task["title"], "a task's title"),
                               "description": _text(task.get("description"), "a task's description"),
                               "status": "pending", "blockedBy": blocked_by}
        return self.usage()

    def update(self, task_id, patch):
        task = self._get(task_id)
        if patch.get("title") is not None:
            task["title"] = _text(patch["title"], "a task's title")
        description = patch.get("description") or ("keep", None)
        if description[0] == "clear":
            task["description"] = None
        elif description[0] == "set":
            task["description"] = _text(description[1], "a task's description")
        if patch.get("status") is not None:
            task["status"] = patch["status"].replace("-", "_")

    def set_blocked_by(self, task_id, blocked_by):
        task = self._get(task_id)
        self._blockers(task_id, blocked_by)
        task["blockedBy"] = list(blocked_by)

    def complete(self, task_id):
        self._get(task_id)["status"] = "done"

    def remove(self, task_id):
        self._get(task_id)
        del self.tasks[task_id]
        for task in self.tasks.values():
            task["blockedBy"] = [b for b in task["blockedBy"] if b != task_id]
        return self.usage()

    def usage(self):
        return {"count": len(self.tasks), "max_tasks": self.max_tasks}

    def snapshot(self):
        return {"type": "tasks_state", "moduleId": self.module_id,
                "tasks": [{k: v for k, v in t.items() if v is not None} for t in self.tasks.values()]}


class BoardStore:
    """The run's epic and issue board (one store for every holder)."""

    kind = "board"

    def __init__(self, module_id, max_epics=50, max_issues=2000):
        self.module_id, self.max_epics, self.max_issues = module_id, max_epics, max_issues
        self.epics, self.issues = {}, {}

    def usage(self):
        return {"epics": len(self.epics), "max_epics": self.max_epics, "issues": len(self.issues),
                "max_issues": self.max_issues}

    def create_epic(self, epic):
        prefix = (epic.get("prefix") or "").upper()
        if not re.fullmatch(r"[A-Z]{3,6}", prefix):
            raise ToolError("invalid-argument", "an epic's prefix is 3 to 6 letters")
        if prefix in self.epics:
            raise ToolError("conflict", f"an epic {prefix} already exists")
        if len(self.epics) >= self.max_epics:
            raise ToolError("limit-exceeded", f"the board holds at most {self.max_epics} epics")
        entry = {"id": prefix, "title": _text(epic.get("title", ""), "an epic's title"),
                 "description": _text(epic.get("description", ""), "an epic's description")}
        _within(self._chars() + _chars([entry]), "the board")
        self.epics[prefix] = entry
        return {"id": prefix, "board": self.usage()}

    def create_issue(self, issue):
        if not (issue.get("title") or "").strip():
            raise ToolError("invalid-argument", "an issue needs a title")
        if not (issue.get("agent") or "").strip():
            raise ToolError("invalid-argument", "an issue names the agent profile that implements it")
        epic_id = issue.get("epic_id")
        if epic_id is not None and epic_id not in self.epics:
            raise ToolError("not-found", f"there is no epic {epic_id}")
        if len(self.issues) >= self.max_issues:
            raise ToolError("limit-exceeded", f"the board holds at most {self.max_issues} issues")
        prefix = epic_id or "ISSUE"
        number = 1 + sum(1 for i in self.issues if i.startswith(prefix + "-"))
        issue_id = f"{prefix}-{number}"
        blocked_by = list(issue.get("blocked_by") or [])
        for other in blocked_by:
            if other not in self.issues:
                raise ToolError("not-found", f"there is no issue {other} to be blocked by")
        entry = {
            "id": issue_id, "title": _text(issue["title"], "an issue's title"),
            "description": _text(issue.get("description"), "an issue's description"), "epicId": epic_id,
            "inScope": _text("\n".join(_texts(issue.get("in_scope"), "an issue's scope")), "an issue's scope"),
            "outOfScope": _text("\n".join(_texts(issue.get("out_of_scope"), "an issue's scope")), "an issue's scope"),
            "completionCriteria": _text("\n".join(_texts(issue.get("completion_criteria"), "an issue's criteria")),
                                        "an issue's criteria"),
            "status": "open", "blockedBy": blocked_by, "agentId": issue["agent"], "retries": 0,
            "reviewerIds": list(issue.get("reviewers") or [])}
        _within(self._chars() + _chars([entry]), "the board")
        self.issues[issue_id] = entry
        return {"id": issue_id, "board": self.usage()}

    def issue(self, issue_id):
        if issue_id not in self.issues:
            raise ToolError("not-found", f"there is no issue {issue_id}")
        return self.issues[issue_id]

    def _chars(self):
        return _chars(self.epics.values()) + _chars(self.issues.values())

    def update_issue(self, issue_id, patch):
        issue = self.issue(issue_id)
        before = _chars([issue])
        texts = {}
        if patch.get("title") is not None:
            texts["title"] = _text(patch["title"], "an issue's title")
        description = patch.get("description") or ("keep", None)
        if description[0] != "keep":
            texts["description"] = _text(description[1], "an issue's description")
        for field, key in (("in_scope", "inScope"), ("out_of_scope", "outOfScope"),
                           ("completion_criteria", "completionCriteria")):
            if patch.get(field) is not None:
                what = f"an issue's {field.replace('_', ' ')}"
                texts[key] = _text("\n".join(_texts(patch[field], what)), what)
        _within(self._chars() - before + _chars([{**issue, **texts}]), "the board")
        issue.update(texts)
        if patch.get("status") is not None:
            issue["status"] = patch["status"].replace("-", "_")
        epic = patch.get("epic") or ("keep", None)
        if epic[0] == "ungroup":
            issue["epicId"] = None
        elif epic[0] == "set":
            if epic[1] not in self.epics:
                raise ToolError("not-found", f"there is no epic {epic[1]}")
            issue["epicId"] = epic[1]

    def set_issue_blocked_by(self, issue_id, blocked_by):
        issue = self.issue(issue_id)
        for other in blocked_by:
            self.issue(other)
        if issue_id in blocked_by or _blocking_cycle(self.issues, issue_id, blocked_by):
            raise ToolError("conflict", f"blocking {issue_id} on {', '.join(blocked_by)} would make a cycle")
        issue["blockedBy"] = list(blocked_by)

    def remove_epic(self, epic_id):
        if epic_id not in self.epics:
            raise ToolError("not-found", f"there is no epic {epic_id}")
        del self.epics[epic_id]
        for issue in self.issues.values():
            if issue["epicId"] == epic_id:
                issue["epicId"] = None
        return self.usage()

    def remove_issue(self, issue_id):
        self.issue(issue_id)
        del self.issues[issue_id]
        return self.usage()

    def snapshot(self):
        return {"type": "board_state", "moduleId": self.module_id, "epics": list(self.epics.values()),
                "issues": [{k: v for k, v in i.items() if v is not None} for i in self.issues.values()]}


class ArchiveStore:
    """What archive_thread put away: bodies searchable here, only previews on the stream."""

    kind = "archive"
    PREVIEW_CHARS = 200
    MAX_HITS = 8

    def __init__(self, module_id):
        self.module_id = module_id
        self.entries = []  # {seq, source, role, text}

    def put(self, seq, role, text, source="history"):
        self.entries.append({"seq": seq, "source": source, "role": role, "text": text})

    def search(self, query):
        if not query.strip():
            raise ToolError("invalid-argument", "the query is empty")
        needle = query.lower()
        hits = [{"seq": e["seq"], "role": e["role"], "text": e["text"]} for e in self.entries
                if needle in e["text"].lower()]
        return {"archive_empty": not self.entries, "hits": hits[:self.MAX_HITS]}

    def snapshot(self):
        return {"type": "archive_state", "moduleId": self.module_id,
                "entries": [{"seq": e["seq"], "source": e["source"], "role": e["role"], "len": len(e["text"]),
                             "preview": e["text"][:self.PREVIEW_CHARS]} for e in self.entries],
                "count": len(self.entries), "totalLen": sum(len(e["text"]) for e in self.entries)}
