#!/usr/bin/python3
"""Adds the installed Python packages whose metadata names a permissive license to the corpus.

For a machine without network that holds a large Python environment (a GPU machine with
PyTorch, JAX, SciPy and many more): the corpus arrives as a shard (pack.py corpus-unpack) and
this adds what is already there, from the interpreter that runs it.

- One source per installed distribution, `pip-NAME`, language python, set "site".
- Its license comes from its own metadata: the License-Expression field (PEP 639) when there is
  one; else every Trove license classifier it lists must be a permissive license, and a short
  License field must name one (a field holding a whole license text is not read); with neither
  a License field nor classifiers, or with anything not known to be permissive, the
  distribution is skipped with a message. The license recorded says where it was read.
- Skipped as well: distributions that install a top-level module the corpus already has as a
  Python source (Debian's torch, numpy, sympy...: another version of the same files would put
  near-copies of held-out files into training), backports of standard-library modules (near-
  copies of the standard library, also a corpus source), and files in vendored copies of other
  projects (_vendor, vendored, third_party, ... folders).
- Files are read, normalized, filtered, deduplicated, capped and split as corpus.py does.
  Duplicates are dropped against every file already in the corpus and against the held-out
  files of the corpus the shard was cut from (manifest `exclude_sha256`).

Appends to <workdir>/data/corpus.jsonl and adds the sources to data/manifest.json, which then
says `site_packages` (the interpreter, how many distributions were taken and skipped). Running
it again does nothing.
"""
import argparse
import hashlib
import json
import multiprocessing as mp
import os
import re
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import neardup  # noqa: E402

# Trove classifiers of permissive licenses -> the name recorded.
PERMISSIVE_CLASSIFIERS = {
    "License :: OSI Approved :: MIT License": "MIT",
    "License :: OSI Approved :: MIT No Attribution License (MIT-0)": "MIT-0",
    "License :: OSI Approved :: BSD License": "BSD",
    "License :: OSI Approved :: Apache Software License": "Apache",
    "License :: OSI Approved :: Python Software Foundation License": "PSF-2.0",
    "License :: OSI Approved :: ISC License (ISCL)": "ISC",
    "License :: OSI Approved :: zlib/libpng License": "Zlib",
    "License :: OSI Approved :: Boost Software License 1.0 (BSL-1.0)": "BSL-1.0",
    "License :: OSI Approved :: The Unlicense (Unlicense)": "Unlicense",
    "License :: OSI Approved :: Historical Permission Notice and Disclaimer (HPND)": "HPND",
    "License :: OSI Approved :: Universal Permissive License (UPL)": "UPL-1.0",
    "License :: CC0 1.0 Universal (CC0 1.0) Public Domain Dedication": "CC0-1.0",
    "License :: Public Domain": "public-domain",
}
# Classifiers that say nothing about which license.
GENERIC_CLASSIFIERS = {"License :: OSI Approved", "License :: Freely Distributable"}

# Short License fields (lowercased, punctuation squeezed) -> the name recorded.
LICENSE_FIELD = [
    (r"(the )?mit( license)?( \(mit\))?", "MIT"),
    (r"mit-0", "MIT-0"),
    (r"(bsd[- ]?3[- ]clause|3[- ]clause bsd|(new|modified|revised) bsd)( license)?", "BSD-3-Clause"),
    (r"(bsd[- ]?2[- ]clause|2[- ]clause bsd|simplified bsd|freebsd)( license)?", "BSD-2-Clause"),
    (r"bsd( license)?", "BSD"),
    (r"apache( software)?( license)?,?( version)? ?2(\.0)?( license)?|apache-2\.0|apache 2\.0 license", "Apache-2.0"),
    (r"(psf|python software foundation)( license)?( version 2)?|psf-2\.0|psfl", "PSF-2.0"),
    (r"isc( license)?", "ISC"),
    (r"(the )?unlicense", "Unlicense"),
    (r"zlib( license)?", "Zlib"),
    (r"hpnd", "HPND"),
    (r"public domain|cc0( 1\.0)?|cc0-1\.0", "public-domain"),
]
# Besides corpus.PERMISSIVE (SPDX names): names this file records.
EXTRA_PERMISSIVE = {"mit-0", "hpnd", "upl-1.0", "bsd", "apache"}

# Top-level modules that are backports or copies of standard-library modules.
STDLIB_BACKPORTS = {"importlib_metadata", "importlib_resources", "zipp", "typing_extensions", "backports",
                    "exceptiongroup", "tomli", "dataclasses", "enum34", "futures", "typing", "mock",
                    "contextlib2", "singledispatch", "pathlib2", "six"}
