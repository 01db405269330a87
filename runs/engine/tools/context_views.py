"""The views an agent holds in its window: file, text and documentation views.

A view is keyed by kind and selector; re-opening one replaces it in place. The headings are
seeds/004's: `View: <label>`, `Documentation: <name>`, `File: <path>:<first>-<last> of <N> lines`.
"""

from dataclasses import dataclass

from runs.engine.tools.errors import ToolError

MAX_TEXT_VIEW_BYTES = 65_536
MAX_VIEW_LABEL_BYTES = 200
MAX_FILE_VIEW_BYTES = 65_536
SEARCH_RESULTS = "search results"  # the text view a documentation search opens (and replaces)
# An agent's open views in all (each rides in every prompt until closed): a program opened 20,000 text
# views of 5,000 characters, 100 MB carried into each later turn and 110 MB conversation pages.
MAX_OPEN_VIEWS = 500
MAX_OPEN_VIEW_CHARS = 4 * 1024 * 1024


def estimate_tokens(text):
    """A rough token estimate (about four characters a token), never zero for non-empty text."""
    return (len(text) + 3) // 4


@dataclass
class View:
    kind: str  # "file" | "text" | "docs"
    selector: str  # the label, the documentation key, or the file path
    body: str
    heading: str
    turn: int = 0  # the agent's turn whose program placed it

    @property
    def tokens(self):
        return estimate_tokens(self.message())  # what the view's message costs the window

    def message(self):
        """The user message that carries the view into the window."""
        return f"{self.heading}\n\n{self.body}"


class OpenViews:
    """The agent's open views, in the order they were placed."""

    def __init__(self):
        self.views = []

    def find(self, kind, selector):
        return next((v for v in self.views if v.kind == kind and v.selector == selector), None)

    def open(self, view):
        """Place a view; returns "opened" or "replaced" (a re-opened view lands in place).
        `limit-exceeded` past MAX_OPEN_VIEWS views or MAX_OPEN_VIEW_CHARS characters open."""
        existing = self.find(view.kind, view.selector)
        kept = [v for v in self.views if v is not existing]
        if len(kept) >= MAX_OPEN_VIEWS or sum(len(v.body) for v in kept) + len(view.body) > MAX_OPEN_VIEW_CHARS:
            raise ToolError("limit-exceeded", f"an agent holds at most {MAX_OPEN_VIEWS} open views and "
                                              f"{MAX_OPEN_VIEW_CHARS:,} characters of them: close some first")
        if existing is not None:
            self.views[self.views.index(existing)] = view
            return "replaced"
        self.views.append(view)
        return "opened"

    def close(self, selector, kinds=("file", "text")):
        """Close the views of `kinds` under `selector`; returns the closed views."""
        return self._drop(lambda v: v.kind in kinds and v.selector == selector)

    def close_kind(self, kind):
        return self._drop(lambda v: v.kind == kind)

    def _drop(self, matches):
        closed = [v for v in self.views if matches(v)]
        self.views = [v for v in self.views if not matches(v)]
        return closed


def text_view(label, body):
    if not isinstance(label, str) or not label.strip():
        raise ToolError("invalid-argument", "a view needs a non-blank label")
    if len(label.encode()) > MAX_VIEW_LABEL_BYTES:
        raise ToolError("limit-exceeded", f"the label is longer than {MAX_VIEW_LABEL_BYTES} bytes")
    if len(body.encode()) > MAX_TEXT_VIEW_BYTES:
        raise ToolError("limit-exceeded", f"the body is longer than {MAX_TEXT_VIEW_BYTES} bytes; open a smaller part")
    return View("text", label, body, f"View: {label}")


def file_view(path, read):
    """A file view of a text read ({contents, first_line, last_line, total_lines})."""
    if len(read["contents"].encode()) > MAX_FILE_VIEW_BYTES:
        raise ToolError("limit-exceeded",
                        f"{path} is over {MAX_FILE_VIEW_BYTES} bytes in that range; open fewer lines with limit")
    heading = f"File: {path}:{read['first_line']}-{read['last_line']} of {read['total_lines']} lines"
    return View("file", path, read["contents"], heading)


def docs_view(name, body):
    return View("docs", name, body, f"Documentation: {name}")
