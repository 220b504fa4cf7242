#!/usr/bin/python3
"""Byte-level BPE tokenizer: training and encoding, as llama.cpp applies a `gpt2` vocabulary.

Text is split by the `qwen2` pre-tokenizer regex (the one llama.cpp uses for
tokenizer.ggml.pre = "qwen2": digits one by one, newlines grouped), each piece is mapped to
GPT-2's byte-to-unicode alphabet, and merges are applied by rank inside each piece. Special
tokens are never parsed out of text; the trainer inserts their ids directly.

Vocabulary layout: ids 0-255 are the single bytes (in byte order), then one token per merge in
merge order, then the special tokens.
"""
import argparse
import collections
import heapq
import json
import os
import random
import sys
import time
from pathlib import Path

import regex

# llama.cpp's rewrite of Qwen2's regex ((?i:...) expanded by hand); identical matches.
QWEN2_PATTERN = (
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
PRE_RE = regex.compile(QWEN2_PATTERN)

SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>",
            "<|file_sep|>", "<|repo_name|>"]


def bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable unicode characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


BYTE_ENC = bytes_to_unicode()
BYTE_DEC = {v: k for k, v in BYTE_ENC.items()}


def pretokenize(text: str):
    return PRE_RE.findall(text)


def to_unicode(piece: str) -> str:
    return "".join(BYTE_ENC[b] for b in piece.encode("utf-8"))


def merge_pair(syms, a, b):
    """The symbols with every adjacent (a, b), left to right, replaced by a + b."""
    out, i = [], 0
    while i < len(syms):
        if i < len(syms) - 1 and syms[i] == a and syms[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(syms[i])
            i += 1
    return out


class Tokenizer:
    def __init__(self, merges):
        self.merges = [tuple(m) for m in merges]
        self.tokens = [BYTE_ENC[b] for b in range(256)] + [a + b for a, b in self.merges] + SPECIALS
        self.token_to_id = {}
        for i, t in enumerate(self.tokens[:256 + len(self.merges)]):
            self.token_to_id.setdefault(t, i)
        self.ranks = {m: i for i, m in enumerate(self.merges)}
        self.special = {s: 256 + len(self.merges) + i for i, s in enumerate(SPECIALS)}
        self.cache = {}

    @property
    def vocab_size(self):
        return len(self.tokens)

    # Convenience ids
    @property
    def eot(self):
        return self.special["<|endoftext|>"]

    def sid(self, name):
        return self.special[name]

    def _bpe(self, word: str):
        syms = list(word)
        ranks = self.ranks
        while len(syms) > 1:
            best, best_i = None, -1
            for i in range(len(syms) - 1):
                r = ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best):
                    best, best_i = r, i
            if best is None:
                break
            a, b = self.merges[best]
            syms = merge_pair(syms, a, b)
        return [self.token_to_id[s] for s in syms]

    def encode(self, text: str):
        ids = []
        cache = self.cache
        for piece in PRE_RE.findall(text):
            got = cache.get(piece)
            if got is None:
                got = self._bpe(to_unicode(piece))
                if len(cache) < 2_000_000:
                    cache[piece] = got
            ids.extend(got)
        return ids

    def decode_bytes(self, ids):
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if i >= 256 + len(self.merges):
                out += t.encode("utf-8")
            else:
                out += bytes(BYTE_DEC[c] for c in t)
        return bytes(out)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def save(self, path):
        Path(path).write_text(json.dumps(dict(
            pre="qwen2", pattern=QWEN2_PATTERN, specials=SPECIALS,
            merges=[f"{a} {b}" for a, b in self.merges]), indent=0))

    @classmethod
    def load(cls, path):
        d = json.loads(Path(path).read_text())
        return cls([tuple(m.split(" ")) for m in d["merges"]])


