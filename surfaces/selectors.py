"""Reads for the Reference pages: the catalogue projected through one arm."""

from surfaces.arms import ARMS, LANGUAGES
from surfaces.catalogue import BY_ID, CAPABILITIES, ENDINGS, FAMILY_LABELS, MODULES, TOOLS
from surfaces.signatures import signature


def reference(language):
    """Everything the Reference page shows, spelled in `language`'s arm."""
    arm = ARMS[language]
    modules = []
    for module in MODULES:
        rows = []
        for name, op_id in arm.functions(module.id):
            op = BY_ID[op_id]
            alias = name != arm.name(op)
            rows.append({"op": op, "alias": alias, "spelling": arm.module_path(module.id) + arm.sep + name,
                         "signature": None if alias else signature(language, op_id),
                         "canonical": arm.spell(op_id)})
        modules.append({"module": module, "path": arm.module_path(module.id),
                        "import_line": arm.import_line(module.id), "rows": rows})
    tool_families = [{"label": label, "tools": [t for t in TOOLS if t.family == family]}
                     for family, label in FAMILY_LABELS.items()]
    # An ending tool's anchor (#tool-finish, where the pages link a call of it) is its first row here.
    endings, anchored = [], {t.name for t in TOOLS}
    for ending in ENDINGS.values():
        tools = [{"name": name, "anchor": name not in anchored} for name in ending.tools]
        anchored.update(ending.tools)
        endings.append({"ending": ending, "tools": tools,
                        "spellings": [arm.spell(op_id) for op_id in ending.operations]})
    return {
        "arm": arm,
        "arms": [ARMS[lang] for lang in LANGUAGES],
        "modules": modules,
        "operation_count": len(BY_ID),
        "tool_families": [f for f in tool_families if f["tools"]],
        "endings": endings,
        "capabilities": list(CAPABILITIES.values()),
    }
