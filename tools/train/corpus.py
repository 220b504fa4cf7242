#!/usr/bin/python3
"""Builds the training corpus from permissively licensed source code on this machine.

Sources are Debian packages (Python standard library, Go standard library, Boost headers) and
pinned npm packages fetched with `npm pack`. Files are normalized (UTF-8, LF line ends, no
trailing whitespace), filtered (size, minified or generated text), deduplicated by the SHA-256
of the normalized text, capped per source and split into train and held-out files with a fixed
seed. Output: <workdir>/data/corpus.jsonl (one file per line) and manifest.json (statistics).
"""
import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

NPM_PACKAGES = [
    # name, version, license, (relative roots inside the package), extensions
    ("typescript", "5.6.3", "Apache-2.0", ["lib"], (".d.ts",)),
    ("rxjs", "7.8.1", "Apache-2.0", ["src"], (".ts",)),
    ("lodash", "4.17.21", "MIT", ["."], (".js",)),
    ("zod", "3.23.8", "MIT", ["lib"], (".js", ".ts")),
    ("immer", "10.1.1", "MIT", ["src"], (".ts",)),
    ("three", "0.160.0", "MIT", ["src"], (".js",)),
    ("moment", "2.30.1", "MIT", ["src"], (".js",)),
    ("ramda", "0.30.1", "MIT", ["src"], (".js",)),
    ("axios", "1.7.7", "MIT", ["lib"], (".js",)),
    ("express", "4.21.0", "MIT", ["lib"], (".js",)),
    ("mobx", "6.13.2", "MIT", ["src"], (".ts",)),
    ("@reduxjs/toolkit", "2.2.7", "MIT", ["src"], (".ts",)),
    ("eslint", "9.14.0", "MIT", ["lib"], (".js",)),
    ("webpack", "5.96.1", "MIT", ["lib"], (".js",)),
    ("commander", "12.1.0", "MIT", ["lib"], (".js",)),
]

# Python packages that Debian installs (python3-torch and python3-numpy with the trainer, the rest
# with the base system); the license is the one in /usr/share/doc/<package>/copyright.
# Vendored third-party copies (_vendor) are skipped.
PY_PACKAGES = [
    ("torch", "BSD-3-Clause", "python3-torch"),
    ("numpy", "BSD-3-Clause", "python3-numpy"),
    ("pygments", "BSD-2-Clause", "python3-pygments"),
    ("setuptools", "MIT", "python3-setuptools"),
    ("pip", "MIT", "python3-pip"),
    ("pyparsing", "MIT", "python3-pyparsing"),
    ("oauthlib", "BSD-3-Clause", "python3-oauthlib"),
    ("yaml", "MIT", "python3-yaml"),
    ("pyflakes", "MIT", "pyflakes3"),
    ("httplib2", "MIT", "python3-httplib2"),
    ("jwt", "MIT", "python3-jwt"),
    ("django", "BSD-3-Clause", "python3-django"),
    ("sympy", "BSD-3-Clause", "python3-sympy"),
    ("sqlalchemy", "MIT", "python3-sqlalchemy"),
    ("twisted", "MIT", "python3-twisted"),
    ("flask", "BSD-3-Clause", "python3-flask"),
    ("werkzeug", "BSD-3-Clause", "python3-werkzeug"),
    ("jinja2", "BSD-3-Clause", "python3-jinja2"),
    ("click", "BSD-3-Clause", "python3-click"),
    ("requests", "Apache-2.0", "python3-requests"),
    ("networkx", "BSD-3-Clause", "python3-networkx"),
    ("attr", "MIT", "python3-attr"),
]

# C and C++ headers from Debian -dev packages with permissive licenses (tools/train/setup).
CPP_HEADERS = [
    ("nlohmann", "MIT", "nlohmann-json3-dev"),
    ("fmt", "MIT", "libfmt-dev"),
    ("spdlog", "MIT", "libspdlog-dev"),
    ("gtest", "BSD-3-Clause", "libgtest-dev"),
    ("gmock", "BSD-3-Clause", "libgmock-dev"),
    ("benchmark", "Apache-2.0", "libbenchmark-dev"),
    ("catch2", "BSL-1.0", "catch2"),
]


def debian_sources():
    go_root = sorted(Path("/usr/share").glob("go-1.*/src"))
    out = [
        dict(name="python-stdlib", lang="python", license="PSF-2.0",
             origin="Debian python3.11 (/usr/lib/python3.11)",
             roots=[Path("/usr/lib/python3.11")], exts=(".py",),
             skip_dirs={"site-packages", "dist-packages", "__pycache__"}),
        dict(name="go-stdlib", lang="go", license="BSD-3-Clause",
             origin=f"Debian golang-src ({go_root[-1] if go_root else 'missing'})",
             roots=go_root[-1:], exts=(".go",), skip_dirs={"testdata", "vendor"}),
        dict(name="boost-headers", lang="cpp", license="BSL-1.0",
             origin="Debian libboost1.74-dev (/usr/include/boost)",
             roots=[Path("/usr/include/boost")], exts=(".hpp", ".ipp", ".h"), skip_dirs={"preprocessed"}),
    ]
    for name, lic, pkg in PY_PACKAGES:
        root = Path("/usr/lib/python3/dist-packages") / name
        if root.is_dir():
            out.append(dict(name=f"py-{name}", lang="python", license=lic, origin=f"Debian {pkg} ({root})",
                            roots=[root], exts=(".py",), skip_dirs={"__pycache__", "_vendor"}))
        else:
            print(f"corpus: {root} missing, skipped", file=sys.stderr)
    for name, lic, pkg in CPP_HEADERS:
        root = Path("/usr/include") / name
        if root.is_dir():
            out.append(dict(name=f"cpp-{name}", lang="cpp", license=lic, origin=f"Debian {pkg} ({root})",
                            roots=[root], exts=(".hpp", ".h", ".ipp", ".inl"), skip_dirs=set()))
        else:
            print(f"corpus: {root} missing, skipped", file=sys.stderr)
    rust = sorted(Path("/usr/src").glob("rustc-*/library"))
    if rust:
        out.append(dict(name="rust-std", lang="rust", license="MIT OR Apache-2.0",
                        origin=f"Debian rust-src ({rust[-1]})", roots=rust[-1:], exts=(".rs",),
                        skip_dirs={"tests", "benches", "stdarch", "backtrace", "portable-simd"}))
    else:
        print("corpus: rust-src missing, skipped", file=sys.stderr)
    return out


