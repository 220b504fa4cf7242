// Ghostline for VS Code: starts `ghostline connect` (which shares one daemon, and one loaded
// model, between all windows and editors) through vscode-languageclient, which shows the
// daemon's `textDocument/inlineCompletion` answers as ghost text. This file is the VS Code glue;
// the logic lives in logic.ts.

import * as fs from "fs";
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  LogMessageNotification,
  MessageType,
  ServerOptions,
  State as ClientState,
} from "vscode-languageclient/node";

import {
  LatencyTracker,
  OutcomeTracker,
  State,
  Settings,
  advertisesCompletionUpdated,
  binaryNotFoundMessage,
  classifyLogMessage,
  clientSettings,
  completionIdOf,
  daemonLogPath,
  daemonPids,
  documentSelector,
  enabledLanguages,
  findBinary,
  formatMs,
  isSpawnNotFound,
  formatStatus,
  needsClientRestart,
  needsDaemonRestart,
  readSettings,
  serverCommand,
  shouldRerequest,
  socketPathOf,
} from "./logic";

const SECTION = "ghostline";

let client: LanguageClient | undefined;
let log: vscode.LogOutputChannel;
let statusItem: vscode.StatusBarItem;
let settings: Settings;
let state: State = "stopped";
let stateDetail: string | undefined;
let latency = new LatencyTracker();
let growsGhostText = false;
let rerequests = 0;
const outcomesSent: Record<string, number> = {};
// What became of each completion shown, reported to the daemon (ghostline/completionOutcome).
const outcomes = new OutcomeTracker((report) => {
  outcomesSent[report.outcome] = (outcomesSent[report.outcome] ?? 0) + 1;
  log.trace(`completion ${report.id}: ${report.outcome} (${report.acceptedChars} characters)`);
  if (client && client.state === ClientState.Running)
    void client.sendNotification("ghostline/completionOutcome", report);
});

function currentSettings(): Settings {
  const c = vscode.workspace.getConfiguration(SECTION);
  return readSettings((key) => {
    const i = c.inspect(key);
    if (!i) return undefined;
    return i.workspaceFolderValue ?? i.workspaceValue ?? i.globalValue ?? i.defaultValue;
  });
}

function setState(s: State, detail?: string): void {
  state = s;
  stateDetail = detail;
  renderStatus();
}

function renderStatus(): void {
  const editor = vscode.window.activeTextEditor;
  const language = editor?.document.languageId;
  const { text, tooltip } = formatStatus({
    state: settings.enabled || state === "error" ? state : "disabled",
    detail: stateDetail,
    lastLatencyMs: latency.last,
    completions: latency.shown,
    language,
    languageEnabled: language === undefined ? undefined : enabledLanguages(settings).includes(language),
  });
  statusItem.text = text;
  statusItem.tooltip = tooltip;
  statusItem.backgroundColor =
    state === "error" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  statusItem.show();
}

function makeClient(): LanguageClient {
  const { command, args } = serverCommand(settings);
  log.info(`server command: ${command} ${args.join(" ")}`);
  // No `transport`: vscode-languageclient would append --stdio, which `connect` does not take.
  const serverOptions: ServerOptions = { command, args, options: { env: process.env } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: documentSelector(enabledLanguages(settings)),
    outputChannel: log,
    initializationOptions: clientSettings(settings),
    middleware: {
      provideInlineCompletionItems: async (document, position, context, token, next) => {
        if (!settings.enabled) return null;
        const start = performance.now();
        const result = await next(document, position, context, token);
        if (!token.isCancellationRequested) {
          const items = Array.isArray(result) ? result : result?.items ?? [];
          latency.record(performance.now() - start, items.length);
          // VS Code shows the first item.
          const first = items[0];
          const id = first && completionIdOf(first.command);
          if (first && id !== undefined) {
            const text = typeof first.insertText === "string" ? first.insertText : first.insertText.value;
            const from = first.range?.start ?? position;
            // The part of the text after the cursor is what shows as ghost text.
            const before = from.isBefore(position) ? document.getText(new vscode.Range(from, position)) : "";
            outcomes.shown({
              id,
              text: text.startsWith(before) ? text.slice(before.length) : text,
              uri: document.uri.toString(),
              languageId: document.languageId,
            });
          }
          log.trace(
            `inline completion at ${position.line}:${position.character} v${document.version}: ` +
              `${items.length} item(s) in ${formatMs(latency.last ?? 0)}`,
          );
          renderStatus();
        }
        return result;
      },
    },
  };
  const c = new LanguageClient(SECTION, "Ghostline", serverOptions, clientOptions);
  c.onDidChangeState((e) => {
    if (e.newState === ClientState.Starting) setState("starting");
    else if (e.newState === ClientState.Running) setState("ready");
    else if (e.newState === ClientState.Stopped && state !== "error") setState("stopped");
  });
  return c;
}

