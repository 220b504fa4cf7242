"""A minimal LSP client for protocol tests: frames messages, reads replies on a thread, and
matches received messages against expected patterns."""
import json
import queue
import socket
import subprocess
import threading
import time


def frame(obj):
    body = json.dumps(obj).encode() if not isinstance(obj, (bytes, bytearray)) else bytes(obj)
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def matches(pattern, value):
    """Subset match: every key of a pattern object must match; "<any>" matches anything."""
    if pattern == "<any>":
        return True
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and matches(v, value[k]) for k, v in pattern.items())
    if isinstance(pattern, list):
        return isinstance(value, list) and len(pattern) == len(value) and all(
            matches(p, v) for p, v in zip(pattern, value))
    return pattern == value


class Reader(threading.Thread):
    """Parses framed messages from a byte stream into a queue."""

    def __init__(self, read):
        super().__init__(daemon=True)
        self.read = read
        self.messages = queue.Queue()
        self.eof = threading.Event()

    def run(self):
        buf = b""
        while True:
            try:
                chunk = self.read()
            except OSError:
                chunk = b""
            if not chunk:
                self.eof.set()
                return
            buf += chunk
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                headers = buf[:end].decode("ascii", "replace").split("\r\n")
                length = None
                for h in headers:
                    name, _, value = h.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                assert length is not None, "server sent a message without Content-Length: %r" % headers
                if len(buf) < end + 4 + length:
                    break
                body = buf[end + 4:end + 4 + length]
                buf = buf[end + 4 + length:]
                self.messages.put(json.loads(body))


class Client:
    def __init__(self, write, read, close_write):
        self._write = write
        self._close_write = close_write
        self.reader = Reader(read)
        self.reader.start()
        self.received = []   # every message, in order
        self.unconsumed = []
        self.next_id = 1000

    def send(self, obj):
        self._write(frame(obj))

    def send_raw(self, data):
        self._write(data)

    def request(self, method, params, id=None):
        if id is None:
            id = self.next_id
            self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        return id

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def close_write(self):
        self._close_write()

    def _pump(self, timeout):
        try:
            m = self.reader.messages.get(timeout=timeout)
        except queue.Empty:
            return False
        self.received.append(m)
        self.unconsumed.append(m)
        return True

    def expect(self, pattern, timeout=10.0):
        """Returns the first unconsumed message matching pattern, waiting up to timeout."""
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.unconsumed):
                if matches(pattern, m):
                    return self.unconsumed.pop(i)
            left = deadline - time.monotonic()
            if left <= 0 or (self.reader.eof.is_set() and self.reader.messages.empty()):
                raise AssertionError("expected a message matching %s\nunconsumed: %s" % (
                    json.dumps(pattern), json.dumps(self.unconsumed, indent=1)[:4000]))
            self._pump(min(left, 0.05))

    def response(self, id, timeout=10.0):
        return self.expect({"id": id}, timeout)

    def drain(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._pump(0.02)

    def initialize(self, params=None):
        p = {"processId": None, "rootUri": None, "capabilities": {}}
        p.update(params or {})
        if getattr(self, "auth_token", None):  # a TCP daemon's token, as `ghostline connect` sends it
            p.setdefault("initializationOptions", {})["authToken"] = self.auth_token
        id = self.request("initialize", p)
        r = self.response(id)
        self.notify("initialized", {})
        return r


class DaemonProcess(Client):
    """The real `ghostline serve` on pipes."""

    def __init__(self, binary, args, stderr_path=None):
        self.stderr_file = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen([binary, "serve"] + list(args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr_file, bufsize=0)

        def write(data):
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

        super().__init__(write, lambda: self.proc.stdout.read1(65536) if hasattr(self.proc.stdout, "read1")
                         else self.proc.stdout.read(65536), self.proc.stdin.close)

    def wait(self, timeout=10.0):
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class SocketClient(Client):
    def __init__(self, sock):
        self.sock = sock
        super().__init__(sock.sendall, lambda: sock.recv(65536), lambda: sock.shutdown(socket.SHUT_WR))

    def close(self):
        # shutdown first: close() alone waits for the reader thread's recv() to return.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def run_tests(namespace):
    """Runs every test_* function of a module; prints 'N passed, N failed'; returns the exit code."""
    failed = 0
    tests = [(n, f) for n, f in list(namespace.items()) if n.startswith("test_") and callable(f)]
    for name, fn in tests:
        try:
            fn()
            print("ok   %s" % name)
        except Exception as e:  # noqa: BLE001 - a failing test reports and the rest still run
            failed += 1
            print("FAIL %s: %s" % (name, e))
    print("%d passed, %d failed" % (len(tests) - failed, failed))
    return 1 if failed else 0
