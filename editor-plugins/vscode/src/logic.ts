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

/** How many lines a completion may have: the syntax decides, one at most, or several. */
export type CompletionShape = "auto" | "line" | "block";
export const COMPLETION_SHAPES: CompletionShape[] = ["auto", "line", "block"];

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
  completion: CompletionShape;
  /** Language id -> on/off, over DEFAULT_LANGUAGES (e.g. {"markdown": true, "lua": false}). */
  languages: Record<string, boolean>;
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
  completion: "auto",
  languages: {},
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

/**
 * The `languages` setting as a map. An array (the setting's earlier form: the languages that
 * get completions) switches those on and the other default languages off.
 */
function asLanguageMap(v: unknown, fallback: Record<string, boolean>): Record<string, boolean> {
  if (Array.isArray(v)) {
    const listed = asStrings(v, []);
    const map: Record<string, boolean> = {};
    for (const l of DEFAULT_LANGUAGES) map[l] = listed.includes(l);
    for (const l of listed) map[l] = true;
    return map;
  }
  if (!v || typeof v !== "object") return fallback;
  const map: Record<string, boolean> = {};
  for (const [k, on] of Object.entries(v as Record<string, unknown>))
    if (typeof on === "boolean" && k.trim() !== "") map[k.trim()] = on;
  return map;
}

/** The language ids that get completions: the defaults and those switched on, less those off. */
export function enabledLanguages(s: Settings): string[] {
  const out = DEFAULT_LANGUAGES.filter((l) => s.languages[l] !== false);
  for (const [l, on] of Object.entries(s.languages)) if (on && !out.includes(l)) out.push(l);
  return out;
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
    completion: COMPLETION_SHAPES.includes(get("completion") as CompletionShape)
      ? (get("completion") as CompletionShape)
      : d.completion,
    languages: asLanguageMap(get("languages"), d.languages),
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
  completion: CompletionShape;
  languages: Record<string, boolean>;
} {
  return {
    enabled: s.enabled,
    debounceMs: s.debounceMs,
    maxTokens: s.maxTokens,
    deadlineMs: s.deadlineMs,
    completion: s.completion,
    languages: s.languages,
  };
}

/** True when a change of settings needs a new daemon (they are daemon options, not session ones). */
export function needsDaemonRestart(a: Settings, b: Settings): boolean {
  const key = (s: Settings) => JSON.stringify(serverCommand(s, {}));
  return key(a) !== key(b);
}

