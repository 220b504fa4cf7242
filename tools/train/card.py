#!/usr/bin/python3
"""Writes the model card (README.md) and the loss curve (loss.svg) for an exported run."""
import argparse
import json
import os
import sys
from pathlib import Path

from data import LANG_WEIGHTS
from export import PSM_TEMPLATE, SPM_TEMPLATE, LICENSE


def ema(values, alpha=0.05):
    out, m = [], None
    for v in values:
        m = v if m is None else (1 - alpha) * m + alpha * v
        out.append(m)
    return out


def loss_svg(metrics, path):
    W, H, L, R, T, B = 720, 420, 60, 20, 30, 50
    xs = [m["tokens"] for m in metrics]
    series = [
        ("target train (EMA)", "#1f77b4", list(zip(xs, ema([m["loss_target"] for m in metrics])))),
        ("draft train CE (EMA)", "#ff7f0e", list(zip(xs, ema([m["loss_draft_ce"] for m in metrics])))),
        ("target held-out", "#2ca02c", [(m["tokens"], m["val_target"]) for m in metrics if "val_target" in m]),
        ("draft held-out", "#d62728", [(m["tokens"], m["val_draft"]) for m in metrics if "val_draft" in m]),
    ]
    ys = [y for _, _, pts in series for _, y in pts]
    y0, y1 = max(0.0, min(ys) - 0.2), max(ys) + 0.1
    x1 = max(xs)

    def px(x):
        return L + (W - L - R) * x / x1

    def py(y):
        return T + (H - T - B) * (1 - (y - y0) / (y1 - y0))

    el = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
          f'font-size="12"><rect width="{W}" height="{H}" fill="white"/>',
          f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="14">Training loss (nats/token)</text>']
    for i in range(6):
        y = y0 + (y1 - y0) * i / 5
        el.append(f'<line x1="{L}" x2="{W - R}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        el.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.1f}</text>')
    for i in range(6):
        x = x1 * i / 5
        el.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{T}" y2="{H - B}" stroke="#eee"/>')
        el.append(f'<text x="{px(x):.1f}" y="{H - B + 16}" text-anchor="middle">{x / 1e6:.2f}M</text>')
    el.append(f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">tokens seen</text>')
    for k, (name, color, pts) in enumerate(series):
        if not pts:
            continue
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        if "held-out" in name:
            el.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.5" '
                      f'stroke-dasharray="4 3"/>')
            el += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>' for x, y in pts]
        else:
            el.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        ly = T + 10 + 16 * k
        el.append(f'<line x1="{W - R - 170}" x2="{W - R - 150}" y1="{ly}" y2="{ly}" stroke="{color}" '
                  f'stroke-width="2"/><text x="{W - R - 145}" y="{ly + 4}">{name}</text>')
    el.append("</svg>")
    Path(path).write_text("\n".join(el) + "\n")


def near_duplicates(manifest):
    """The sentence on near-duplicates, when the corpus dropped them (neardup.py)."""
    site = manifest.get("site_packages") or {}
    threshold = manifest.get("near_dup_threshold") or site.get("near_dup_threshold") or 0
    if threshold <= 0:
        return ""
    dropped = manifest.get("near_duplicates_dropped", 0) + site.get("near_duplicates_dropped", 0)
    like_heldout = manifest.get("near_duplicates_of_heldout", 0) + site.get("near_duplicates_of_heldout", 0)
    return (f"Training files whose estimated Jaccard similarity (MinHash of 5-token shingles) to a "
            f"held-out file or an earlier training file reached {threshold:g} were dropped ({dropped}, "
            f"{like_heldout} of them near-copies of held-out files). ")


def capped_sources(manifest):
    """The sources with a cap of their own, as ' (name N MB, ...)'."""
    own = [f"{s['name']} {s['cap_mb']:g} MB" for s in manifest["sources"] if "cap_mb" in s]
    return f" ({', '.join(own)})" if own else ""


