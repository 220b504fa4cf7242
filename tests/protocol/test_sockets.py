#!/usr/bin/env python3
"""Socket mode: several editors at once on TCP and unix sockets, each with its own session and
documents; auth tokens (from the environment or generated into a 0600 file for every TCP
listener, checked before anything else, never logged or recorded); refusal of non-loopback
addresses; the default request rate limit; a client that disconnects in the middle of a message;
`ghostline connect`; --record. The attacks of another local user are in test_other_user.py."""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import DaemonProcess, SocketClient, run_tests  # noqa: E402

BINARY = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="ghostline-sockets-")
# The daemons' and connect's private directory (mode 0700, as mkdtemp makes it): TCP token files
# go here, not into this user's real one.
os.environ["XDG_RUNTIME_DIR"] = TMP


def start_daemon(*args, preexec_fn=None):
    log = os.path.join(TMP, "daemon-%d.log" % time.monotonic_ns())
    proc = subprocess.Popen([BINARY, "serve", "--scripted-completer", "0"] + list(args),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "wb"),
                            preexec_fn=preexec_fn)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = re.search(r"listening on (tcp:[^\s]+|unix:[^\s]+)", open(log).read())
        if m:
            return proc, m.group(1), log
        if proc.poll() is not None:
            raise AssertionError("daemon exited: %s" % open(log).read())
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("daemon did not listen")


def token_file(port):
    return os.path.join(os.environ["XDG_RUNTIME_DIR"], "ghostline-tcp-%s.token" % port)


def connect(address):
    """A client of the daemon at `address`; on TCP it presents the daemon's generated token in
    initialize() (as `ghostline connect` does) when there is one."""
    if address.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(address[5:])
        return SocketClient(s)
    host, port = address[4:].rsplit(":", 1)
    c = SocketClient(socket.create_connection((host, int(port))))
    if os.path.exists(token_file(port)):
        c.auth_token = open(token_file(port)).read().strip()
    return c


def open_doc(c, uri, text):
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})


