#!/usr/bin/env python3
"""A stand-in language server for the plugins' growing-ghost-text checks: it behaves as a daemon
that sends `ghostline/completionUpdated` will, with fixed texts, so that the editors' side of the
notification is tested in the real editors whether or not the daemon under test sends it.

It advertises `experimental.ghostline.completionUpdated`, answers an automatic inline-completion
request with the first part of its text ("grow"), then, 300 ms later, notifies
`ghostline/completionUpdated` for that document version and position (once per version and
position), and answers an invoked request (what the plugins send on the notification) with the
whole text ("growing ghost text"). It logs every message it receives to $GROWING_SERVER_LOG.

Started in place of the ghostline binary, so it accepts and ignores any arguments
(`connect ADDR -- ...`).
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_capabilities import frame, read_message  # noqa: E402

FIRST = "grow"
FULL = "growing ghost text"

out_lock = threading.Lock()
log_path = os.environ.get("GROWING_SERVER_LOG")


def log(entry):
    if log_path:
        with open(log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def send(msg):
    with out_lock:
        sys.stdout.buffer.write(frame(msg))
        sys.stdout.buffer.flush()


def read():
    try:
        return read_message(sys.stdin.buffer)
    except EOFError:
        return None


def main():
    versions = {}
    notified = set()
    while True:
        m = read()
        if m is None:
            return 0
        log({"t": time.time(), "in": m})
        method, params = m.get("method"), m.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": m["id"], "result": {
                "capabilities": {"textDocumentSync": {"openClose": True, "change": 2},
                                 "inlineCompletionProvider": {},
                                 "experimental": {"ghostline": {"completionUpdated": True}}},
                "serverInfo": {"name": "growing-ghost-text stand-in"}}})
        elif method in ("textDocument/didOpen", "textDocument/didChange"):
            td = params["textDocument"]
            versions[td["uri"]] = td["version"]
        elif method == "textDocument/inlineCompletion":
            uri = params["textDocument"]["uri"]
            pos = params["position"]
            version = versions.get(uri)
            invoked = (params.get("context") or {}).get("triggerKind") == 1
            text = FULL if invoked else FIRST
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"items": [{"insertText": text}]}})
            key = (uri, version, pos["line"], pos["character"])
            if not invoked and key not in notified:
                notified.add(key)

                def later(uri=uri, version=version, pos=pos):
                    time.sleep(0.3)
                    note = {"textDocument": {"uri": uri}, "version": version, "position": pos}
                    log({"t": time.time(), "out": "ghostline/completionUpdated", "params": note})
                    send({"jsonrpc": "2.0", "method": "ghostline/completionUpdated", "params": note})

                threading.Thread(target=later, daemon=True).start()
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": m["id"], "result": None})
        elif method == "exit":
            return 0
        elif "id" in m and method is not None:
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"completer": "growing-ghost-text stand-in"}
                  if method == "ghostline/stats" else None})


if __name__ == "__main__":
    sys.exit(main())