VENDORED_DIRS = {"_vendor", "vendor", "vendored", "_vendored", "third_party", "thirdparty", "_third_party",
                 "extern", "_extern", "externals", "__pycache__"}


def expression_permissive(expr):
    """corpus.permissive() that also knows the names this file records (e.g. HPND)."""
    if corpus.permissive(expr):
        return True
    tokens = re.findall(r"\(|\)|/|[^\s()/]+", expr)
    if tokens and all(t.lower() in EXTRA_PERMISSIVE | corpus.PERMISSIVE_NAMES | {"or", "and", "(", ")", "/"}
                      for t in tokens):
        return True
    return False


def dist_license(meta):
    """(the license recorded, None) for a permissive distribution, else (None, why not)."""
    expr = (meta.get("License-Expression") or "").strip()
    if expr:
        if expression_permissive(expr):
            return f"{expr} (License-Expression)", None
        return None, f"License-Expression {expr!r} is not permissive"
    classifiers = [c.strip() for c in (meta.get_all("Classifier") or []) if c.strip().startswith("License ::")]
    named = [c for c in classifiers if c not in GENERIC_CLASSIFIERS]
    for c in named:
        if c not in PERMISSIVE_CLASSIFIERS:
            return None, f"classifier {c!r} is not a permissive license"
    field = (meta.get("License") or "").strip()
    if field and "\n" not in field and len(field) <= 60:
        key = re.sub(r"\s+", " ", field.lower()).strip(" .")
        for pattern, name in LICENSE_FIELD:
            if re.fullmatch(pattern, key):
                return f"{name} (License: {field})", None
        if expression_permissive(field):
            return f"{field} (License)", None
        if not named:
            return None, f"License {field!r} is not a license known to be permissive"
    if named:
        return " / ".join(sorted({PERMISSIVE_CLASSIFIERS[c] for c in named})) + " (classifiers)", None
    if field:
        return None, "its License field holds a whole text and it lists no license classifier"
    return None, "no license in its metadata"


def top_level(rel_paths):
    """The top-level modules and packages a distribution installs (from its RECORD paths)."""
    out = set()
    for rel in rel_paths:
        parts = Path(rel).parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".egg-info", ".data")):
            continue
        first = parts[0]
        if len(parts) == 1:
            if first.endswith(".py"):
                out.add(first[:-3])
            continue
        out.add(first)
    return out


def corpus_python_modules(manifest):
    """Top-level modules the corpus already has as Python sources (Debian's, from their origin)."""
    mods = set()
    for st in manifest["sources"]:
        if st["lang"] != "python":
            continue
        m = re.search(r"dist-packages/([A-Za-z0-9_]+)", st.get("origin", ""))
        if m:
            mods.add(m.group(1))
    # The shipped corpus's Debian Python packages, also when the shard carries none of them.
    mods |= {name for name, _, _ in corpus.PY_PACKAGES}
    mods |= {"attrs"}  # installed beside attr
    return mods


def site_sources(skip_modules, log=sys.stderr):
    import importlib.metadata as md
    sources, skipped = [], []
    by_name = {}
    for dist in md.distributions():
        name = dist.metadata.get("Name")
        if name and name.lower() not in by_name:  # the first on sys.path wins, as for imports
            by_name[name.lower()] = dist
    for key in sorted(by_name):
        dist = by_name[key]
        name, version = dist.metadata["Name"], dist.version
        if dist.files is None:
            skipped.append((name, "its metadata lists no files (no RECORD)"))
            continue
        rel = [str(f) for f in dist.files]
        py = [f for f in rel if f.endswith(".py") and not (set(Path(f).parts) & VENDORED_DIRS)
              and not f.startswith("..")]
        if not py:
            continue
        mods = top_level(rel)
        clash = sorted(mods & skip_modules)
        if clash:
            skipped.append((name, f"installs {', '.join(clash)}, which the corpus has already"))
            continue
        back = sorted(mods & STDLIB_BACKPORTS)
        if back:
            skipped.append((name, f"a standard-library backport or copy ({', '.join(back)})"))
            continue
        lic, why = dist_license(dist.metadata)
        if lic is None:
            skipped.append((name, why))
            continue
        files = sorted(Path(dist.locate_file(f)) for f in py)
        site = str(dist.locate_file(""))
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        sources.append(dict(name=f"pip-{slug}", set="site", lang="python", license=lic,
                            origin=f"Python package {name} {version} ({site})", files=files,
                            exts=(".py",), skip_dirs=set()))
    for name, why in skipped:
        print(f"site-corpus: {name}: {why}, skipped", file=log)
    return sources, skipped


