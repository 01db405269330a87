"""The eleven language arms and how each spells an operation.

Each arm is generated from a handful of naming rules (operations.md §4.1): the case of a
function name, how the module path wraps the namespace, the member separator (`::` for rust
and cpp only), how a receiver method is written, and the import line. The four receiver-method
aliases are the only irregular names; PureScript has no receivers, so it offers none.

`spelling_for` is the console's rule for showing a recorded call (design.md "Spelling").
"""

import re
from dataclasses import dataclass
from types import MappingProxyType

from surfaces.catalogue import BY_ID, MODULES, OPERATIONS

LANGUAGES = ("typescript", "javascript", "python", "ruby", "purescript", "java", "kotlin", "rust", "swift",
             "cpp", "csharp")
DEFAULT_LANGUAGE = "typescript"

# Receiver methods that alias an operation (operations.md §4.1): operation -> (receiver, method).
ALIASES = (
    ("board.wait_for_issue", "IssueCreated", "wait"),
    ("memories.read_memory", "MemoryHit", "read"),
    ("delegation.send_message", "SubagentHandle", "send"),
    ("programs.get", "ProgramSummary", "source"),
)


def _words(snake):
    return snake.split("_")


def camel(snake):
    first, *rest = _words(snake)
    return first + "".join(w.capitalize() for w in rest)


def pascal(snake):
    return "".join(w.capitalize() for w in _words(snake))


def snake(snake_name):
    return snake_name


def _snake_from_pascal(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True)
class Arm:
    language: str
    label: str
    case: object  # snake_case key -> this arm's function name
    path_template: str  # module path; {m} the namespace, {M} it capitalised
    import_template: str  # the line that reaches a module; same placeholders
    failure_type: str
    sep: str = "."
    receiver_sep: str = "."  # between a receiver type and its method
    receiver_case: str = "pascal"  # how the receiver type is written
    method_renames: tuple = ()  # (method, arm's name) where the arm cannot use the plain word
    has_receivers: bool = True

    def module_path(self, module):
        return self.path_template.format(m=module, M=module.capitalize())

    def import_line(self, module="files"):
        return self.import_template.format(m=module, M=module.capitalize())

    def name(self, op):
        """Module-relative name of the operation's free function (`readFile`, `read_file`, `ReadFile`)."""
        return self.case(_key(op))

    def alias_name(self, receiver, method):
        receiver_name = _snake_from_pascal(receiver) if self.receiver_case == "snake" else receiver
        method = dict(self.method_renames).get(method, method)
        return f"{receiver_name}{self.receiver_sep}{self.case(method)}"

    def functions(self, module):
        """(name, operation id) for every function the arm files under `module`: free functions in
        catalogue order, then receiver methods (canonical before alias, so the first match wins)."""
        rows = [(self.name(op), op.id) for op in OPERATIONS if op.module == module]
        if self.has_receivers:
            rows += [(self.alias_name(receiver, method), op_id) for op_id, receiver, method in ALIASES
                     if BY_ID[op_id].module == module]
        return rows

    def spell(self, op):
        op = _operation(op)
        return self.module_path(op.module) + self.sep + self.name(op)


def _operation(op):
    return BY_ID[op] if isinstance(op, str) else op


def _key(op):
    return _operation(op).key


ARMS = MappingProxyType({arm.language: arm for arm in (
    Arm("typescript", "TypeScript", camel, "gg.{m}", 'import * as gg from "gg";', "ApiError"),
    Arm("javascript", "JavaScript", camel, "gg.{m}", 'import * as gg from "gg";', "ApiError"),
    Arm("python", "Python", snake, "gg.{m}", "import gg", "gg.core.ApiError"),
    Arm("ruby", "Ruby", snake, "GG::{M}", 'require "gg"', "GG::Core::ApiError", receiver_sep="#"),
    Arm("purescript", "PureScript", camel, "Gg.{M}", "import Gg.{M} as Gg.{M}", "Gg.Core.ApiError",
        has_receivers=False),
    # `await`, because Object.wait is final in Java.
    Arm("java", "Java", camel, "gg.{m}.{M}", "import gg.{m}.{M};", "ApiError", receiver_sep="#",
        method_renames=(("wait", "await"),)),
    Arm("kotlin", "Kotlin", camel, "gg.{m}", "import gg.{m}.*", "gg.core.ApiError"),
    Arm("rust", "Rust", snake, "gg::{m}", "use gg::{m};", "gg::core::ApiError", sep="::", receiver_sep="::"),
    Arm("swift", "Swift", camel, "gg.{m}", "import gg", "core.ApiError"),
    Arm("cpp", "C++", snake, "gg::{m}", "#include <gg/{m}.hpp>", "gg::core::api_error", sep="::",
        receiver_sep="::", receiver_case="snake"),
    Arm("csharp", "C#", pascal, "Gg.{M}", "using Gg;", "ApiException"),
)})


def arm(language):
    """The arm for a language id; ValueError naming the arms when there is none."""
    try:
        return ARMS[language]
    except KeyError:
        raise ValueError(f"unknown program language {language!r}; the arms are {', '.join(LANGUAGES)}") from None


def spell(language, operation):
    """The fully-qualified spelling of an operation in an arm: gg.files.readFile, gg::files::read_file."""
    if operation not in BY_ID:
        raise ValueError(f"unknown operation {operation!r}")
    return arm(language).spell(operation)


def spelling_for(apis, language, operation):
    """How the console shows a call: from the agent's reported surface, else the catalogue's
    spelling for its language, else the operation id itself — never a guess."""
    if apis:
        for api in apis:  # as the agent reported it: entries of any shape, only well-formed ones read
            functions = api.get("functions") if isinstance(api, dict) else None
            for function in functions if isinstance(functions, list) else ():
                if isinstance(function, dict) and function.get("operation") == operation:
                    return f"{api.get('path', '')}{member_separator(language)}{function.get('name', '')}"
        return operation
    if language in ARMS and operation in BY_ID:
        return spell(language, operation)
    return operation


def member_separator(language):
    return ARMS[language].sep if language in ARMS else "."


def function_spelling(api: dict, function: dict, language: str) -> str:
    """A bound function as the agent's arm writes it: the module's path joined onto its name."""
    return f"{api.get('path') or api.get('module') or ''}{member_separator(language)}{function.get('name') or ''}"


def surface_apis(language, grants):
    """The `agent_surface.apis` a code agent on this arm reports: one entry per module it binds a
    function in, in presentation order; a module with nothing bound is absent. The two retired
    operations are left out: newer gg reports no surface carrying them."""
    the_arm = arm(language)
    apis = []
    for module in MODULES:
        functions = [{"name": name, "operation": op_id} for name, op_id in the_arm.functions(module.id)
                     if grants.permits(op_id) and not BY_ID[op_id].retired]
        if functions:
            apis.append({"module": module.id, "path": the_arm.module_path(module.id),
                         "description": module.brief, "functions": functions})
    return apis