async function startClient(): Promise<void> {
  settings = currentSettings();
  latency = new LatencyTracker();
  const { command } = serverCommand(settings);
  if (!findBinary(command, process.env)) {
    binaryMissing(command);
    return;
  }
  const c = makeClient();
  client = c;
  setState("starting");
  try {
    await c.start();
  } catch (e) {
    if (isSpawnNotFound(e)) {
      binaryMissing(command);
      return;
    }
    const logFile = daemonLogPath(settings);
    setState("error", `${errorText(e)}${logFile ? ` (daemon log: ${logFile})` : ""}`);
    log.error(`could not start: ${errorText(e)}`);
    return;
  }
  // The daemon's window/logMessage: to the log, and a missing model turns the status to error.
  c.onNotification(LogMessageNotification.type, (p) => {
    const text = p.message;
    if (p.type === MessageType.Error) log.error(text);
    else if (p.type === MessageType.Warning) log.warn(text);
    else if (p.type === MessageType.Info) log.info(text);
    else log.debug(text);
    if (classifyLogMessage(text) === "noModel") setState("error", text.replace(/^ghostline: /, ""));
  });
  growsGhostText = advertisesCompletionUpdated(c.initializeResult?.capabilities);
  c.onNotification("ghostline/completionUpdated", (p: unknown) => onCompletionUpdated(c, p));
  const info = c.initializeResult?.serverInfo;
  log.info(
    `connected to ${info?.name ?? "the daemon"} ${info?.version ?? ""}; growing ghost text: ` +
      (growsGhostText ? "yes" : "no (the daemon does not send ghostline/completionUpdated)"),
  );
  try {
    const stats = (await c.sendRequest("ghostline/stats")) as { completer?: string };
    if (state !== "error") setState("ready", stats.completer ? "Model: " + stats.completer : undefined);
    log.info(`completer: ${stats.completer ?? "?"}`);
  } catch (e) {
    log.warn(`ghostline/stats failed: ${errorText(e)}`);
  }
}

// The binary is not there: say what was tried and what to do, with a way to the setting.
function binaryMissing(command: string): void {
  const message = binaryNotFoundMessage(command, process.env);
  setState("error", message);
  log.error(message);
  void vscode.window.showErrorMessage(message, "Open Settings").then((pick) => {
    if (pick) void vscode.commands.executeCommand("workbench.action.openSettings", "ghostline.binaryPath");
  });
}

// Accepts a word or a line of the ghost text through VS Code's own command, telling the outcome
// tracker that the edit it makes is an acceptance, not typing.
async function acceptPart(builtin: string): Promise<void> {
  outcomes.beginPartialAccept();
  try {
    await vscode.commands.executeCommand(builtin);
  } finally {
    outcomes.endPartialAccept();
  }
}

async function dismiss(): Promise<void> {
  outcomes.dismissed();
  await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
}

function onCompletionUpdated(c: LanguageClient, p: unknown): void {
  const editor = vscode.window.activeTextEditor;
  const view = editor && {
    uri: c.code2ProtocolConverter.asUri(editor.document.uri),
    version: editor.document.version,
    line: editor.selection.active.line,
    character: editor.selection.active.character,
    selectionEmpty: editor.selection.isEmpty,
  };
  const again = shouldRerequest(p, view, settings.enabled);
  log.debug(`ghostline/completionUpdated ${JSON.stringify(p)}: ${again ? "re-requesting" : "outdated, ignored"}`);
  if (again) {
    rerequests++;
    void vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
  }
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop(2000);
    } catch (e) {
      log.warn(`stopping the client: ${errorText(e)}`);
    }
  }
}

