"""Running a spec on the real gg binary: `$GG_BINARY --config invocation.json`.

gg's stdout is its NDJSON operator stream; each line is handed to `runs.ingest.writer.append_lines` as
it arrives (a line that is not a record is kept as a RejectedLine, never dropped). Each stderr
line is kept as a `log` record at level warn, so the operator sees it where gg's own warnings go.
Cancel writes gg's cancel sentinel file, which gg checks at its turn boundaries. The terminal
status is the stream's own `session_ended`; a gg that exits without one is `internal_error`.
"""

import json
import os
import subprocess
import threading
import time
from pathlib import Path

from django.db import connection

from runs.ingest import writer as ingest
from runs.engine.telemetry import now_rfc3339
from runs.stream.record import gg_record

POLL_SECS = 0.2


def invocation(spec, session_id, workspace_dir, cancel_file):
    """gg's invocation envelope (console.md §3.6)."""
    models = {p.model_id for p in spec.profiles if p.model_id}
    return {"sessionId": session_id, "workspaceDir": str(workspace_dir), "prompt": spec.task,
            "capabilitySet": spec.capability_set(), "modelWindows": {m: 128_000 for m in sorted(models)},
            "cancelFile": str(cancel_file)}


def run_external(run, spec, session_id, workspace_dir, should_cancel):
    workspace_dir = Path(workspace_dir)
    workspace_dir.mkdir(parents=True, exist_ok=True)
    for path, contents in spec.workspace["files"].items():
        target = workspace_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(contents)
    control = workspace_dir / ".gg"
    control.mkdir(exist_ok=True)
    config, cancel_file = control / "invocation.json", control / "cancel"
    config.write_text(json.dumps(invocation(spec, session_id, workspace_dir, cancel_file)))
    proc = subprocess.Popen([os.environ["GG_BINARY"], "--config", str(config)], cwd=workspace_dir,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    warnings = []
    reader = threading.Thread(target=lambda: warnings.extend(proc.stderr), daemon=True)
    reader.start()
    status, line_number = None, 0
    watcher = threading.Thread(target=_watch_cancel, args=(proc, should_cancel, cancel_file), daemon=True)
    watcher.start()
    try:
        for raw in proc.stdout:
            line_number += 1
            ingest.append_lines(run, [raw], first_line_number=line_number, dedupe=False)
            record = gg_record(raw)
            if record.get("type") == "session_ended":
                status = record.get("status") or status
    except BaseException:  # the write path refused (the run was deleted) or failed: gg goes with it
        proc.kill()
        raise
    finally:
        proc.wait()
    reader.join(timeout=5)
    if warnings:
        ingest.append(run, [{"timestamp": now_rfc3339(), "sessionId": session_id, "type": "log", "level": "warn",
                             "message": f"gg stderr: {line.decode(errors='replace').rstrip()}"} for line in warnings],
                      dedupe=False)
    return status or "internal_error"


def _watch_cancel(proc, should_cancel, cancel_file):
    try:
        while proc.poll() is None:
            if should_cancel():
                cancel_file.write_text("canceled by the operator\n")
                return
            time.sleep(POLL_SECS)
    finally:
        connection.close()  # this thread's own database connection
