"""The shipped demos: for each name a scripted provider's replies (`<name>.script.json`) and a ready
run spec (`<name>.spec.json`), launched by `manage.py bootstrap`, offered on the launch form."""

import json
from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent


def demo_names():
    return sorted(p.name[: -len(".script.json")] for p in DEMO_DIR.glob("*.script.json"))


def demo_spec(name):
    """A shipped demo's ready spec (runs/demo/<name>.spec.json), or None."""
    if name not in demo_names():
        return None
    path = DEMO_DIR / f"{name}.spec.json"
    return json.loads(path.read_text()) if path.is_file() else None
