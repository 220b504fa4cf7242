#!/usr/bin/python3
"""Moves a training run to a machine without network (a GPU box) and its weights back.

  pack.py corpus-pack   [--workdir W] --out corpus-shard.tar.xz [--sets added] [--skip-langs python]
                        [--max-train-mb N] [--window K] [--preset 0-9]
      data/corpus.jsonl, data/manifest.json and tokenizer.json of W, xz-compressed (the 83 MB
      corpus packs to a few tens of MiB). A SHA-256 of every member is stored in the shard.
      With a selection, only the sources of the given sets (manifest "set": shipped, added) and
      languages travel, and at most N MB of training text (every source keeps the same share of
      its files, chosen by their SHA-256; window K takes the K-th such share of each source,
      so successive runs read different files; held-out files all travel); the shard's manifest
      describes what it holds and the selection.
  pack.py corpus-unpack [--workdir W] SHARD
      restores those files under W and verifies them; then `tools/train/run` skips the corpus and
      tokenizer steps, so the GPU machine needs neither Debian's sources nor npm.
  pack.py split FILE [--max-mib 16]
      cuts FILE into FILE.part000, FILE.part001, ... of at most --max-mib MiB each and writes
      FILE.parts.json (sizes and SHA-256 of the parts and of the whole).
  pack.py join FILE.parts.json [--out FILE]
      puts the parts back together and checks every hash.
  pack.py models-split DIR --out OUT [--max-mib 15]
      the exported pair (DIR/ghostline-code.gguf, ghostline-code-draft.gguf) as one tar cut into
      OUT/models.tar.part000, ... with OUT/models.tar.parts.json, which also records each model
      file's size and SHA-256.
  pack.py models-join OUT/models.tar.parts.json --out DIR
      joins and checks the parts, then writes the two model files into DIR and checks them.
  pack.py run-pack RUNDIR [--workdir W] --out FILE.tar.xz
      a run's record: train.log, metrics.jsonl, config.json, DONE and the corpus manifest it was
      trained on (W/data/manifest.json, as corpus-manifest.json); card.py reads them.
  pack.py run-unpack FILE.tar.xz [--workdir W] --run NAME
      restores that record as W/runs/NAME/.
"""
import argparse
import hashlib
import io
import json
import os
import shutil
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


def window_of(files, frac, window):
    """The (sha, bytes) training files of one source that window `window` takes: the files in
    SHA-256 order seen as a ring, a window holds `frac` of their bytes, and window k starts where
    k such windows end (window 0 at the first file). Consecutive windows take different files
    until the ring is used up, then wrap around."""
    files = sorted(files)
    total = sum(b for _, b in files)
    if not files or frac >= 1.0:
        return {sha for sha, _ in files}
    budget = frac * total
    offset = (window * budget) % total
    start, acc = 0, 0
    for i, (_, b) in enumerate(files):  # the first file that begins at or after the offset
        if acc >= offset:
            start = i
            break
        acc += b
    else:
        start = 0
    keep, used = set(), 0
    for k in range(len(files)):
        sha, b = files[(start + k) % len(files)]
        if used + b <= budget:
            keep.add(sha)
            used += b
    return keep