def train_bpe(word_freqs, n_merges, log=sys.stderr):
    """Classic BPE over word frequencies with incremental pair counts and a lazy max-heap.
    Ties are broken by the lexicographically smallest pair, so training is deterministic."""
    words = [list(w) for w in word_freqs]
    freqs = list(word_freqs.values())
    pair_counts = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for wi, syms in enumerate(words):
        f = freqs[wi]
        for a, b in zip(syms, syms[1:]):
            pair_counts[(a, b)] += f
            where[(a, b)].add(wi)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    t0 = time.time()
    while len(merges) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negc or negc == 0:
            continue  # stale entry
        a, b = pair
        merges.append(pair)
        changed = set()
        for wi in list(where[pair]):
            syms = words[wi]
            f = freqs[wi]
            for x, y in zip(syms, syms[1:]):
                pair_counts[(x, y)] -= f
                changed.add((x, y))
            out = merge_pair(syms, a, b)
            for x, y in zip(syms, syms[1:]):
                where[(x, y)].discard(wi)
            for x, y in zip(out, out[1:]):
                pair_counts[(x, y)] += f
                where[(x, y)].add(wi)
                changed.add((x, y))
            words[wi] = out
        for p in changed:
            c = pair_counts[p]
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_counts.pop(p, None)
        pair_counts.pop(pair, None)
        if len(merges) % 1000 == 0:
            print(f"bpe: {len(merges)} merges, {time.time() - t0:.0f}s, last {a + b!r} x{-negc}",
                  file=log, flush=True)
    return merges


def main():
    ap = argparse.ArgumentParser(description="Train the byte-level BPE tokenizer on a corpus sample.")
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--vocab-size", type=int, default=8192, help="total, including specials")
    ap.add_argument("--sample-mb", type=float, default=16.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--from-gguf", default=None,
                    help="take the merges of an existing GGUF model instead of training: a new model "
                         "keeps the vocabulary (and per-token perplexities stay comparable)")
    args = ap.parse_args()
    work = Path(args.workdir)
    if args.from_gguf:
        from gguf_writer import GGUFReader
        m = GGUFReader(args.from_gguf).meta
        tok = Tokenizer([tuple(s.split(" ")) for s in m["tokenizer.ggml.merges"]])
        assert tok.tokens == m["tokenizer.ggml.tokens"], "GGUF vocabulary does not match its merges"
        tok.save(work / "tokenizer.json")
        print(f"bpe: vocab {tok.vocab_size} taken from {args.from_gguf}", file=sys.stderr)
        return
    docs = [json.loads(l) for l in open(work / "data" / "corpus.jsonl", encoding="utf-8")]
    train = [d for d in docs if d["split"] == "train"]
    # Balanced sample: equal byte budget per language, files chosen by seed.
    by_lang = collections.defaultdict(list)
    for d in train:
        by_lang[d["lang"]].append(d)
    rng = random.Random(args.seed)
    budget = args.sample_mb * 1e6 / len(by_lang)
    freqs = collections.Counter()
    for lang in sorted(by_lang):
        files = by_lang[lang][:]
        rng.shuffle(files)
        used = 0
        for d in files:
            if used >= budget:
                break
            freqs.update(pretokenize(d["text"]))
            used += len(d["text"])
    word_freqs = {to_unicode(w): c for w, c in sorted(freqs.items())}
    print(f"bpe: {len(word_freqs)} distinct pieces from {sum(freqs.values())} pieces", file=sys.stderr)
    n_merges = args.vocab_size - 256 - len(SPECIALS)
    merges = train_bpe(word_freqs, n_merges)
    tok = Tokenizer(merges)
    tok.save(work / "tokenizer.json")
    sample = train[0]["text"][:2000]
    ids = tok.encode(sample)
    assert tok.decode(ids) == sample
    print(f"bpe: vocab {tok.vocab_size}; sample {len(sample)} chars -> {len(ids)} tokens", file=sys.stderr)


if __name__ == "__main__":
    main()
