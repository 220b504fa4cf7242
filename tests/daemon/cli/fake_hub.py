"""A local stand-in for the Hugging Face hub over HTTPS, for `ghostline pull`'s tests: the hub's
paths (/api/models/{repo}/revision/{rev}?blobs=true, /{repo}/resolve/{rev}/{file}), a redirect
to a "CDN" on another host and port (or a relative one on the hub itself), Range requests, and
misbehaviours a test turns on: a connection cut in the body, Range ignored, a wrong checksum, a
slow body. Every request is logged with its headers so that tests can see what was sent where.

The certificate is made at start by `openssl req` (self-signed, for localhost and 127.0.0.1)."""
import hashlib
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_certificate(folder):
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


class Hub:
    def __init__(self, folder):
        self.cert, self.key = make_certificate(folder)
        self.repos = {}  # repo -> {file: bytes}
        self.log = []    # (server, method, path, {header: value})
        self.lock = threading.Lock()
        self.reset()
        self.hub = self._serve("hub", "localhost")
        self.cdn = self._serve("cdn", "127.0.0.1")

    def reset(self):
        self.redirect = "cdn"       # cdn (absolute, another host and port), relative, none
        self.cut_first = False      # the first body request ends halfway (connection closed)
        self.ignore_range = False   # answer Range requests with 200 and the whole file
        self.wrong_sha = False      # the metadata's SHA-256 is not the file's
        self.slow = False           # the body comes in 20 pieces with pauses
        self.gated = set()          # repos that answer 401 without the right token
        self.token = None
        self.body_requests = 0
        with self.lock:
            self.log = []

    def add(self, repo, name, data):
        self.repos.setdefault(repo, {})[name] = data

    @property
    def url(self):
        return "https://localhost:%d" % self.hub.server_address[1]

    def requests(self, server=None):
        with self.lock:
            return [r for r in self.log if server is None or r[0] == server]

    def _serve(self, role, host):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                with hub.lock:
                    hub.log.append((role, "GET", self.path, dict(self.headers.items())))
                try:
                    hub._handle(role, self)
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                    pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._host = host
        server.public_host = host
        return server

    def close(self):
        for s in (self.hub, self.cdn):
            s.shutdown()
            s.server_close()

    # --- responses ---

    def _reply(self, h, status, body=b"", headers=()):
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _authorized(self, h, repo):
        return repo not in self.gated or h.headers.get("Authorization") == "Bearer %s" % self.token

    def _handle(self, role, h):
        path = h.path
        m = re.match(r"^/api/models/([^/]+/[^/]+)/revision/([^/?]+)\?blobs=true$", path)
        if role == "hub" and m:
            repo = m.group(1)
            if repo not in self.repos:
                return self._reply(h, 404, b'{"error":"Repository not found"}',
                                   [("X-Error-Message", "Repository not found")])
            if not self._authorized(h, repo):
                return self._reply(h, 401, b'{"error":"Access to this repository is restricted"}',
                                   [("X-Error-Message", "Access restricted")])
            siblings = []
            for name, data in self.repos[repo].items():
                sha = hashlib.sha256(data + (b"x" if self.wrong_sha else b"")).hexdigest()
                siblings.append({"rfilename": name, "size": len(data),
                                 "blobId": "0" * 40, "lfs": {"sha256": sha, "size": len(data),
                                                             "pointerSize": 134}})
            siblings.append({"rfilename": "README.md", "size": 10, "blobId": "1" * 40})
            body = json.dumps({"id": repo, "sha": "a" * 40, "siblings": siblings}).encode()
            return self._reply(h, 200, body, [("Content-Type", "application/json")])

        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if role == "hub" and m:
            repo, name = m.group(1), m.group(3)
            data = self.repos.get(repo, {}).get(name)
            if data is None:
                return self._reply(h, 404, b"Entry not found", [("X-Error-Message", "Entry not found")])
            if not self._authorized(h, repo):
                return self._reply(h, 401, b"", [("X-Error-Message", "Access restricted")])
            sha = hashlib.sha256(data).hexdigest()
            linked = [("X-Linked-Size", str(len(data))), ("X-Linked-Etag", '"%s"' % sha)]
            if self.redirect == "cdn":
                where = "https://127.0.0.1:%d/blobs/%s/%s?signature=abc" % (
                    self.cdn.server_address[1], repo.replace("/", "--"), name)
                return self._reply(h, 302, b"", [("Location", where)] + linked)
            if self.redirect == "relative":
                return self._reply(h, 302, b"", [("Location", "/blobs/%s/%s" % (repo.replace("/", "--"), name))]
                                   + linked)
            return self._body(h, data)

        m = re.match(r"^/blobs/([^/]+)/([^?]+)", path)
        if m:
            data = self.repos.get(m.group(1).replace("--", "/", 1), {}).get(m.group(2))
            if data is None:
                return self._reply(h, 404, b"NoSuchKey")
            return self._body(h, data)
        return self._reply(h, 404, b"unknown path")

    def _body(self, h, data):
        self.body_requests += 1
        start = 0
        rng = h.headers.get("Range")
        if rng and not self.ignore_range:
            start = int(re.match(r"bytes=(\d+)-$", rng).group(1))
            if start >= len(data):
                return self._reply(h, 416, b"", [("Content-Range", "bytes */%d" % len(data))])
            h.send_response(206)
            h.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            h.send_response(200)
        part = data[start:]
        h.send_header("Content-Length", str(len(part)))
        h.send_header("Content-Type", "application/octet-stream")
        h.end_headers()
        if self.cut_first and self.body_requests == 1:
            h.wfile.write(part[:len(part) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.slow:
            step = max(1, len(part) // 20)
            for i in range(0, len(part), step):
                h.wfile.write(part[i:i + step])
                h.wfile.flush()
                time.sleep(0.05)
            return
        h.wfile.write(part)
