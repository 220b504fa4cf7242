// A small completion server on llama.cpp (through node-llama-cpp's prebuilt libraries), for
// Ghostline's remote-backend tests: the parts of llama.cpp's server that the backend uses.
//
//   POST /v1/completions  OpenAI text completions: prompt (special tokens parsed, BOS added as
//                         the model wants), max_tokens, temperature 0, stop, stream (SSE)
//   POST /infill          llama.cpp's infill: input_prefix, input_suffix, input_extra,
//                         n_predict, stop, stream (SSE)
//   GET  /stats           what the tests check: connections accepted, requests, streams the
//                         client closed before their end, the last request's headers and prompt
//   GET  /health
//
// Behaviours for failure tests, chosen by a path prefix (POST /PREFIX/v1/completions):
//   /slow   waits 100 ms after each token (so that a cancel arrives mid-stream)
//   /stall  reads the request and never answers
//   /die    exits the process after streaming two tokens (a server that dies mid-stream)
//
// Usage: node server.mjs --model FILE [--host 127.0.0.1] [--port 0] [--threads 1]
//                       [--tls-cert PEM --tls-key PEM]   (https instead of http)
// Prints "listening PORT" when ready. Greedy only: temperature other than 0 is refused.
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import {getLlama} from "node-llama-cpp";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
if (!args.model) {
  console.error("usage: node server.mjs --model FILE [--host H] [--port P] [--threads N]");
  process.exit(2);
}

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: args.model});
const context = await model.createContext({contextSize: 4096, sequences: 1, threads: Number(args.threads ?? 1)});
const sequence = context.getSequence();

const stats = {connections: 0, openConnections: 0, requests: 0, completed: 0, closedEarly: 0, last: null, log: []};

// One generation at a time on the one sequence; requests wait their turn.
let queue = Promise.resolve();
function serialized(job) {
  const run = queue.then(job, job);
  queue = run.catch(() => {});
  return run;
}

function specialToken(text) {
  const ids = model.tokenize(text, true);
  return ids.length === 1 && model.detokenize(ids, true) === text ? ids[0] : null;
}
const fileSep = specialToken("<|file_sep|>");

function promptTokens(text) {
  const ids = model.tokenize(text, true);
  return model.tokens.shouldPrependBosToken && model.tokens.bos != null ? [model.tokens.bos, ...ids] : ids;
}