def lang_weights(manifest):
    langs = sorted({s["lang"] for s in manifest["sources"]})
    w = {l: LANG_WEIGHTS.get(l, 0.1) for l in langs}  # data.DocSampler's default for other languages
    total = sum(w.values())
    return [(l, w[l] / total) for l in langs]


def fence(text):
    return "```\n" + text.replace("```", "` ` `") + "\n```"


def labeled_results(specs):
    """[(LABEL, the JSON of FILE)] for LABEL=FILE arguments."""
    return [(label, json.loads(Path(f).read_text())) for label, f in (x.split("=", 1) for x in specs)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--run", default="run1")
    ap.add_argument("--out", required=True)
    ap.add_argument("--baseline-eval", default=None,
                    help="eval.json of the models these replace, measured on the same samples")
    ap.add_argument("--daemon-eval", nargs="*", default=[], metavar="LABEL=FILE",
                    help="eval_daemon.py results to tabulate (e.g. new=... previous=...)")
    ap.add_argument("--funcs-eval", nargs="*", default=[], metavar="LABEL=FILE",
                    help="eval_funcs.py results to tabulate (e.g. new=... previous=...)")
    ap.add_argument("--prior", default=None,
                    help="one sentence on the training the initial weights had (for --init-gguf runs)")
    ap.add_argument("--cpu-hours", type=float, default=None, help="CPU time the run used (from the OS)")
    ap.add_argument("--hardware", default=None,
                    help="what the run trained on, for a run not on this machine's CPU (e.g. 'one NVIDIA "
                         "H100, PyTorch 2.11, bf16 autocast, torch.compile')")
    args = ap.parse_args()
    work = Path(args.workdir)
    run = work / "runs" / args.run
    out = Path(args.out)
    # A run trained elsewhere (pack.py run-unpack) brings the manifest of the corpus it saw.
    manifest_path = run / "corpus-manifest.json"
    if not manifest_path.exists():
        manifest_path = work / "data" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    cfg = json.loads((run / "config.json").read_text())
    ev = json.loads((run / "eval.json").read_text())
    metrics = [json.loads(l) for l in open(run / "metrics.jsonl")]
    # A resumed run may have re-logged steps; keep the last record of each step.
    by_step = {m["step"]: m for m in metrics}
    metrics = [by_step[s] for s in sorted(by_step)]
    loss_svg(metrics, out / "loss.svg")
    last = metrics[-1]
    vals = [m for m in metrics if "val_target" in m]
    t, d = cfg["target"], cfg["draft"]
    a = cfg["args"]
    tok_s = last["tokens"] / last["train_secs"]

    def arch(c):
        return (f"{c['n_layers']} layers, width {c['dim']}, {c['n_heads']} head(s) "
                f"({c['n_kv_heads']} KV), head dim {c['dim'] // c['n_heads']}, SwiGLU FFN {c['ffn_dim']}, "
                f"context {c['ctx']}, RoPE base {c['rope_base']:g} (normal/adjacent pairs), RMSNorm eps "
                f"{c['norm_eps']:g}, tied embeddings")

    L = []
    L.append("# Ghostline default code models\n")
    where = "found on a Debian machine"
    if manifest.get("site_packages"):
        where += " and, for the `pip-*` sources, among the Python packages installed on the training machine"
    if cfg.get("init_gguf"):
        fim_more = a.get("fim_rate", 0.5) > 0.5
        L.append("`ghostline-code.gguf` (target) and `ghostline-code-draft.gguf` (draft for speculative "
                 "decoding) are small llama-architecture code models trained by the recipe in `tools/train/` "
                 f"on permissively licensed source code {where}. This version continues "
                 "the training of the previous default pair (same architecture and vocabulary) on the corpus below"
                 + (", with more fill-in-the-middle rows" if fim_more else "") + ". Still small and briefly "
                 "trained: expect simple, local completions (closing a call, finishing an identifier, repeating "
                 "a nearby pattern), not reasoning.\n")
    else:
        L.append("`ghostline-code.gguf` (target) and `ghostline-code-draft.gguf` (draft for speculative "
                 "decoding) are small llama-architecture code models trained from scratch by the recipe in "
                 f"`tools/train/` on permissively licensed source code {where}. Expect "
                 "simple, local completions (closing a call, finishing an identifier, repeating a nearby "
                 "pattern), not reasoning.\n")
    L.append("## Files\n")
    L.append("| file | role | parameters | tensor types | bytes |\n|---|---|---|---|---|")
    L.append(f"| ghostline-code.gguf | target | {ev['target']['params']:,} | "
             f"{', '.join(ev['target']['tensor_types'])} | {ev['target']['file_bytes']:,} |")
    L.append(f"| ghostline-code-draft.gguf | draft | {ev['draft']['params']:,} | "
             f"{', '.join(ev['draft']['tensor_types'])} | {ev['draft']['file_bytes']:,} |\n")
    L.append(f"- Target: {arch(t)}.")
    L.append(f"- Draft: {arch(d)}. Same vocabulary as the target.")
    def matrix_types(model):
        return ", ".join(x for x in model["tensor_types"] if x != "F32") or "F32"
    draft_types = matrix_types(ev["draft"])
    if draft_types == "F16" and d["ffn_dim"] % 32:
        draft_types += " (its FFN width is not a multiple of 32)"
    L.append(f"- GGUF v3, `general.architecture` = `llama`; norms are F32. The target's matrices are "
             f"{matrix_types(ev['target'])}; the draft's are {draft_types}.\n")
    L.append("## Tokenizer and prompt format\n")
    L.append("Byte-level BPE, 8192 tokens (256 bytes, 7929 merges, 7 specials), trained by "
             "`tools/train/tokenizer.py` on a 16 MB language-balanced sample of the first corpus's training "
             "split (later versions keep it: `tokenizer.py --from-gguf`). "
             "`tokenizer.ggml.model` = `gpt2`, `tokenizer.ggml.pre` = `qwen2` (llama.cpp's qwen2 split "
             "regex: digits one at a time, newline runs grouped). Specials (token type 3, control): "
             "`<|endoftext|>` (eos, eot; also the bos id, but `add_bos_token` is false), "
             "`<|fim_prefix|>`, `<|fim_suffix|>`, `<|fim_middle|>`, `<|fim_pad|>` (padding), "
             "`<|file_sep|>` (`fim_sep_token_id`), `<|repo_name|>` (`fim_rep_token_id`; not used in training).\n")
    L.append("Fill-in-the-middle templates, both trained (stored as `ghostline.fim.psm_template` / "
             "`ghostline.fim.spm_template`; the daemon builds SPM prompts for models that declare an SPM "
             "template); the model writes the middle and then `<|endoftext|>`:\n")
    L.append(f"- PSM: `{PSM_TEMPLATE}`")
    L.append(f"- SPM: `{SPM_TEMPLATE}` (suffix first, each part behind its own token)\n")
    L.append("Prefix, suffix and middle are tokenized separately. Left-to-right text uses "
             "`<|file_sep|>` between files.\n")
    L.append("## Training data\n")
    L.append("| source | language | license | origin | files kept (held out) | bytes kept |\n"
             "|---|---|---|---|---|---|")
    for s in manifest["sources"]:
        L.append(f"| {s['name']} | {s['lang']} | {s['license']} | {s['origin']} | "
                 f"{s['files_kept']} ({s['files_heldout']}) | {s['bytes_kept']:,} |")
    L.append("")
    L.append(f"Files were normalized (UTF-8, LF, no trailing whitespace), filtered (200 B - 200 kB, no "
             f"line over 400 characters, no control characters), deduplicated by SHA-256 of the "
             f"normalized text ({manifest['duplicates_dropped']} duplicates dropped) and capped at "
             f"{manifest['cap_mb']:g} MB per source{capped_sources(manifest)}. "
             + near_duplicates(manifest) +
             f"{manifest['heldout_fraction']:.0%} of each source's "
             f"files (whole files, seed {manifest['seed']}) are held out for evaluation: training "
             f"{manifest['train_bytes']:,} bytes, held out {manifest['heldout_bytes']:,} bytes. "
             f"Languages are sampled with weights "
             + ", ".join(f"{l} {w:.3f}" for l, w in lang_weights(manifest)) + ".\n")
    sel = manifest.get("selection")
    if sel:
        L.append(f"The corpus travelled as a shard (`pack.py corpus-pack`) of a larger one: sources of the "
                 f"set(s) {', '.join(sel['sets'] or ['all'])}"
                 + (f", without {', '.join(sel['skip_langs'])}" if sel["skip_langs"] else "")
                 + f", {sel['train_fraction']:.1%} of their training text (each source the same share, files "
                 f"in SHA-256 order, window {sel.get('window', 0)}), all their held-out files.\n")
    site = manifest.get("site_packages")
    if site:
        split = "distributions" in site  # Python and C/C++ files as sources of their own
        other = site.get("files_other_license")
        L.append(f"The `pip-*` sources (set `site`) were read on the training machine from the Python "
                 f"{site['python']} packages installed there: {site.get('distributions', site['sources'])} "
                 f"distributions whose metadata names a permissive license (the license column says which field "
                 f"it came from: License-Expression, License or the Trove classifiers), "
                 + ("their Python files (`pip-NAME`) and their C, C++ and CUDA files (`pip-NAME-cpp`), "
                    if split else "")
                 + f"{site['train_bytes']:,} bytes of training text; {site['skipped']} were skipped"
                 + (" whole or in part" if split else "")
                 + " (another license, no license in the metadata, a module the corpus has from Debian, a "
                 "standard-library backport; `site_corpus.py` lists why for each)"
                 + (f"; {other} files whose own header names another license were left out" if other else "")
                 + ".\n")
    L.append("## Training\n")
    if cfg.get("init_gguf"):
        L.append(f"- Initial weights: the previous default pair ({', '.join(Path(p).name for p in cfg['init_gguf'])}, "
                 f"dequantized); optimizer state fresh, with warmup." + (f" {args.prior}" if args.prior else ""))
    L.append(f"- Seed {cfg['seed']}; target and draft trained together on identical batches of "
             f"{a['batch']} x {a['ctx']} tokens; {last['step']} steps, **{last['tokens']:,} tokens seen** in this run.")
    fim, span = a.get("fim_rate", 0.5), a.get("span_rate", 0.5)
    spm, block = a.get("spm_rate", 0.5), a.get("block_rate", 0.0)
    line = max(0.0, 1 - span - block)
    shaped = (" shaped like the daemon's prompts (suffix of at most 128 tokens, prefix cut at a line start)"
              if "spm_rate" in a else "")
    L.append(f"- {fim:.0%} of the rows are FIM{shaped} (of those, {spm:.0%} SPM and {1 - spm:.0%} PSM; middles: "
             f"{line * 0.7:.0%} the rest of a line, {line * 0.3:.0%} the rest of a line plus up to 4 lines, "
             + (f"{block:.0%} the body of a block after its opening line, " if block else "")
             + f"{span:.0%} a random span), split on characters; the rest plain left-to-right.")
    L.append(f"- AdamW (betas 0.9/0.95, weight decay {a['wd']}), peak LR {a['lr']} (draft "
             f"{a['draft_lr']}), {a['warmup']} warmup steps, constant, linear decay to 10% over the last "
             f"{a['decay_frac']:.0%}; gradient clip 1.0. The draft's loss is "
             f"{1 - a['distill']:.1f} x cross-entropy + {a['distill']:.1f} x KL to the target's "
             f"next-token distribution.")
    bf16 = a.get("bf16", "off") in ("on", "auto")
    cpu = f"; {args.cpu_hours:.2f} CPU hours of process time" if args.cpu_hours is not None else ""
    if args.hardware:
        where = args.hardware
    else:
        where = (f"2 shared vCPUs (Xeon with AVX512-BF16, PyTorch 1.13 CPU, "
                 f"{'bf16 autocast' if bf16 else 'fp32'}, {a.get('threads', 1)} thread(s), nice 19 beside C++ "
                 f"builds and tests that took most of the CPU)")
    L.append(f"- **Training time {last['train_secs'] / 60:.1f} min** wall on {where}: "
             f"{tok_s:.0f} tokens/s average for both models together{cpu}.")
    L.append(f"- Final training loss (last-step batch) target {last['loss_target']:.3f}, draft "
             f"{last['loss_draft_ce']:.3f} nats/token"
             + (f"; held-out batch target {vals[-1]['val_target']:.3f}, draft {vals[-1]['val_draft']:.3f}."
                if vals else "."))
    L.append("\n![loss curve](loss.svg)\n")
    L.append("## Evaluation (held-out files)\n")
    if "template" in ev:  # prompts as the daemon sends them
        prompt = (f"{ev['template'].upper()} prompt with up to {ev['prefix_tokens']} prefix tokens (cut at a "
                  f"line start) and {ev['suffix_tokens']} suffix tokens")
    else:
        prompt = f"PSM prompt with up to {ev['prefix_tokens']} prefix and {ev['suffix_tokens']} suffix tokens"
    L.append(f"Single-line infill, {ev['samples']} samples (seed {ev['seed']}, languages in turn): cursor "
             f"at a random point of a random non-blank line, expected middle = rest of that line. {prompt}, "
             f"greedy, completion cut at the first newline or control token. Measured on the GGUF files as shipped "
             f"(weights dequantized), by `tools/train/eval.py`.\n")
    L.append("| model | exact match | edit similarity | empty | perplexity (tokens) | bits/byte | draft acceptance |\n"
             "|---|---|---|---|---|---|---|")
    base = json.loads(Path(args.baseline_eval).read_text()) if args.baseline_eval else None
    if base is not None and base.get("template", "psm") != ev.get("template", "psm"):
        sys.exit(f"card.py: the baseline eval used {base.get('template', 'psm').upper()} prompts and this run's "
                 f"{ev.get('template', 'psm').upper()}: evaluate both pairs with the same --template")
    rows = [("", ev)] + ([("previous ", base)] if base else [])
    for label, e in rows:
        for name in ("target", "draft"):
            m = e[name]
            acc = f"{e['speculative']['acceptance_rate']:.3f}" if name == "target" else ""
            L.append(f"| {label}{name} | {m['exact_match']:.3f} | {m['edit_similarity']:.3f} | "
                     f"{m['empty_completions']:.1%} | {m['perplexity']:.2f} ({m['ppl_tokens']:,}) | "
                     f"{m['bits_per_byte']:.3f} | {acc} |")
    if base:
        L.append("\n\"previous\" is the pair these files replace, evaluated by the same script on the same "
                 "samples (the held-out files of a source never change).")
    # Said in one place, not left to the reader: every figure on which the pair these replace does
    # better, offline, through the engine and on the functions.
    worse = []

    def compare(what, new_v, old_v, fmt, higher_is_better):
        if (new_v < old_v) if higher_is_better else (new_v > old_v):
            worse.append(f"{what} ({fmt.format(new_v)} against {fmt.format(old_v)})")

    # (name, key, format, higher is better) of the figures both evaluations report.
    completions = (("exact match", "exact_match", "{:.3f}", True),
                   ("edit similarity", "edit_similarity", "{:.3f}", True),
                   ("empty completions", "empty_completions", "{:.1%}", False))

    def compare_all(prefix, new, old, figures):
        for name, key, fmt, higher in figures:
            compare(f"{prefix}{name}", new[key], old[key], fmt, higher)

    if base:
        for model in ("target", "draft"):
            compare_all(f"the {model}'s ", ev[model], base[model],
                        completions + (("perplexity", "perplexity", "{:.2f}", False),))
        compare("draft acceptance", ev["speculative"]["acceptance_rate"],
                base["speculative"]["acceptance_rate"], "{:.3f}", True)
    if args.daemon_eval:
        runs = labeled_results(args.daemon_eval)
        first = runs[0][1]
        deadline = (f"a {first['deadline_ms']} ms deadline" if first.get("deadline_ms")
                    else "the daemon's default deadline")
        threads = first.get("threads") or "all cores'"
        L.append(f"\nThe first {first['samples']} of these samples through the engine (`tools/train/eval_daemon.py`: "
                 f"`ghostline complete` at the cursor, the daemon's SPM prompt, cuts and stop rules, {deadline}, "
                 f"{threads} thread(s)):\n")
        L.append("| models | exact match | edit similarity | empty | latency p50 / p99 (ms) |\n|---|---|---|---|---|")
        for label, de in runs:
            L.append(f"| {label} | {de['exact_match']:.3f} | {de['edit_similarity']:.3f} | "
                     f"{de['empty_completions']:.1%} | {de['latency_ms_p50']:.0f} / {de['latency_ms_p99']:.0f} |")
        if len(runs) >= 2:
            (_, de_new), (_, de_old) = runs[0], runs[1]
            compare_all("through the engine, ", de_new, de_old,
                        completions + (("p99 latency", "latency_ms_p99", "{:.0f} ms", False),))
            old_pl = de_old.get("per_language_em", {})
            for lang, v in sorted(de_new.get("per_language_em", {}).items()):
                if lang in old_pl:
                    compare(f"through the engine, {lang} exact match", v, old_pl[lang], "{:.3f}", True)
        langs = sorted({lang for _, de in runs for lang in de.get("per_language_em", {})})
        if langs:
            L.append("\nExact match through the engine, per language:\n")
            L.append("| models | " + " | ".join(langs) + " |\n|---|" + "---|" * len(langs))
            for label, de in runs:
                pl = de.get("per_language_em", {})
                L.append(f"| {label} | " + " | ".join(f"{pl[x]:.3f}" if x in pl else "" for x in langs) + " |")
    if args.funcs_eval:
        runs = labeled_results(args.funcs_eval)
        first = runs[0][1]
        fdeadline = (f"a {first['deadline_ms']} ms deadline" if isinstance(first.get("deadline_ms"), int)
                     else "the daemon's default deadline")
        L.append(f"\n{first['functions']} small Python functions written for this evaluation, none of them in any "
                 f"training data (`tools/train/eval_funcs.py`): one line of each body blanked, `ghostline "
                 f"complete` asked after its indentation, the function's tests run on the completed program "
                 f"({fdeadline}, {first['threads']} thread(s)):\n")
        L.append("| models | passes its tests | exact line | empty |\n|---|---|---|---|")
        for label, fe in runs:
            L.append(f"| {label} | {fe['passed']} of {fe['functions']} | {fe['exact_match']:.2f} | "
                     f"{fe['empty_completions']:.0%} |")
        if len(runs) >= 2:
            compare("functions that pass their tests", runs[0][1]["passed"], runs[1][1]["passed"], "{}", True)
    if worse:
        L.append("\nWhere the previous pair does better: " + "; ".join(worse) + ".")
    sp = ev["speculative"]
    L.append(f"\nSpeculative decoding (greedy verification, draft proposes k={sp['k']} tokens, over the "
             f"target's 24-token greedy continuations of the first {sp['prompts']} prompts): "
             f"**acceptance rate {sp['acceptance_rate']:.3f}** ({sp['accepted']}/{sp['proposed']} "
             f"proposed tokens accepted); per-token top-1 agreement {sp['top1_agreement']:.3f}.\n")
    L.append("| language | n | target EM | target ES | draft EM | draft ES |\n|---|---|---|---|---|---|")
    for lang, v in ev["per_language"].items():
        L.append(f"| {lang} | {v['n']} | {v['target_em']:.3f} | {v['target_es']:.3f} | "
                 f"{v['draft_em']:.3f} | {v['draft_es']:.3f} |")
    L.append("\n### Ten completions (the first ten evaluation samples, unedited)\n")
    for i, x in enumerate(ev["examples"], 1):
        verdict = "exact" if x["target"] == x["expected"] else "miss"
        L.append(f"**{i}. {x['lang']}** `{Path(x['path']).name}` - target: {verdict}\n")
        L.append("Prompt ends with (cursor at the end):\n")
        L.append(fence(x["prefix_tail"]))
        if x.get("suffix_head"):
            L.append("Suffix begins with:\n")
            L.append(fence(x["suffix_head"]))
        L.append(f"- expected: `{x['expected']!r}`")
        L.append(f"- target: `{x['target']!r}`")
        L.append(f"- draft: `{x['draft']!r}`\n")
    L.append(f"Empty completions (the model ends the line or the middle at once): target "
             f"{ev['target'].get('empty_completions', float('nan')):.1%}, draft "
             f"{ev['draft'].get('empty_completions', float('nan')):.1%} of the samples.\n")
    L.append("## Limitations\n")
    L.append("- Tiny and briefly trained. Completions are often syntactically plausible but wrong; "
             "multi-line and semantic completions are beyond it.")
    langs = sorted({s["lang"] for s in manifest["sources"]})
    L.append(f"- Trained on standard-library and library code ({', '.join(langs)}); other languages and "
             f"application code are out of distribution.")
    L.append(f"- Context {t['ctx']} tokens; longer prompts must be cut by the client.")
    L.append("")
    L.append("## License\n")
    L.append(f"Weights: {LICENSE} (`general.license`). The training data are the permissively licensed "
             f"sources listed above ({', '.join(sorted({s['license'] for s in manifest['sources']}))}); the models "
             f"contain no verbatim copy of them beyond what a language model memorizes.\n")
    L.append("## Reproducing and extending\n")
    opts = ""
    if cfg.get("init_gguf"):
        opts = (" --tokenizer-from PREVIOUS/ghostline-code.gguf --init-gguf PREVIOUS/ghostline-code.gguf "
                "PREVIOUS/ghostline-code-draft.gguf")
    for key, flag in (("lr", "--lr"), ("fim_rate", "--fim-rate"), ("spm_rate", "--spm-rate"),
                      ("span_rate", "--span-rate"), ("block_rate", "--block-rate")):
        if key in a:
            opts += f" {flag} {a[key]:g}"
    if a.get("device") == "cuda":
        shape_of = lambda c: f"{c['dim']},{c['n_layers']},{c['n_heads']},{c['n_kv_heads']},{c['ffn_dim']}"
        L.append(f"On a CUDA machine, after `tools/train/setup` and `pack.py corpus-pack` here and "
                 f"`pack.py corpus-unpack` there (see `tools/train/README.md`): `python3 tools/train/train.py "
                 f"--run {args.run} --device cuda --batch {a['batch']} --target {shape_of(t)} --draft "
                 f"{shape_of(d)} --warmup {a['warmup']} --total-tokens {last['tokens']}` repeats this run's "
                 f"schedule with the same seed and data (the original's budget came from a `--stop-by` "
                 f"deadline), then `export.py --draft-type q8_0`.")
    else:
        L.append(f"`tools/train/setup` (Debian packages), then `tools/train/run --run {args.run} --total-tokens "
                 f"{last['tokens']}{opts} --ship` repeats this run with the same seed and data (PREVIOUS: the "
                 f"models these replace, from git history; see `tools/train/README.md`). Longer runs resume "
                 f"from checkpoints under `~/.cache/ghostline-train/runs/`.")
    (out / "README.md").write_text("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