def select_corpus(work: Path, dst: Path, sets=None, skip_langs=(), max_train_mb=None, window=0):
    """Writes the selected part of W's corpus to dst/data/ (corpus.jsonl, manifest.json).

    Sources of `sets` (all when None) whose language is not in skip_langs; when their training
    text exceeds max_train_mb, every source keeps the same fraction of it: window `window` of its
    training files in SHA-256 order (window_of), each taken while the source's share is not
    exceeded, so that each run on a machine the whole corpus cannot reach can read other files.
    Held-out files all stay.
    """
    manifest = json.loads((work / "data" / "manifest.json").read_text())
    chosen = [st for st in manifest["sources"]
              if (sets is None or st.get("set", "shipped") in sets) and st["lang"] not in skip_langs]
    names = {st["name"] for st in chosen}
    train_total = sum(st["bytes_kept"] - st["bytes_heldout"] for st in chosen)
    frac = 1.0
    if max_train_mb is not None and train_total > max_train_mb * 1e6:
        frac = max_train_mb * 1e6 / train_total
    # First pass: each chosen source's training files (sha, bytes), to decide which stay.
    files = {n: [] for n in names}
    with open(work / "data" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["source"] in names and d["split"] == "train":
                files[d["source"]].append((d["sha256"], len(d["text"].encode("utf-8"))))
    keep = set()
    for n, lst in files.items():
        keep.update((n, sha) for sha in window_of(lst, frac, window))
    stats = {st["name"]: dict(st, files_kept=0, bytes_kept=0, files_heldout=0, bytes_heldout=0) for st in chosen}
    (dst / "data").mkdir(parents=True, exist_ok=True)
    train_bytes = held_bytes = 0
    with open(work / "data" / "corpus.jsonl", encoding="utf-8") as f, \
            open(dst / "data" / "corpus.jsonl", "w", encoding="utf-8") as g:
        for line in f:
            d = json.loads(line)
            if d["source"] not in names:
                continue
            if d["split"] == "train" and (d["source"], d["sha256"]) not in keep:
                continue
            st, b = stats[d["source"]], len(d["text"].encode("utf-8"))
            st["files_kept"] += 1
            st["bytes_kept"] += b
            if d["split"] == "heldout":
                st["files_heldout"] += 1
                st["bytes_heldout"] += b
                held_bytes += b
            else:
                train_bytes += b
            g.write(line)
    # Every held-out file of the whole corpus: a machine that adds sources of its own drops exact
    # copies of them (site_corpus.py), so that no held-out file is trained on.
    held_all = []
    with open(work / "data" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            if '"split": "heldout"' in line:
                d = json.loads(line)
                if d["split"] == "heldout":
                    held_all.append(d["sha256"])
    sub = dict(manifest, sources=[stats[st["name"]] for st in chosen], train_bytes=train_bytes,
               exclude_sha256=sorted(held_all),
               heldout_bytes=held_bytes,
               selection=dict(sets=sorted(sets) if sets else None, skip_langs=sorted(skip_langs),
                              max_train_mb=max_train_mb, train_fraction=round(frac, 6), window=window,
                              from_train_bytes=manifest["train_bytes"]))
    (dst / "data" / "manifest.json").write_text(json.dumps(sub, indent=1))
    return sub


def corpus_pack(work: Path, out: Path, preset=6, sets=None, skip_langs=(), max_train_mb=None, window=0):
    sums = {}
    tmp = out.with_name(out.name + ".tmp")
    src_dir = work
    staging = None
    if sets is not None or skip_langs or max_train_mb is not None:
        import tempfile
        staging = tempfile.TemporaryDirectory(dir=out.parent)
        src_dir = Path(staging.name)
        sub = select_corpus(work, src_dir, sets, skip_langs, max_train_mb, window)
        shutil.copyfile(work / "tokenizer.json", src_dir / "tokenizer.json")
        print(f"corpus-pack: {len(sub['sources'])} sources, training {sub['train_bytes']:,} bytes "
              f"({sub['selection']['train_fraction']:.1%} of theirs, window {window}), "
              f"held out {sub['heldout_bytes']:,}",
              file=sys.stderr)
    with tarfile.open(tmp, "w:xz", preset=preset) as tar:
        for rel in CORPUS_FILES:
            p = src_dir / rel
            if not p.exists():
                raise SystemExit(f"corpus-pack: {p} missing (run corpus.py and tokenizer.py first)")
            sums[rel] = sha256_file(p)
            tar.add(p, arcname=rel)
        data = json.dumps(sums, indent=1).encode()
        info = tarfile.TarInfo("SHA256SUMS.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    os.replace(tmp, out)
    if staging is not None:
        staging.cleanup()
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


MODEL_FILES = ["ghostline-code.gguf", "ghostline-code-draft.gguf"]
RUN_FILES = ["train.log", "metrics.jsonl", "config.json", "DONE"]


def models_split(models_dir: Path, out: Path, max_mib=15.0):
    out.mkdir(parents=True, exist_ok=True)
    members = {}
    tar_path = out / "models.tar"
    with tarfile.open(tar_path, "w") as tar:
        for name in MODEL_FILES:
            p = models_dir / name
            members[name] = dict(bytes=p.stat().st_size, sha256=sha256_file(p))
            tar.add(p, arcname=name)
    idx_path = split(tar_path, max_mib)
    index = json.loads(idx_path.read_text())
    index["members"] = members
    idx_path.write_text(json.dumps(index, indent=1))
    tar_path.unlink()
    return idx_path


def models_join(index_path: Path, out_dir: Path):
    index = json.loads(index_path.read_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    tar_path = join(index_path, out_dir / index["file"])
    try:
        with tarfile.open(tar_path, "r") as tar:
            for name, want in index["members"].items():
                if name not in MODEL_FILES:
                    raise SystemExit(f"models-join: unexpected member {name!r}")
                dst = out_dir / name
                with tar.extractfile(name) as src, open(dst, "wb") as f:
                    shutil.copyfileobj(src, f, 1 << 20)
                if dst.stat().st_size != want["bytes"] or sha256_file(dst) != want["sha256"]:
                    raise SystemExit(f"models-join: {name}: size or checksum mismatch")
    finally:
        tar_path.unlink(missing_ok=True)
    return [out_dir / n for n in index["members"]]


def run_pack(run_dir: Path, work: Path, out: Path):
    with tarfile.open(out, "w:xz") as tar:
        for name in RUN_FILES:
            if (run_dir / name).exists():
                tar.add(run_dir / name, arcname=name)
        if (work / "data" / "manifest.json").exists():
            tar.add(work / "data" / "manifest.json", arcname="corpus-manifest.json")
    return out


def run_unpack(archive: Path, work: Path, run: str):
    dst = work / "runs" / run
    dst.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:xz") as tar:
        for m in tar.getmembers():
            if m.name not in RUN_FILES + ["corpus-manifest.json"] or not m.isfile():
                raise SystemExit(f"run-unpack: unexpected member {m.name!r}")
            with tar.extractfile(m) as src, open(dst / m.name, "wb") as f:
                shutil.copyfileobj(src, f)
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    default_work = os.environ.get("GHOSTLINE_TRAIN_DIR", os.path.expanduser("~/.cache/ghostline-train"))
    p = sub.add_parser("corpus-pack")
    p.add_argument("--workdir", default=default_work)
    p.add_argument("--out", required=True)
    p.add_argument("--sets", default=None, help="comma-separated source sets to take (shipped, added)")
    p.add_argument("--skip-langs", default="", help="comma-separated languages to leave out")
    p.add_argument("--max-train-mb", type=float, default=None, help="cap on the training text, in MB")
    p.add_argument("--window", type=int, default=0,
                   help="which window of each source's training files the cap takes (0, 1, ...: the next "
                        "run takes the next one)")
    p.add_argument("--preset", type=int, default=6, help="xz preset (0-9)")
    p = sub.add_parser("corpus-unpack")
    p.add_argument("--workdir", default=default_work)
    p.add_argument("shard")
    p = sub.add_parser("split")
    p.add_argument("file")
    p.add_argument("--max-mib", type=float, default=16.0)
    p = sub.add_parser("join")
    p.add_argument("index")
    p.add_argument("--out", default=None)
    p = sub.add_parser("models-split")
    p.add_argument("dir")
    p.add_argument("--out", required=True)
    p.add_argument("--max-mib", type=float, default=15.0)
    p = sub.add_parser("models-join")
    p.add_argument("index")
    p.add_argument("--out", required=True)
    p = sub.add_parser("run-pack")
    p.add_argument("rundir")
    p.add_argument("--workdir", default=default_work)
    p.add_argument("--out", required=True)
    p = sub.add_parser("run-unpack")
    p.add_argument("archive")
    p.add_argument("--workdir", default=default_work)
    p.add_argument("--run", required=True)
    a = ap.parse_args()
    if a.cmd == "corpus-pack":
        out = Path(a.out)
        corpus_pack(Path(a.workdir), out, a.preset, set(a.sets.split(",")) if a.sets else None,
                    tuple(x for x in a.skip_langs.split(",") if x), a.max_train_mb, a.window)
        print(f"{out}: {out.stat().st_size} bytes", file=sys.stderr)
    elif a.cmd == "corpus-unpack":
        sums = corpus_unpack(Path(a.shard), Path(a.workdir))
        print(f"unpacked and verified {len(sums)} files into {a.workdir}", file=sys.stderr)
    elif a.cmd == "split":
        idx = split(Path(a.file), a.max_mib)
        n = len(json.loads(idx.read_text())["parts"])
        print(f"{a.file}: {n} part(s) of at most {a.max_mib} MiB, index {idx}", file=sys.stderr)
    elif a.cmd == "join":
        out = join(Path(a.index), Path(a.out) if a.out else None)
        print(f"joined and verified {out}", file=sys.stderr)
    elif a.cmd == "models-split":
        idx = models_split(Path(a.dir), Path(a.out), a.max_mib)
        index = json.loads(idx.read_text())
        print(f"{a.dir}: {', '.join(index['members'])} in {len(index['parts'])} part(s) of at most "
              f"{a.max_mib:g} MiB, index {idx}", file=sys.stderr)
    elif a.cmd == "models-join":
        files = models_join(Path(a.index), Path(a.out))
        print(f"joined and verified {', '.join(str(f) for f in files)}", file=sys.stderr)
    elif a.cmd == "run-pack":
        out = run_pack(Path(a.rundir), Path(a.workdir), Path(a.out))
        print(f"{out}: {out.stat().st_size} bytes", file=sys.stderr)
    else:
        dst = run_unpack(Path(a.archive), Path(a.workdir), a.run)
        print(f"run record restored in {dst}", file=sys.stderr)


if __name__ == "__main__":
    main()
