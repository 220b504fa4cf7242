"""Near-duplicate files by MinHash over token shingles.

Exact duplicates are dropped by corpus.py (SHA-256 of the normalized text); this finds files that
differ by little: a vendored copy with its header changed, the same generated file for two
platforms, a version of a module renamed. Two such files are near-duplicates when the Jaccard
similarity of their sets of 5-token shingles is at least the threshold (0.85 by default); MinHash
signatures of 64 values estimate it, and locality-sensitive hashing (16 bands of 4 values) finds
the candidates without comparing every pair.

drop_near_duplicates applies it to the corpus: held-out files are never dropped, and a training
file is dropped when it is a near-duplicate of any held-out file or of a training file kept
before it. So the held-out split is the one corpus.py chose, and no training file is a
near-copy of a file the evaluation uses.

  neardup.py [--workdir W] [--threshold 0.85]
      applies it to a corpus corpus.py built without it (data/corpus.jsonl and manifest.json of
      W, rewritten in place); a corpus that has had it is left as it is.
"""
import argparse
import hashlib
import itertools
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

SHINGLE = 5
PERMS = 64
BANDS = 16
ROWS = PERMS // BANDS
DEFAULT_THRESHOLD = 0.85

_TOKEN = re.compile(r"\w+|[^\w\s]")
_MASK = (1 << 64) - 1


def _permutations():
    """PERMS fixed (odd multiplier, addend) pairs: the same signatures on every machine."""
    a, b = [], []
    for k in range(PERMS):
        d = hashlib.blake2b(f"ghostline-minhash:{k}".encode(), digest_size=16).digest()
        a.append(int.from_bytes(d[:8], "little") | 1)
        b.append(int.from_bytes(d[8:], "little"))
    return np.array(a, dtype=np.uint64).reshape(-1, 1), np.array(b, dtype=np.uint64).reshape(-1, 1)


_A, _B = _permutations()
# Powers of an odd constant: a shingle's hash is sum(token_hash[i + j] * P^j), wrapping at 2^64.
_POWERS = np.array([pow(0x9E3779B97F4A7C15, j, 1 << 64) for j in range(SHINGLE)], dtype=np.uint64)


class NearDupIndex:
    def __init__(self, threshold=DEFAULT_THRESHOLD):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"near-duplicate threshold {threshold} is not in (0, 1]")
        self.threshold = threshold
        self._token_hash = {}
        self._bands = [dict() for _ in range(BANDS)]
        self._signatures = []

    def _hash_tokens(self, text):
        cache = self._token_hash
        out = []
        for tok in _TOKEN.findall(text):
            h = cache.get(tok)
            if h is None:
                h = int.from_bytes(hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest(), "little")
                cache[tok] = h
            out.append(h)
        return np.array(out, dtype=np.uint64)

    def signature(self, text):
        """The MinHash signature of `text` (PERMS uint32 values)."""
        toks = self._hash_tokens(text)
        if len(toks) == 0:
            toks = np.zeros(1, dtype=np.uint64)
        n = max(1, len(toks) - SHINGLE + 1)
        with np.errstate(over="ignore"):
            sh = np.zeros(n, dtype=np.uint64)
            for j in range(min(SHINGLE, len(toks))):
                sh += toks[j:j + n] * _POWERS[j]
            mixed = (_A * sh[np.newaxis, :] + _B) >> np.uint64(32)
        return mixed.min(axis=1).astype(np.uint32)

    def _keys(self, sig):
        return [sig[b * ROWS:(b + 1) * ROWS].tobytes() for b in range(BANDS)]

    def similar(self, sig):
        """The index of an added signature whose estimated similarity to `sig` reaches the
        threshold, or None."""
        seen = set()
        for band, key in zip(self._bands, self._keys(sig)):
            for i in band.get(key, ()):
                if i in seen:
                    continue
                seen.add(i)
                if estimated_similarity(self._signatures[i], sig) >= self.threshold:
                    return i
        return None

    def __len__(self):
        return len(self._signatures)

    def add(self, sig):
        i = len(self._signatures)
        self._signatures.append(sig)
        for band, key in zip(self._bands, self._keys(sig)):
            band.setdefault(key, []).append(i)
        return i


def estimated_similarity(a, b):
    return float(np.mean(a == b))


def drop_near_duplicates(records, threshold=DEFAULT_THRESHOLD, prior=()):
    """records: dicts with `split` ("train" or "heldout"), `text` and `source`, in corpus order;
    `prior`: records of a corpus they are added to, which are compared with but never dropped.
    Returns (the records kept, in the same order; {source: training files dropped}; how many of
    those were near-copies of a held-out file)."""
    index = NearDupIndex(threshold)
    for r in itertools.chain(prior, records):
        if r["split"] == "heldout":
            index.add(index.signature(r["text"]))
    n_heldout = len(index)
    for r in prior:
        if r["split"] != "heldout":
            index.add(index.signature(r["text"]))
    kept, dropped, like_heldout = [], {}, 0
    for r in records:
        if r["split"] != "heldout":
            sig = index.signature(r["text"])
            match = index.similar(sig)
            if match is not None:
                dropped[r["source"]] = dropped.get(r["source"], 0) + 1
                like_heldout += match < n_heldout
                continue
            index.add(sig)
        kept.append(r)
    return kept, dropped, like_heldout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    a = ap.parse_args()
    import corpus  # the manifest's bookkeeping (corpus imports this module)
    data = Path(a.workdir) / "data"
    manifest = json.loads((data / "manifest.json").read_text())
    if manifest.get("near_dup_threshold"):
        print(f"neardup: {data} has had near-duplicates dropped (threshold "
              f"{manifest['near_dup_threshold']})", file=sys.stderr)
        return
    with open(data / "corpus.jsonl", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    kept, dropped, like_heldout = drop_near_duplicates(records, a.threshold)
    corpus.drop_near_duplicate_stats(manifest["sources"], kept, dropped)
    tmp = data / "corpus.jsonl.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in kept:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, data / "corpus.jsonl")
    manifest.update(near_dup_threshold=a.threshold, near_duplicates_dropped=sum(dropped.values()),
                    near_duplicates_of_heldout=like_heldout,
                    train_bytes=sum(len(r["text"].encode("utf-8")) for r in kept if r["split"] == "train"))
    (data / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"neardup: {sum(dropped.values())} training files dropped ({like_heldout} near-copies of "
          f"held-out files); training {manifest['train_bytes']:,} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
