#!/usr/bin/python3
"""Evaluates the exported GGUF models (the shipped files, dequantized) on held-out files.

- Single-line infill: the cursor sits at a random point of a random non-blank line of a held-out
  file; the expected middle is the rest of that line. PSM prompt (prefix: up to 256 tokens
  before the cursor, suffix: up to 128 tokens from the next line on), greedy decoding; the
  completion is the generated text up to the first newline or control token. Reports exact match
  and edit similarity (1 - Levenshtein / max length) for target and draft.
- Speculative acceptance: the target's greedy continuation (24 tokens) is replayed with the
  draft proposing k tokens at a time; acceptance = accepted / proposed (greedy verification).
- Perplexity: plain left-to-right over held-out files in 512-token windows; also bits per byte.
- Ten completions (the first ten samples, not selected) with prompt tail, expected and output.
"""
import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import DAEMON_SUFFIX_TOKENS, load_docs, prefix_from_line_start  # noqa: E402
from gguf_writer import GGUFReader  # noqa: E402
from model import Config, Transformer  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

PREFIX_TOKENS, SUFFIX_TOKENS, GEN_TOKENS = 256, DAEMON_SUFFIX_TOKENS, 24


def load_gguf_model(path):
    r = GGUFReader(path)
    m = r.meta
    cfg = Config(vocab_size=m["llama.vocab_size"], dim=m["llama.embedding_length"],
                 n_layers=m["llama.block_count"], n_heads=m["llama.attention.head_count"],
                 n_kv_heads=m["llama.attention.head_count_kv"], ffn_dim=m["llama.feed_forward_length"],
                 ctx=m["llama.context_length"], rope_base=m["llama.rope.freq_base"],
                 norm_eps=m["llama.attention.layer_norm_rms_epsilon"],
                 tied="output.weight" not in r.tensor_types())
    model = Transformer(cfg)
    state = {}
    for tname, torch_name in gguf_to_torch(cfg).items():
        state[torch_name] = torch.from_numpy(np.array(r.tensor(tname)))
    model.load_state_dict(state)
    model.eval()
    tok = Tokenizer([tuple(s.split(" ")) for s in m["tokenizer.ggml.merges"]])
    assert tok.tokens == m["tokenizer.ggml.tokens"], "GGUF vocabulary does not match its merges"
    return model, tok, r


def gguf_to_torch(cfg):
    out = {"token_embd.weight": "tok_emb.weight", "output_norm.weight": "norm.weight"}
    if not cfg.tied:
        out["output.weight"] = "output.weight"
    for i in range(cfg.n_layers):
        p = f"layers.{i}."
        out.update({
            f"blk.{i}.attn_norm.weight": p + "attn_norm.weight",
            f"blk.{i}.attn_q.weight": p + "attn.wq.weight",
            f"blk.{i}.attn_k.weight": p + "attn.wk.weight",
            f"blk.{i}.attn_v.weight": p + "attn.wv.weight",
            f"blk.{i}.attn_output.weight": p + "attn.wo.weight",
            f"blk.{i}.ffn_norm.weight": p + "ffn_norm.weight",
            f"blk.{i}.ffn_gate.weight": p + "ffn.w_gate.weight",
            f"blk.{i}.ffn_up.weight": p + "ffn.w_up.weight",
            f"blk.{i}.ffn_down.weight": p + "ffn.w_down.weight",
        })
    return out


def levenshtein(a, b):
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def edit_sim(a, b):
    if not a and not b:
        return 1.0
    return 1.0 - levenshtein(a, b) / max(len(a), len(b))


def make_samples(docs, n, seed):
    rng = np.random.default_rng(seed)
    by_lang = {}
    for d in docs:
        by_lang.setdefault(d["lang"], []).append(d)
    langs = sorted(by_lang)
    samples = []
    while len(samples) < n:
        lang = langs[len(samples) % len(langs)]  # languages in turn
        d = by_lang[lang][int(rng.integers(0, len(by_lang[lang])))]
        text = d["text"]
        lines = text.split("\n")
        k = int(rng.integers(0, len(lines)))
        line = lines[k]
        if not line.strip():
            continue
        col = int(rng.integers(0, len(line)))
        start = sum(len(l) + 1 for l in lines[:k])
        cursor = start + col
        middle = line[col:]
        if not middle.strip():
            continue
        samples.append(dict(lang=lang, path=d["path"], prefix=text[:cursor], middle=middle,
                            suffix=text[start + len(line):]))
    return samples


