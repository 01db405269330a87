"""gg's typed tool implementations over a workspace, shared by both execution modes.

A responses-as-code program reaches them through the membrane (runs.engine.sandbox.membrane); a
tool-calling agent reaches them by tool name from the run loop (runs.engine.toolcalls). Every
failure is one `ToolError` (`errors`). The modules: `workspace` (files, search, shell),
`confined` (the shell under bubblewrap), `walks` and `plain` (reading the tree without following a
link), `module_stores` (memories, tasks, board, archive), `skills`, `context_views` (the views an
agent holds in its window, and the token estimate), `docs` (the documentation views).
"""
