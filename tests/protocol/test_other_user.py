#!/usr/bin/env python3
"""Another local user attacks this user's daemon, for real: the test (run as root, as CI runs)
creates a second user, `ghostline-intruder`, and plays it in forked children that drop to its
uid. Each attack must be refused with a message that names the path and the problem, and
nothing of the editor's traffic may reach what the intruder planted:

- a socket planted at the default path, with XDG_RUNTIME_DIR unset (the real /tmp/ghostline-UID,
  and the old /tmp/ghostline-UID.sock), and a listening socket of the intruder that `connect`
  is pointed at (SO_PEERCRED);
- a planted directory: the intruder's own, one of ours with mode 0777, a symbolic link;
- a symbolic link at the socket path and at the log path of a daemon that `connect` starts;
- a client of the intruder on the daemon's unix socket (the socket made 0777 for the test);
- a TCP client without the token the daemon generated, which `connect` reads and sends.

Not root: the test cannot create a second user; it says so and exits 77 (ctest: Skipped)."""
import encodings.idna  # noqa: F401 - loaded here: the intruder's children cannot read this user's Python
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "editor-plugins"))
from daemon_capabilities import stop_daemon  # noqa: E402
from lsp_client import Client, SocketClient, frame, run_tests  # noqa: E402
from test_sockets import complete, open_doc, start_daemon  # noqa: E402

BINARY = sys.argv[1]
INTRUDER = "ghostline-intruder"
UID = os.geteuid()
ME = "root (uid 0)" if UID == 0 else None
INITIALIZE = frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"processId": None, "capabilities": {}, "rootUri": "file:///home/victim/secret-project"}})
# Made by test_sockets (imported above) as the daemons' XDG_RUNTIME_DIR: mode 0700, ours.
PRIVATE = os.environ["XDG_RUNTIME_DIR"]


def intruder():
    try:
        return pwd.getpwnam(INTRUDER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", INTRUDER],
                       check=True)
        return pwd.getpwnam(INTRUDER)


def become_intruder():
    who = intruder()
    os.setgroups([])
    os.setgid(who.pw_gid)
    os.setuid(who.pw_uid)


def as_intruder(fn, *args):
    """Runs fn(*args) in a child as the intruder; returns what it returned (JSON), or raises what
    it raised."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            become_intruder()
            out = {"result": fn(*args)}
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = {"error": "%s: %s" % (type(e).__name__, e)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    out = json.loads(data)
    if "error" in out:
        raise AssertionError("as the intruder: " + out["error"])
    return out["result"]


class PlantedListener:
    """A listening socket of the intruder at `path` (mode 0777) that keeps every byte it is
    sent. stop() ends it with a connection of its own that says STOP: connections are taken in
    order, so every earlier one has been read to its end by then."""

    def __init__(self, path):
        self.path = path
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(r)
            try:
                become_intruder()
                self._serve(w)
            finally:
                os._exit(0)
        os.close(w)
        self.pipe = r
        assert os.read(r, 1) == b"L", "the intruder's listener did not start"

    def _serve(self, w):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.path)
        os.chmod(self.path, 0o777)
        s.listen(16)
        os.write(w, b"L")
        received = []
        while True:
            c, _ = s.accept()
            data = b""
            while chunk := c.recv(65536):
                data += chunk
            c.close()
            if data == b"STOP":
                break
            received.append(data.decode("latin-1"))
        os.write(w, json.dumps(received).encode())

    def stop(self):
        """The bytes of each connection it accepted, in order."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        s.sendall(b"STOP")
        s.close()
        data = b""
        while chunk := os.read(self.pipe, 65536):
            data += chunk
        os.close(self.pipe)
        os.waitpid(self.pid, 0)
        return json.loads(data)


def world_writable_dir():
    """A directory like /tmp (mode 1777) where the intruder plants things."""
    d = tempfile.mkdtemp(prefix="ghostline-shared-")
    os.chmod(d, 0o1777)
    return d


def env_without_xdg():
    env = dict(os.environ)
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def env_with_xdg(path):
    return dict(os.environ, XDG_RUNTIME_DIR=path)


def run_connect(args, env, stdin=INITIALIZE):
    r = subprocess.run([BINARY, "connect"] + args, input=stdin, capture_output=True, timeout=60, env=env)
    return r.returncode, r.stderr.decode()


def refused(message):
    print("     refused: " + message.strip().replace("\n", "\n              "))


