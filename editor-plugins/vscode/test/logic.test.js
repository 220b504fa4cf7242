// Unit tests of the extension's logic (out/logic.js, built from src/logic.ts by esbuild.mjs),
// in plain node: no VS Code needed.
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("fs");
const os = require("os");
const path = require("path");
const net = require("net");
const { spawn } = require("child_process");

const L = require("../out/logic.js");

function settings(over = {}) {
  return { ...L.DEFAULT_SETTINGS, ...over };
}

test("readSettings: defaults, clamping and wrong types", () => {
  const s = L.readSettings(() => undefined);
  assert.deepEqual(s, L.DEFAULT_SETTINGS);
  const values = {
    enabled: false,
    binaryPath: "  /opt/ghostline/bin/ghostline ",
    threads: 3.6,
    deadlineMs: 999999,
    maxTokens: -5,
    debounceMs: "fast",
    languages: ["python", "", 7, " rust "],
    daemonArgs: ["--log-level", "debug"],
  };
  const t = L.readSettings((k) => values[k]);
  assert.equal(t.enabled, false);
  assert.equal(t.binaryPath, "/opt/ghostline/bin/ghostline");
  assert.equal(t.threads, 4);
  assert.equal(t.deadlineMs, 60000);
  assert.equal(t.maxTokens, 0);
  assert.equal(t.debounceMs, 10, "a string falls back to the default");
  // The setting's earlier form, a list: those on, the other default languages off.
  assert.equal(L.enabledLanguages(t).join(","), "python,rust");
  assert.equal(t.languages.go, false);
  assert.deepEqual(t.daemonArgs, ["--log-level", "debug"]);
});

test("serverCommand: plain connect on PATH by default", () => {
  assert.deepEqual(L.serverCommand(settings(), {}), { command: "ghostline", args: ["connect"] });
});

test("serverCommand: address, model, draft, threads and extra daemon options after --", () => {
  const env = { HOME: "/home/u", MODELS: "/models" };
  const s = settings({
    binaryPath: "${env:MODELS}/../bin/ghostline",
    address: "/tmp/g.sock",
    model: "${env:MODELS}/code.gguf",
    draft: "/m/draft.gguf",
    threads: 2,
    daemonArgs: ["--record", "/tmp/rec.jsonl"],
  });
  assert.deepEqual(L.serverCommand(s, env), {
    command: "/models/../bin/ghostline",
    args: [
      "connect",
      "unix:/tmp/g.sock",
      "--",
      "--model",
      "/models/code.gguf",
      "--draft",
      "/m/draft.gguf",
      "--threads",
      "2",
      "--record",
      "/tmp/rec.jsonl",
    ],
  });
  assert.deepEqual(L.serverCommand(settings({ address: "tcp:127.0.0.1:7000" }), env).args, [
    "connect",
    "tcp:127.0.0.1:7000",
  ]);
  assert.deepEqual(L.serverCommand(settings({ address: "unix:/x.sock" }), env).args, ["connect", "unix:/x.sock"]);
});

test("expandPath: ~ and ${env:NAME}", () => {
  assert.equal(L.expandPath("~/m.gguf", {}, "/home/u"), "/home/u/m.gguf");
  assert.equal(L.expandPath("~", {}, "/home/u"), "/home/u");
  assert.equal(L.expandPath("${env:A}/x${env:MISSING}", { A: "/a" }, "/h"), "/a/x");
  assert.equal(L.expandPath("/abs/~x", {}, "/h"), "/abs/~x");
});

test("clientSettings carries exactly the daemon's session keys", () => {
  assert.deepEqual(
    L.clientSettings(
      settings({ enabled: false, debounceMs: 25, maxTokens: 16, deadlineMs: 120, completion: "line", languages: { markdown: false } }),
    ),
    { enabled: false, debounceMs: 25, maxTokens: 16, deadlineMs: 120, completion: "line", languages: { markdown: false } },
  );
});

test("completion and languages settings: values, wrong values and the languages they select", () => {
  const read = (values) => L.readSettings((k) => values[k]);
  assert.equal(read({ completion: "block" }).completion, "block");
  assert.equal(read({ completion: "paragraph" }).completion, "auto");
  const s = read({ languages: { markdown: true, lua: false, rust: "no", "": true } });
  assert.deepEqual(s.languages, { markdown: true, lua: false });
  const on = L.enabledLanguages(s);
  assert.ok(on.includes("markdown") && on.includes("python") && !on.includes("lua"), on.join(","));
  assert.deepEqual(L.enabledLanguages(settings()), L.DEFAULT_LANGUAGES);
  assert.equal(read({ languages: "python" }).languages, L.DEFAULT_SETTINGS.languages);
});

