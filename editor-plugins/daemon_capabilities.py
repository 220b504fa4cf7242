#!/usr/bin/env python3
"""Prints the capabilities a Ghostline daemon answers `initialize` with, as JSON, so that the
editor e2e tests can tell whether it advertises `experimental.ghostline.completionUpdated`.

  daemon_capabilities.py GHOSTLINE_BINARY
"""
import json
import subprocess
import sys


def frame(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(stream):
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("the daemon closed stdout")
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(stream.read(length))


def capabilities(binary):
    p = subprocess.Popen([binary, "serve", "--scripted-completer", "0", "--log-level", "off"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        p.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
        p.stdin.flush()
        while True:
            m = read_message(p.stdout)
            if m.get("id") == 1:
                break
        p.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        p.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        p.stdin.close()
        p.wait(timeout=10)
        return m["result"]["capabilities"]
    finally:
        if p.poll() is None:
            p.kill()


if __name__ == "__main__":
    print(json.dumps(capabilities(sys.argv[1])))
