"""The layout keeps its promises (issue 12): no import cycle among the project's packages, the engine
never imports the launch flow, no test module imports another, runs/ keeps only the app's own modules
and access.py at its top level, and no production module grows past about 400 lines. Read off the
source with `ast` (module-level imports: what runs on import)."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("runs", "surfaces", "gg_console")
MAX_LINES = 420  # "about 400"; migrations are left out (project_modules skips them)


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(roots=PACKAGES) -> dict[str, Path]:
    return {module_name(p): p for root in roots for p in (REPO / root).rglob("*.py")
            if "migrations" not in p.parts}


def module_level_imports(path: Path, name: str, known) -> set[str]:
    """The project modules `path` imports when it is imported (function bodies left out)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                for a in node.names:
                    found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
            elif isinstance(node, (ast.If, ast.Try)):  # still module level
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))

    visit(ast.parse(path.read_text()).body)
    return {m for m in found if m in known and m != name}


def import_graph(roots=PACKAGES) -> dict[str, set[str]]:
    modules = project_modules(roots)
    return {name: module_level_imports(path, name, modules) for name, path in modules.items()}


def find_cycle(graph):
    """One import cycle as a list of modules (first == last), or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        trail.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt, trail)
                if cycle:
                    return cycle
        trail.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_import_graph_reads_real_edges():
    graph = import_graph()
    assert "runs.engine.agents" in graph["runs.engine.loop"]
    assert "runs.pages.stores" in graph["runs.urls"]


def test_no_import_cycle_in_runs_surfaces_gg_console():
    assert find_cycle(import_graph()) is None


def package_graph(graph) -> dict[str, set[str]]:
    """The import graph of the packages: a module's node is its first two dotted components
    (runs.ingest.writer -> runs.ingest; a top-level runs/*.py module such as runs.access is its own)."""
    def package(module):
        return ".".join(module.split(".")[:2])
    packages = {package(m): set() for m in graph}
    for module, imports in graph.items():
        packages[package(module)].update(package(i) for i in imports if package(i) != package(module))
    return packages


def test_the_package_graph_groups_modules_by_their_first_two_components():
    graph = package_graph({"runs.ingest.writer": {"runs.feed.search", "runs.ingest.fold"},
                           "runs.feed.search": {"runs.models"}, "runs.ingest.fold": set(), "runs.models": set()})
    assert graph == {"runs.ingest": {"runs.feed"}, "runs.feed": {"runs.models"}, "runs.models": set()}
    assert find_cycle(package_graph({"runs.a.x": {"runs.b.y"}, "runs.b.z": {"runs.a.w"},
                                     "runs.b.y": set(), "runs.a.w": set()})) == ["runs.a", "runs.b", "runs.a"]


def test_no_import_cycle_among_the_packages():
    assert find_cycle(package_graph(import_graph())) is None


def test_the_engine_never_imports_the_launch_flow():
    graph = import_graph()
    offenders = {m: sorted(i for i in imports if i.startswith("runs.launch"))
                 for m, imports in graph.items() if m.startswith("runs.engine")}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_no_test_module_imports_another():
    tests = project_modules(("tests",))
    graph = {name: module_level_imports(path, name, tests) for name, path in tests.items()}
    # Function-local imports count here too: a test reaching into another test module is the smell.
    for name, path in tests.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in tests:
                graph[name].add(node.module)
    # Shared helpers live in helper modules (tests/<group>_helpers.py, tests/paths.py, ...); a conftest
    # holds fixtures, which pytest hands out by name.
    test_modules = {m for m in tests if m.rpartition(".")[2].startswith("test_") or m.endswith("conftest")}
    assert {m: sorted(i & test_modules) for m, i in graph.items() if i & test_modules} == {}


# runs/ is by flow: at its top level only the Django app's own modules and the auth-like glue
# every flow's views share (who may read or write, which run a reference names).
TOP_LEVEL_ALLOWED = {"__init__", "models", "admin", "urls", "apps", "access"}


def test_no_runs_module_at_the_top_level_but_the_apps_own_and_access():
    top = {p.stem for p in (REPO / "runs").glob("*.py")}
    assert top - TOP_LEVEL_ALLOWED == set()


def test_each_tab_routed_in_urls_has_its_test_beside_its_name():
    """urls.py names the tab's module (runs/pages/<tab>.py: its view, its reads, the template it
    renders); its test is tests/pages/test_<tab>.py: two hops from urls.py, neither of them a search."""
    tree = ast.parse((REPO / "runs" / "urls.py").read_text())
    tabs = {a.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "runs.pages"
            for a in node.names}
    assert {"overview", "agents", "stores", "divergences", "refusals", "arms"} <= tabs
    missing = sorted(t for t in tabs if not (REPO / "tests" / "pages" / f"test_{t}.py").exists())
    assert missing == []
    # and the templates each renders, named in its render() calls, are where they say
    rendered = {(t, node.args[1].value) for t in tabs
                for node in ast.walk(ast.parse((REPO / "runs" / "pages" / f"{t}.py").read_text()))
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "render" and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)}
    assert len(rendered) >= len(tabs) - 1  # the report renders none: it answers JSON
    assert sorted((t, name) for t, name in rendered if not (REPO / "templates" / name).exists()) == []


def test_no_production_module_is_over_about_400_lines():
    long = {str(p.relative_to(REPO)): n for p in project_modules().values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


# The imports kept inside a function: a program reaches the guest (which loads wasmtime) only
# when a program runs, so a tool-calling run never loads wasmtime; and AppConfig.ready, where the
# app's models first can be imported (Django's own place for connecting a signal).
LOCAL_IMPORTS_ALLOWED = {("runs.engine.sandbox.program", "runs.engine.sandbox.guest"), ("runs.apps", "runs.ingest")}


def test_no_function_local_imports_but_wasmtimes_and_the_apps_ready():
    local = set()
    for name, path in project_modules().items():
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Import):
                        local.update((name, a.name) for a in node.names)
                    elif isinstance(node, ast.ImportFrom):
                        local.add((name, node.module))
    assert local - LOCAL_IMPORTS_ALLOWED == set()