async function restartDaemon(): Promise<void> {
  await stopClient();
  const sock = socketPathOf(settings);
  if (sock) {
    const pids = daemonPids(sock);
    for (const pid of pids) {
      log.info(`stopping the daemon (pid ${pid}) on ${sock}`);
      try {
        process.kill(pid, "SIGTERM");
      } catch (e) {
        log.warn(`kill ${pid}: ${errorText(e)}`);
      }
    }
    const until = Date.now() + 5000;
    while (pids.some(alive) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    if (!pids.length) log.info(`no daemon found listening on ${sock}; reconnecting`);
  } else {
    log.info("the daemon listens on TCP; it cannot be restarted from here, reconnecting");
  }
  await startClient();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function showStats(): Promise<void> {
  if (!client || client.state !== ClientState.Running) {
    void vscode.window.showWarningMessage("Ghostline is not running.");
    return;
  }
  const stats = await client.sendRequest("ghostline/stats");
  const p50 = latency.percentile(50);
  const p90 = latency.percentile(90);
  const summary = {
    client: {
      requestsTimed: latency.count,
      completionsShown: latency.shown,
      lastLatencyMs: latency.last,
      p50LatencyMs: p50,
      p90LatencyMs: p90,
      growingGhostText: growsGhostText,
      reRequestsOnCompletionUpdated: rerequests,
      outcomesReported: outcomesSent,
      serverCommand: serverCommand(settings),
      daemonLog: daemonLogPath(settings),
    },
    daemon: stats,
  };
  log.info(`stats: ${JSON.stringify(summary)}`);
  const doc = await vscode.workspace.openTextDocument({
    language: "json",
    content: JSON.stringify(summary, null, 2),
  });
  await vscode.window.showTextDocument(doc, { preview: true });
}

async function setEnabled(on: boolean): Promise<void> {
  await vscode.workspace.getConfiguration(SECTION).update("enabled", on, vscode.ConfigurationTarget.Global);
}

async function onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
  if (!e.affectsConfiguration(SECTION)) return;
  const before = settings;
  const after = currentSettings();
  settings = after;
  if (needsDaemonRestart(before, after)) {
    const pick = await vscode.window.showInformationMessage(
      "Ghostline: the daemon's options changed (binary, model, draft, threads or arguments). Restart the daemon to apply them?",
      "Restart Daemon",
    );
    if (pick) await restartDaemon();
  } else if (needsClientRestart(before, after)) {
    await stopClient();
    await startClient();
  } else if (client && client.state === ClientState.Running) {
    await client.sendNotification("workspace/didChangeConfiguration", {
      settings: { ghostline: clientSettings(after) },
    });
  }
  renderStatus();
}

async function openDaemonLog(): Promise<void> {
  const file = daemonLogPath(settings);
  if (!file || !fs.existsSync(file)) {
    void vscode.window.showWarningMessage(`No daemon log at ${file ?? "(TCP daemon)"}.`);
    return;
  }
  await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
}

async function quickMenu(): Promise<void> {
  const items: (vscode.QuickPickItem & { command: string })[] = [
    settings.enabled
      ? { label: "$(circle-slash) Disable Completions", command: "ghostline.disable" }
      : { label: "$(check) Enable Completions", command: "ghostline.enable" },
    { label: "$(graph) Show Stats", command: "ghostline.showStats" },
    { label: "$(output) Show Log", command: "ghostline.showLog" },
    { label: "$(file) Open Daemon Log", command: "ghostline.openDaemonLog" },
    { label: "$(debug-restart) Restart Daemon", command: "ghostline.restart" },
  ];
  const pick = await vscode.window.showQuickPick(items, { placeHolder: "Ghostline" });
  if (pick) await vscode.commands.executeCommand(pick.command);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  log = vscode.window.createOutputChannel("Ghostline", { log: true });
  statusItem = vscode.window.createStatusBarItem("ghostline.status", vscode.StatusBarAlignment.Right, 100);
  statusItem.name = "Ghostline";
  statusItem.command = "ghostline.menu";
  settings = currentSettings();
  context.subscriptions.push(
    log,
    statusItem,
    vscode.commands.registerCommand("ghostline.enable", () => setEnabled(true)),
    vscode.commands.registerCommand("ghostline.disable", () => setEnabled(false)),
    vscode.commands.registerCommand("ghostline.toggle", () => setEnabled(!settings.enabled)),
    vscode.commands.registerCommand("ghostline.restart", restartDaemon),
    vscode.commands.registerCommand("ghostline.showLog", () => log.show(true)),
    vscode.commands.registerCommand("ghostline.openDaemonLog", openDaemonLog),
    vscode.commands.registerCommand("ghostline.showStats", showStats),
    vscode.commands.registerCommand("ghostline.menu", quickMenu),
    vscode.commands.registerCommand("ghostline.completionAccepted", (id: unknown) => {
      if (typeof id === "number") outcomes.accepted(id);
    }),
    vscode.commands.registerCommand("ghostline.acceptNextWord", () =>
      acceptPart("editor.action.inlineSuggest.acceptNextWord"),
    ),
    vscode.commands.registerCommand("ghostline.acceptNextLine", () =>
      acceptPart("editor.action.inlineSuggest.acceptNextLine"),
    ),
    vscode.commands.registerCommand("ghostline.dismiss", dismiss),
    vscode.workspace.onDidChangeTextDocument((e) => {
      for (const change of e.contentChanges) outcomes.edited(e.document.uri.toString(), change.text);
    }),
    vscode.window.onDidChangeActiveTextEditor(() => outcomes.dismissed()),
    vscode.workspace.onDidChangeConfiguration((e) => void onConfigurationChanged(e)),
    vscode.window.onDidChangeActiveTextEditor(() => renderStatus()),
  );
  renderStatus();
  await startClient();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