def complete(c, uri, line, character):
    id = c.request("textDocument/inlineCompletion",
                   {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    return c.response(id)


def two_clients(address):
    a, b = connect(address), connect(address)
    a.initialize()
    b.initialize()
    # The same URI in two sessions holds different text: documents are per session.
    open_doc(a, "file:///same.py", "alpha")
    open_doc(b, "file:///same.py", "beta")
    ra = complete(a, "file:///same.py", 0, 5)
    rb = complete(b, "file:///same.py", 0, 4)
    assert ra["result"]["items"][0]["insertText"] == "<alpha>v1", ra
    assert rb["result"]["items"][0]["insertText"] == "<beta>v1", rb
    # Closing one session leaves the other working.
    id = a.request("shutdown", None)
    a.response(id)
    a.notify("exit", None)
    a.reader.eof.wait(5)
    assert a.reader.eof.is_set(), "server did not close the connection after exit"
    rb = complete(b, "file:///same.py", 0, 4)
    assert rb["result"]["items"][0]["insertText"] == "<beta>v1", rb
    b.close()


def test_tcp():
    proc, address, _ = start_daemon("--listen", "tcp:127.0.0.1:0")
    try:
        two_clients(address)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_unix():
    path = os.path.join(TMP, "g.sock")
    proc, address, _ = start_daemon("--listen", "unix:" + path)
    try:
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
        two_clients(address)
        # A second daemon on the same socket refuses to start.
        r = subprocess.run([BINARY, "serve", "--listen", "unix:" + path], capture_output=True, timeout=20)
        assert r.returncode == 1 and b"already listening" in r.stderr, r
    finally:
        proc.terminate()
        proc.wait(10)
    assert not os.path.exists(path), "socket file left behind"


def test_disconnect_mid_message():
    proc, address, log = start_daemon("--listen", "tcp:127.0.0.1:0")
    try:
        good = connect(address)
        good.initialize()
        open_doc(good, "file:///g.py", "gamma")
        bad = connect(address)
        bad.initialize()
        bad.send_raw(b"Content-Length: 500\r\n\r\n{\"jsonrpc\":")
        bad.close()
        time.sleep(0.2)
        r = complete(good, "file:///g.py", 0, 5)
        assert r["result"]["items"][0]["insertText"] == "<gamma>v1", r
        assert "disconnected in the middle of a message" in open(log).read()
    finally:
        proc.terminate()
        proc.wait(10)


TOKEN = "s3cret-token-Zq81"


def start_with_token(*args):
    os.environ["GHOSTLINE_TEST_TOKEN"] = TOKEN
    try:
        return start_daemon("--auth-token-env", "GHOSTLINE_TEST_TOKEN", *args)
    finally:
        del os.environ["GHOSTLINE_TEST_TOKEN"]


def assert_closed(c):
    c.reader.eof.wait(5)
    assert c.reader.eof.is_set(), "connection stays open"


def test_auth_token():
    proc, address, log = start_with_token("--listen", "tcp:127.0.0.1:0")
    try:
        # A wrong token, a token of the wrong type, or none: refused and disconnected.
        for options in ({"authToken": "wrong"}, {"authToken": TOKEN[:-1]}, {"authToken": 7}, {}):
            c = connect(address)
            id = c.request("initialize", {"capabilities": {}, "initializationOptions": options})
            r = c.response(id)
            assert r["error"]["code"] == -32600 and "authentication required" in r["error"]["message"], r
            assert_closed(c)
        # Anything before initialize ends the connection: a request, a notification, garbage.
        c = connect(address)
        id = c.request("ghostline/stats", None)
        assert c.response(id)["error"]["code"] == -32600
        assert_closed(c)
        c = connect(address)
        c.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///x", "languageId": "c", "version": 1, "text": ""}})
        assert c.expect({"id": None})["error"]["code"] == -32600
        assert_closed(c)
        c = connect(address)
        c.send_raw(b"Content-Length: 3\r\n\r\n{x}")
        assert_closed(c)
        # The right token: served as usual.
        c = connect(address)
        id = c.request("initialize", {"capabilities": {}, "initializationOptions": {"authToken": TOKEN}})
        assert "result" in c.response(id)
        c.notify("initialized", {})
        open_doc(c, "file:///t.py", "tok")
        assert complete(c, "file:///t.py", 0, 3)["result"]["items"][0]["insertText"] == "<tok>v1"
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)
    assert TOKEN not in open(log).read(), "the token reached the log"


def test_tcp_listener_without_a_token_generates_one():
    proc, address, log = start_daemon("--listen", "tcp:127.0.0.1:0")
    port = address.rsplit(":", 1)[1]
    path = token_file(port)
    try:
        st = os.lstat(path)
        assert oct(st.st_mode & 0o777) == "0o600" and st.st_uid == os.geteuid(), oct(st.st_mode)
        token = open(path).read().strip()
        assert re.fullmatch(r"[0-9a-f]{64}", token), token
        assert "clients authenticate with the token in " + path in open(log).read()
        # Without the token (any local user could connect to the port): refused and disconnected.
        for options in ({}, {"authToken": "0" * 64}):
            c = SocketClient(socket.create_connection(("127.0.0.1", int(port))))
            id = c.request("initialize", {"capabilities": {}, "initializationOptions": options})
            r = c.response(id)
            assert r["error"]["code"] == -32600 and "authentication required" in r["error"]["message"], r
            assert_closed(c)
        # `ghostline connect` reads the file and adds the token to the editor's initialize.
        p = subprocess.Popen([BINARY, "connect", address], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, bufsize=0)
        from lsp_client import Client
        c = Client(lambda d: (p.stdin.write(d), p.stdin.flush()), lambda: p.stdout.read(65536), p.stdin.close)
        r = c.initialize({"initializationOptions": {"enabled": True}})
        assert "result" in r, r
        open_doc(c, "file:///t.py", "gen")
        assert complete(c, "file:///t.py", 0, 3)["result"]["items"][0]["insertText"] == "<gen>v1"
        c.close_write()
        assert p.wait(10) == 0
        # A token the editor gives itself is left alone (and here it is wrong).
        p = subprocess.Popen([BINARY, "connect", address], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, bufsize=0)
        c = Client(lambda d: (p.stdin.write(d), p.stdin.flush()), lambda: p.stdout.read(65536), p.stdin.close)
        id = c.request("initialize", {"capabilities": {}, "initializationOptions": {"authToken": "mine"}})
        assert c.response(id)["error"]["code"] == -32600
        p.wait(10)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
    assert not os.path.exists(path), "token file left behind"
    assert token not in open(log).read(), "the token reached the log"


def test_auth_token_never_from_the_command_line():
    r = subprocess.run([BINARY, "serve", "--listen", "tcp:127.0.0.1:0", "--auth-token", "abc"],
                       capture_output=True, timeout=20)
    assert r.returncode == 2 and b"--auth-token-env" in r.stderr, r
    env = dict(os.environ)
    env.pop("GHOSTLINE_UNSET_TOKEN", None)
    r = subprocess.run([BINARY, "serve", "--listen", "tcp:127.0.0.1:0", "--auth-token-env", "GHOSTLINE_UNSET_TOKEN"],
                       capture_output=True, timeout=20, env=env)
    assert r.returncode == 2 and b"not set" in r.stderr, r
    r = subprocess.run([BINARY, "serve", "--help"], capture_output=True, timeout=20)
    for flag in (b"--auth-token-env VAR", b"--allow-remote", b"--max-documents N", b"--max-document-mib MIB",
                 b"--max-requests-per-second N"):
        assert flag in r.stdout, flag


def test_remote_listener_needs_the_token():
    proc, address, _ = start_with_token("--listen", "tcp:0.0.0.0:0", "--allow-remote")
    try:
        port = address.rsplit(":", 1)[1]
        c = connect("tcp:127.0.0.1:" + port)
        id = c.request("initialize", {"capabilities": {}})
        assert c.response(id)["error"]["code"] == -32600
        assert_closed(c)
        c = connect("tcp:127.0.0.1:" + port)
        id = c.request("initialize", {"capabilities": {}, "initializationOptions": {"authToken": TOKEN}})
        assert "result" in c.response(id)
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)


