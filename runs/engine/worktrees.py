"""Real git worktrees for board-dispatched issues, as gg keeps them: each issue's implementer (and its
reviewers) work in `git worktree add` of the run's workspace on branch `gg/issue-<n>`, and after the
review the branch is merged back (merged / conflict) or discarded.

The workspace becomes a repository at the first dispatch when it is not one (everything in it the
first commit). Worktrees live under the workspace's `.gg-worktrees/`, which the walks skip and no
commit of the main checkout takes. git runs confined exactly as the shell does (runs.engine.tools.confined): the
workspace is the model's, so its repository's config, hooks and attributes are too — on the host
they could run anything, inside the namespace they reach nothing but the workspace.
"""

import shlex
from pathlib import Path

from runs.engine.tools.confined import ConfinementUnavailable, run_confined

GIT = ("git -c user.name=gg -c user.email=gg@localhost -c safe.directory='*' -c core.hooksPath=/dev/null "
       "-c commit.gpgSign=false -c init.defaultBranch=main")
GIT_TIMEOUT_SECS = 120
DIR = ".gg-worktrees"  # under the workspace root; the walks skip it


class WorktreeError(Exception):
    """git could not do what dispatch needed; the message says what."""


class Worktrees:
    def __init__(self, workspace):
        self.workspace = workspace  # the run's Workspace (the main checkout)
        self.paths = {}  # branch -> worktree directory

    @property
    def root(self):
        return Path(self.workspace.root)

    def _git(self, script, *, check=True):
        try:
            done = run_confined(script, str(self.root), GIT_TIMEOUT_SECS, interrupt=self.workspace.interrupt)
        except ConfinementUnavailable as exc:
            raise WorktreeError(f"git cannot run confined here: {exc}") from None
        if check and done.exit_code != 0:
            raise WorktreeError(f"`{script}` failed ({done.exit_code}): {(done.stdout + done.stderr).strip()[-600:]}")
        return done

    def add(self, branch):
        """The worktree of `branch` (created on the first call, from the main checkout's HEAD)."""
        if branch in self.paths:
            return self.paths[branch]
        if not (self.root / ".git").exists():
            self._git(f"{GIT} init -q && {GIT} add -A && {GIT} commit -q --allow-empty -m 'gg: the workspace as the "
                      f"run found it'")
        self._git(f"grep -qx '{DIR}/' .git/info/exclude 2>/dev/null || {{ mkdir -p .git/info && echo '{DIR}/' >> "
                  ".git/info/exclude; }")  # the worktrees never go into a commit of the main checkout
        path = self.root / DIR / branch.replace("/", "-")
        self._git(f"{GIT} worktree add -q -b {shlex.quote(branch)} {shlex.quote(str(path))} HEAD")
        self.paths[branch] = path
        return path

    def merge(self, branch):
        """Commit the branch's work and merge it into the main checkout: (merged, conflicts)."""
        path = shlex.quote(str(self.paths[branch]))
        self._git(f"cd {path} && {GIT} add -A && {{ {GIT} diff --cached --quiet || "
                  f"{GIT} commit -q -m 'gg: {branch}'; }}")
        self._git(f"{GIT} add -A && {{ {GIT} diff --cached --quiet || {GIT} commit -q -m 'gg: the workspace "
                  f"before merging {branch}'; }}")
        done = self._git(f"{GIT} merge -q --no-ff --no-edit -m 'gg: merge {branch}' {shlex.quote(branch)}", check=False)
        if done.exit_code != 0:
            self._git(f"{GIT} merge --abort", check=False)
            self._remove(branch)
            return False, True
        self._remove(branch)
        return True, False

    def discard(self, branch):
        self._remove(branch)
        self._git(f"{GIT} branch -q -D {shlex.quote(branch)}", check=False)

    def _remove(self, branch):
        path = self.paths.pop(branch)
        self._git(f"{GIT} worktree remove --force {shlex.quote(str(path))}", check=False)
