"""How an error names the input it belongs to: the input's label in context, the way the operator
sees it on the form, rather than the spec path the validator speaks in."""


def field_labels(view):
    """Every input's label in context, keyed by its name: "Task", "Limits → Max turns (per agent)",
    "Profile 2 (reviewer) → memories → scope", "Profile 1 (root) → Roster, row 1 → Agent (slug)"."""
    labels = {view[k].name: view[k].label for k in ("name", "task", "workspace", "workspace_files", "extra",
                                                     "hooks")}
    labels.update({view["agents_slot"].name: "Profiles", view["limits_slot"].name: "Limits",
                   view["limits_extra"].name: "Limits → " + view["limits_extra"].label})
    labels.update({f.name: "Limits → " + f.label for f in view["limits"]})
    labels.update({f.name: "Provider → " + f.label for f in [view["provider"]["kind"], *view["provider"]["fields"]]})
    labels.update({f.name: "Save as a configuration → " + f.label for f in view["configuration"]})
    for p in view["profiles"]:
        slug = p["fields"]["slug"].value or "no slug"
        head = f"Profile {p['index'] + 1} ({slug})"
        labels[p["slot"].name] = head
        for f in [*p["fields"].values(), p["allowlist"], p["hooks"], p["extra"]]:
            labels[f.name] = f"{head} → {f.label}"
        for cap in p["capabilities"]:
            labels[cap["on"].name] = f"{head} → Capabilities → {cap['info'].id}"
            labels.update({f.name: f"{head} → {cap['info'].id} → {f.label}" for f in cap["params"]})
        for j, row in enumerate(p["roster"]):
            labels.update({f.name: f"{head} → Roster, row {j + 1} → {f.label}" for f in row.values()})
        for k, state in enumerate(p["states"]):
            labels.update({f.name: f"{head} → State {k + 1} → {f.label}" for f in state["fields"].values()})
            for t, edge in enumerate(state["edges"]):
                labels.update({f.name: f"{head} → State {k + 1}, edge {t + 1} → {f.label}" for f in edge.values()})
    return labels