def _collect(job):
    src, min_bytes, max_bytes = job
    return corpus.collect(src, min_bytes, max_bytes)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1),
                    help="processes that read and normalize files")
    ap.add_argument("--list", action="store_true", help="print the sources and licenses found, and exit")
    args = ap.parse_args()
    t0 = time.time()
    work = Path(args.workdir)
    manifest_path = work / "data" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    if args.list:
        sources, skipped = site_sources(corpus_python_modules(manifest or {"sources": []}))
        for s in sources:
            print(f"{s['name']}\t{s['license']}\t{len(s['files'])} files\t{s['origin']}")
        print(f"{len(sources)} distributions taken, {len(skipped)} skipped", file=sys.stderr)
        return
    if manifest is None:
        # No shard came: a corpus of these packages alone, with corpus.py's defaults.
        print(f"site-corpus: no corpus in {work}: starting one", file=sys.stderr)
        manifest_path.parent.mkdir(parents=True, exist_ok=True)
        (work / "data" / "corpus.jsonl").write_text("")
        manifest = dict(sources_set="site", seed=1234, heldout_fraction=0.03, cap_mb=20.0, duplicates_dropped=0,
                        sources=[], train_bytes=0, heldout_bytes=0)
    if manifest.get("site_packages"):
        print("site-corpus: the installed packages are in the corpus already", file=sys.stderr)
        return
    # The settings the rest of the corpus was built with (cap, held-out share, seed, sizes).
    opts = argparse.Namespace(seed=manifest.get("seed", 1234), cap_mb=manifest.get("cap_mb", 20.0),
                              heldout_fraction=manifest.get("heldout_fraction", 0.03))
    min_bytes, max_bytes = 200, 200_000
    seen = set(manifest.get("exclude_sha256", []))
    corpus_path = work / "data" / "corpus.jsonl"
    prior = []  # the corpus here: the new files' near-duplicates of it are dropped
    with open(corpus_path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            seen.add(r["sha256"])
            prior.append(r)
    sources, skipped = site_sources(corpus_python_modules(manifest))
    jobs = [(s, min_bytes, max_bytes) for s in sources]
    if args.jobs > 1 and len(jobs) > 1:
        with mp.get_context("fork").Pool(args.jobs) as pool:
            collected = pool.map(_collect, jobs, chunksize=1)
    else:
        collected = [_collect(j) for j in jobs]
    stats, dupes, new_records = [], 0, []
    for src, files in zip(sources, collected):
        if not files:
            continue
        st, recs, d = corpus.take(src, files, seen, opts)
        dupes += d
        if not recs:
            continue
        stats.append(st)
        new_records += recs
    near = manifest.get("near_dup_threshold", neardup.DEFAULT_THRESHOLD) or neardup.DEFAULT_THRESHOLD
    new_records, near_dropped, like_heldout = neardup.drop_near_duplicates(new_records, near, prior)
    del prior
    corpus.drop_near_duplicate_stats(stats, new_records, near_dropped)
    n_records = len(new_records)
    # The new records go to a file of their own first and are appended in one go.
    new_path = corpus_path.with_name(corpus_path.name + ".site")
    with open(new_path, "w", encoding="utf-8") as f:
        for r in new_records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(new_path, "rb") as src_f, open(corpus_path, "ab") as dst_f:
        shutil.copyfileobj(src_f, dst_f, 1 << 20)
    new_path.unlink()
    manifest["sources"] += stats
    manifest["duplicates_dropped"] = manifest.get("duplicates_dropped", 0) + dupes
    manifest["train_bytes"] += sum(s["bytes_kept"] - s["bytes_heldout"] for s in stats)
    manifest["heldout_bytes"] += sum(s["bytes_heldout"] for s in stats)
    manifest["site_packages"] = dict(python=sys.version.split()[0], executable=sys.executable,
                                     sources=len(stats), skipped=len(skipped),
                                     train_bytes=sum(s["bytes_kept"] - s["bytes_heldout"] for s in stats),
                                     heldout_bytes=sum(s["bytes_heldout"] for s in stats),
                                     near_dup_threshold=near,
                                     near_duplicates_dropped=sum(near_dropped.values()),
                                     near_duplicates_of_heldout=like_heldout,
                                     skipped_why={n: w for n, w in skipped})
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    os.replace(tmp, manifest_path)
    sp = manifest["site_packages"]
    print(f"site-corpus: {sp['sources']} installed distributions added ({n_records} files, training "
          f"{sp['train_bytes']:,} bytes, held out {sp['heldout_bytes']:,}), {sp['skipped']} skipped, "
          f"{dupes} duplicates and {sp['near_duplicates_dropped']} near-duplicates dropped, "
          f"{time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
