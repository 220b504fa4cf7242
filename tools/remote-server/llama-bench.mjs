// llama.cpp's speed on a GGUF file, for side-by-side figures with `ghostline bench`: prompt
// processing of P tokens in one batch (pp) and generation of N tokens one at a time (tg), after
// D tokens of context already evaluated (as llama-bench -d), on the CPU with the given threads,
// through node-llama-cpp's prebuilt llama.cpp libraries (installed by tools/remote-server/setup).
//
//   node tools/remote-server/llama-bench.mjs --model M.gguf [-p 512] [-n 64] [-d 0] [-t 2] [-r 3]
//
// Prints one JSON object: tokens/s per repetition and the mean, as `ghostline bench --json`.
import {getLlama} from "node-llama-cpp";

function parseArgs(argv) {
  const a = {p: 512, n: 64, d: 0, t: 2, r: 3};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = argv[i + 1];
    if (k === "--model" || k === "-m") a.model = v, i++;
    else if (k === "-p") a.p = Number(v), i++;
    else if (k === "-n") a.n = Number(v), i++;
    else if (k === "-d" || k === "--n-depth") a.d = Number(v), i++;
    else if (k === "-t" || k === "--threads") a.t = Number(v), i++;
    else if (k === "-r") a.r = Number(v), i++;
    else if (k === "--help" || k === "-h") a.help = true;
    else throw new Error(`unknown argument ${k}`);
  }
  if (!a.help && !a.model) throw new Error("--model FILE is required");
  return a;
}

const args = parseArgs(process.argv.slice(2));
if (args.help) {
  console.log("usage: node llama-bench.mjs --model FILE [-p 512] [-n 64] [-d 0] [-t 2] [-r 3]");
  process.exit(0);
}
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: args.model, useMlock: false});
const context = await model.createContext({
  contextSize: args.d + args.p + args.n + 16, batchSize: Math.max(args.p, 512), sequences: 1,
  threads: args.t});
const sequence = context.getSequence();

// A prompt of real text tokens, as long as asked.
const text = "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n";
let tokens = [];
while (tokens.length < args.d + args.p) tokens.push(...model.tokenize(text, false));
const depth = tokens.slice(0, args.d), prompt = tokens.slice(args.d, args.d + args.p);

// Clears the sequence and evaluates the depth's tokens (untimed).
async function reset() {
  await sequence.clearHistory();
  if (depth.length > 0) await sequence.evaluateWithoutGeneratingNewTokens(depth);
}

const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
const pp = [], tg = [];
for (let rep = -1; rep < args.r; rep++) {  // the first round warms up
  await reset();
  let t0 = performance.now();
  await sequence.evaluateWithoutGeneratingNewTokens(prompt);
  const ppMs = performance.now() - t0;

  await reset();
  let produced = 0, first = 0;
  for await (const token of sequence.evaluate(prompt.slice(0, 1), {temperature: 0})) {
    if (produced === 0) first = performance.now();  // the steps after this one are timed
    if (++produced >= args.n) break;
  }
  const tgMs = performance.now() - first;
  if (rep < 0) continue;
  pp.push(args.p / (ppMs / 1000));
  tg.push((args.n - 1) / (tgMs / 1000));
}
console.log(JSON.stringify({
  engine: "llama.cpp (node-llama-cpp prebuilt, CPU)", model: args.model, threads: args.t,
  depth: args.d, pp_tokens: args.p, tg_tokens: args.n, pp_tokens_per_s: pp, tg_tokens_per_s: tg,
  pp_mean: mean(pp), tg_mean: mean(tg)}));
await context.dispose();
await model.dispose();
