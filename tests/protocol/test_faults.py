#!/usr/bin/env python3
"""Faults around one daemon on a unix socket: a client killed in the middle of a request, a
client that never reads its replies, more clients than file descriptors, a full disk under the
log and the record, a KV budget too small for the prompt and its completion, the model file
replaced or truncated while mapped, SIGTERM while a completion runs. Each leaves the daemon
serving its other clients, or ends it with a clear message; nothing hangs."""
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import SocketClient, run_tests  # noqa: E402
from test_sockets import complete, open_doc, start_daemon  # noqa: E402

BINARY = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="ghostline-faults-")
MODEL = "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf"


def connect(address):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(address[5:])
    return SocketClient(s)


def daemon(*args):
    return start_daemon("--listen", "unix:" + os.path.join(TMP, "f%d.sock" % time.monotonic_ns()), *args)


def assert_serves(address, text="ok"):
    c = connect(address)
    c.initialize()
    open_doc(c, "file:///check.py", text)
    r = complete(c, "file:///check.py", 0, len(text))
    assert r["result"]["items"][0]["insertText"] == "<%s>v1" % text, r
    c.close()


def test_client_killed_mid_request():
    # 300 steps of 1 ms: the request is running when its client goes away.
    proc, address, log = daemon("--scripted-completer", "300")
    try:
        for _ in range(3):
            c = connect(address)
            c.initialize()
            open_doc(c, "file:///k.py", "killed")
            c.request("textDocument/inlineCompletion",
                      {"textDocument": {"uri": "file:///k.py"}, "position": {"line": 0, "character": 6}})
            time.sleep(0.05)
            c.sock.close()  # as a killed process's socket: no shutdown, no exit
        assert_serves(address)
        assert proc.poll() is None, "daemon died"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_client_that_never_reads_is_disconnected():
    proc, address, log = daemon()
    try:
        slow = connect(address)
        slow.initialize()
        open_doc(slow, "file:///big.py", "x" * (1 << 20))
        # About 100 MiB of replies that are never read; the daemon holds at most 64 MiB of them.
        for i in range(100):
            slow.send({"jsonrpc": "2.0", "id": 100 + i, "method": "ghostline/documentText",
                       "params": {"textDocument": {"uri": "file:///big.py"}}})
        deadline = time.monotonic() + 30
        while "has not read" not in open(log).read():
            assert time.monotonic() < deadline, "the daemon kept queueing replies: " + open(log).read()[-2000:]
            time.sleep(0.1)
        assert_serves(address)
        slow.close()
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_out_of_descriptors_then_accepting_again():
    # With few file descriptors, clients beyond them cannot be accepted. Once they leave, the
    # daemon must take new clients again: it used to stop accepting for good after one failure.
    # The sanitizers' runtime checks open pipes and files of their own, and fail falsely when the
    # descriptors are all taken: this fault is for the plain build.
    if "libubsan" in subprocess.run(["ldd", BINARY], capture_output=True, text=True).stdout:
        print("     (skipped: a sanitizer build)")
        return

    def few_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    proc, address, log = start_daemon("--listen", "unix:" + os.path.join(TMP, "fd%d.sock" % time.monotonic_ns()),
                                      preexec_fn=few_descriptors)
    try:
        crowd = []
        deadline = time.monotonic() + 30
        while "accept failed" not in open(log).read():
            assert time.monotonic() < deadline, "no accept failed with 64 descriptors: " + open(log).read()[-2000:]
            for _ in range(10):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(address[5:])
                crowd.append(s)
            time.sleep(0.05)
        for s in crowd:
            s.close()
        assert_serves(address)
        assert proc.poll() is None, "daemon died"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def serve_for(address, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert_serves(address)


def full_disk_reports(flag, seconds):
    """Serves for `seconds` with `flag` pointing at /dev/full (every write fails with ENOSPC);
    the daemon must keep serving and exit cleanly. Returns its log lines naming the file."""
    proc, address, log = daemon(flag, "/dev/full")
    try:
        serve_for(address, seconds)
        assert proc.poll() is None, "daemon died"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
    return [l for l in open(log).read().splitlines() if "/dev/full" in l]


def test_full_disk_for_the_log():
    # For over two seconds of sessions (each logs), the failure is reported once, not once a
    # second, and completions go on.
    reports = full_disk_reports("--log-file", 2.5)
    assert len(reports) == 1, reports
    assert "cannot write the log file '/dev/full'" in reports[0], reports
    assert "No space left on device" in reports[0], reports


def test_full_disk_for_the_record():
    reports = full_disk_reports("--record", 1.0)
    assert len(reports) == 1, reports
    assert "cannot write the record file '/dev/full': No space left on device" in reports[0], reports


def test_out_of_kv_budget():
    # 1 MiB of KV holds 1024 tokens of the reference model, whose random weights never stop
    # generating: a long document and a completion of up to 2000 tokens cannot both fit. Every
    # request is answered with a completion shortened to fit, and the daemon goes on serving.
    proc, address, log = daemon("--scripted-completer", "-1", "--model", MODEL, "--kv-mib", "1",
                                "--max-tokens", "2000", "--deadline-ms", "20000", "--threads", "2",
                                "--no-prefetch")
    try:
        c = connect(address)
        c.initialize()
        before = "".join("def f%d(x):\n    return x * %d + %d\n\n" % (i, i, i * 7) for i in range(300))
        after = "".join("def h%d(x):\n    return x - %d\n\n" % (i, i) for i in range(300))
        open_doc(c, "file:///long.py", before + "def g(y):\n    return \n" + after)
        line = before.count("\n") + 1
        for character in (11, 4, 0):
            id = c.request("textDocument/inlineCompletion",
                           {"textDocument": {"uri": "file:///long.py"},
                            "position": {"line": line, "character": character}, "context": {"triggerKind": 1}})
            r = c.response(id, timeout=60)
            assert "items" in r.get("result", {}), r
        for stats in c.response(c.request("ghostline/stats", None))["result"]["recent"]:
            pool_tokens = 16 * (stats["cache"]["poolBlocksUsed"] + stats["cache"]["poolBlocksFree"])
            assert stats["generatedTokens"] > 0, stats
            assert stats["promptTokens"] + stats["generatedTokens"] <= pool_tokens, stats
        c.close()
        other = connect(address)
        other.initialize()
        open_doc(other, "file:///short.py", "def f(x):\n    return ")
        r = complete(other, "file:///short.py", 1, 11)
        assert "items" in r.get("result", {}), r
        other.close()
        assert proc.poll() is None, "daemon died"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_kv_budget_below_the_minimum_is_refused():
    r = subprocess.run([BINARY, "serve", "--model", MODEL, "--kv-mib", "0"], capture_output=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode != 0 and b"--kv-mib must be at least 1" in r.stderr, r


def serving_a_copy_of_the_model():
    model = os.path.join(TMP, "model-%d.gguf" % time.monotonic_ns())
    shutil.copyfile(MODEL, model)
    proc, address, log = daemon("--scripted-completer", "-1", "--model", model, "--threads", "2", "--no-prefetch")
    c = connect(address)
    c.initialize()
    open_doc(c, "file:///m.py", "def f(x):\n    return ")
    assert "items" in complete(c, "file:///m.py", 1, 11).get("result", {})
    return proc, address, log, model, c


def test_model_file_replaced_while_mapped():
    # A new file moved over the path (as an update does) leaves the mapped one intact: the daemon
    # goes on completing with the model it loaded.
    proc, address, log, model, c = serving_a_copy_of_the_model()
    try:
        with open(model + ".new", "wb") as f:
            f.write(b"GGUF" + b"\0" * 4096)
        os.rename(model + ".new", model)
        open_doc(c, "file:///n.py", "class A:\n    def g(self):\n        return self.")
        assert "items" in complete(c, "file:///n.py", 2, 20).get("result", {})
        c.close()
        other = connect(address)
        other.initialize()
        open_doc(other, "file:///o.py", "import os\nprint(os.")
        assert "items" in complete(other, "file:///o.py", 1, 9).get("result", {})
        other.close()
        assert proc.poll() is None, "daemon died"
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_model_file_truncated_while_mapped():
    # Truncated in place, the mapped pages past the new end are gone: the next read of one raises
    # SIGBUS. The daemon cannot go on; it must say why instead of vanishing.
    proc, address, log, model, c = serving_a_copy_of_the_model()
    try:
        os.truncate(model, 1000)
        open_doc(c, "file:///t.py", "class A:\n    def g(self):\n        return self.")
        c.request("textDocument/inlineCompletion",
                  {"textDocument": {"uri": "file:///t.py"}, "position": {"line": 2, "character": 20}})
        try:
            code = proc.wait(10)
        except subprocess.TimeoutExpired:
            raise AssertionError("the daemon did not end after its model file was truncated")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        c.close()
    assert code > 0, "daemon ended by signal %d, without a word: %s" % (-code, open(log).read()[-500:])
    message = "ghostline: the model file %s was truncated or changed while in use; restart the daemon" % model
    assert message in open(log).read(), open(log).read()[-1000:]


def test_sigterm_while_busy():
    # A completion of 20 s is running when SIGTERM comes: the daemon cancels it and exits 0.
    proc, address, log = daemon("--scripted-completer", "20000")
    c = connect(address)
    c.initialize()
    open_doc(c, "file:///busy.py", "busy")
    c.request("textDocument/inlineCompletion",
              {"textDocument": {"uri": "file:///busy.py"}, "position": {"line": 0, "character": 4}})
    time.sleep(0.3)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the daemon did not stop on SIGTERM while busy")
    assert code == 0, code
    assert time.monotonic() - start < 10
    assert not os.path.exists(address[5:]), "socket file left behind"
    c.close()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
