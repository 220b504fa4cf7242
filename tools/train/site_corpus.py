#!/usr/bin/python3
"""Adds the installed Python packages whose metadata names a permissive license to the corpus.

For a machine without network that holds a large Python environment (a GPU machine with
PyTorch, JAX, SciPy and many more): the corpus arrives as a shard (pack.py corpus-unpack) and
this adds what is already there, from the interpreter that runs it.

- Per installed distribution, its Python files as the source `pip-NAME` (language python) and
  its C, C++ and CUDA files (headers and sources: PyTorch's C++ API, the C of NumPy and SciPy,
  Arrow, ONNX...) as `pip-NAME-cpp` (language cpp), both in the set "site".
- Its license comes from its own metadata: the License-Expression field (PEP 639) when there is
  one; else every Trove license classifier it lists must be a permissive license, and a short
  License field must name one (a field holding a whole license text is not read); with neither
  a License field nor classifiers, or with anything not known to be permissive, the
  distribution is skipped with a message. The license recorded says where it was read.
- Skipped as well: the Python files of distributions that install a top-level module the
  corpus already has as a Python source (Debian's torch, numpy, sympy...: another version of the
  same files would put near-copies of held-out files into training; their C and C++ files, which
  the corpus does not have, are taken), backports of standard-library modules (near-copies of
  the standard library, also a corpus source), and files in vendored copies of other projects
  (_vendor, vendored, third_party, ... folders).
- A file is taken under its distribution's license only if its own opening comment names no
  other license that is not permissive: a distribution may carry another project's files (a
  copy of NVIDIA's CUDA headers, Eigen's MPL-2.0 headers, a GPL script) outside such folders.
  Those files are dropped and counted per source (`files_other_license`).
- Files are read, normalized, filtered, deduplicated, capped and split as corpus.py does.
  Duplicates are dropped against every file already in the corpus and against the held-out
  files of the corpus the shard was cut from (manifest `exclude_sha256`).

With --deadline-s, the sources not read by then are left out (listed in the manifest as
`sources_not_read`), so that a machine lent for minutes still trains.

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
# C, C++ and CUDA files: headers and sources.
NATIVE_EXTS = (".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".cu")
# Words in a file's opening comment that name a license other than a permissive one, or terms
# that restrict use: such a file belongs to another project than its distribution, or is not
# free to train on.
OTHER_LICENSE = re.compile(
    r"GNU (Lesser |Library |Affero )?General Public License|\b(A|L)?GPL-?v?[0-9]|\bGPL\b|"
    r"Mozilla Public License|\bMPL\b|Eclipse Public License|Common Development and Distribution|"
    r"Creative Commons Attribution-(NonCommercial|ShareAlike|NoDerivs)|CC[- ]BY-(NC|SA|ND)|"
    r"NOTICE TO LICENSEE|Licensed Deliverables|proprietary|confidential", re.IGNORECASE)
HEAD_CHARS = 4000
COMMENT_BREAKS = re.compile(r"(?:\s|//|/\*|\*/|\*|#|--|;)+")
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


def other_license(text):
    """Whether the opening of a file (its license header, if it has one) names a license that is
    not permissive or restricts use."""
    head = COMMENT_BREAKS.sub(" ", text[:HEAD_CHARS])  # a name may run over comment lines
    return OTHER_LICENSE.search(head) is not None


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


def site_sources(skip_modules, log=sys.stderr, path=None):
    """The sources of the distributions installed on `path` (default: the interpreter's), and
    [(distribution, why)] of those skipped whole or in part."""
    import importlib.metadata as md
    sources, skipped = [], []
    by_name = {}
    for dist in md.distributions(**({"path": list(path)} if path is not None else {})):
        name = dist.metadata.get("Name")
        if name and name.lower() not in by_name:  # the first on sys.path wins, as for imports
            by_name[name.lower()] = dist
    for key in sorted(by_name):
        dist = by_name[key]
        name, version = dist.metadata["Name"], dist.version
        if dist.files is None:
            skipped.append((name, "its metadata lists no files (no RECORD)"))
            continue
        rel = [str(f) for f in dist.files if not f.parts or f.parts[0] != ".."]
        rel = [f for f in rel if not set(Path(f).parts) & VENDORED_DIRS]
        py = [f for f in rel if f.endswith(".py")]
        native = [f for f in rel if f.endswith(NATIVE_EXTS)]
        if not py and not native:
            continue
        lic, why = dist_license(dist.metadata)
        if lic is None:
            skipped.append((name, why))
            continue
        mods = top_level(rel)
        clash = sorted(mods & skip_modules)
        back = sorted(mods & STDLIB_BACKPORTS)
        if py and (clash or back):
            why = (f"installs {', '.join(clash)}, which the corpus has already" if clash
                   else f"a standard-library backport or copy ({', '.join(back)})")
            skipped.append((name, why if not native else f"its Python files: {why}"))
            py = []
        site = str(dist.locate_file(""))
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        origin = f"Python package {name} {version} ({site})"
        for lang, suffix, files, exts in (("python", "", py, (".py",)), ("cpp", "-cpp", native, NATIVE_EXTS)):
            if files:
                sources.append(dict(name=f"pip-{slug}{suffix}", set="site", lang=lang, license=lic, origin=origin,
                                    files=sorted(Path(dist.locate_file(f)) for f in files), exts=exts,
                                    skip_dirs=set()))
    for name, why in skipped:
        print(f"site-corpus: {name}: {why}, skipped", file=log)
    return sources, skipped


def _collect(job):
    """A source's acceptable files, less those whose header names another license, and how
    many those were."""
    src, min_bytes, max_bytes = job
    files = corpus.collect(src, min_bytes, max_bytes)
    kept = [(p, text) for p, text in files if not other_license(text)]
    return kept, len(files) - len(kept)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1),
                    help="processes that read and normalize files")
    ap.add_argument("--list", action="store_true", help="print the sources and licenses found, and exit")
    ap.add_argument("--deadline-s", type=float, default=float(os.environ.get("GHOSTLINE_SITE_CORPUS_S", 0)),
                    help="stop reading more sources this many seconds after the start and add those read "
                         "(0: no limit; default $GHOSTLINE_SITE_CORPUS_S)")
    args = ap.parse_args()
    t0 = time.time()
    work = Path(args.workdir)
    manifest_path = work / "data" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    if args.list:
        sources, skipped = site_sources(corpus_python_modules(manifest or {"sources": []}))
        for s in sources:
            print(f"{s['name']}\t{s['license']}\t{len(s['files'])} files\t{s['origin']}")
        print(f"{len({s['origin'] for s in sources})} distributions taken ({len(sources)} sources), "
              f"{len(skipped)} skipped whole or in part", file=sys.stderr)
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
    collected = []
    deadline = t0 + args.deadline_s if args.deadline_s else None
    with mp.get_context("fork").Pool(max(1, args.jobs)) as pool:
        for result in pool.imap(_collect, jobs, chunksize=1):
            collected.append(result)
            if deadline is not None and time.time() > deadline and len(collected) < len(jobs):
                pool.terminate()
                break
    not_read = [s["name"] for s in sources[len(collected):]]
    if not_read:
        print(f"site-corpus: {args.deadline_s:g} s passed: {len(not_read)} sources not read "
              f"({', '.join(not_read[:5])}{', ...' if len(not_read) > 5 else ''})", file=sys.stderr)
    stats, dupes, new_records = [], 0, []
    for src, (files, other) in zip(sources, collected):
        if not files:
            continue
        st, recs, d = corpus.take(src, files, seen, opts)
        dupes += d
        if not recs:
            continue
        st["files_other_license"] = other
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
                                     sources=len(stats), distributions=len({s["origin"] for s in stats}),
                                     skipped=len(skipped),
                                     files_other_license=sum(s["files_other_license"] for s in stats),
                                     train_bytes=sum(s["bytes_kept"] - s["bytes_heldout"] for s in stats),
                                     heldout_bytes=sum(s["bytes_heldout"] for s in stats),
                                     near_dup_threshold=near,
                                     near_duplicates_dropped=sum(near_dropped.values()),
                                     near_duplicates_of_heldout=like_heldout,
                                     sources_not_read=not_read,
                                     skipped_why={n: w for n, w in skipped})
    tmp = manifest_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    os.replace(tmp, manifest_path)
    sp = manifest["site_packages"]
    langs = {lang: sum(s["bytes_kept"] - s["bytes_heldout"] for s in stats if s["lang"] == lang)
             for lang in sorted({s["lang"] for s in stats})}
    print(f"site-corpus: {sp['distributions']} installed distributions added ({sp['sources']} sources, "
          f"{n_records} files, training {sp['train_bytes']:,} bytes: "
          f"{', '.join(f'{lang} {n:,}' for lang, n in langs.items())}; held out {sp['heldout_bytes']:,}), "
          f"{sp['skipped']} skipped whole or in part, {sp['files_other_license']} files under another license, "
          f"{dupes} duplicates and {sp['near_duplicates_dropped']} near-duplicates dropped, "
          f"{time.time() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
