#!/usr/bin/env python3
"""End-to-end test of the Neovim plugin in the real `nvim`, inside tmux, typed into as a person
would (tmux send-keys) and read back from the screen (tmux capture-pane).

Session 1, the default model: open a Python file, type, find the ghost text on the screen by its
colour, render the screen to PNG, accept it with Tab, save, and compare the file with the typed
text plus the ghost text that was on the screen. When the daemon advertises
`experimental.ghostline.completionUpdated`, also check that ghost text grows without a keystroke.

Session 2, the daemon's scripted completer (each completion takes 300 ms and reads `<WORD>vN`):
type slowly so that each keystroke makes the pending request stale, check that the plugin sent
`$/cancelRequest` for them (from the daemon's --record file), accept a word and a line, dismiss.

  e2e.py GHOSTLINE_BINARY [--artifacts DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN = os.path.dirname(HERE)
PLUGINS = os.path.dirname(PLUGIN)
sys.path.insert(0, PLUGINS)
from daemon_capabilities import stop_daemon  # noqa: E402
GHOST_COLOR = 244  # GhostlineSuggestion's ctermfg in this test: how the ghost text is found on screen
WIDTH, HEIGHT = 110, 24

results = []


def ok(name, detail=""):
    results.append((name, True))
    print("ok   %s%s" % (name, ": " + detail if detail else ""), flush=True)


def fail(name, detail):
    results.append((name, False))
    print("FAIL %s: %s" % (name, detail), flush=True)


def check(name, cond, detail=""):
    (ok if cond else fail)(name, detail)
    return cond


class Tmux:
    def __init__(self, socket_name):
        self.base = ["tmux", "-L", socket_name, "-f", "/dev/null"]

    def run(self, *args, check=True):
        return subprocess.run(self.base + list(args), check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True).stdout

    def start(self, command, env):
        self.run("new-session", "-d", "-s", "e2e", "-x", str(WIDTH), "-y", str(HEIGHT), "-e", "TERM=screen-256color",
                 *[x for k, v in env.items() for x in ("-e", "%s=%s" % (k, v))], command)
        self.run("set-option", "-g", "default-terminal", "screen-256color")
        self.run("set-option", "-s", "escape-time", "10")

    def keys(self, *keys):
        self.run("send-keys", "-t", "e2e", *keys)

    def type(self, text, delay=0.08):
        for ch in text:
            self.run("send-keys", "-t", "e2e", "-l", ch)
            time.sleep(delay)

    def capture(self):
        return self.run("capture-pane", "-p", "-e", "-t", "e2e")

    def kill(self):
        self.run("kill-server", check=False)


def screen_cells(capture):
    """Rows of (char, is_ghost) from a capture with escapes: ghost cells have fg colour 244."""
    rows = []
    for line in capture.split("\n"):
        fg = None
        cells = []
        for m in re.finditer(r"\x1b\[([0-9;]*)m|(.)", line):
            if m.group(2) is not None:
                cells.append((m.group(2), fg == GHOST_COLOR))
                continue
            codes = [int(c) if c else 0 for c in m.group(1).split(";")]
            i = 0
            while i < len(codes):
                if codes[i] in (0, 39):
                    fg = None
                elif codes[i] == 38 and i + 2 < len(codes) and codes[i + 1] == 5:
                    fg = codes[i + 2]
                    i += 2
                elif codes[i] == 48 and i + 2 < len(codes) and codes[i + 1] == 5:
                    i += 2
                elif 30 <= codes[i] <= 37 or 90 <= codes[i] <= 97:
                    fg = codes[i]
                i += 1
        rows.append(cells)
    return rows


def ghost_on_screen(capture):
    """(text of the row holding the ghost text without it, the ghost text) or None. Lines of a
    multi-line ghost text are whole rows in the ghost colour under the first."""
    rows = screen_cells(capture)
    for y, cells in enumerate(rows):
        ghost_x = [x for x, (_, g) in enumerate(cells) if g]
        if not ghost_x:
            continue
        first = ghost_x[0]
        real = "".join(c for c, g in cells[:first])
        text = "".join(c for c, g in cells if g).rstrip()
        more = []
        for row in rows[y + 1:]:
            if row and any(g for _, g in row) and all(g or c == " " for c, g in row):
                more.append("".join(c for c, g in row).rstrip())
            else:
                break
        return real, "\n".join([text] + more)
    return None


def real_text_of_row(capture, prefix):
    """The non-ghost text of the first screen row that starts with `prefix`."""
    for cells in screen_cells(capture):
        line = "".join(c for c, g in cells if not g).rstrip()
        if line.startswith(prefix):
            return line
    return None


def wait_for(what, fn, timeout, every=0.05):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise TimeoutError("timed out after %.0f s waiting for %s" % (timeout, what))


def read_recording(path):
    """The daemon's recorded messages so far; a last line it is still writing is left out."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip() and l.endswith("\n")]