class MovedAside:
    """Keeps this user's real /tmp/ghostline-UID (and the old socket path) out of the way while a
    test plants things there; everything is put back after."""

    def __init__(self, *paths):
        self.paths = paths

    def __enter__(self):
        self.saved = []
        for p in self.paths:
            if os.path.lexists(p):
                aside = "%s.saved-by-test-%d" % (p, os.getpid())
                os.rename(p, aside)
                self.saved.append((p, aside))
            # else: nothing to restore, but whatever the test leaves there goes.
        return self

    def __exit__(self, *exc):
        for p in self.paths:
            remove(p)
        for p, aside in self.saved:
            os.rename(aside, p)


def remove(p):
    if os.path.islink(p) or (os.path.lexists(p) and not os.path.isdir(p)):
        os.unlink(p)
    elif os.path.isdir(p):
        shutil.rmtree(p)


DEFAULT_DIR = "/tmp/ghostline-%d" % os.getuid()
OLD_DEFAULT_SOCKET = "/tmp/ghostline-%d.sock" % os.getuid()


def test_planted_directory_at_the_real_default_path():
    # XDG_RUNTIME_DIR unset: the intruder makes /tmp/ghostline-UID first, its own, with a
    # listening socket where the editor's daemon would be.
    with MovedAside(DEFAULT_DIR):
        as_intruder(os.mkdir, DEFAULT_DIR, 0o777)
        as_intruder(os.chmod, DEFAULT_DIR, 0o777)
        listener = PlantedListener(DEFAULT_DIR + "/ghostline.sock")
        try:
            code, err = run_connect(["--", "--scripted-completer", "0"], env_without_xdg())
        finally:
            received = listener.stop()
        assert code == 1, (code, err)
        assert ("refusing to use the directory %s: it belongs to %s (uid %d), not to this user, "
                % (DEFAULT_DIR, INTRUDER, intruder().pw_uid)) in err, err
        assert received == [], "the planted listener got %r" % received
        refused(err)