def npm_sources(npm_dir: Path):
    out = []
    npm_dir.mkdir(parents=True, exist_ok=True)
    for name, version, lic, subdirs, exts in NPM_PACKAGES:
        flat = name.lstrip("@").replace("/", "-")  # npm pack's file name for scoped packages
        pkg = npm_dir / f"{flat}-{version}" / "package"
        if not pkg.exists():
            subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=npm_dir, check=True,
                           stdout=subprocess.DEVNULL)
            (npm_dir / f"{flat}-{version}").mkdir(exist_ok=True)
            subprocess.run(["tar", "xzf", f"{flat}-{version}.tgz", "-C", f"{flat}-{version}"],
                           cwd=npm_dir, check=True)
        out.append(dict(name=f"npm-{flat}", lang="ts" if ".ts" in exts else "js", license=lic,
                        origin=f"npm {name}@{version}", roots=[pkg / s for s in subdirs],
                        exts=exts, skip_dirs={"node_modules"}))
    return out


def normalize(raw: bytes):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else None


def acceptable(text: str, min_bytes: int, max_bytes: int):
    n = len(text.encode("utf-8"))
    if n < min_bytes or n > max_bytes:
        return False
    lines = text.split("\n")
    if max(len(ln) for ln in lines) > 400:
        return False  # minified or generated
    if n / max(1, len(lines)) > 100:
        return False
    bad = sum(1 for c in text if (ord(c) < 32 and c not in "\n\t"))
    return bad == 0


def collect(src, min_bytes, max_bytes):
    files = []
    for root in src["roots"]:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in src["skip_dirs"])
            for fn in sorted(filenames):
                if not fn.endswith(src["exts"]):
                    continue
                p = Path(dirpath) / fn
                if p.is_symlink():
                    continue
                text = normalize(p.read_bytes())
                if text is None or not acceptable(text, min_bytes, max_bytes):
                    continue
                files.append((str(p), text))
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--heldout-fraction", type=float, default=0.03)
    ap.add_argument("--cap-mb", type=float, default=20.0, help="max MB per source family after dedup")
    ap.add_argument("--min-bytes", type=int, default=200)
    ap.add_argument("--max-bytes", type=int, default=200_000)
    args = ap.parse_args()

    work = Path(args.workdir)
    (work / "data").mkdir(parents=True, exist_ok=True)
    sources = debian_sources() + npm_sources(work / "npm")

    seen = set()
    records = []
    stats = []
    dupes = 0
    for src in sources:
        files = collect(src, args.min_bytes, args.max_bytes)
        uniq = []
        for path, text in files:
            h = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if h in seen:
                dupes += 1
                continue
            seen.add(h)
            uniq.append((path, text, h))
        # Deterministic cap: shuffle by seed, keep files until the byte cap is reached.
        rng = random.Random(f"{args.seed}:{src['name']}:cap")
        rng.shuffle(uniq)
        cap = int(args.cap_mb * 1e6)
        kept, total = [], 0
        for item in uniq:
            size = len(item[1].encode("utf-8"))
            if total + size > cap:
                continue
            kept.append(item)
            total += size
        kept.sort(key=lambda t: t[2])
        rng = random.Random(f"{args.seed}:{src['name']}:split")
        n_held = max(3, int(round(len(kept) * args.heldout_fraction)))
        held = set(i for i in rng.sample(range(len(kept)), min(n_held, len(kept))))
        st = dict(name=src["name"], lang=src["lang"], license=src["license"], origin=src["origin"],
                  files_found=len(files), files_unique=len(uniq), files_kept=len(kept),
                  bytes_kept=total, files_heldout=len(held),
                  bytes_heldout=sum(len(kept[i][1].encode("utf-8")) for i in held))
        stats.append(st)
        print(json.dumps(st), file=sys.stderr)
        for i, (path, text, h) in enumerate(kept):
            records.append(dict(source=src["name"], lang=src["lang"], path=path, sha256=h,
                                split="heldout" if i in held else "train", text=text))

    with open(work / "data" / "corpus.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    manifest = dict(seed=args.seed, heldout_fraction=args.heldout_fraction, cap_mb=args.cap_mb,
                    duplicates_dropped=dupes, sources=stats,
                    train_bytes=sum(len(r["text"].encode()) for r in records if r["split"] == "train"),
                    heldout_bytes=sum(len(r["text"].encode()) for r in records if r["split"] == "heldout"))
    (work / "data" / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(json.dumps({k: v for k, v in manifest.items() if k != "sources"}), file=sys.stderr)


if __name__ == "__main__":
    main()