INIT = r"""
vim.opt.runtimepath:prepend(%(plugin)s)
vim.o.swapfile = false
vim.o.laststatus = 2
vim.o.termguicolors = false
vim.o.autoindent = false
vim.o.expandtab = true
vim.o.number = true
vim.cmd('filetype indent off')
vim.cmd('syntax on')
vim.o.statusline = " %%f %%m%%= %%{v:lua.require'ghostline'.status()}  %%l:%%c "
require('ghostline').setup({
  cmd = %(binary)s,
  address = %(address)s,
  daemon_args = %(daemon_args)s,
  debounce_ms = 20,
})
vim.cmd('highlight GhostlineSuggestion ctermfg=%(color)d')
"""


def lua_str(s):
    return json.dumps(s)


def lua_list(items):
    return "{" + ", ".join(lua_str(i) for i in items) + "}"


def daemon_outcomes(binary, sock, artifacts, name):
    """The daemon's acceptance counts through `ghostline stats`: its table is printed and kept in
    the artifacts; returns the "outcomes" rows of its --json answer, by language."""
    table = subprocess.run([binary, "stats", "unix:" + sock], capture_output=True, text=True, timeout=30)
    with open(os.path.join(artifacts, "nvim-%s-stats.txt" % name), "w") as f:
        f.write(table.stdout + table.stderr)
    print("ghostline stats (%s session):\n%s" % (name, table.stdout), flush=True)
    r = subprocess.run([binary, "stats", "unix:" + sock, "--json"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return {}
    return {row["language"]: row for row in json.loads(r.stdout).get("outcomes", [])}


class Session:
    def __init__(self, name, tmp, binary, daemon_args, initial, filename, extra_env=None):
        self.name = name
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, "ghostline.sock")
        self.record = os.path.join(self.dir, "record.jsonl")
        self.file = os.path.join(self.dir, filename)
        with open(self.file, "w") as f:
            f.write(initial)
        init = os.path.join(self.dir, "init.lua")
        with open(init, "w") as f:
            f.write(INIT % {"plugin": lua_str(PLUGIN), "binary": lua_str(binary), "address": lua_str("unix:" + self.sock),
                            "daemon_args": lua_list(["--record", self.record] + daemon_args), "color": GHOST_COLOR})
        self.tmux = Tmux("ghostline-e2e-%d-%s" % (os.getpid(), name))
        env = {"HOME": self.dir, "XDG_STATE_HOME": os.path.join(self.dir, "state"),
               "XDG_CACHE_HOME": os.path.join(self.dir, "cache"), "XDG_CONFIG_HOME": os.path.join(self.dir, "config"),
               "XDG_RUNTIME_DIR": self.dir}
        for k in ("GHOSTLINE_MODEL_DIR", "PATH"):
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(extra_env or {})
        self.tmux.start("cd %s && nvim -u %s -i NONE %s" % (self.dir, init, filename), env)

    def wait_ready(self):
        return wait_for("the statusline to say 'ghostline: ready'", lambda: "ghostline: ready" in self.tmux.capture(), 60)

    def lua(self, expr, out):
        """Runs a Lua expression from normal mode and returns what it wrote to `out`."""
        path = os.path.join(self.dir, out)
        self.tmux.keys(":lua vim.fn.writefile({vim.fn.json_encode(%s)}, %s)" % (expr, lua_str(path)), "Enter")

        # The file exists before nvim has written all of it: wait for a whole JSON value (in a
        # list, so that a value such as 0 counts as written).
        def written():
            try:
                with open(path) as f:
                    return [json.loads(f.read())]
            except (OSError, ValueError):
                return None

        return wait_for("%s to be written" % out, written, 10)[0]

    def close(self, artifacts):
        self.tmux.kill()
        stop_daemon(self.sock)
        for src, dst in ((self.record, "nvim-%s-record.jsonl" % self.name), (self.sock + ".log", "nvim-%s-daemon.log" % self.name)):
            if os.path.exists(src):
                shutil.copy(src, os.path.join(artifacts, dst))


INITIAL_1 = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"
TYPED_1 = "    return a"
# Typed key by key after TYPED_1 until ghost text shows, should the model (whose top choice can
# differ slightly between CPUs) have nothing to show after TYPED_1 itself.
FALLBACK_1 = " * b"
# Typed after accepting, key by key: the ghost text comes and goes, nothing is accepted.
MORE_1 = "\n\n\ndef div(a, b):\n    return a / b"


def session_model(tmp, binary, artifacts, grows):
    s = Session("model", tmp, binary, ["--log-level", "debug"], INITIAL_1, "ops.py")
    try:
        s.wait_ready()
        ok("nvim starts the daemon through ghostline connect; statusline says ready")
        s.tmux.keys("G", "o")
        s.tmux.type(TYPED_1)
        typed = TYPED_1
        found = None
        for ch in [None] + list(FALLBACK_1):
            if ch is not None:
                s.tmux.type(ch)
                typed += ch
            try:
                found = wait_for("ghost text on the screen", lambda: ghost_on_screen(s.tmux.capture()), 8 if ch is None else 4)
                break
            except TimeoutError:
                pass
        if not found:
            with open(os.path.join(artifacts, "nvim-no-ghost.txt"), "w") as f:
                f.write(s.tmux.capture())
            fail("ghost text appears while typing", "none after typing %r" % typed)
            return
        real, ghost = found
        time.sleep(0.3)
        capture = s.tmux.capture()
        real, ghost = ghost_on_screen(capture) or (real, ghost)
        check("ghost text appears while typing", real.endswith(typed), "%r after %r" % (ghost, real))
        with open(os.path.join(artifacts, "nvim-ghost-text.txt"), "w") as f:
            f.write(capture)
        png = os.path.join(artifacts, "nvim-ghost-text.png")
        r = subprocess.run(["/usr/bin/python3", os.path.join(PLUGINS, "render_terminal.py"),
                            os.path.join(artifacts, "nvim-ghost-text.txt"), png,
                            "--title", "nvim %s, tmux capture-pane" % nvim_version()], capture_output=True, text=True)
        check("screen capture rendered to PNG", r.returncode == 0 and os.path.exists(png), r.stderr[-500:] or png)
        status = re.search(r"ghostline: ready (\d+)ms", capture)
        check("statusline shows the last latency", status is not None, status.group(0) if status else capture.splitlines()[-2])

        s.tmux.keys("Tab")
        time.sleep(0.3)
        for i, part in enumerate(MORE_1.split("\n")):
            if i:
                s.tmux.keys("Enter")
                time.sleep(0.1)
            s.tmux.type(part)
        time.sleep(0.5)
        s.tmux.keys("Escape")
        time.sleep(0.2)
        s.tmux.keys(":w", "Enter")
        expected = INITIAL_1 + typed + ghost + MORE_1 + "\n"
        try:
            saved = wait_for("the file to be saved", lambda: (open(s.file).read() != INITIAL_1) and open(s.file).read(), 10)
        except TimeoutError:
            saved = open(s.file).read()
        check("Tab accepts: the buffer holds the typed text, the ghost text and what was typed after", saved == expected,
              "%r (expected %r)" % (saved[len(INITIAL_1):], expected[len(INITIAL_1):]))
        rows = daemon_outcomes(binary, s.sock, artifacts, "model")
        py = rows.get("python", {})
        check("ghostline stats: the completion accepted with Tab is counted, with its characters",
              py.get("accepted") == 1 and py.get("acceptedChars", 0) >= len(ghost)
              and py.get("shown") == py.get("accepted", 0) + py.get("acceptedPartially", 0) + py.get("dismissed", 0)
              + py.get("typedOver", 0) and py.get("acceptedLatencyMs") is not None, json.dumps(py))

        if not grows:
            print("skipped: daemon does not send completionUpdated (growing ghost text)", flush=True)
        else:
            # A 1 ms deadline: the first reply carries part of the completion, the rest comes
            # through ghostline/completionUpdated and the re-request it triggers.
            s.tmux.keys(":lua require('ghostline').config.deadline_ms = 1; require('ghostline').set_enabled(true)", "Enter")
            s.tmux.keys("G", "o")
            s.tmux.type(TYPED_1)
            first = wait_for("ghost text", lambda: ghost_on_screen(s.tmux.capture()), 15)
            time.sleep(3)
            later = ghost_on_screen(s.tmux.capture())
            s.tmux.keys("Escape")
            n = s.lua("require('ghostline').state.rerequests", "rerequests.json")
            check("growing ghost text: completionUpdated re-requested", n > 0 and later and len(later[1]) >= len(first[1]),
                  "%d re-request(s); %r -> %r" % (n, first[1], later and later[1]))
        check_one_request_per_state(read_recording(s.record))
        stats = s.lua("require('ghostline').stats()", "stats.json")
        check(":GhostlineStats data: client counters and the daemon's ghostline/stats",
              stats["client"]["completionsShown"] > 0 and "scheduler" in stats.get("daemon", {}),
              "shown %s, daemon completer %r" % (stats["client"]["completionsShown"], stats.get("daemon", {}).get("completer")))
        s.tmux.keys(":checkhealth ghostline", "Enter")
        health = wait_for("checkhealth", lambda: (lambda c: c if ("model loaded" in c or "ERROR" in c) else None)(s.tmux.capture()), 30)
        with open(os.path.join(artifacts, "nvim-checkhealth.txt"), "w") as f:
            f.write(re.sub(r"\x1b\[[0-9;]*m", "", health))
        check(":checkhealth ghostline: binary found, daemon answers, model loaded",
              "OK" in health and "the daemon answers" in health and "model loaded" in health and "ERROR" not in health,
              "see nvim-checkhealth.txt")
    finally:
        s.close(artifacts)


def check_one_request_per_state(rec):
    """Automatic requests: at most one per document state (edits so far) and position."""
    seen, dups, edits = set(), [], 0
    for r in rec:
        m = r["message"]
        if m.get("method") == "textDocument/didChange":
            edits += 1
        elif m.get("method") == "textDocument/inlineCompletion" and m["params"]["context"]["triggerKind"] == 2:
            key = (edits, m["params"]["position"]["line"], m["params"]["position"]["character"])
            if key in seen:
                dups.append(key)
            seen.add(key)
    check("one automatic request per edit and position (the debounce does not repeat itself)", not dups, repr(dups))


INITIAL_2 = "def f(foo, bar):\n"


def session_scripted(tmp, binary, artifacts):
    s = Session("scripted", tmp, binary, ["--scripted-completer", "300"], INITIAL_2, "f.py")
    try:
        s.wait_ready()
        s.tmux.keys("G", "o")
        s.tmux.type("    x = foo", delay=0.08)
        real, ghost = wait_for("scripted ghost text", lambda: ghost_on_screen(s.tmux.capture()), 10)
        check("scripted completion shown as ghost text", re.fullmatch(r"<foo>v\d+", ghost) is not None, repr(ghost))
        s.tmux.keys("M-w")
        line = wait_for("accept word", lambda: real_text_of_row(s.tmux.capture(), "  2     x = foo<"), 5)
        check("accept word (M-w) inserts the next word", line is not None and line.endswith("x = foo<"), repr(line))
        s.tmux.keys("M-l")
        rest = ghost[1:]
        line = wait_for("accept line", lambda: real_text_of_row(s.tmux.capture(), "  2     x = foo<" + rest), 5)
        check("accept line (M-l) inserts the rest of the line", line is not None, repr(line))
        s.tmux.type(" + bar", delay=0.08)
        wait_for("ghost text after ' + bar'", lambda: (lambda g: g if g and g[1].startswith("<bar>") else None)(
            ghost_on_screen(s.tmux.capture())), 10)
        s.tmux.keys("C-]")
        time.sleep(0.2)
        check("dismiss (C-]) removes the ghost text", ghost_on_screen(s.tmux.capture()) is None)
        s.tmux.keys("Escape")
        s.tmux.keys(":w", "Enter")
        expected = INITIAL_2 + "    x = foo" + ghost + " + bar\n"
        saved = wait_for("save", lambda: (open(s.file).read() != INITIAL_2) and open(s.file).read(), 10)
        check("the buffer holds the accepted word and line", saved == expected, repr(saved))
        rows = daemon_outcomes(binary, s.sock, artifacts, "scripted")
        py = rows.get("python", {})
        # M-w then M-l accepted one completion, word by word to its end: once, as accepted; C-]
        # dismissed the one after ' + bar'; those shown while typing ' + bar' were typed over.
        check("ghostline stats: accepted (in parts, to the end) and dismissed counted once each",
              py.get("model") == "scripted" and py.get("accepted") == 1 and py.get("acceptedPartially") == 0
              and py.get("dismissed") == 1 and py.get("acceptedChars") == len(ghost)
              and py.get("shown") == 2 + py.get("typedOver", 0), json.dumps(py))
        rec = read_recording(s.record)
        methods = [r["message"].get("method") for r in rec]
        cancels = methods.count("$/cancelRequest")
        requests = methods.count("textDocument/inlineCompletion")
        check("stale requests are cancelled with $/cancelRequest", cancels >= 5,
              "%d inlineCompletion, %d $/cancelRequest" % (requests, cancels))
        # Every cancellation follows the edit that made its request stale.
        order_ok = True
        last_change = -1
        pending_ids = {}
        for i, r in enumerate(rec):
            m = r["message"]
            if m.get("method") == "textDocument/didChange":
                last_change = i
            elif m.get("method") == "textDocument/inlineCompletion":
                pending_ids[m["id"]] = i
            elif m.get("method") == "$/cancelRequest":
                asked = pending_ids.get(m["params"]["id"])
                if asked is None:
                    order_ok = False
        check("each $/cancelRequest names a request the plugin sent", order_ok)
        check_one_request_per_state(rec)
    finally:
        s.close(artifacts)


def session_growing(tmp, artifacts):
    """The plugin's side of growing ghost text, against growing_server.py (a stand-in that sends
    ghostline/completionUpdated), whatever the daemon under test does."""
    log = os.path.join(tmp, "growing-server.jsonl")
    s = Session("growing", tmp, os.path.join(PLUGINS, "growing_server.py"), [], "x = 1\n", "g.py",
                {"GROWING_SERVER_LOG": log})
    try:
        s.wait_ready()
        s.tmux.keys("G", "o")
        s.tmux.type("y = ", delay=0.08)
        first = wait_for("the first part of the ghost text", lambda: ghost_on_screen(s.tmux.capture()), 5)
        grown = wait_for("the ghost text to grow without a keystroke", lambda: (lambda g: g if g and g[1] == "growing ghost text" else None)(
            ghost_on_screen(s.tmux.capture())), 5)
        check("growing ghost text (stand-in server): grows after ghostline/completionUpdated, no keystroke",
              grown is not None, "%r -> %r" % (first[1], grown[1]))
        entries = read_recording(log)
        notes = [e for e in entries if e.get("out") == "ghostline/completionUpdated"]
        invoked = [e for e in entries if (e.get("in") or {}).get("method") == "textDocument/inlineCompletion"
                   and e["in"]["params"]["context"]["triggerKind"] == 1]
        check("re-requests only for the notification that matches the buffer's version and cursor",
              len(invoked) == 1 and len(notes) >= 2, "%d notifications, %d re-requests" % (len(notes), len(invoked)))
        s.tmux.keys("Escape")
    finally:
        s.close(artifacts)


def nvim_version():
    out = subprocess.run(["nvim", "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0].replace("NVIM ", "") if out else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--artifacts", default=os.path.join(PLUGIN, "artifacts"))
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    os.makedirs(args.artifacts, exist_ok=True)
    caps = json.loads(subprocess.run([sys.executable, os.path.join(PLUGINS, "daemon_capabilities.py"), binary],
                                     check=True, capture_output=True, text=True).stdout)
    grows = ((caps.get("experimental") or {}).get("ghostline") or {}).get("completionUpdated") is True
    print("nvim %s, tmux %s" % (nvim_version(), subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()))
    tmp = tempfile.mkdtemp(prefix="ghostline-nvim-e2e-")
    try:
        for fn in (lambda: session_model(tmp, binary, args.artifacts, grows),
                   lambda: session_scripted(tmp, binary, args.artifacts),
                   lambda: session_growing(tmp, args.artifacts)):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                fail("nvim e2e session", "%s: %s" % (type(e).__name__, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    failed = [n for n, good in results if not good]
    print("neovim e2e: %d passed, %d failed (artifacts: %s)" % (len(results) - len(failed), len(failed), args.artifacts))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
