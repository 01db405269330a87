"""The WIT and the catalogue are one: compile the WIT with componentize-py and read the bindings."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from surfaces.catalogue import BY_ID, FAMILIES, OPERATIONS
from tests.paths import REPO

COMPONENTIZE = Path(sys.executable).parent / "componentize-py"
RAISES_API_ERROR = "Raises: `componentize_py_types.Err(wit_world.imports.types.ApiError)`"
PRIVATE = {"types", "feedback"}  # declared for the guest, not model-facing


@pytest.fixture(scope="module")
def bindings(tmp_path_factory):
    out = tmp_path_factory.mktemp("bindings")
    subprocess.run([str(COMPONENTIZE), "-d", str(REPO / "wit"), "-w", "sandbox", "bindings", str(out)],
                   check=True, capture_output=True, text=True)
    return out / "wit_world"


def _functions(path):
    tree = ast.parse(path.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


@pytest.fixture(scope="module")
def wit_functions(bindings):
    """(interface, python function name) -> the generated stub, for every imported interface."""
    return {(path.stem, name): node for path in sorted((bindings / "imports").glob("*.py"))
            if path.stem != "__init__" for name, node in _functions(path).items()}


def test_world_imports_the_fourteen_interfaces(bindings):
    interfaces = {p.stem for p in (bindings / "imports").glob("*.py")} - {"__init__"}
    assert interfaces == set(FAMILIES) | PRIVATE
    assert len(interfaces) == 14


def test_one_to_one_between_wit_functions_and_operations(wit_functions):
    # Bindings name a WIT function in snake_case, so interface.function is the operation id.
    model_facing = {f"{iface}.{name}" for iface, name in wit_functions if iface not in PRIVATE}
    assert model_facing == set(BY_ID)
    assert len(model_facing) == len(OPERATIONS) == 52
    for op in OPERATIONS:
        assert (op.wit_interface, op.wit_function.replace("-", "_")) in wit_functions


def test_every_model_facing_function_returns_result_with_api_error(wit_functions):
    for (iface, name), node in wit_functions.items():
        raises = RAISES_API_ERROR in (ast.get_docstring(node) or "")
        assert raises is (iface not in PRIVATE), f"{iface}.{name}"


def test_input_bit_matches_the_signature(wit_functions):
    for op in OPERATIONS:
        node = wit_functions[(op.wit_interface, op.wit_function.replace("-", "_"))]
        assert bool(node.args.args) is op.takes_input, op.id


def test_the_world_exports_run(bindings):
    source = (bindings / "__init__.py").read_text()
    world = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "WitWorld")
    run = next(n for n in world.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    assert [a.arg for a in run.args.args] == ["self", "program", "modules"]
    assert ast.unparse(run.returns) == "feedback.ProgramOutcome"


def test_api_error_codes(bindings):
    types = (bindings / "imports" / "types.py").read_text()
    tree = ast.parse(types)
    code = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ErrorCode")
    members = [t.id for n in code.body if isinstance(n, ast.Assign) for t in n.targets]
    assert members == ["INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT", "REFUSED", "UNAVAILABLE", "LIMIT_EXCEEDED",
                       "IO_ERROR", "OTHER"]
    error = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ApiError")
    fields = [n.target.id for n in error.body if isinstance(n, ast.AnnAssign)]
    assert fields == ["code", "operation", "message"]
