// The extension's own logic, free of the `vscode` module so that it runs (and is tested) in
// plain node: settings to a daemon command line, the daemon's client settings, the status-bar
// text, latency tracking, when a `ghostline/completionUpdated` notification re-requests, and
// finding the shared daemon's process for "Restart Daemon".

import * as fs from "fs";
import * as os from "os";
import * as path from "path";

export const DEFAULT_LANGUAGES = [
  "python",
  "javascript",
  "javascriptreact",
  "typescript",
  "typescriptreact",
  "c",
  "cpp",
  "go",
  "rust",
  "java",
  "lua",
];

/** The extension's settings (section `ghostline`), as read from the configuration. */
export interface Settings {
  enabled: boolean;
  binaryPath: string;
  address: string;
  model: string;
  draft: string;
  threads: number;
  deadlineMs: number;
  maxTokens: number;
  debounceMs: number;
  languages: string[];
  daemonArgs: string[];
}

export const DEFAULT_SETTINGS: Settings = {
  enabled: true,
  binaryPath: "",
  address: "",
  model: "",
  draft: "",
  threads: 0,
  deadlineMs: 0,
  maxTokens: 0,
  debounceMs: 10,
  languages: DEFAULT_LANGUAGES,
  daemonArgs: [],
};

type Getter = (key: string) => unknown;

function asString(v: unknown, fallback: string): string {
  return typeof v === "string" ? v.trim() : fallback;
}

function asInt(v: unknown, fallback: number, lo: number, hi: number): number {
  if (typeof v !== "number" || !Number.isFinite(v)) return fallback;
  return Math.min(hi, Math.max(lo, Math.round(v)));
}

function asStrings(v: unknown, fallback: string[]): string[] {
  if (!Array.isArray(v)) return fallback;
  return v.filter((s): s is string => typeof s === "string" && s.trim() !== "").map((s) => s.trim());
}

/** Reads and clamps the settings; `get` returns undefined for a key that is not set. */
export function readSettings(get: Getter): Settings {
  const d = DEFAULT_SETTINGS;
  return {
    enabled: typeof get("enabled") === "boolean" ? (get("enabled") as boolean) : d.enabled,
    binaryPath: asString(get("binaryPath"), d.binaryPath),
    address: asString(get("address"), d.address),
    model: asString(get("model"), d.model),
    draft: asString(get("draft"), d.draft),
    threads: asInt(get("threads"), d.threads, 0, 1024),
    deadlineMs: asInt(get("deadlineMs"), d.deadlineMs, 0, 60000),
    maxTokens: asInt(get("maxTokens"), d.maxTokens, 0, 4096),
    debounceMs: asInt(get("debounceMs"), d.debounceMs, 0, 2000),
    languages: asStrings(get("languages"), d.languages),
    daemonArgs: asStrings(get("daemonArgs"), d.daemonArgs),
  };
}

/** Expands `~` and `${env:NAME}` in a path setting. */
export function expandPath(p: string, env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string {
  let out = p.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? "");
  if (out === "~") out = home;
  else if (out.startsWith("~/")) out = path.join(home, out.slice(2));
  return out;
}

/** The server command: `ghostline connect [ADDR] -- [daemon options]`. */
export function serverCommand(s: Settings, env: NodeJS.ProcessEnv = process.env): { command: string; args: string[] } {
  const command = s.binaryPath ? expandPath(s.binaryPath, env) : "ghostline";
  const args = ["connect"];
  if (s.address) args.push(s.address.includes(":") ? s.address : "unix:" + expandPath(s.address, env));
  const serve: string[] = [];
  if (s.model) serve.push("--model", expandPath(s.model, env));
  if (s.draft) serve.push("--draft", expandPath(s.draft, env));
  if (s.threads > 0) serve.push("--threads", String(s.threads));
  serve.push(...s.daemonArgs);
  if (serve.length) args.push("--", ...serve);
  return { command, args };
}

/** The per-session settings the daemon accepts (initializationOptions, didChangeConfiguration). */
export function clientSettings(s: Settings): {
  enabled: boolean;
  debounceMs: number;
  maxTokens: number;
  deadlineMs: number;
} {
  return { enabled: s.enabled, debounceMs: s.debounceMs, maxTokens: s.maxTokens, deadlineMs: s.deadlineMs };
}

