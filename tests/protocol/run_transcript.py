#!/usr/bin/env python3
"""Runs a scripted LSP transcript against the real `ghostline serve` over pipes.

Transcript lines (blank lines and lines starting with # are ignored):
  args: ARG...            arguments for `ghostline serve` (first line only)
  send {JSON}             send one framed message
  send-raw "BYTES"        send raw bytes (a Python string or bytes expression; \\r\\n etc.
                          allowed; frame(BODY) adds a Content-Length header of BODY's size)
  expect {PATTERN}        wait for a received message matching PATTERN (subset match; "<any>")
  expect-not {PATTERN}    after a short wait, no received message matches PATTERN
  sleep MS                wait
  close-stdin             end the client's side of the pipe
  exit-code N             the daemon exits with N
  stderr-contains TEXT    the daemon's log (stderr) contains TEXT
"""
import ast
import json
import os
import shlex
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import DaemonProcess, matches  # noqa: E402


def frame_body(body):
    data = body.encode("utf-8") if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def main():
    binary, path = sys.argv[1], sys.argv[2]
    lines = open(path, encoding="utf-8").read().splitlines()
    args = []
    if lines and lines[0].startswith("args:"):
        args = shlex.split(lines[0][5:])
        lines = lines[1:]
    stderr_path = tempfile.mktemp(prefix="ghostline-transcript-", suffix=".log")
    d = DaemonProcess(binary, args, stderr_path)
    try:
        for n, line in enumerate(lines, start=2 if args else 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            cmd, _, rest = line.partition(" ")
            try:
                if cmd == "send":
                    d.send(json.loads(rest))
                elif cmd == "send-raw":
                    raw = eval(rest, {"__builtins__": {}, "frame": frame_body})  # a string or bytes expression
                    d.send_raw(raw.encode("utf-8") if isinstance(raw, str) else raw)
                elif cmd == "expect":
                    d.expect(json.loads(rest))
                elif cmd == "expect-not":
                    d.drain(0.3)
                    pattern = json.loads(rest)
                    bad = [m for m in d.received if matches(pattern, m)]
                    assert not bad, "unexpected message %s" % json.dumps(bad[0])
                elif cmd == "sleep":
                    time.sleep(int(rest) / 1000)
                elif cmd == "close-stdin":
                    d.close_write()
                elif cmd == "exit-code":
                    code = d.wait()
                    assert code == int(rest), "daemon exited with %d, expected %s" % (code, rest)
                elif cmd == "stderr-contains":
                    deadline = time.monotonic() + 5
                    while rest not in open(stderr_path, encoding="utf-8", errors="replace").read():
                        assert time.monotonic() < deadline, "daemon log lacks %r" % rest
                        time.sleep(0.05)
                else:
                    raise AssertionError("unknown transcript command %r" % cmd)
            except Exception as e:  # report the line and the daemon's log
                log = open(stderr_path, encoding="utf-8", errors="replace").read()
                print("%s:%d: %s\n  %s\n--- daemon log ---\n%s" % (path, n, line[:200], e, log[-4000:]))
                return 1
        print("transcript passed: %s" % os.path.basename(path))
        return 0
    finally:
        d.kill()
        os.unlink(stderr_path)


if __name__ == "__main__":
    sys.exit(main())
