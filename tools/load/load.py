#!/usr/bin/env python3
"""Load test: one `ghostline serve` on a unix socket, several client sessions typing into
several documents each, with completion requests after every keystroke and some of them
cancelled. Checks that every request is answered (with a result, or RequestCancelled), that no
reply is stale (made from another version of the document than the request's), that no other
error comes back, and that the daemon's text of every document equals the client's at the end
(ghostline/documentText). Samples the daemon's RSS and writes it as an SVG; prints latency
percentiles. Python 3 standard library only.

Usage: tools/load/load.py GHOSTLINE [--duration S] [--sessions N] [--documents N] [--rate KEYS/S]
                          [--svg FILE] [--serve-args "ARGS"]
Exit status 0 when every check passed.
"""
import argparse
import json
import os
import random
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time

WORDS = ["value", "index", "result", "count", "items", "total", "name", "data", "x", "y"]


class Connection:
    """One LSP session on a socket: framed writes, and a reader thread that files replies."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lock = threading.Lock()
        self.replies = {}
        self.arrived = threading.Condition(self.lock)
        self.notifications = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def send(self, obj):
        body = json.dumps(obj).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self.lock:
                    self.replies[None] = "eof"
                    self.arrived.notify_all()
                return
            buf += chunk
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                length = int(buf[:end].split(b":")[1])
                if len(buf) < end + 4 + length:
                    break
                msg = json.loads(buf[end + 4:end + 4 + length])
                buf = buf[end + 4 + length:]
                now = time.monotonic()
                with self.lock:
                    if "id" in msg and "method" not in msg:
                        self.replies[msg["id"]] = (msg, now)
                        self.arrived.notify_all()
                    else:
                        self.notifications.append(msg)

    def wait(self, id, timeout):
        deadline = time.monotonic() + timeout
        with self.lock:
            while id not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or None in self.replies:
                    return None
                self.arrived.wait(left)
            return self.replies[id]

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class Typist(threading.Thread):
    """One client session: types into its documents at `rate` keystrokes per second."""

    def __init__(self, n, path, documents, rate, duration, seed, versioned=True):
        super().__init__(daemon=True)
        # Whether completions name the version they were made from (the scripted completer's
        # do; a model's text says nothing of it, and may end in "v" and digits by chance).
        self.versioned = versioned
        self.n, self.path, self.rate, self.duration = n, path, rate, duration
        self.rand = random.Random(seed)
        self.docs = {"file:///load/s%d/d%d.py" % (n, i): {"text": "", "version": 1, "history": {1: ""}}
                     for i in range(documents)}
        self.requests = {}  # id -> (uri, version, sent_at, cancelled)
        self.problems = []
        self.latencies = []
        self.counts = {"keystrokes": 0, "requests": 0, "answered": 0, "cancelled": 0, "cancelSent": 0}
        self.next_id = 1

    def request(self, method, params):
        id = self.next_id
        self.next_id += 1
        self.conn.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        return id

    def position(self, text):
        lines = text.split("\n")
        return {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}

    def keystroke(self, uri):
        doc = self.docs[uri]
        r = self.rand.random()
        if r < 0.1 and doc["text"]:
            ch = None  # backspace
        elif r < 0.2:
            ch = "\n"
        elif r < 0.3:
            ch = "é" if r < 0.25 else " "
        else:
            word = self.rand.choice(WORDS)
            ch = word[self.rand.randrange(len(word))]
        end = self.position(doc["text"])
        if ch is None:
            doc["text"] = doc["text"][:-1]
            start = self.position(doc["text"])
            change = {"range": {"start": start, "end": end}, "text": ""}
        else:
            change = {"range": {"start": end, "end": end}, "text": ch}
            doc["text"] += ch
        doc["version"] += 1
        doc["history"][doc["version"]] = doc["text"]
        self.conn.send({"jsonrpc": "2.0", "method": "textDocument/didChange",
                        "params": {"textDocument": {"uri": uri, "version": doc["version"]}, "contentChanges": [change]}})
        self.counts["keystrokes"] += 1
        id = self.request("textDocument/inlineCompletion",
                          {"textDocument": {"uri": uri}, "position": self.position(doc["text"]),
                           "context": {"triggerKind": 2}})
        self.requests[id] = (uri, doc["version"], time.monotonic())
        self.counts["requests"] += 1
        if self.rand.random() < 0.15:
            self.conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})
            self.counts["cancelSent"] += 1

    def run(self):
        try:
            self.conn = Connection(self.path)
            init = self.request("initialize", {"processId": None, "capabilities": {}, "rootUri": None})
            if not self.conn.wait(init, 30):
                self.problems.append("session %d: no reply to initialize" % self.n)
                return
            self.conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            for uri in self.docs:
                self.conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                    "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": ""}}})
            uris = list(self.docs)
            start = time.monotonic()
            k = 0
            while time.monotonic() - start < self.duration:
                # A few keystrokes in one document, then another: as a person moves around.
                uri = uris[(k // 5) % len(uris)]
                self.keystroke(uri)
                k += 1
                time.sleep(max(0.0, start + k / self.rate - time.monotonic()))
            self.check_replies()
            self.check_texts()
            bye = self.request("shutdown", None)
            self.conn.wait(bye, 10)
            self.conn.send({"jsonrpc": "2.0", "method": "exit"})
            self.conn.close()
        except Exception as e:  # noqa: BLE001 - reported as a problem of this session
            self.problems.append("session %d: %r" % (self.n, e))

    def check_replies(self):
        for id, (uri, version, sent) in self.requests.items():
            got = self.conn.wait(id, 30)
            if not got:
                self.problems.append("session %d: request %d (%s v%d) unanswered" % (self.n, id, uri, version))
                continue
            msg, at = got
            if "error" in msg:
                if msg["error"]["code"] == -32800:
                    self.counts["cancelled"] += 1
                else:
                    self.problems.append("session %d: request %d: error %s" % (self.n, id, msg["error"]))
                continue
            self.counts["answered"] += 1
            self.latencies.append((at - sent) * 1000)
            history = self.docs[uri]["history"]
            for item in msg["result"]["items"] if self.versioned else []:
                # The scripted completer writes the version it completed from after the word. An
                # answer from memory may come from another version with the same text (typed,
                # then erased); one made from another text is stale.
                tail = item["insertText"].rsplit("v", 1)[-1]
                if tail.isdigit() and history.get(int(tail)) != history[version]:
                    self.problems.append("session %d: request %d for v%d answered from v%s (stale)" %
                                         (self.n, id, version, tail))

    def check_texts(self):
        for uri, doc in self.docs.items():
            id = self.request("ghostline/documentText", {"textDocument": {"uri": uri}})
            got = self.conn.wait(id, 30)
            if not got or "result" not in got[0]:
                self.problems.append("session %d: documentText of %s: %s" % (self.n, uri, got and got[0]))
            elif got[0]["result"]["text"] != doc["text"] or got[0]["result"]["version"] != doc["version"]:
                self.problems.append("session %d: the daemon's %s differs from the client's" % (self.n, uri))


def rss_kib(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def write_svg(path, samples, title):
    """RSS (MiB) over time (s) as a line chart."""
    w, h, m = 640, 320, 50
    if not samples:
        return
    t_max = max(t for t, _ in samples) or 1
    r_max = max(r for _, r in samples) * 1.1 or 1
    pts = " ".join("%.1f,%.1f" % (m + t / t_max * (w - 2 * m), h - m - r / r_max * (h - 2 * m)) for t, r in samples)
    ticks = "".join('<text x="%d" y="%d" font-size="10" text-anchor="end">%.0f</text>' %
                    (m - 4, h - m - i / 4 * (h - 2 * m) + 3, r_max * i / 4) for i in range(5))
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">'
           '<rect width="100%%" height="100%%" fill="white"/>'
           '<text x="%d" y="20" font-size="13" text-anchor="middle">%s</text>'
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
           '%s<text x="%d" y="%d" font-size="11" text-anchor="middle">time (s), 0 to %.0f</text>'
           '<text x="14" y="%d" font-size="11" transform="rotate(-90 14 %d)" text-anchor="middle">RSS (MiB)</text>'
           '<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="%s"/></svg>\n') % (
        w, h, w // 2, title, m, h - m, w - m, h - m, m, m, m, h - m, ticks, w // 2, h - 12, t_max, h // 2, h // 2, pts)
    with open(path, "w") as f:
        f.write(svg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ghostline")
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--documents", type=int, default=4)
    ap.add_argument("--rate", type=float, default=10, help="keystrokes per second per session")
    ap.add_argument("--svg", default=None, help="write the RSS curve here")
    ap.add_argument("--serve-args", default="--scripted-completer 5",
                    help="arguments for ghostline serve (default: a scripted completer of 5 ms)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="ghostline-load-")
    path = os.path.join(tmp, "daemon.sock")
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    daemon = subprocess.Popen([args.ghostline, "serve", "--listen", "unix:" + path] + shlex.split(args.serve_args),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if daemon.poll() is not None or time.monotonic() > deadline:
            print("load: the daemon did not start; its log: " + open(log.name).read()[-2000:])
            return 1
        time.sleep(0.05)

    versioned = "--scripted-completer" in shlex.split(args.serve_args)
    if not versioned:
        print("load: a model completes: replies cannot be checked for staleness by their text")
    typists = [Typist(n, path, args.documents, args.rate, args.duration, seed=n, versioned=versioned)
               for n in range(args.sessions)]
    start = time.monotonic()
    for t in typists:
        t.start()
    samples = []
    while any(t.is_alive() for t in typists):
        r = rss_kib(daemon.pid)
        if r is not None:
            samples.append((time.monotonic() - start, r / 1024))
        time.sleep(0.5)
    daemon.terminate()
    try:
        code = daemon.wait(20)
    except subprocess.TimeoutExpired:
        daemon.kill()
        code = "hung on SIGTERM"

    problems = [p for t in typists for p in t.problems]
    if code != 0:
        problems.append("daemon exit status %s" % code)
    counts = {k: sum(t.counts[k] for t in typists) for k in typists[0].counts}
    latencies = [l for t in typists for l in t.latencies]
    after_warmup = [r for t, r in samples if t > min(5.0, args.duration / 3)]
    print("load: %d sessions x %d documents, %.0f keys/s each, %.0f s" %
          (args.sessions, args.documents, args.rate, args.duration))
    print("load: %(keystrokes)d keystrokes, %(requests)d requests: %(answered)d answered, "
          "%(cancelled)d cancelled (%(cancelSent)d cancels sent)" % counts)
    print("load: latency p50 %.1f ms, p99 %.1f ms" % (percentile(latencies, 50), percentile(latencies, 99)))
    if after_warmup:
        print("load: RSS after warm-up %.1f to %.1f MiB (%d samples)" % (min(after_warmup), max(after_warmup),
                                                                           len(after_warmup)))
    if args.svg:
        write_svg(args.svg, samples, "ghostline serve RSS, %d sessions x %d documents, %.0f keys/s each" %
                  (args.sessions, args.documents, args.rate))
        print("load: RSS curve written to " + args.svg)
    for p in problems[:20]:
        print("load: PROBLEM " + p)
    print("load: %s" % ("passed" if not problems else "%d problems" % len(problems)))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