def infill_prompt(tok, s, template="spm"):
    """The sample's prompt as the daemon sends it to the exported models: SPM (their GGUF names
    both templates, and the daemon then takes SPM), the prefix cut at a line start; or PSM."""
    p = tok.encode(s["prefix"])
    p = prefix_from_line_start(tok, s["prefix"], p, PREFIX_TOKENS)
    q = tok.encode(s["suffix"])[:SUFFIX_TOKENS]
    sp = tok.special
    if template == "spm":
        return [sp["<|fim_suffix|>"]] + q + [sp["<|fim_prefix|>"]] + p + [sp["<|fim_middle|>"]]
    return [sp["<|fim_prefix|>"]] + p + [sp["<|fim_suffix|>"]] + q + [sp["<|fim_middle|>"]]


@torch.no_grad()
def greedy(model, prompt, n, stop_ids=()):
    logits, past = model(torch.tensor([prompt]))
    out = []
    pos = len(prompt)
    nxt = int(logits[0, -1].argmax())
    for _ in range(n):
        out.append(nxt)
        if nxt in stop_ids:
            break
        logits, past = model(torch.tensor([[nxt]]), past=past, pos0=pos)
        pos += 1
        nxt = int(logits[0, -1].argmax())
    return out


def first_line(tok, ids, eot):
    """The completion as a client shows it: up to the first control token, then the first line."""
    n_normal = tok.vocab_size - len(tok.special)
    cut = next((k for k, t in enumerate(ids) if t >= n_normal), len(ids))
    ids = ids[:cut]
    text = tok.decode_bytes(ids).decode("utf-8", errors="replace")
    return text.split("\n", 1)[0]


@torch.no_grad()
def acceptance(draft, prompt, target_ids, k):
    """Greedy speculative decoding replay: returns (accepted, proposed, agree, positions)."""
    logits, past = draft(torch.tensor([prompt]))
    pos = len(prompt)
    i = 0
    accepted = proposed = 0
    while i < len(target_ids):
        # propose up to k tokens from the current state
        props, p_past, p_pos, lg = [], past, pos, logits
        for _ in range(min(k, len(target_ids) - i)):
            t = int(lg[0, -1].argmax())
            props.append(t)
            lg, p_past = draft(torch.tensor([[t]]), past=p_past, pos0=p_pos)
            p_pos += 1
        a = 0
        while a < len(props) and props[a] == target_ids[i + a]:
            a += 1
        accepted += a
        proposed += len(props)
        step = target_ids[i:i + a + 1]  # accepted tokens plus the target's own next token
        logits, past = draft(torch.tensor([step]), past=past, pos0=pos)
        pos += len(step)
        i += len(step)
    return accepted, proposed


@torch.no_grad()
def agreement(draft, prompt, target_ids):
    logits, _ = draft(torch.tensor([prompt + target_ids[:-1]]))
    pred = logits[0, len(prompt) - 1:].argmax(-1).tolist()
    return sum(int(a == b) for a, b in zip(pred, target_ids)), len(target_ids)


