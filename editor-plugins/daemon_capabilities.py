#!/usr/bin/env python3
"""Helpers of the editor e2e tests. As a command: prints the capabilities a Ghostline daemon answers `initialize` with, as JSON, so that the
editor e2e tests can tell whether it advertises `experimental.ghostline.completionUpdated`.

  daemon_capabilities.py GHOSTLINE_BINARY
"""
import json
import os
import signal
import subprocess
import sys
import time


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


def daemon_pids(sock):
    """Pids of the processes listening on the unix socket `sock` (from /proc), to stop a daemon
    that `ghostline connect` started."""
    inodes = set()
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            parts = line.split(None, 7)
            if len(parts) == 8 and parts[7].strip() == sock and int(parts[3], 16) & 0x10000:
                inodes.add("socket:[%s]" % parts[6])
    pids = []
    if not inodes:
        return pids
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes:
                    pids.append(int(pid))
                    break
        except OSError:
            pass
    return pids


def stop_daemon(sock, timeout=5.0):
    """SIGTERM to the daemon listening on `sock`; waits for it to exit."""
    pids = daemon_pids(sock)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    end = time.time() + timeout
    while time.time() < end and any(os.path.exists("/proc/%d" % p) for p in pids):
        time.sleep(0.05)
    return pids


if __name__ == "__main__":
    print(json.dumps(capabilities(sys.argv[1])))