// llama.cpp's infill layout (PSM): other files, then prefix, suffix and the middle token.
function infillTokens(body) {
  const {prefix, suffix, middle} = model.tokens.infill;
  if (prefix == null || suffix == null || middle == null) throw new Error("the model has no infill tokens");
  const extra = [];
  for (const chunk of body.input_extra ?? []) {
    if (fileSep != null) extra.push(fileSep);
    extra.push(...model.tokenize(`${chunk.filename ?? ""}\n${chunk.text ?? ""}`, false));
  }
  const ids = [...extra, prefix, ...model.tokenize(body.input_prefix ?? "", false), suffix,
    ...model.tokenize(body.input_suffix ?? "", false), middle];
  return model.tokens.shouldPrependBosToken && model.tokens.bos != null ? [model.tokens.bos, ...ids] : ids;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Generates greedily, calling emit(text) per token, until EOG, a stop string, maxTokens or
// the client closing. Returns {reason, text}.
async function generate(tokens, maxTokens, stop, emit, closed, behaviour) {
  await sequence.clearHistory();
  const out = [];
  let sent = 0, text = "", reason = "length";
  for await (const token of sequence.evaluate(tokens, {temperature: 0})) {
    if (closed()) { reason = "closed"; break; }
    if (model.isEogToken(token)) { reason = "stop"; break; }
    out.push(token);
    text = model.detokenize(out);
    if (text.endsWith("\uFFFD")) continue;  // an incomplete UTF-8 sequence: wait for the rest
    const stopAt = stop.map((s) => text.indexOf(s, Math.max(0, sent - s.length))).filter((i) => i >= 0);
    if (stopAt.length) {
      const cut = Math.min(...stopAt);
      if (cut > sent) emit(text.slice(sent, cut));
      text = text.slice(0, cut);
      reason = "stop";
      break;
    }
    if (text.length > sent) emit(text.slice(sent));
    sent = text.length;
    if (behaviour === "die" && out.length >= 2) process.exit(3);
    if (behaviour === "slow") await sleep(100);
    if (out.length >= maxTokens) break;
    if (closed()) { reason = "closed"; break; }
  }
  return {reason, text};
}

async function handleGenerate(req, res, body, api, behaviour) {
  const openai = api === "completions";
  if ((body.temperature ?? 0) !== 0) return reply(res, 400, {error: {message: "this server is greedy only: temperature 0"}});
  const tokens = openai ? promptTokens(String(body.prompt ?? "")) : infillTokens(body);
  const maxTokens = Number(openai ? body.max_tokens ?? 16 : body.n_predict ?? 16);
  const stop = Array.isArray(body.stop) ? body.stop : body.stop ? [body.stop] : [];
  const entry = {api, behaviour, authorization: req.headers.authorization ?? null, promptTokens: tokens.length,
    prompt: openai ? body.prompt : undefined, body, text: "", reason: null, closedEarly: false};
  stats.last = entry;
  stats.log.push(entry);
  if (behaviour === "stall") return;  // never answers; the client's read timeout must end it

  let closed = false;
  res.on("close", () => {
    if (!res.writableFinished) {
      closed = true;
      entry.closedEarly = true;
      stats.closedEarly++;
    }
  });
  if (!body.stream) {
    const r = await serialized(() => generate(tokens, maxTokens, stop, () => {}, () => closed, behaviour));
    entry.text = r.text;
    entry.reason = r.reason;
    stats.completed++;
    return reply(res, 200, openai ? {choices: [{index: 0, text: r.text, finish_reason: r.reason}]}
      : {content: r.text, stop: true, stopped_limit: r.reason === "length"});
  }
  res.writeHead(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"});
  const event = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
  const r = await serialized(() => generate(tokens, maxTokens, stop, (piece) => {
    entry.text += piece;
    event(openai ? {object: "text_completion", choices: [{index: 0, text: piece, finish_reason: null}]}
      : {content: piece, stop: false});
  }, () => closed, behaviour));
  entry.reason = r.reason;
  if (closed) return;
  event(openai ? {object: "text_completion", choices: [{index: 0, text: "", finish_reason: r.reason}]}
    : {content: "", stop: true, stopped_limit: r.reason === "length", stopped_eos: r.reason === "stop"});
  if (openai) res.write("data: [DONE]\n\n");
  res.end();
  stats.completed++;
}

function reply(res, status, obj) {
  res.writeHead(status, {"Content-Type": "application/json"});
  res.end(JSON.stringify(obj));
}

const tls = args["tls-cert"] ? {cert: fs.readFileSync(args["tls-cert"]), key: fs.readFileSync(args["tls-key"])} : null;
const handler = (req, res) => {
  const url = new URL(req.url, "http://x");
  if (req.method === "GET" && url.pathname === "/health") return reply(res, 200, {status: "ok"});
  // POST too: the tests read it with the client under test, which only POSTs.
  if (url.pathname === "/stats") return reply(res, 200, stats);
  const m = /^(?:\/(slow|stall|die))?\/(v1\/completions|infill)$/.exec(url.pathname);
  if (req.method !== "POST" || !m) return reply(res, 404, {error: {message: `no route ${req.method} ${url.pathname}`}});
  stats.requests++;
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return reply(res, 400, {error: {message: "the body is not JSON"}});
    }
    handleGenerate(req, res, body, m[2] === "infill" ? "infill" : "completions", m[1] ?? "")
      .catch((e) => { if (!res.headersSent) reply(res, 500, {error: {message: String(e)}}); else res.destroy(); });
  });
};
const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
server.keepAliveTimeout = 60000;
server.on(tls ? "secureConnection" : "connection", (socket) => {
  stats.connections++;
  stats.openConnections++;
  socket.on("close", () => stats.openConnections--);
});
server.listen(Number(args.port ?? 0), args.host ?? "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
