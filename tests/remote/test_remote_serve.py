#!/usr/bin/env python3
"""`ghostline serve --backend remote` through the LSP, against a real llama.cpp server process
(tools/remote-server): completions come from the server, a cancelled request closes its stream
(the server sees it), and the daemon survives the server going away."""
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "protocol"))
from lsp_client import DaemonProcess, run_tests  # noqa: E402

BINARY = sys.argv[1]
SERVER_MODEL = "../shared/data/models/ref-llama-spm-q4_k_m.gguf"
VOCABULARY = "../shared/data/tokenizer/llama-spm.gguf"  # the daemon needs no weights


class Server:
    def __init__(self):
        self.proc = subprocess.Popen(["node", "tools/remote-server/server.mjs", "--model", SERVER_MODEL,
                                      "--port", "0", "--threads", "1"], stdout=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        assert line.startswith("listening "), "the test server did not start: %r" % line
        self.url = "http://127.0.0.1:%d" % int(line.split()[1])

    def stats(self):
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as r:
            return json.load(r)

    def wait_for(self, ready):
        end = time.monotonic() + 30
        while True:
            s = self.stats()
            if ready(s) or time.monotonic() > end:
                return s
            time.sleep(0.05)

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def open_doc(d, text, uri="file:///m.c"):
    d.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "c",
                                                       "version": 1, "text": text}})


def complete_request(d, line, character, uri="file:///m.c"):
    return d.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                     "position": {"line": line, "character": character}, "context": {"triggerKind": 1}})


def stats(d):
    return d.response(d.request("ghostline/stats", None))["result"]


def daemon(url, *extra):
    return DaemonProcess(BINARY, ["--backend", "remote", "--url", url, "--model", VOCABULARY,
                                  "--deadline-ms", "60000", "--no-prefetch", "--debounce-ms", "0"] + list(extra))


def test_completes_through_the_server_and_survives_it_going_away():
    server = Server()
    d = daemon(server.url, "--max-tokens", "6")
    try:
        d.initialize()
        open_doc(d, "int main() {")
        r = d.response(complete_request(d, 0, 12), timeout=60)
        items = r["result"]["items"]
        served = server.stats()["last"]
        assert served["prompt"] == "int main() {", served
        assert len(items) == 1 and items[0]["insertText"], r
        assert served["text"].startswith(items[0]["insertText"].rstrip()), (served["text"], items)
        s = stats(d)
        assert "remote http://127.0.0.1" in s["completer"], s
        assert s["recent"][-1]["backend"] == "remote", s["recent"]
        assert s["completerCounters"]["backend"]["completed"] == 1, s["completerCounters"]

        server.kill()
        open_doc(d, "void f(void) {", "file:///n.c")  # not answerable from the completion memory
        r = d.response(complete_request(d, 0, 14, "file:///n.c"), timeout=60)
        assert r["result"]["items"] == [], r  # answered empty: no local model here
        s = stats(d)
        backend = s["completerCounters"]["backend"]
        assert backend["failures"] == 1 and "cannot connect" in backend["lastError"], backend
        assert backend["answeredEmpty"] == 1, backend
        assert d.proc.poll() is None, "the daemon is still running"
    finally:
        d.kill()
        server.kill()


def test_a_cancelled_request_closes_its_stream():
    server = Server()
    d = daemon(server.url + "/slow", "--max-tokens", "200")
    try:
        d.initialize()
        open_doc(d, "int main() {")
        id = complete_request(d, 0, 12)
        server.wait_for(lambda s: s["last"] is not None and s["last"]["text"])
        d.notify("$/cancelRequest", {"id": id})
        r = d.response(id, timeout=30)
        assert r.get("error", {}).get("code") == -32800, r
        s = server.wait_for(lambda s: s["closedEarly"] == 1 and s["last"]["reason"] is not None)
        assert s["closedEarly"] == 1 and s["last"]["reason"] == "closed", s["last"]
        backend = stats(d)["completerCounters"]["backend"]
        assert backend["cancelledStreams"] == 1 and backend["failures"] == 0, backend
    finally:
        d.kill()
        server.kill()


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(run_tests(dict(globals())))
