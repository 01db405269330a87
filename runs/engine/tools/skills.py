"""The skills store: a library of skill directories in the workspace."""

import os

from runs.engine.tools.errors import ToolError
from runs.engine.tools.plain import plain_dir, read_plain, scan_plain


ON_USE = "on-use"  # a skill's on-use script: on-use.<the arm's extension>

class SkillLibrary:
    """Skills: directories under the workspace's skill dir, each with SKILL.md and optionally a code
    module. `root` is `within`/`relative`; like every workspace read, nothing here follows a link
    (a symlinked skill dir, SKILL.md or module, or a hard-linked one, is not a skill)."""

    kind = "skills"
    MAX_SKILL_BYTES = 256 * 1024

    def __init__(self, module_id, within, relative=".gg/skills"):
        self.module_id, self.within, self.relative = module_id, within, relative
        self.read_names = set()

    @property
    def root(self):
        return plain_dir(self.within, self.relative)

    def _directories(self):
        root = self.root
        return {d.name: d.path for d in scan_plain(root)[0]} if root else {}

    def _text(self, directory, name):
        return read_plain(os.path.join(directory, name), self.MAX_SKILL_BYTES, name)[0].decode(errors="replace")

    def skills(self):
        found = []
        for name, directory in self._directories().items():
            try:
                text = self._text(directory, "SKILL.md")
            except ToolError:
                continue
            description = next((line.strip() for line in text.splitlines() if line.strip()
                                and not line.startswith("#")), "")
            found.append({"name": name, "description": description})
        return found

    def read(self, name):
        directory = self._directories().get(name) if isinstance(name, str) else None
        try:
            text = self._text(directory, "SKILL.md") if directory else None
        except ToolError:
            text = None
        if text is None:
            raise ToolError("not-found", f"there is no skill {name}")
        self.read_names.add(name)
        return text

    def code_module(self, name, suffix=".py"):
        """The skill's module in the program language's own file, if it has one."""
        directory = self._directories().get(name)
        files = [f for f in scan_plain(directory)[1] if f.name.endswith(suffix)
                 and not f.name.startswith(ON_USE)] if directory else []
        return self._text(directory, files[0].name) if files else None

    def on_use_script(self, name, language):
        """The code the skill runs on every use (`on-use.py` / `on-use.ts` beside SKILL.md), or None."""
        directory = self._directories().get(name)
        want = ON_USE + {"python": ".py", "typescript": ".ts"}.get(language, ".py")
        return self._text(directory, want) if directory and any(
            f.name == want for f in scan_plain(directory)[1]) else None

    def snapshot(self):
        return {"type": "skills_state", "moduleId": self.module_id,
                "skills": [dict(s, read=s["name"] in self.read_names) for s in self.skills()]}
