"""The console's words, each defined once in gg's own terms (quoted from the design documents).

Pages link a term's first use with `{% term "store" %}` (surfaces/templatetags/glossary.py), a `?`
beside the heading that leads to /glossary/#store. `quote` is gg's sentence, verbatim; `gloss` is
the console's one-line reading of it; `source` names the design document the quote comes from.
"""

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Term:
    slug: str
    word: str
    gloss: str
    quote: str
    source: str
    see: tuple = ()

    @property
    def see_terms(self):
        return tuple(GLOSSARY[slug] for slug in self.see)


HOLDINGS = "Agent holdings and surface"
SURFACE = "The API surface"
MESSAGES = "Messages"
ENDING = "Ending a session"

TERMS = (
    Term("surface", "surface", "What one agent may call: the tools it was offered, or the functions its programs bind.",
         "agent_modules says what the instance holds; agent_surface says what it may call. […] agent_surface is "
         "the offered set. It carries how the instance answers a turn (executionMode, tool_calling or "
         "responses_as_code), which language its programs are written in (programLanguage), which SDK types its "
         "documentation lookups open beside a function (docViewTypes), the gg tools a tool-calling instance was "
         "offered (tools), and the capability modules a responses-as-code instance’s programs bind (apis).",
         HOLDINGS, ("holding", "execution-mode", "arm")),
    Term("holding", "holding", "A module an agent instance holds: which store it bound, how it came by it, whether "
         "it may write it.",
         "agent_modules is the roster: one row per module kind, naming the store the instance bound (memories-2), "
         "whether the capability is on, whether the prompt carries it, how this holder came by it (created, "
         "inherited, profile, run, transferred, forked), whether this holder may write it […], and, for memories, "
         "the declared scope.",
         HOLDINGS, ("store", "origin")),
    Term("origin", "origin", "How a holder came by a store: created, inherited, profile, run, transferred or forked.",
         "how this holder came by it (created, inherited, profile, run, transferred, forked)",
         HOLDINGS, ("holding", "divergence")),
    Term("store", "store", "One module instance (a memories, tasks, board or skills store) with its own id, "
         "whatever the number of agents holding it.",
         "A module instance is not one-to-one with an agent instance. One store can be held by several agents at "
         "once, carried whole to a successor, or copied when its holder forks, so the stream carries the store’s "
         "identity rather than leaving a reader to infer sharing from panels that happen to match.",
         HOLDINGS, ("holding", "succession")),
    Term("divergence", "divergence", "Where a binding resolved differently from what the configuration declared. "
         "A note about the run, not an error.",
         "The scope and origin pair is the only place a declared binding rule and the resolved answer to it appear "
         "side by side, so a holder reporting scope: inherited with origin: created is one whose inheritance fell "
         "back, which the console reports as a divergence.",
         HOLDINGS, ("origin", "store")),
    Term("execution-mode", "execution mode", "How an agent answers a turn: by calling tools, or with a program "
         "(responses as code). An agent has exactly one.",
         "The two execution modes are independent surfaces and an instance has exactly one of them, so exactly one "
         "of tools and apis is populated.",
         HOLDINGS, ("tool", "operation")),
    Term("tool", "tool", "A name a tool-calling agent calls (read_file, shell). A different vocabulary from the "
         "operations.",
         "The two vocabularies are scoped rather than two spellings of one list: a tool name is never callable from "
         "a program, an operation id is never callable as a tool, and neither field joins to the other.",
         HOLDINGS, ("operation", "execution-mode")),
    Term("operation", "operation", "One typed function of gg's API surface, named namespace.key "
         "(files.read_file), whatever the arm spells it.",
         "operation is the field a study joins on, and it exists because eleven language arms legitimately spell "
         "one surface eleven ways. A program that wrote readFile, one that wrote read_file and one that wrote "
         "ReadFile are one operation, files.read_file",
         HOLDINGS, ("spelling", "arm", "binding")),
    Term("module", "module", "A group of operations a program names (files, shell, board, …); core holds the "
         "shared types.",
         "gg’s surface is divided into modules, and a program names the ones it calls.",
         SURFACE, ("operation",)),
    Term("arm", "arm", "A program language gg runs code agents in (TypeScript, Python, Rust, …), with its own "
         "SDK over the same calls.",
         "The WIT is language-neutral. Each arm binds this same world and layers its own idiomatic SDK over it, so "
         "two arms differ in the spelling of a call rather than in which calls exist.",
         SURFACE, ("spelling", "membrane")),
    Term("spelling", "spelling", "How one arm writes an operation at a call site: gg.files.readFile, "
         "gg::files::read_file.",
         "One entry per capability module, named twice: gg’s cross-arm id for it (module: files) and this arm’s own "
         "spelling of it (path: gg.files in TypeScript, gg::files in Rust). A reader comparing two language arms "
         "groups by the id; a reader quoting what the model wrote uses the spelling.",
         HOLDINGS, ("arm", "operation")),
    Term("membrane", "membrane", "The WIT interface between a program and gg: one typed function per operation, "
         "and the only route to gg.",
         "The interface between a program and gg is a WIT membrane […] The membrane is the only route to gg. What "
         "the interface does not declare is not something a program can ask gg to do.",
         SURFACE, ("operation", "refusal")),
    Term("binding", "binding", "What buys an operation: a capability, the agent's ending role, its place in a "
         "machine, or nothing (Always).",
         "Each row names an OperationId of the form namespace.key (files.read_file), the family it belongs to, "
         "whether the call takes input, and its Binding. A Binding is one of four things […] Always, bound to every "
         "program whatever a run enables.",
         SURFACE, ("capability", "ending")),
    Term("capability", "capability", "A switch on a profile (shell, read-file, memories, …) that buys tools and "
         "operations; a code agent also names each operation in its allowlist.",
         "Capability(id), bought by a gg capability the agent holds and named in that agent’s allowlist.",
         SURFACE, ("allowlist", "binding", "profile")),
    Term("allowlist", "allowlist", "The profile's list of what it may use: tool names for a tool-calling agent, "
         "operation ids for a code agent. An empty operation allowlist grants nothing.",
         "Capability(id), bought by a gg capability the agent holds and named in that agent’s allowlist. […] the "
         "profile’s own tool allowlist.",
         SURFACE, ("capability", "tool", "operation")),
    Term("profile", "profile", "One agent configuration of a run (its slug, model, mode, capabilities); the "
         "first is the root's.",
         "docViewTypes is the flag set the agent ran under, which is the set its profile wrote: a value gg cannot "
         "honour refuses the launch, so a recorded run has one set and the event names it.",
         HOLDINGS, ("capability", "allowlist")),
    Term("refusal", "refusal", "A call the membrane turned away before it ran, because this agent was not granted "
         "it. Still a call the model made.",
         "A refusal is a typed ApiError with code unavailable, which a program can catch and recover from on the "
         "same turn. Its message says the call is not available and, where the agent has one, which call to make "
         "instead.",
         SURFACE, ("membrane", "failure-class")),
    Term("failure-class", "failure class", "Why a call failed (not-found, invalid-argument, limit-exceeded, …), "
         "as the failing code classed it.",
         "The class a failed call was raised with, such as not-found, invalid-argument or limit-exceeded, is "
         "computed where the failure happened, handed to the caller to branch on, and carried on the result half "
         "of the call’s record.",
         HOLDINGS, ("refusal",)),
    Term("ending", "ending", "The explicit call that ends an agent's session: finish, or a reviewer's approve / "
         "request_changes.",
         "Every agent gg drives ends its session with an explicit call. […] The role an agent was dispatched in "
         "decides which call it makes. An agent doing work reports what it did. A reviewer returns a verdict, and a "
         "verdict that requests changes carries the list of changes.",
         ENDING, ("role", "error-turn")),
    Term("role", "role", "What an agent was dispatched as: Standard (root, subagent, implementer) or Review "
         "(an issue's reviewers). It decides the ending calls.",
         "Only the role’s own group is offered: a reviewer is given no finish, and an implementer no approve.",
         ENDING, ("ending",)),
    Term("error-turn", "error turn", "A turn that ended without a call gg could act on; enough of them stop the "
         "run early with a diagnosis.",
         "A tool-calling turn that requests no tools is an error turn, and a responses-as-code turn ends the session "
         "only when the program it compiled calls its ending function.",
         ENDING, ("ending",)),
    Term("succession", "succession", "An agent handing its session on to a new instance (exec, a machine "
         "transition) or forking a copy; the arriving instance has a new agent id.",
         "everything that changes what an agent holds or may call mints a new agent id, and the arriving instance "
         "reports its own. […] agent_transition.modules is the per-kind account of a succession, carrying both "
         "store ids, so a fork’s linked board and its copied task list are distinguishable and a store swapped "
         "underneath a successor is visible as the two different ids it is.",
         HOLDINGS, ("incarnation", "store")),
    Term("incarnation", "incarnation", "One agent instance, from its agent_spawned on: the root, a subagent or "
         "a successor.",
         "Two events open every incarnation and answer two different questions. […] Both are emitted once per "
         "incarnation, for the root, every subagent and every successor alike.",
         HOLDINGS, ("succession", "surface")),
    Term("docviewtypes", "docViewTypes", "Which types a documentation lookup opens beside a function: any of "
         "return, parameters, errors (recorded as return+errors, or none).",
         "docViewTypes is the flag set the agent ran under […] The recorded id is the enabled flags joined by + in "
         "the fixed order return, parameters, errors, and none when all three are off, so return+errors, return, "
         "return+parameters+errors and none are among its values.",
         HOLDINGS, ("arm", "view")),
    Term("view", "view", "What a program puts in front of its model: a file, a value or a documentation entry, "
         "opened into the context window.",
         "A view is the only way to see anything — a value you computed, or a file.",
         MESSAGES, ("docviewtypes",)),
    Term("context-band", "context band", "A kind of content in an agent's context window (system, file_view, "
         "docs_view, memory, …); the context chart stacks them per turn.",
         "To count what a lookup cost, read the placed views: each is a context_message on the docs_view band whose "
         "label names what it documents and whose tokens say what it cost",
         HOLDINGS, ("view",)),
)

GLOSSARY = MappingProxyType({t.slug: t for t in TERMS})