/** True when a change of settings needs a new client (the document selector). */
export function needsClientRestart(a: Settings, b: Settings): boolean {
  return enabledLanguages(a).join("\n") !== enabledLanguages(b).join("\n") || needsDaemonRestart(a, b);
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

// ---- finding the binary ----

/**
 * The file the server command runs: `command` itself when it names a path, else the first
 * executable `command` in PATH; undefined when there is none (spawn would fail with ENOENT).
 */
export function findBinary(command: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const executable = (f: string) => {
    try {
      fs.accessSync(f, fs.constants.X_OK);
      return fs.statSync(f).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes("/")) return executable(command) ? command : undefined;
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const f = path.join(dir, command);
    if (executable(f)) return f;
  }
  return undefined;
}

/** What to tell a user whose `ghostline` cannot be started: what was tried and what to do. */
export function binaryNotFoundMessage(command: string, env: NodeJS.ProcessEnv = process.env): string {
  const tried = command.includes("/")
    ? `${command} does not exist or is not executable`
    : `\`${command}\` is not on PATH (${env.PATH ?? ""})`;
  return (
    `Ghostline cannot start its daemon: ${tried}. Set "ghostline.binaryPath" to the full path of ` +
    "the ghostline binary, or install it from a Ghostline checkout with `scripts/setup --install` " +
    "(into ~/.local/bin, which must be on the PATH that VS Code sees)."
  );
}

/** Whether an error from starting the server is the binary missing (or not executable). */
export function isSpawnNotFound(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  const text = e instanceof Error ? e.message : String(e);
  return code === "ENOENT" || code === "EACCES" || /\bspawn\b.*\b(ENOENT|EACCES)\b/.test(text);
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

// ---- what became of the completions shown ----

export type Outcome = "accepted" | "acceptedPartially" | "dismissed" | "typedOver";

export interface OutcomeReport {
  id: number;
  outcome: Outcome;
  acceptedChars: number;
  languageId?: string;
}

/** A completion the editor shows: the daemon's id, its text after the cursor, its document. */
export interface ShownCompletion {
  id: number;
  text: string;
  uri: string;
  languageId: string;
}

/** The daemon's id of an inline completion item, from its `ghostline.completionAccepted` command. */
export function completionIdOf(command: unknown): number | undefined {
  const c = command as { command?: unknown; arguments?: unknown[] } | undefined;
  if (!c || c.command !== "ghostline.completionAccepted" || !Array.isArray(c.arguments)) return undefined;
  const id = c.arguments[0];
  return typeof id === "number" && Number.isInteger(id) && id > 0 ? id : undefined;
}

const codePoints = (s: string) => [...s].length;

/**
 * Follows the completion VS Code shows and reports what became of it
 * (ghostline/completionOutcome). VS Code says when an item is accepted (its command runs); the
 * extension's own keybindings say when a word or line of it is accepted and when Escape
 * dismisses it; the rest is inferred: an edit that is not the start of the ghost text types
 * over it, and a new item shown without such an edit dismissed the one before. The daemon keeps
 * the best fate it was told for each id, so a report that arrives early (an edit seen before the
 * acceptance's command) is corrected by the later one.
 */
export class OutcomeTracker {
  private current?: ShownCompletion & { consumed: number; accepted: number };
  private aliases = new Map<number, number>();
  private partial = false;

  constructor(private readonly send: (r: OutcomeReport) => void) {}

  /** VS Code shows `c` (the first item of an answer). */
  shown(c: ShownCompletion): void {
    const cur = this.current;
    if (cur && cur.id === c.id) return;
    // The rest of the completion shown, answered again (typed through, accepted in part): the
    // same completion.
    if (cur && cur.uri === c.uri && cur.text.slice(cur.consumed) === c.text) {
      this.aliases.set(c.id, cur.id);
      return;
    }
    if (cur) this.finish(cur.consumed > 0 ? "typedOver" : "dismissed");
    this.current = { ...c, consumed: 0, accepted: 0 };
  }

  /** The next edits come from accepting a word or line (the extension's own command). */
  beginPartialAccept(): void {
    this.partial = true;
  }
  endPartialAccept(): void {
    this.partial = false;
  }

  /** `text` was inserted in document `uri` at the cursor (one change of an edit). */
  edited(uri: string, text: string): void {
    const cur = this.current;
    if (!cur || cur.uri !== uri) return;
    const rest = cur.text.slice(cur.consumed);
    if (text !== "" && rest.startsWith(text)) {
      cur.consumed += text.length;
      if (this.partial) {
        cur.accepted += codePoints(text);
        this.report(cur, "acceptedPartially", cur.accepted);
      }
      if (cur.consumed >= cur.text.length) this.current = undefined; // all of it is in the document
      return;
    }
    this.finish("typedOver");
  }

  /** Item `id`'s command ran: VS Code accepted all of it. */
  accepted(id: number): void {
    const own = this.aliases.get(id) ?? id;
    const cur = this.current;
    const languageId = cur && cur.id === own ? cur.languageId : undefined;
    this.send({ id: own, outcome: "accepted", acceptedChars: 0, ...(languageId ? { languageId } : {}) });
    if (cur && cur.id === own) this.current = undefined;
  }

  /** The user dismissed the ghost text (Escape), or it went away with its editor. */
  dismissed(): void {
    this.finish("dismissed");
  }

  private finish(outcome: Outcome): void {
    const cur = this.current;
    this.current = undefined;
    if (cur) this.report(cur, outcome, cur.accepted);
  }

  private report(c: ShownCompletion, outcome: Outcome, acceptedChars: number): void {
    this.send({ id: c.id, outcome, acceptedChars, languageId: c.languageId });
  }
}