test("findBinary: a path must be an executable file; a name is looked up in PATH", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ghostline-bin-"));
  try {
    const bin = path.join(dir, "ghostline");
    fs.writeFileSync(bin, "#!/bin/sh\n", { mode: 0o755 });
    fs.writeFileSync(path.join(dir, "plain"), "", { mode: 0o644 });
    assert.equal(L.findBinary("ghostline", { PATH: "/nonexistent:" + dir }), bin);
    assert.equal(L.findBinary("ghostline", { PATH: "/nonexistent" }), undefined);
    assert.equal(L.findBinary(bin, {}), bin);
    assert.equal(L.findBinary(path.join(dir, "plain"), {}), undefined, "not executable");
    assert.equal(L.findBinary(dir, {}), undefined, "a directory");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a missing binary: the message names what was tried, the setting and the install step", () => {
  const m = L.binaryNotFoundMessage("ghostline", { PATH: "/usr/bin:/bin" });
  assert.match(m, /`ghostline` is not on PATH \(\/usr\/bin:\/bin\)/);
  assert.match(m, /"ghostline\.binaryPath"/);
  assert.match(m, /scripts\/setup --install/);
  assert.match(m, /~\/\.local\/bin/);
  assert.match(L.binaryNotFoundMessage("/opt/g/ghostline", {}), /\/opt\/g\/ghostline does not exist or is not executable/);
  // vscode-languageclient's error when spawn fails, and node's own.
  assert.equal(L.isSpawnNotFound(new Error("Launching server using command ghostline failed. Error: spawn ghostline ENOENT")), true);
  assert.equal(L.isSpawnNotFound(Object.assign(new Error("x"), { code: "ENOENT" })), true);
  assert.equal(L.isSpawnNotFound(new Error("the daemon stopped before listening")), false);
});

test("completionIdOf reads the id from the item's ghostline.completionAccepted command", () => {
  assert.equal(L.completionIdOf({ title: "", command: "ghostline.completionAccepted", arguments: [12] }), 12);
  assert.equal(L.completionIdOf({ command: "other", arguments: [12] }), undefined);
  assert.equal(L.completionIdOf({ command: "ghostline.completionAccepted", arguments: ["12"] }), undefined);
  assert.equal(L.completionIdOf(undefined), undefined);
});

test("OutcomeTracker: accepted, accepted in part, dismissed, typed over, each reported for its id", () => {
  const sent = [];
  const t = new L.OutcomeTracker((r) => sent.push([r.id, r.outcome, r.acceptedChars]));
  const show = (id, text) => t.shown({ id, text, uri: "file:///a.py", languageId: "python" });
  // Tab: VS Code inserts the text, then runs the item's command.
  show(1, "turn x");
  t.edited("file:///a.py", "turn x");
  t.accepted(1);
  // A word, then the daemon answers the rest again (a new id for the same completion), then Tab.
  show(2, "foo(bar)");
  t.beginPartialAccept();
  t.edited("file:///a.py", "foo");
  t.endPartialAccept();
  show(3, "(bar)");
  t.edited("file:///a.py", "(bar)");
  t.accepted(3);
  // Escape.
  show(4, "abc");
  t.dismissed();
  // Typing something else.
  show(5, "xyz");
  t.edited("file:///a.py", "q");
  // Typing its start (kept), then a new completion without typing more: the old one typed over.
  show(6, "hello");
  t.edited("file:///a.py", "he");
  show(7, "world");
  // A new completion with no edit since: the old one was dismissed (the cursor moved).
  show(8, "other");
  // Edits in other documents do not touch it.
  t.edited("file:///b.py", "zzz");
  t.dismissed();
  assert.deepEqual(sent, [
    [1, "accepted", 0],
    [2, "acceptedPartially", 3],
    [2, "accepted", 0],
    [4, "dismissed", 0],
    [5, "typedOver", 0],
    [6, "typedOver", 0],
    [7, "dismissed", 0],
    [8, "dismissed", 0],
  ]);
});

test("a daemon restart is needed only for daemon options; languages need a new client", () => {
  const a = settings();
  assert.equal(L.needsDaemonRestart(a, settings({ debounceMs: 50, enabled: false, maxTokens: 9 })), false);
  assert.equal(L.needsClientRestart(a, settings({ debounceMs: 50 })), false);
  assert.equal(L.needsDaemonRestart(a, settings({ model: "/m.gguf" })), true);
  assert.equal(L.needsDaemonRestart(a, settings({ threads: 2 })), true);
  assert.equal(L.needsDaemonRestart(a, settings({ daemonArgs: ["--no-prefetch"] })), true);
  assert.equal(L.needsDaemonRestart(a, settings({ languages: { python: false } })), false);
  assert.equal(L.needsClientRestart(a, settings({ languages: { python: false } })), true);
  assert.equal(L.needsClientRestart(a, settings({ completion: "line" })), false, "sent as a setting");
});