/** True when a change of settings needs a new daemon (they are daemon options, not session ones). */
export function needsDaemonRestart(a: Settings, b: Settings): boolean {
  const key = (s: Settings) => JSON.stringify(serverCommand(s, {}));
  return key(a) !== key(b);
}

/** True when a change of settings needs a new client (the document selector). */
export function needsClientRestart(a: Settings, b: Settings): boolean {
  return a.languages.join("\n") !== b.languages.join("\n") || needsDaemonRestart(a, b);
}

export function documentSelector(languages: string[]): { scheme: string; language: string }[] {
  const out: { scheme: string; language: string }[] = [];
  for (const language of languages)
    for (const scheme of ["file", "untitled", "vscode-remote"]) out.push({ scheme, language });
  return out;
}

/**
 * The socket `ghostline connect` uses when no address is given, in the user's private directory:
 * $XDG_RUNTIME_DIR, else /tmp/ghostline-UID/ (mirrors lsp/private_dir.cpp; connect makes and
 * checks the directory).
 */
export function defaultSocketPath(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string {
  const dir = env.XDG_RUNTIME_DIR?.replace(/(.)\/+$/, "$1");
  return (dir ? dir : "/tmp/ghostline-" + uid) + "/ghostline.sock";
}

/** The unix socket path the settings connect to, or undefined for a TCP address. */
export function socketPathOf(s: Settings, env: NodeJS.ProcessEnv = process.env, uid?: number): string | undefined {
  if (!s.address) return defaultSocketPath(env, uid);
  if (s.address.startsWith("unix:")) return expandPath(s.address.slice(5), env);
  if (s.address.includes(":")) return undefined;
  return expandPath(s.address, env);
}

/** Where a daemon started by `ghostline connect` logs (its `--log-file` default). */
export function daemonLogPath(s: Settings, env: NodeJS.ProcessEnv = process.env, uid?: number): string | undefined {
  const sock = socketPathOf(s, env, uid);
  return sock === undefined ? undefined : sock + ".log";
}

// ---- status bar ----

export type State = "starting" | "ready" | "error" | "disabled" | "stopped";

export interface StatusInput {
  state: State;
  detail?: string;
  lastLatencyMs?: number;
  completions?: number;
  language?: string;
  languageEnabled?: boolean;
}

export function formatStatus(s: StatusInput): { text: string; tooltip: string } {
  const lines = ["Ghostline"];
  let text: string;
  switch (s.state) {
    case "starting":
      text = "$(loading~spin) Ghostline";
      lines.push("Starting the daemon and loading the model...");
      break;
    case "ready":
      text = "$(sparkle) Ghostline";
      if (s.lastLatencyMs !== undefined) text += " " + formatMs(s.lastLatencyMs);
      lines.push("Ready.");
      break;
    case "error":
      text = "$(error) Ghostline";
      lines.push("Error" + (s.detail ? ": " + s.detail : "."));
      break;
    case "disabled":
      text = "$(circle-slash) Ghostline";
      lines.push("Disabled (Ghostline: Enable Completions turns it on).");
      break;
    case "stopped":
      text = "$(debug-stop) Ghostline";
      lines.push("Stopped" + (s.detail ? ": " + s.detail : "."));
      break;
  }
  if (s.state === "ready" && s.detail) lines.push(s.detail);
  if (s.lastLatencyMs !== undefined) lines.push("Last completion: " + formatMs(s.lastLatencyMs));
  if (s.completions !== undefined) lines.push("Completions shown this session: " + s.completions);
  if (s.language !== undefined && s.languageEnabled === false)
    lines.push("Not enabled for '" + s.language + "' (setting ghostline.languages).");
  lines.push("Click for commands.");
  return { text, tooltip: lines.join("\n") };
}

export function formatMs(ms: number): string {
  if (ms < 10) return ms.toFixed(1) + " ms";
  if (ms < 10000) return Math.round(ms) + " ms";
  return (ms / 1000).toFixed(1) + " s";
}

/** Latency of inline-completion requests, from request to reply. Cancelled ones are not counted. */
export class LatencyTracker {
  private recent: number[] = [];
  last?: number;
  shown = 0;
  constructor(private readonly keep = 100) {}
  record(ms: number, itemCount: number): void {
    this.last = ms;
    if (itemCount > 0) this.shown++;
    this.recent.push(ms);
    if (this.recent.length > this.keep) this.recent.shift();
  }
  percentile(p: number): number | undefined {
    if (!this.recent.length) return undefined;
    const sorted = [...this.recent].sort((a, b) => a - b);
    const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
    return sorted[i];
  }
  get count(): number {
    return this.recent.length;
  }
}

/** Log messages the daemon sends that change the status: a missing model is an error state. */
export function classifyLogMessage(message: string): "noModel" | undefined {
  return /no model is loaded/.test(message) ? "noModel" : undefined;
}

// ---- growing ghost text ----

export interface CompletionUpdatedParams {
  textDocument: { uri: string };
  version: number;
  position: { line: number; character: number };
}

export interface EditorState {
  uri: string;
  version: number;
  line: number;
  character: number;
  selectionEmpty: boolean;
}

export function isCompletionUpdatedParams(p: unknown): p is CompletionUpdatedParams {
  const o = p as CompletionUpdatedParams;
  return (
    !!o &&
    typeof o === "object" &&
    !!o.textDocument &&
    typeof o.textDocument.uri === "string" &&
    Number.isInteger(o.version) &&
    !!o.position &&
    Number.isInteger(o.position.line) &&
    Number.isInteger(o.position.character)
  );
}

/**
 * Whether a `ghostline/completionUpdated` notification should re-request the inline completion:
 * only when completions are on, the editor shows that document at that version (no edit since),
 * and the cursor is still where the completion was asked for, with nothing selected.
 */
export function shouldRerequest(p: unknown, editor: EditorState | undefined, enabled: boolean): boolean {
  if (!enabled || !editor || !isCompletionUpdatedParams(p)) return false;
  return (
    sameUri(p.textDocument.uri, editor.uri) &&
    p.version === editor.version &&
    p.position.line === editor.line &&
    p.position.character === editor.character &&
    editor.selectionEmpty
  );
}

/** URIs compared as the LSP client sends them, tolerating a different percent-encoding case. */
export function sameUri(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return decodeURIComponent(a) === decodeURIComponent(b);
  } catch {
    return false;
  }
}

