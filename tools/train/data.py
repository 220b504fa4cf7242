"""Training rows: plain left-to-right code and fill-in-the-middle samples, built on the fly.

Every row is a pure function of (seed, step, row index), so a resumed run sees exactly the
batches a straight run would have seen. Text windows start at line starts and are tokenized
with the same pre-tokenizer and merges the engine applies; FIM splits happen on characters
(the cursor may sit inside a word), and prefix, suffix and middle are tokenized separately, as
an editor client sends them.

Templates (token names from tokenizer.SPECIALS):
  PSM: <|fim_prefix|>P<|fim_suffix|>S<|fim_middle|>M<|endoftext|>
  SPM: <|fim_suffix|>S<|fim_prefix|>P<|fim_middle|>M<|endoftext|>
  plain: <|file_sep|> between files (a row may start inside a file)

FIM samples are shaped like the prompts the daemon sends the exported models (its prompt
assembler): SPM for the most part (the template the daemon uses when a model names both), a
suffix of at most DAEMON_SUFFIX_TOKENS, a prefix that starts at a line start when it is cut, and
middles where the daemon asks for them: the rest of a line (sometimes with more lines), the body
of a block after the line that opens it (the cursor on the new line's indentation, as an editor
leaves it after Enter), and a smaller share of random spans.
"""
import bisect
import json

import numpy as np

# Languages not listed weigh 0.1 (rust); lua has about 1 MB only.
LANG_WEIGHTS = {"python": 0.3, "go": 0.25, "cpp": 0.2, "ts": 0.125, "js": 0.125, "lua": 0.01}
MAX_MIDDLE_TOKENS = 96
# The daemon's suffix limit for an SPM prompt (PromptLimits::max_suffix_tokens).
DAEMON_SUFFIX_TOKENS = 128
# Line ends after which a block opens (Python, the brace languages, Lua).
BLOCK_OPENERS = (":", "{", "(", "[", " then", " do", ")")
MAX_BLOCK_LINES = 8


def load_docs(corpus_path, split):
    return load_splits(corpus_path, (split,))[split]


