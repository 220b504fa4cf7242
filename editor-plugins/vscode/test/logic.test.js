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
  assert.deepEqual(t.languages, ["python", "rust"]);
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
  assert.deepEqual(L.clientSettings(settings({ enabled: false, debounceMs: 25, maxTokens: 16, deadlineMs: 120 })), {
    enabled: false,
    debounceMs: 25,
    maxTokens: 16,
    deadlineMs: 120,
  });
});

test("a daemon restart is needed only for daemon options; languages need a new client", () => {
  const a = settings();
  assert.equal(L.needsDaemonRestart(a, settings({ debounceMs: 50, enabled: false, maxTokens: 9 })), false);
  assert.equal(L.needsClientRestart(a, settings({ debounceMs: 50 })), false);
  assert.equal(L.needsDaemonRestart(a, settings({ model: "/m.gguf" })), true);
  assert.equal(L.needsDaemonRestart(a, settings({ threads: 2 })), true);
  assert.equal(L.needsDaemonRestart(a, settings({ daemonArgs: ["--no-prefetch"] })), true);
  assert.equal(L.needsDaemonRestart(a, settings({ languages: ["python"] })), false);
  assert.equal(L.needsClientRestart(a, settings({ languages: ["python"] })), true);
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