/** Whether the daemon said in its initialize result that it sends `ghostline/completionUpdated`. */
export function advertisesCompletionUpdated(capabilities: unknown): boolean {
  const c = capabilities as { experimental?: { ghostline?: { completionUpdated?: unknown } } };
  return c?.experimental?.ghostline?.completionUpdated === true;
}

// ---- the shared daemon's process (Linux) ----

/** Inodes of listening unix sockets bound to `socketPath`, from the text of /proc/net/unix. */
export function listeningSocketInodes(procNetUnix: string, socketPath: string): string[] {
  const inodes: string[] = [];
  for (const line of procNetUnix.split("\n").slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const flags = parseInt(f[3], 16);
    const listening = (flags & 0x10000) !== 0; // __SO_ACCEPTCON
    if (listening && f.slice(7).join(" ") === socketPath) inodes.push(f[6]);
  }
  return inodes;
}

/** Pids of `ghostline serve` processes holding one of `inodes` (reads /proc; Linux only). */
export function pidsHoldingSockets(inodes: string[], procRoot = "/proc"): number[] {
  if (!inodes.length) return [];
  const wanted = new Set(inodes.map((i) => "socket:[" + i + "]"));
  const pids: number[] = [];
  let entries: string[] = [];
  try {
    entries = fs.readdirSync(procRoot);
  } catch {
    return [];
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = fs.readFileSync(path.join(procRoot, name, "cmdline"), "latin1").split("\0");
      if (!cmdline.includes("serve")) continue;
      const fdDir = path.join(procRoot, name, "fd");
      for (const fd of fs.readdirSync(fdDir)) {
        let target = "";
        try {
          target = fs.readlinkSync(path.join(fdDir, fd));
        } catch {
          continue;
        }
        if (wanted.has(target)) {
          pids.push(Number(name));
          break;
        }
      }
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

/** Pids of the daemon listening on `socketPath`, or [] where /proc cannot tell. */
export function daemonPids(socketPath: string, procRoot = "/proc"): number[] {
  let table = "";
  try {
    table = fs.readFileSync(path.join(procRoot, "net", "unix"), "utf8");
  } catch {
    return [];
  }
  return pidsHoldingSockets(listeningSocketInodes(table, socketPath), procRoot);
}