def load_splits(corpus_path, splits=("train", "heldout")):
    """{split: [documents]} in one pass over the corpus (it can be hundreds of MB)."""
    docs = {s: [] for s in splits}
    with open(corpus_path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["split"] in docs:
                docs[d["split"]].append(d)
    return docs


def prefix_from_line_start(tok, P, p, keep):
    """The last `keep` tokens of prefix text P (whose tokens are p), moved on to the next line
    start, as the daemon cuts a prefix; the plain token cut when the kept text holds no line
    start (one very long line)."""
    if keep >= len(p):
        return p
    raw = P.encode("utf-8")
    cut = len(raw) - len(tok.decode_bytes(p[len(p) - keep:]))
    start = raw.find(b"\n", max(0, cut - 1)) + 1
    if 0 < start < len(raw):
        try:
            return tok.encode(raw[start:].decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return p[len(p) - keep:]


class DocSampler:
    """Chooses documents: a language by LANG_WEIGHTS, then a file by its length."""

    def __init__(self, docs):
        self.docs = docs
        by_lang = {}
        for i, d in enumerate(docs):
            by_lang.setdefault(d["lang"], []).append(i)
        self.langs = sorted(by_lang)
        w = np.array([LANG_WEIGHTS.get(l, 0.1) for l in self.langs], dtype=np.float64)
        self.lang_p = w / w.sum()
        self.members = {l: by_lang[l] for l in self.langs}
        self.cums = {}
        for l in self.langs:
            c = np.cumsum([len(docs[i]["text"]) for i in by_lang[l]])
            self.cums[l] = c
        self.line_starts = {}

    def pick(self, rng):
        lang = self.langs[rng.choice(len(self.langs), p=self.lang_p)]
        c = self.cums[lang]
        j = int(np.searchsorted(c, rng.integers(0, c[-1]), side="right"))
        return self.members[lang][min(j, len(c) - 1)]

    def lines(self, di):
        ls = self.line_starts.get(di)
        if ls is None:
            text = self.docs[di]["text"]
            ls = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n" and i + 1 < len(text)]
            self.line_starts[di] = ls
        return ls


class RowBuilder:
    def __init__(self, tok, docs, ctx, fim_rate=0.5, spm_rate=0.5, span_rate=0.5, block_rate=0.0):
        self.tok = tok
        self.sampler = DocSampler(docs)
        self.docs = docs
        self.ctx = ctx
        self.fim_rate = fim_rate
        self.spm_rate = spm_rate
        self.span_rate = span_rate  # share of FIM samples whose middle is a random span, not line-based
        self.block_rate = block_rate  # share whose middle is the body of a block after its opener
        s = tok.special
        self.PRE, self.SUF, self.MID = s["<|fim_prefix|>"], s["<|fim_suffix|>"], s["<|fim_middle|>"]
        self.EOT, self.SEP = s["<|endoftext|>"], s["<|file_sep|>"]

    def _window(self, rng, di, n_chars):
        text = self.docs[di]["text"]
        ls = self.sampler.lines(di)
        if rng.random() < 0.25:
            start = 0
        else:
            start = ls[int(rng.integers(0, len(ls)))]
        return text[start:start + n_chars], start == 0

    def plain(self, rng, need):
        """About `need` tokens of left-to-right code from a random file."""
        di = self.sampler.pick(rng)
        text, at_start = self._window(rng, di, int(need * 4.5) + 64)
        ids = ([self.SEP] if at_start else []) + self.tok.encode(text)
        return ids

    def fim(self, rng, budget):
        """One FIM sample of at most `budget` tokens, or None if this draw does not fit."""
        di = self.sampler.pick(rng)
        n_chars = int(rng.integers(300, 2400))
        text, _ = self._window(rng, di, n_chars)
        if len(text) < 20:
            return None
        mode = rng.random()
        line_rate = max(0.0, 1.0 - self.span_rate - self.block_rate)
        if line_rate <= mode < line_rate + self.block_rate:
            cut = self._block(text, rng)
            if cut is None:
                return None
            a, b = cut
        elif mode < line_rate:
            # Cursor inside a line; the middle is the rest of that line (+ sometimes more lines).
            nl = [i for i, ch in enumerate(text) if ch == "\n"]
            if not nl:
                return None
            k = int(rng.integers(0, len(nl)))
            line_start = nl[k - 1] + 1 if k > 0 else 0
            line_end = nl[k]
            a = int(rng.integers(line_start, line_end + 1))
            extra = 0 if mode < 0.7 * line_rate else int(rng.integers(1, 5))
            b = nl[min(k + extra, len(nl) - 1)]
        else:
            a, b = sorted(int(x) for x in rng.integers(0, len(text) + 1, size=2))
            if b - a > 600:
                b = a + int(rng.integers(0, 600))
        P, M, S = text[:a], text[a:b], text[b:]
        m = self.tok.encode(M)
        if len(m) > MAX_MIDDLE_TOKENS:
            return None
        p = self.tok.encode(P)
        s = self.tok.encode(S)[:DAEMON_SUFFIX_TOKENS]
        room = budget - len(m) - 4
        if room < 8:
            return None
        # Keep the text nearest the cursor: cut the prefix on the left (at a line start, as the
        # daemon drops whole lines), the suffix on the right.
        keep_p = min(len(p), max(room // 2, room - len(s)))
        if keep_p < len(p):
            p = prefix_from_line_start(self.tok, P, p, keep_p)
        s = s[:max(0, room - len(p))]
        if rng.random() < self.spm_rate:
            return [self.SUF] + s + [self.PRE] + p + [self.MID] + m + [self.EOT]
        return [self.PRE] + p + [self.SUF] + s + [self.MID] + m + [self.EOT]

    def _block(self, text, rng):
        """(cursor, end) of a block body: a line ending with an opener, then the lines indented
        deeper than it. The cursor sits after the first body line's indentation; the middle runs
        to the end of the block's last line (at most MAX_BLOCK_LINES lines). None: no block."""
        lines = text.split("\n")
        starts = [0]
        for ln in lines[:-1]:
            starts.append(starts[-1] + len(ln) + 1)
        indent = lambda ln: len(ln) - len(ln.lstrip(" \t"))
        # The last line may be cut by the window: blocks end before it.
        openers = [i for i in range(len(lines) - 2)
                   if lines[i].rstrip().endswith(BLOCK_OPENERS) and lines[i + 1].strip()
                   and indent(lines[i + 1]) > indent(lines[i])]
        if not openers:
            return None
        i = openers[int(rng.integers(0, len(openers)))]
        j = i + 1
        while (j + 1 < len(lines) - 1 and j - i < MAX_BLOCK_LINES
               and (not lines[j + 1].strip() or indent(lines[j + 1]) > indent(lines[i]))):
            j += 1
        while j > i + 1 and not lines[j].strip():
            j -= 1
        return starts[i + 1] + indent(lines[i + 1]), starts[j] + len(lines[j])

    def row(self, seed, step, index):
        rng = np.random.default_rng([seed, step, index])
        n = self.ctx + 1
        out = []
        is_fim = rng.random() < self.fim_rate
        while len(out) < n:
            if is_fim:
                got = self.fim(rng, min(n, max(64, n - len(out))))
                if got is None:
                    continue
            else:
                got = self.plain(rng, n - len(out))
                if out:
                    got = got if got[:1] == [self.SEP] else [self.SEP] + got
            out.extend(got)
        return out[:n]

    def batch(self, seed, step, batch_size):
        return np.array([self.row(seed, step, i) for i in range(batch_size)], dtype=np.int64)