def test_record_leaves_the_token_out():
    record = os.path.join(TMP, "rec-token.jsonl")
    proc, address, _ = start_with_token("--listen", "unix:" + os.path.join(TMP, "t.sock"), "--record", record)
    try:
        c = connect(address)
        id = c.request("initialize", {"capabilities": {}, "initializationOptions": {"authToken": TOKEN}})
        assert "result" in c.response(id)
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)
    text = open(record).read()
    assert TOKEN not in text and "<redacted>" in text, text


def test_requests_rate_limited_on_sockets_by_default():
    proc, address, _ = start_daemon("--listen", "tcp:127.0.0.1:0")
    try:
        c = connect(address)
        c.initialize()
        ids = [c.request("ghostline/stats", None) for _ in range(400)]
        replies = [c.response(i) for i in ids]
        refused = [r for r in replies if "error" in r]
        assert refused and all(r["error"]["code"] == -32803 for r in refused), refused[:1]
        assert len(refused) < 400
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)


def test_connect_reports_a_daemon_that_stops_before_listening():
    # A missing model stops the started daemon at once: connect says so with the log's end
    # instead of waiting out --wait.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.sock")
        start = time.monotonic()
        r = subprocess.run([BINARY, "connect", "unix:" + path, "--wait", "60", "--", "--model", "/nonexistent.gguf"],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 1, r
        assert time.monotonic() - start < 30, "connect waited for a daemon that had stopped"
        assert b"stopped before listening" in r.stderr and b"/nonexistent.gguf" in r.stderr, r.stderr


def test_connect_starts_and_shares_a_daemon():
    path = os.path.join(TMP, "c.sock")
    clients = []
    try:
        for text in ("one", "two"):
            p = subprocess.Popen([BINARY, "connect", "unix:" + path, "--", "--scripted-completer", "0"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
            from lsp_client import Client
            c = Client(lambda d, p=p: (p.stdin.write(d), p.stdin.flush()), lambda p=p: p.stdout.read(65536),
                       p.stdin.close)
            c.proc = p
            c.initialize()
            open_doc(c, "file:///x.py", text)
            r = complete(c, "file:///x.py", 0, 3)
            assert r["result"]["items"][0]["insertText"] == "<%s>v1" % text, r
            clients.append(c)
        # Both bridges talk to one daemon: its stats count both sessions' requests.
        id = clients[1].request("ghostline/stats", None)
        stats = clients[1].response(id)["result"]["scheduler"]
        assert stats["completed"] == 2, stats
        for c in clients:
            c.close_write()
            assert c.proc.wait(10) == 0
        r = subprocess.run([BINARY, "connect", "--no-start", "unix:" + os.path.join(TMP, "none.sock")],
                           capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
        assert r.returncode == 1 and b"no daemon" in r.stderr, r
    finally:
        subprocess.run(["pkill", "-f", "serve --listen unix:" + path])


def test_record():
    record = os.path.join(TMP, "rec.jsonl")
    d = DaemonProcess(BINARY, ["--scripted-completer", "0", "--record", record])
    try:
        d.initialize()
        d.send_raw(b"Content-Length: 3\r\n\r\n{x}")
        d.notify("exit", None)
        d.wait()
    finally:
        d.kill()
    lines = [json.loads(l) for l in open(record)]
    assert [l.get("message", {}).get("method") for l in lines] == ["initialize", "initialized", None, "exit"], lines
    assert lines[2]["raw"] == "{x}"
    assert all(lines[i]["t_ms"] <= lines[i + 1]["t_ms"] for i in range(len(lines) - 1))


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