def test_planted_socket_at_the_old_default_path_is_not_used():
    # The old default was /tmp/ghostline-UID.sock: a listener planted there hears nothing; connect
    # makes its own directory and starts its daemon there.
    with MovedAside(DEFAULT_DIR, OLD_DEFAULT_SOCKET):
        listener = PlantedListener(OLD_DEFAULT_SOCKET)
        sock = DEFAULT_DIR + "/ghostline.sock"
        try:
            p = subprocess.Popen([BINARY, "connect", "--", "--scripted-completer", "0"], env=env_without_xdg(),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
            c = Client(lambda d: (p.stdin.write(d), p.stdin.flush()), lambda: p.stdout.read(65536), p.stdin.close)
            c.initialize()
            open_doc(c, "file:///secret.py", "password")
            assert complete(c, "file:///secret.py", 0, 8)["result"]["items"][0]["insertText"] == "<password>v1"
            c.close_write()
            assert p.wait(10) == 0
            st = os.lstat(DEFAULT_DIR)
            assert st.st_uid == UID and st.st_mode & 0o7777 == 0o700, oct(st.st_mode)
            assert os.lstat(sock).st_uid == UID
        finally:
            stop_daemon(sock)
            received = listener.stop()
        assert received == [], "the planted listener got %r" % received


def test_connect_refuses_a_daemon_of_another_user():
    # Pointed at the intruder's socket (or led there by a link): SO_PEERCRED names the intruder,
    # and connect closes the connection before sending a byte.
    shared = world_writable_dir()
    try:
        planted = os.path.join(shared, "ghostline.sock")
        listener = PlantedListener(planted)
        as_intruder(os.symlink, planted, os.path.join(shared, "link.sock"))
        try:
            results = [run_connect(["unix:" + planted], env_with_xdg(PRIVATE)),
                       run_connect(["--no-start", "unix:" + planted], env_with_xdg(PRIVATE)),
                       run_connect(["unix:" + os.path.join(shared, "link.sock")], env_with_xdg(PRIVATE))]
        finally:
            received = listener.stop()
        for code, err in results:
            assert code == 1, (code, err)
            assert "refusing to connect: the process listening on " in err, err
            assert "runs as %s (uid %d), not as this user" % (INTRUDER, intruder().pw_uid) in err, err
        assert received == ["", "", ""], "the planted listener got %r" % received
        refused(results[0][1])
        # `ghostline replay --connect` refuses it the same way.
        planted = os.path.join(shared, "replay.sock")
        listener = PlantedListener(planted)
        try:
            r = subprocess.run([BINARY, "replay", "tests/sessions", "--connect", "unix:" + planted],
                               capture_output=True, timeout=60)
        finally:
            received = listener.stop()
        assert r.returncode != 0 and b"refusing to connect: the process listening on" in r.stderr, r
        assert received == [""], received
    finally:
        shutil.rmtree(shared)


def test_planted_or_open_directories_are_refused():
    them = "it belongs to %s (uid %d), not to this user" % (INTRUDER, intruder().pw_uid)
    theirs = tempfile.mkdtemp(prefix="ghostline-theirs-")
    os.chown(theirs, intruder().pw_uid, intruder().pw_gid)
    ours_open = tempfile.mkdtemp(prefix="ghostline-open-")
    os.chmod(ours_open, 0o777)
    shared = world_writable_dir()
    try:
        cases = [
            (env_with_xdg(theirs), theirs, them),
            (env_with_xdg(ours_open), ours_open, "it has mode 0777: group or others may write to it"),
        ]
        for env, path, problem in cases:
            code, err = run_connect([], env)
            assert code == 1 and ("refusing to use the directory %s: %s" % (path, problem)) in err, err
            refused(err)
            # A TCP daemon will not write its token there either.
            r = subprocess.run([BINARY, "serve", "--scripted-completer", "0", "--listen", "tcp:127.0.0.1:0"],
                               capture_output=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
            assert r.returncode == 1 and ("refusing to use the directory %s: %s" % (path, problem)).encode() in r.stderr, r
            assert os.listdir(path) == [], os.listdir(path)
        with MovedAside(DEFAULT_DIR):
            # Our own /tmp directory, opened to everyone.
            os.mkdir(DEFAULT_DIR, 0o700)
            os.chmod(DEFAULT_DIR, 0o777)
            code, err = run_connect([], env_without_xdg())
            assert code == 1 and ("refusing to use the directory %s: it has mode 0777; it must be 0700"
                                  % DEFAULT_DIR) in err, err
            refused(err)
            os.rmdir(DEFAULT_DIR)
            # A link the intruder planted to a directory of theirs.
            target = os.path.join(shared, "mine")
            as_intruder(os.mkdir, target, 0o700)
            as_intruder(os.symlink, target, DEFAULT_DIR)
            code, err = run_connect([], env_without_xdg())
            assert code == 1 and ("refusing to use the directory %s: it is a symbolic link (to %s)"
                                  % (DEFAULT_DIR, target)) in err, err
            refused(err)
            assert os.listdir(target) == []
    finally:
        for d in (theirs, ours_open, shared):
            shutil.rmtree(d)


def test_links_at_the_socket_and_log_paths_are_not_followed():
    shared = world_writable_dir()
    victim = tempfile.mkdtemp(prefix="ghostline-victim-")
    try:
        target = os.path.join(victim, "precious")
        with open(target, "w") as f:
            f.write("untouched")
        os.chmod(target, 0o644)
        # At the socket path.
        as_intruder(os.symlink, target, os.path.join(shared, "a.sock"))
        code, err = run_connect(["unix:" + os.path.join(shared, "a.sock"), "--", "--scripted-completer", "0"],
                                env_with_xdg(PRIVATE))
        assert code == 1 and ("refusing to start a daemon on %s: it is a symbolic link (to %s)"
                              % (os.path.join(shared, "a.sock"), target)) in err, err
        refused(err)
        r = subprocess.run([BINARY, "serve", "--scripted-completer", "0", "--listen", "unix:" + os.path.join(shared, "a.sock")],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 1 and ("refusing to listen on %s: it is a symbolic link (to %s)"
                                      % (os.path.join(shared, "a.sock"), target)).encode() in r.stderr, r
        refused(r.stderr.decode().strip().splitlines()[-1])
        # At the log path: to an existing file, and dangling (a file it would create).
        as_intruder(os.symlink, target, os.path.join(shared, "b.sock.log"))
        code, err = run_connect(["unix:" + os.path.join(shared, "b.sock"), "--", "--scripted-completer", "0"],
                                env_with_xdg(PRIVATE))
        assert code == 1 and ("refusing to open the log file %s: it is a symbolic link (to %s)"
                              % (os.path.join(shared, "b.sock.log"), target)) in err, err
        refused(err)
        created = os.path.join(victim, "created-through-the-link")
        as_intruder(os.symlink, created, os.path.join(shared, "c.log"))
        r = subprocess.run([BINARY, "serve", "--scripted-completer", "0", "--log-file", os.path.join(shared, "c.log"),
                            "--listen", "unix:" + os.path.join(shared, "c.sock")],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 2 and ("refusing to open the log file %s: it is a symbolic link (to %s)"
                                      % (os.path.join(shared, "c.log"), created)).encode() in r.stderr, r
        refused(r.stderr.decode())
        assert open(target).read() == "untouched"
        assert oct(os.stat(target).st_mode & 0o777) == "0o644"
        assert not os.path.lexists(created)
        assert sorted(os.listdir(shared)) == ["a.sock", "b.sock.log", "c.log"], os.listdir(shared)
    finally:
        shutil.rmtree(shared)
        shutil.rmtree(victim)


def intruder_session(path, attempts):
    """Connects to the daemon's socket `attempts` times, each time sending initialize and reading
    what comes back until the daemon closes the connection."""
    out = []
    for _ in range(attempts):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(path)
        try:
            s.sendall(INITIALIZE)
        except OSError:
            pass  # already closed by the daemon
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
        s.close()
        out.append(data.decode("latin-1"))
    return out


def test_daemon_disconnects_a_client_of_another_user():
    # The socket is made reachable for the intruder (a directory anyone may enter, the socket
    # 0777): SO_PEERCRED still keeps them out.
    d = tempfile.mkdtemp(prefix="ghostline-open-daemon-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "d.sock")
    proc, address, log = start_daemon("--listen", "unix:" + path)
    try:
        os.chmod(path, 0o777)
        assert as_intruder(intruder_session, path, 3) == ["", "", ""]
        # This user's editors are served as before.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        c = SocketClient(s)
        assert "result" in c.initialize()
        c.close()
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(d)
    text = open(log).read()
    lines = [l for l in text.splitlines() if "refused a client of" in l]
    assert len(lines) == 1, text  # three attempts, one line
    assert ("refused a client of %s (uid %d) on unix:%s: only %s may connect to this daemon"
            % (INTRUDER, intruder().pw_uid, path, ME or "")) in lines[0], lines
    assert "session 1 connected" in text and "session 2" not in text, text
    refused(lines[0])


def intruder_tcp_attempt(port, token_path):
    out = {}
    try:
        open(token_path).read()
        out["token"] = "read"
    except OSError as e:
        out["token"] = type(e).__name__
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    c = SocketClient(s)
    id = c.request("initialize", {"capabilities": {}})
    out["reply"] = c.response(id)
    c.reader.eof.wait(10)
    out["closed"] = c.reader.eof.is_set()
    c.close()
    return out


def test_tcp_needs_the_generated_token():
    proc, address, log = start_daemon("--listen", "tcp:127.0.0.1:0")
    port = int(address.rsplit(":", 1)[1])
    token_path = os.path.join(PRIVATE, "ghostline-tcp-%d.token" % port)
    try:
        out = as_intruder(intruder_tcp_attempt, port, token_path)
        assert out["token"] == "PermissionError", out
        assert out["reply"]["error"]["code"] == -32600, out
        assert "authentication required" in out["reply"]["error"]["message"], out
        assert out["closed"], out
        refused(out["reply"]["error"]["message"])
        # This user's `ghostline connect` reads the token file and is served.
        p = subprocess.Popen([BINARY, "connect", address], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, bufsize=0, env=env_with_xdg(PRIVATE))
        c = Client(lambda d: (p.stdin.write(d), p.stdin.flush()), lambda: p.stdout.read(65536), p.stdin.close)
        assert "result" in c.initialize()
        open_doc(c, "file:///t.py", "tcp")
        assert complete(c, "file:///t.py", 0, 3)["result"]["items"][0]["insertText"] == "<tcp>v1"
        c.close_write()
        assert p.wait(10) == 0
    finally:
        proc.terminate()
        proc.wait(10)
    assert "closing a connection that did not authenticate" in open(log).read()
    assert not os.path.exists(token_path)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: playing another local user needs root (to create the user %s); run as root, as CI does"
              % INTRUDER)
        sys.exit(77)
    intruder()
    sys.exit(run_tests(globals()))