test("documentSelector: every language on file, untitled and remote documents", () => {
  const sel = L.documentSelector(["python", "go"]);
  assert.equal(sel.length, 6);
  assert.deepEqual(sel[0], { scheme: "file", language: "python" });
  assert.ok(sel.some((d) => d.scheme === "untitled" && d.language === "go"));
});

test("socket and daemon log paths mirror ghostline connect's defaults", () => {
  assert.equal(L.defaultSocketPath({ XDG_RUNTIME_DIR: "/run/user/1000" }, 1000), "/run/user/1000/ghostline.sock");
  assert.equal(L.defaultSocketPath({ XDG_RUNTIME_DIR: "/run/user/1000/" }, 1000), "/run/user/1000/ghostline.sock");
  assert.equal(L.defaultSocketPath({}, 1000), "/tmp/ghostline-1000/ghostline.sock");
  assert.equal(L.defaultSocketPath({ XDG_RUNTIME_DIR: "" }, 1000), "/tmp/ghostline-1000/ghostline.sock");
  assert.equal(L.socketPathOf(settings(), {}, 7), "/tmp/ghostline-7/ghostline.sock");
  assert.equal(L.daemonLogPath(settings(), {}, 7), "/tmp/ghostline-7/ghostline.sock.log");
  assert.equal(L.socketPathOf(settings({ address: "unix:/a/b.sock" }), {}), "/a/b.sock");
  assert.equal(L.socketPathOf(settings({ address: "tcp:7000" }), {}), undefined);
  assert.equal(L.daemonLogPath(settings({ address: "unix:/a/b.sock" }), {}), "/a/b.sock.log");
  assert.equal(L.daemonLogPath(settings({ address: "tcp:localhost:7000" }), {}), undefined);
});

test("status text: states, latency and languages", () => {
  const starting = L.formatStatus({ state: "starting" });
  assert.match(starting.text, /loading~spin/);
  assert.match(starting.tooltip, /loading the model/);
  const ready = L.formatStatus({ state: "ready", lastLatencyMs: 42.4, completions: 3, detail: "Model: m.gguf" });
  assert.equal(ready.text, "$(sparkle) Ghostline 42 ms");
  assert.match(ready.tooltip, /Last completion: 42 ms/);
  assert.match(ready.tooltip, /Model: m.gguf/);
  assert.match(ready.tooltip, /shown this session: 3/);
  const err = L.formatStatus({ state: "error", detail: "no model is loaded" });
  assert.match(err.text, /\$\(error\)/);
  assert.match(err.tooltip, /Error: no model is loaded/);
  assert.match(L.formatStatus({ state: "disabled" }).text, /circle-slash/);
  const off = L.formatStatus({ state: "ready", language: "markdown", languageEnabled: false });
  assert.match(off.tooltip, /Not enabled for 'markdown'/);
  assert.equal(L.formatMs(3.25), "3.3 ms");
  assert.equal(L.formatMs(12345), "12.3 s");
});

test("LatencyTracker: last, shown count, percentiles over a bounded window", () => {
  const t = new L.LatencyTracker(4);
  assert.equal(t.percentile(50), undefined);
  for (const [ms, n] of [[10, 1], [30, 0], [20, 1], [40, 1], [50, 1]]) t.record(ms, n);
  assert.equal(t.last, 50);
  assert.equal(t.shown, 4);
  assert.equal(t.count, 4, "only the last 4 are kept");
  assert.equal(t.percentile(50), 30);
  assert.equal(t.percentile(100), 50);
  assert.equal(t.percentile(0), 20);
});

test("classifyLogMessage spots the daemon's missing-model warning", () => {
  assert.equal(
    L.classifyLogMessage("ghostline: no model is loaded, so no completions will be shown: models/x.gguf: not found"),
    "noModel",
  );
  assert.equal(L.classifyLogMessage("ghostline: setting 'debounceMs' must be an integer"), undefined);
});

