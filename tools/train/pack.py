#!/usr/bin/python3
"""Moves a training run to a machine without network (a GPU box) and its weights back.

  pack.py corpus-pack   [--workdir W] --out corpus-shard.tar.xz
      data/corpus.jsonl, data/manifest.json and tokenizer.json of W, xz-compressed (the 83 MB
      corpus packs to a few tens of MiB). A SHA-256 of every member is stored in the shard.
  pack.py corpus-unpack [--workdir W] SHARD
      restores those files under W and verifies them; then `tools/train/run` skips the corpus and
      tokenizer steps, so the GPU machine needs neither Debian's sources nor npm.
  pack.py split FILE [--max-mib 16]
      cuts FILE into FILE.part000, FILE.part001, ... of at most --max-mib MiB each and writes
      FILE.parts.json (sizes and SHA-256 of the parts and of the whole).
  pack.py join FILE.parts.json [--out FILE]
      puts the parts back together and checks every hash.
"""
import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
from pathlib import Path

CORPUS_FILES = ["data/corpus.jsonl", "data/manifest.json", "tokenizer.json"]


def sha256_file(path, chunk=1 << 20):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                return h.hexdigest()
            h.update(b)


def corpus_pack(work: Path, out: Path, preset=6):
    sums = {}
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w:xz", preset=preset) as tar:
        for rel in CORPUS_FILES:
            p = work / rel
            if not p.exists():
                raise SystemExit(f"corpus-pack: {p} missing (run corpus.py and tokenizer.py first)")
            sums[rel] = sha256_file(p)
            tar.add(p, arcname=rel)
        data = json.dumps(sums, indent=1).encode()
        info = tarfile.TarInfo("SHA256SUMS.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, out)
    return sums


def corpus_unpack(shard: Path, work: Path):
    with tarfile.open(shard, "r:xz") as tar:
        names = tar.getnames()
        for n in names:  # only the expected members, no absolute paths or ..
            if n not in CORPUS_FILES + ["SHA256SUMS.json"]:
                raise SystemExit(f"corpus-unpack: unexpected member {n!r}")
        sums = json.loads(tar.extractfile("SHA256SUMS.json").read())
        for rel in CORPUS_FILES:
            dst = work / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(rel) as src, open(dst, "wb") as f:
                while True:
                    b = src.read(1 << 20)
                    if not b:
                        break
                    f.write(b)
            if sha256_file(dst) != sums[rel]:
                raise SystemExit(f"corpus-unpack: {rel}: checksum mismatch")
    return sums


def split(path: Path, max_mib=16.0):
    limit = int(max_mib * (1 << 20))
    parts = []
    with open(path, "rb") as f:
        i = 0
        while True:
            b = f.read(limit)
            if not b:
                break
            part = path.with_name(f"{path.name}.part{i:03d}")
            part.write_bytes(b)
            parts.append(dict(name=part.name, bytes=len(b), sha256=hashlib.sha256(b).hexdigest()))
            i += 1
    index = dict(file=path.name, bytes=path.stat().st_size, sha256=sha256_file(path), parts=parts)
    idx_path = path.with_name(path.name + ".parts.json")
    idx_path.write_text(json.dumps(index, indent=1))
    return idx_path


def join(index_path: Path, out: Path = None):
    index = json.loads(index_path.read_text())
    out = out or index_path.with_name(index["file"])
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as f:
        for p in index["parts"]:
            b = (index_path.parent / p["name"]).read_bytes()
            if len(b) != p["bytes"] or hashlib.sha256(b).hexdigest() != p["sha256"]:
                raise SystemExit(f"join: {p['name']}: size or checksum mismatch")
            f.write(b)
    if sha256_file(tmp) != index["sha256"]:
        raise SystemExit("join: checksum of the joined file does not match")
    os.replace(tmp, out)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    default_work = os.environ.get("GHOSTLINE_TRAIN_DIR", os.path.expanduser("~/.cache/ghostline-train"))
    p = sub.add_parser("corpus-pack")
    p.add_argument("--workdir", default=default_work)
    p.add_argument("--out", required=True)
    p = sub.add_parser("corpus-unpack")
    p.add_argument("--workdir", default=default_work)
    p.add_argument("shard")
    p = sub.add_parser("split")
    p.add_argument("file")
    p.add_argument("--max-mib", type=float, default=16.0)
    p = sub.add_parser("join")
    p.add_argument("index")
    p.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.cmd == "corpus-pack":
        out = Path(a.out)
        corpus_pack(Path(a.workdir), out)
        print(f"{out}: {out.stat().st_size} bytes", file=sys.stderr)
    elif a.cmd == "corpus-unpack":
        sums = corpus_unpack(Path(a.shard), Path(a.workdir))
        print(f"unpacked and verified {len(sums)} files into {a.workdir}", file=sys.stderr)
    elif a.cmd == "split":
        idx = split(Path(a.file), a.max_mib)
        n = len(json.loads(idx.read_text())["parts"])
        print(f"{a.file}: {n} part(s) of at most {a.max_mib} MiB, index {idx}", file=sys.stderr)
    else:
        out = join(Path(a.index), Path(a.out) if a.out else None)
        print(f"joined and verified {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
