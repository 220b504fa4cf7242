#!/usr/bin/env python3
"""What became of the completions an editor showed: each inline completion item carries an id
(in its `ghostline.completionAccepted` command), the plugin reports its fate with
ghostline/completionOutcome, and the daemon counts them per language and model in
ghostline/stats and in `ghostline stats`, which reads a running daemon's socket."""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import Client, DaemonProcess, run_tests  # noqa: E402

BINARY = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="ghostline-outcomes-")
os.environ["XDG_RUNTIME_DIR"] = TMP  # `ghostline stats` finds the daemon's default socket here


def open_doc(d, uri, language, text):
    d.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                       "text": text}})


def complete(d, uri, line, character):
    id = d.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                   "position": {"line": line, "character": character}, "context": {"triggerKind": 2}})
    r = d.response(id, timeout=30)
    assert "result" in r, r
    return r["result"]["items"]


def completion_id(item):
    command = item["command"]
    assert command["command"] == "ghostline.completionAccepted", item
    assert isinstance(command["arguments"][0], int), item
    return command["arguments"][0]


def report(d, id, outcome, chars=None):
    p = {"id": id, "outcome": outcome, "languageId": "python"}
    if chars is not None:
        p["acceptedChars"] = chars
    d.notify("ghostline/completionOutcome", p)


def outcomes(d):
    return d.response(d.request("ghostline/stats", None))["result"]["outcomes"]


def test_items_carry_distinct_ids():
    d = DaemonProcess(BINARY, ["--scripted-completer", "0", "--debounce-ms", "0", "--no-prefetch"])
    try:
        d.initialize()
        open_doc(d, "file:///a.py", "python", "ab\ncd")
        first = complete(d, "file:///a.py", 0, 2)
        second = complete(d, "file:///a.py", 1, 2)
        assert [i["insertText"] for i in first + second] == ["<ab>v1", "<cd>v1"]
        assert completion_id(first[0]) != completion_id(second[0])
        assert outcomes(d) == [], "nothing is shown until the editor reports it"
    finally:
        d.kill()


def test_outcomes_are_counted_per_language_and_model():
    d = DaemonProcess(BINARY, ["--scripted-completer", "0", "--debounce-ms", "0", "--no-prefetch"])
    try:
        d.initialize()
        open_doc(d, "file:///a.py", "python", "ab\ncd\nef\ngh")
        open_doc(d, "file:///b.rs", "rust", "xy")
        ids = [completion_id(complete(d, "file:///a.py", line, 2)[0]) for line in range(4)]
        rust = completion_id(complete(d, "file:///b.rs", 0, 2)[0])
        report(d, ids[0], "accepted")                 # "<ab>v1": 6 characters
        report(d, ids[1], "acceptedPartially", 3)     # a word
        report(d, ids[1], "dismissed")                # then Escape: still partly accepted
        report(d, ids[2], "dismissed")
        report(d, ids[3], "typedOver")
        report(d, rust, "accepted", 2)
        report(d, 99999, "accepted")                  # never issued: ignored
        rows = outcomes(d)
        assert [(r["language"], r["model"]) for r in rows] == [("python", "scripted"), ("rust", "scripted")], rows
        py, rs = rows
        assert (py["shown"], py["accepted"], py["acceptedPartially"], py["dismissed"], py["typedOver"]) == \
            (4, 1, 1, 1, 1), py
        assert py["acceptedChars"] == 6 + 3, py
        assert set(py["acceptedLatencyMs"]) == {"mean", "p50", "p90"}, py
        assert (rs["shown"], rs["accepted"], rs["acceptedChars"]) == (1, 1, 2), rs
        # The rest of the partly accepted one, accepted with Tab: counted once, as accepted.
        report(d, ids[1], "accepted")
        py = outcomes(d)[0]
        assert (py["shown"], py["accepted"], py["acceptedPartially"], py["acceptedChars"]) == (4, 2, 0, 12), py
    finally:
        d.kill()


def test_a_wrong_outcome_is_reported_to_the_client():
    d = DaemonProcess(BINARY, ["--scripted-completer", "0", "--debounce-ms", "0"])
    try:
        d.initialize()
        open_doc(d, "file:///a.py", "python", "ab")
        id = completion_id(complete(d, "file:///a.py", 0, 2)[0])
        report(d, id, "loved")
        m = d.expect({"method": "window/logMessage"})
        assert "unknown outcome 'loved'" in m["params"]["message"], m
        d.notify("ghostline/completionOutcome", {"id": -1, "outcome": "accepted"})
        m = d.expect({"method": "window/logMessage"})
        assert "completion id" in m["params"]["message"], m
        assert outcomes(d) == []
    finally:
        d.kill()


def start_listening_daemon():
    log = os.path.join(TMP, "daemon.log")
    sock = os.path.join(TMP, "ghostline.sock")
    proc = subprocess.Popen([BINARY, "serve", "--scripted-completer", "0", "--debounce-ms", "0", "--listen",
                             "unix:" + sock], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(log, "wb"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if re.search(r"listening on unix:", open(log).read()):
            return proc, sock
        assert proc.poll() is None, open(log).read()
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("daemon did not listen")


class ConnectedEditor(Client):
    """An editor's session, through `ghostline connect` as the plugins start it."""

    def __init__(self):
        self.proc = subprocess.Popen([BINARY, "connect", "--no-start"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)

        def write(data):
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        super().__init__(write, lambda: self.proc.stdout.read(65536), self.proc.stdin.close)

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def test_ghostline_stats_prints_the_table_of_a_running_daemon():
    proc, sock = start_listening_daemon()
    try:
        r = subprocess.run([BINARY, "stats"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r
        assert "no completion outcomes reported yet" in r.stdout, r.stdout
        editor = ConnectedEditor()
        editor.initialize()
        open_doc(editor, "file:///a.py", "python", "ab\ncd")
        report(editor, completion_id(complete(editor, "file:///a.py", 0, 2)[0]), "accepted")
        report(editor, completion_id(complete(editor, "file:///a.py", 1, 2)[0]), "dismissed")
        editor.response(editor.request("ghostline/stats", None))  # the reports have been read
        # The editor's session stays open: stats are the daemon's, read through another session.
        r = subprocess.run([BINARY, "stats"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r
        lines = r.stdout.splitlines()
        header = lines[1].split()
        assert header[:6] == ["language", "model", "shown", "accepted", "partly", "rate"], r.stdout
        row = lines[2].split()
        assert row[:7] == ["python", "scripted", "2", "1", "0", "50%", "6"], r.stdout
        # The same with the address named, and as JSON.
        r = subprocess.run([BINARY, "stats", "unix:" + sock, "--json"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r
        assert '"shown": 2' in r.stdout, r.stdout
        editor.kill()
    finally:
        proc.terminate()
        proc.wait(10)


def test_ghostline_stats_without_a_daemon_says_so_and_starts_none():
    r = subprocess.run([BINARY, "stats", "unix:" + os.path.join(TMP, "nothing.sock")], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1, r
    assert "no daemon at unix:" in r.stderr and "no running daemon answered" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(TMP, "nothing.sock")), "stats must not start a daemon"


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