test("completionUpdated re-requests only for the same document, version and cursor", () => {
  const p = { textDocument: { uri: "file:///w/a.py" }, version: 7, position: { line: 3, character: 12 } };
  const editor = { uri: "file:///w/a.py", version: 7, line: 3, character: 12, selectionEmpty: true };
  assert.equal(L.shouldRerequest(p, editor, true), true);
  assert.equal(L.shouldRerequest(p, editor, false), false, "disabled");
  assert.equal(L.shouldRerequest(p, undefined, true), false, "no editor");
  assert.equal(L.shouldRerequest(p, { ...editor, version: 8 }, true), false, "edited since");
  assert.equal(L.shouldRerequest(p, { ...editor, character: 13 }, true), false, "cursor moved");
  assert.equal(L.shouldRerequest(p, { ...editor, line: 4 }, true), false, "cursor moved");
  assert.equal(L.shouldRerequest(p, { ...editor, uri: "file:///w/b.py" }, true), false, "other document");
  assert.equal(L.shouldRerequest(p, { ...editor, selectionEmpty: false }, true), false, "selection");
  assert.equal(
    L.shouldRerequest({ ...p, textDocument: { uri: "file:///c%3A/w/a.py" } }, { ...editor, uri: "file:///c:/w/a.py" }, true),
    true,
    "percent-encoding differences",
  );
  for (const bad of [null, {}, { ...p, version: "7" }, { ...p, position: { line: 3 } }, { version: 7, position: p.position }])
    assert.equal(L.shouldRerequest(bad, editor, true), false, JSON.stringify(bad));
});

test("advertisesCompletionUpdated reads experimental.ghostline.completionUpdated", () => {
  assert.equal(L.advertisesCompletionUpdated({ experimental: { ghostline: { completionUpdated: true } } }), true);
  assert.equal(L.advertisesCompletionUpdated({ experimental: { ghostlineStats: true } }), false);
  assert.equal(L.advertisesCompletionUpdated(undefined), false);
  assert.equal(L.advertisesCompletionUpdated({ experimental: { ghostline: { completionUpdated: "yes" } } }), false);
});

test("listeningSocketInodes parses /proc/net/unix", () => {
  const table = [
    "Num       RefCount Protocol Flags    Type St Inode Path",
    "0000000000000000: 00000002 00000000 00010000 0001 01 41234 /run/user/1000/ghostline.sock",
    "0000000000000000: 00000003 00000000 00000000 0001 03 41240 /run/user/1000/ghostline.sock",
    "0000000000000000: 00000002 00000000 00010000 0001 01 51000 /tmp/other.sock",
    "0000000000000000: 00000002 00000000 00010000 0001 01 51001 /tmp/with space.sock",
    "",
  ].join("\n");
  assert.deepEqual(L.listeningSocketInodes(table, "/run/user/1000/ghostline.sock"), ["41234"]);
  assert.deepEqual(L.listeningSocketInodes(table, "/tmp/with space.sock"), ["51001"]);
  assert.deepEqual(L.listeningSocketInodes(table, "/nowhere.sock"), []);
});

test("daemonPids finds the process listening on a unix socket (Linux /proc)", { skip: process.platform !== "linux" }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ghostline-test-"));
  const sock = path.join(dir, "d.sock");
  // A stand-in daemon: a node process whose argv holds "serve", listening on the socket.
  const child = spawn(
    process.execPath,
    ["-e", `require("net").createServer().listen(process.argv[1], () => console.log("up"))`, sock, "serve"],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  try {
    await new Promise((resolve, reject) => {
      child.stdout.once("data", resolve);
      child.once("exit", reject);
    });
    assert.deepEqual(L.daemonPids(sock), [child.pid]);
    // A process merely connected to it is not the daemon.
    const c = net.createConnection(sock);
    await new Promise((r) => c.once("connect", r));
    assert.deepEqual(L.daemonPids(sock), [child.pid]);
    c.destroy();
    assert.deepEqual(L.daemonPids(path.join(dir, "none.sock")), []);
  } finally {
    child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("package.json declares every setting the extension reads, with the same defaults, and every command", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
  const props = pkg.contributes.configuration.properties;
  for (const [key, value] of Object.entries(L.DEFAULT_SETTINGS)) {
    assert.ok(props["ghostline." + key], "ghostline." + key + " is declared");
    assert.deepEqual(props["ghostline." + key].default, value, "default of ghostline." + key);
  }
  assert.ok(props["ghostline.trace.server"], "ghostline.trace.server (read by vscode-languageclient)");
  const source = fs.readFileSync(path.join(__dirname, "..", "src", "extension.ts"), "utf8");
  const registered = [...source.matchAll(/registerCommand\("([^"]+)"/g)].map((m) => m[1]).sort();
  const declared = pkg.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual(registered, declared);
  assert.equal(pkg.main, "./dist/extension.js");
  assert.match(pkg.engines.vscode, /^\^1\.9[1-9]/, "vscode-languageclient 11 needs ^1.91");
});