@torch.no_grad()
def perplexity(model, tok, docs, max_tokens, ctx):
    nll, count, nbytes = 0.0, 0, 0
    for d in docs:
        ids = [tok.special["<|file_sep|>"]] + tok.encode(d["text"])
        for s in range(0, len(ids) - 1, ctx):
            chunk = ids[s:s + ctx + 1]
            if len(chunk) < 2:
                break
            x = torch.tensor([chunk])
            logits, _ = model(x[:, :-1])
            nll += F.cross_entropy(logits[0], x[0, 1:], reduction="sum").item()
            count += len(chunk) - 1
            nbytes += len(tok.decode_bytes(chunk[1:]))
            if count >= max_tokens:
                return nll, count, nbytes
    return nll, count, nbytes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--models", required=True, help="directory with ghostline-code*.gguf")
    ap.add_argument("--out", required=True, help="eval.json to write")
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--accept-samples", type=int, default=200)
    ap.add_argument("--k", type=int, default=4, help="draft tokens proposed per speculative step")
    ap.add_argument("--ppl-tokens", type=int, default=40000)
    ap.add_argument("--seed", type=int, default=4321)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--template", choices=("spm", "psm"), default="spm",
                    help="FIM template of the prompts (spm: what the daemon sends these models)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t_start = time.time()
    models = Path(args.models)
    target, tok, rt = load_gguf_model(models / "ghostline-code.gguf")
    draft, tok_d, rd = load_gguf_model(models / "ghostline-code-draft.gguf")
    assert tok.tokens == tok_d.tokens, "target and draft vocabularies differ"
    eot = tok.special["<|endoftext|>"]
    # Single-line infill stops at the first token holding a newline (or at <|endoftext|>).
    specials = set(tok.special.values())
    line_stop = specials | {i for i in range(tok.vocab_size - len(tok.special)) if b"\n" in tok.decode_bytes([i])}
    held = load_docs(Path(args.workdir) / "data" / "corpus.jsonl", "heldout")
    samples = make_samples(held, args.samples, args.seed)
    res = {"target": dict(em=0, es=0.0, empty=0), "draft": dict(em=0, es=0.0, empty=0)}
    per_lang = {}
    acc = [0, 0]
    agree = [0, 0]
    examples = []
    for i, s in enumerate(samples):
        prompt = infill_prompt(tok, s, args.template)
        # The first prompts also serve the speculative replay: there the target runs on (24 tokens).
        t_ids = greedy(target, prompt, GEN_TOKENS, stop_ids=specials if i < args.accept_samples else line_stop)
        d_ids = greedy(draft, prompt, GEN_TOKENS, stop_ids=line_stop)
        out = {"target": first_line(tok, t_ids, eot), "draft": first_line(tok, d_ids, eot)}
        pl = per_lang.setdefault(s["lang"], {"n": 0, "target_em": 0, "target_es": 0.0,
                                             "draft_em": 0, "draft_es": 0.0})
        pl["n"] += 1
        for name in ("target", "draft"):
            em = int(out[name] == s["middle"])
            es = edit_sim(out[name], s["middle"])
            res[name]["em"] += em
            res[name]["es"] += es
            res[name]["empty"] += int(out[name] == "")
            pl[f"{name}_em"] += em
            pl[f"{name}_es"] += es
        if i < args.accept_samples:
            seq = [t for t in t_ids if t not in specials] or t_ids
            a, p = acceptance(draft, prompt, seq, args.k)
            acc[0] += a
            acc[1] += p
            g, n = agreement(draft, prompt, seq)
            agree[0] += g
            agree[1] += n
        if i < 10:
            examples.append(dict(lang=s["lang"], path=s["path"],
                                 prefix_tail="\n".join(s["prefix"].split("\n")[-4:]),
                                 suffix_head="\n".join(s["suffix"].split("\n")[:3]),
                                 expected=s["middle"], target=out["target"], draft=out["draft"]))
        if (i + 1) % 50 == 0:
            n = i + 1
            print(f"eval {n}/{len(samples)}: target EM {res['target']['em'] / n:.3f} ES "
                  f"{res['target']['es'] / n:.3f}; draft EM {res['draft']['em'] / n:.3f} ES "
                  f"{res['draft']['es'] / n:.3f}; {time.time() - t_start:.0f}s", file=sys.stderr, flush=True)
    n = len(samples)
    report = dict(
        samples=n, seed=args.seed, template=args.template, prefix_tokens=PREFIX_TOKENS,
        suffix_tokens=SUFFIX_TOKENS,
        target=dict(exact_match=res["target"]["em"] / n, edit_similarity=res["target"]["es"] / n,
                    empty_completions=res["target"]["empty"] / n,
                    params=sum(p.numel() for p in target.parameters()),
                    file_bytes=(models / "ghostline-code.gguf").stat().st_size,
                    tensor_types=sorted(set(rt.tensor_types().values()))),
        draft=dict(exact_match=res["draft"]["em"] / n, edit_similarity=res["draft"]["es"] / n,
                    empty_completions=res["draft"]["empty"] / n,
                   params=sum(p.numel() for p in draft.parameters()),
                   file_bytes=(models / "ghostline-code-draft.gguf").stat().st_size,
                   tensor_types=sorted(set(rd.tensor_types().values()))),
        speculative=dict(k=args.k, prompts=min(n, args.accept_samples), accepted=acc[0], proposed=acc[1],
                         acceptance_rate=acc[0] / max(1, acc[1]),
                         top1_agreement=agree[0] / max(1, agree[1])),
        per_language={l: dict(n=v["n"], target_em=v["target_em"] / v["n"], target_es=v["target_es"] / v["n"],
                              draft_em=v["draft_em"] / v["n"], draft_es=v["draft_es"] / v["n"])
                      for l, v in sorted(per_lang.items())},
        examples=examples,
    )
    # Perplexity on held-out files, same documents for both models (languages interleaved).
    order = sorted(held, key=lambda d: d["sha256"])
    for name, model in (("target", target), ("draft", draft)):
        nll, count, nbytes = perplexity(model, tok, order, args.ppl_tokens, model.cfg.ctx)
        report[name].update(perplexity=math.exp(nll / count), ppl_tokens=count,
                            bits_per_byte=nll / math.log(2) / nbytes)
        print(f"ppl {name}: {math.exp(nll / count):.2f} over {count} tokens", file=sys.stderr, flush=True)
    report["eval_secs"] = time.time() - t_start
    Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(json.dumps({k: v for k, v in report.items() if k not in ("examples", "per_language")}, indent=1))


if __name__ == "__main__":
    main()
