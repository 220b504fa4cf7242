#!/usr/bin/python3
"""Builds the training corpus from permissively licensed source code on this machine.

Sources are Debian packages (standard libraries of Python, Go and Rust, Python packages, Go
libraries, Rust crates, C++ headers, Lua modules) and pinned npm packages fetched with `npm pack`.
Each source's license is read from the package itself (Debian's copyright file, the crate's
Cargo.toml, package.json) and must be permissive. Files are normalized (UTF-8, LF line ends, no
trailing whitespace), filtered (size, minified or generated text), deduplicated by the SHA-256
of the normalized text, capped per source and split into train and held-out files with a fixed
seed; then training files that are near-duplicates of a held-out file or of an earlier training
file are dropped (neardup.py). Output: <workdir>/data/corpus.jsonl (one file per line) and manifest.json (statistics).

`--sources shipped` builds only the sources the shipped models were trained on (their card's
table); the sources added since come after them, so they change neither those sources' files
nor their held-out split.
"""
import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import neardup

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

# Sources added after the shipped models were trained (`--sources all`). The corpus was small
# beside the training budget: at 582M tokens the shipped run read its TypeScript about 100 times
# and its Go about 24 times, and its held-out loss was lowest near 100M tokens.
# npm: name, version, license, roots, extensions, language, cap in MB (None: --cap-mb).
NPM_PACKAGES_ADDED = [
    ("effect", "4.1.0", "MIT", ["src"], (".ts",), "ts", 8.0),
    ("@tanstack/query-core", "5.108.0", "MIT", ["src"], (".ts",), "ts", None),
    ("@trpc/server", "11.25.2", "MIT", ["src"], (".ts",), "ts", None),
    ("@apollo/server", "4.11.2", "MIT", ["src"], (".ts",), "ts", None),
    ("@types/node", "26.6.6", "MIT", ["."], (".d.ts",), "ts", None),
    ("fp-ts", "2.16.11", "MIT", ["lib"], (".d.ts",), "ts", None),
    ("jquery", "4.0.0", "MIT", ["src"], (".js",), "js", None),
    ("underscore", "1.13.8", "MIT", ["modules"], (".js",), "js", None),
    ("async", "3.2.6", "MIT", ["internal"], (".js",), "js", None),
    ("handlebars", "4.7.10", "MIT", ["lib"], (".js",), "js", None),
    ("highlight.js", "11.12.0", "BSD-3-Clause", ["lib"], (".js",), "js", None),
    ("uglify-js", "3.19.3", "BSD-2-Clause", ["lib"], (".js",), "js", None),
    ("svelte", "5.0.0", "MIT", ["src"], (".js",), "js", None),
    ("preact", "10.24.3", "MIT", ["src", "hooks/src", "compat/src"], (".js",), "js", None),
    ("graphql", "16.9.0", "MIT", ["."], (".js",), "js", None),
    ("lit-html", "3.2.1", "BSD-3-Clause", ["development"], (".js",), "js", None),
    ("mongoose", "8.8.1", "MIT", ["lib"], (".js",), "js", None),
    ("sequelize", "6.37.5", "MIT", ["lib"], (".js",), "js", None),
    ("knex", "3.1.0", "MIT", ["lib"], (".js",), "js", None),
    ("ws", "8.18.0", "MIT", ["lib"], (".js",), "js", None),
    ("pg", "8.13.1", "MIT", ["lib"], (".js",), "js", None),
    ("bootstrap", "5.3.3", "MIT", ["js/src"], (".js",), "js", None),
    ("mocha", "10.8.2", "MIT", ["lib"], (".js",), "js", None),
]

# Go libraries from Debian golang-*-dev packages: package, import path (/usr/share/gocode/src).
GO_PACKAGES = [
    ("golang-golang-x-tools-dev", "golang.org/x/tools"),
    ("golang-golang-x-net-dev", "golang.org/x/net"),
    ("golang-golang-x-crypto-dev", "golang.org/x/crypto"),
    ("golang-golang-x-sys-dev", "golang.org/x/sys"),
    ("golang-golang-x-mod-dev", "golang.org/x/mod"),
    ("golang-golang-x-sync-dev", "golang.org/x/sync"),
    ("golang-golang-x-term-dev", "golang.org/x/term"),
    ("golang-golang-x-oauth2-dev", "golang.org/x/oauth2"),
    ("golang-google-grpc-dev", "google.golang.org/grpc"),
    ("golang-google-protobuf-dev", "google.golang.org/protobuf"),
    ("golang-github-prometheus-client-golang-dev", "github.com/prometheus/client_golang"),
    ("golang-github-spf13-cobra-dev", "github.com/spf13/cobra"),
    ("golang-github-spf13-viper-dev", "github.com/spf13/viper"),
    ("golang-github-stretchr-testify-dev", "github.com/stretchr/testify"),
    ("golang-github-gin-gonic-gin-dev", "github.com/gin-gonic/gin"),
    ("golang-github-google-go-cmp-dev", "github.com/google/go-cmp"),
    ("golang-gopkg-yaml.v3-dev", "gopkg.in/yaml.v3"),
    ("golang-github-gorilla-mux-dev", "github.com/gorilla/mux"),
    ("golang-github-gorilla-websocket-dev", "github.com/gorilla/websocket"),
    ("golang-github-sirupsen-logrus-dev", "github.com/sirupsen/logrus"),
    ("golang-github-pelletier-go-toml.v2-dev", "github.com/pelletier/go-toml/v2"),
    ("golang-github-urfave-cli-v2-dev", "github.com/urfave/cli/v2"),
    ("golang-github-docker-docker-dev", "github.com/docker/docker"),
    ("golang-github-containerd-containerd-dev", "github.com/containerd/containerd"),
    ("golang-github-lib-pq-dev", "github.com/lib/pq"),
    ("golang-github-miekg-dns-dev", "github.com/miekg/dns"),
    ("golang-github-valyala-fasthttp-dev", "github.com/valyala/fasthttp"),
]

# Rust crates from Debian librust-*-dev packages (sources in /usr/share/cargo/registry); each
# crate's license is its Cargo.toml's.
RUST_CRATES = [
    "tokio", "serde", "syn", "regex", "regex-syntax", "clap", "rayon", "rayon-core", "futures-util",
    "hyper", "rand", "itertools", "nom", "anyhow", "bytes", "chrono", "serde_json", "tracing",
    "hashbrown", "indexmap", "tokio-util", "h2", "http", "mio", "memchr", "aho-corasick", "toml",
    "url", "nix", "object", "gimli", "rustls", "image", "crossbeam-channel", "crossbeam-utils",
    "parking_lot_core", "smallvec",
]

# C and C++ headers from more Debian -dev packages: directory under /usr/include, package.
CPP_HEADERS_ADDED = [
    ("absl", "libabsl-dev"),
    ("glm", "libglm-dev"),
    ("cereal", "libcereal-dev"),
    ("rapidjson", "rapidjson-dev"),
    ("CLI", "libcli11-dev"),
    ("tsl", "robin-map-dev"),
    ("cxxopts.hpp", "libcxxopts-dev"),
    ("date", "libhowardhinnant-date-dev"),
    ("asio", "libasio-dev"),
    ("websocketpp", "libwebsocketpp-dev"),
    ("oneapi", "libtbb-dev"),
    ("xtensor", "libxtensor-dev"),
    ("xsimd", "libxsimd-dev"),
    ("utf8", "libutfcpp-dev"),
    ("pugixml.hpp", "libpugixml-dev"),
]

# Lua modules from Debian lua-* packages (files under /usr/share/lua).
LUA_PACKAGES = [
    "lua-penlight", "lua-busted", "lua-luassert", "lua-argparse", "lua-dkjson", "lua-http",
    "lua-ldoc", "lua-say", "lua-cliargs", "lua-inspect", "lua-basexx", "lua-binaryheap",
    "lua-fifo", "lua-lpeg-patterns",
]

# Licenses a source may have (SPDX names; Debian writes MIT as Expat, and BSL-1.0 as Boost).
PERMISSIVE = {"MIT", "Expat", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "ISC", "BSL-1.0",
              "Zlib", "PSF-2.0", "Unlicense", "0BSD", "CC0-1.0", "public-domain", "Unicode-DFS-2016",
              "Unicode-3.0", "Boost"}
PERMISSIVE_NAMES = {p.lower() for p in PERMISSIVE}  # Debian writes BSD-3-clause


def permissive(expr: str) -> bool:
    """Whether an SPDX-style license expression allows permissive use: OR (or "/") needs one
    permissive side, AND both, and "X WITH exception" counts as X."""
    tokens = re.findall(r"\(|\)|/|[^\s()/]+", expr)
    pos = 0

    def peek():
        return tokens[pos].lower() if pos < len(tokens) else None

    def atom():
        nonlocal pos
        if peek() == "(":
            pos += 1
            value = either()
            if peek() == ")":
                pos += 1
            return value
        name = tokens[pos] if pos < len(tokens) else ""
        pos += 1
        if peek() == "with":
            pos += 2  # the exception
        return name.lower() in PERMISSIVE_NAMES

    def both():
        nonlocal pos
        value = atom()
        while peek() == "and":
            pos += 1
            value = atom() and value
        return value

    def either():
        nonlocal pos
        value = both()
        while peek() in ("or", "/"):
            pos += 1
            value = both() or value
        return value

    return bool(tokens) and either() and pos == len(tokens)


def debian_license(pkg: str, doc_root=Path("/usr/share/doc")):
    """The license of a Debian package's files (the `Files: *` paragraph of its machine-readable
    copyright file), or None when the file is missing or not in that format."""
    path = Path(doc_root) / pkg / "copyright"
    if not path.exists():
        return None
    for para in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+):[ \t]*(.*)$", para, flags=re.MULTILINE))
        if fields.get("Files", "").split() == ["*"] and fields.get("License"):
            return fields["License"].strip()
    return None


def package_files(pkg: str):
    r = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
    return [Path(line) for line in r.stdout.splitlines()] if r.returncode == 0 else []


def licensed(name: str, lic, origin: str):
    """lic if it is permissive; else None, saying why the source is skipped."""
    if lic is None:
        print(f"corpus: {name}: no license found ({origin}), skipped", file=sys.stderr)
        return None
    if not permissive(lic):
        print(f"corpus: {name}: license {lic!r} is not permissive, skipped", file=sys.stderr)
        return None
    return lic


def debian_source(name, lang, pkg, root: Path, exts, skip_dirs):
    """[the source of a Debian package's files under root], or [] (saying why) when root is
    missing or the package's license is not permissive."""
    if not root.exists():
        print(f"corpus: {root} missing ({pkg}), skipped", file=sys.stderr)
        return []
    lic = licensed(name, debian_license(pkg), pkg)
    if not lic:
        return []
    return [dict(name=name, lang=lang, license=lic, origin=f"Debian {pkg} ({root})", roots=[root],
                 exts=exts, skip_dirs=skip_dirs)]


def rust_package(crate: str) -> str:
    return f"librust-{crate.replace('_', '-')}-dev"


def added_debian_packages():
    """The Debian packages of the sources added after the shipped models (tools/train/setup
    installs them with --apt-packages)."""
    return ([pkg for pkg, _ in GO_PACKAGES] + [rust_package(c) for c in RUST_CRATES]
            + [pkg for _, pkg in CPP_HEADERS_ADDED] + LUA_PACKAGES)


def added_debian_sources():
    out = []
    for pkg, import_path in GO_PACKAGES:
        out += debian_source("go-" + import_path.replace("/", "-"), "go", pkg,
                             Path("/usr/share/gocode/src") / import_path, (".go",),
                             {"testdata", "vendor", "third_party"})
    registry = Path("/usr/share/cargo/registry")
    for crate in RUST_CRATES:
        dirs = sorted((d for d in registry.glob(f"{crate}-*")
                       if re.fullmatch(re.escape(crate) + r"-\d+(\.\d+)*", d.name)),
                      key=lambda d: tuple(int(v) for v in d.name[len(crate) + 1:].split(".")))
        if not dirs:
            print(f"corpus: crate {crate} missing in {registry}, skipped", file=sys.stderr)
            continue
        root = dirs[-1]
        m = re.search(r'^license\s*=\s*"([^"]+)"', (root / "Cargo.toml").read_text(), re.MULTILINE)
        lic = licensed(f"rust-{crate}", m.group(1) if m else None, str(root / "Cargo.toml"))
        if lic:
            out.append(dict(name=f"rust-{crate}", lang="rust", license=lic,
                            origin=f"Debian {rust_package(crate)} ({root})",
                            roots=[root], exts=(".rs",), skip_dirs={"target"}))
    for name, pkg in CPP_HEADERS_ADDED:
        out += debian_source("cpp-" + name.split(".")[0].lower(), "cpp", pkg, Path("/usr/include") / name,
                             (".hpp", ".h", ".ipp", ".inl", ".hxx", ".tcc"), set())
    for pkg in LUA_PACKAGES:
        files = [f for f in package_files(pkg) if f.suffix == ".lua" and f.is_file()]
        if not files:
            print(f"corpus: no Lua files from {pkg}, skipped", file=sys.stderr)
            continue
        lic = licensed(pkg, debian_license(pkg), pkg)
        if lic:
            out.append(dict(name=pkg, lang="lua", license=lic, origin=f"Debian {pkg} (/usr/share/lua)",
                            files=sorted(files), exts=(".lua",), skip_dirs=set()))
    return out


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
        # Only the files of golang-1.x-src: golang-1.x-go (which the golang-*-dev packages pull
        # in) adds a few generated ones, which would change which files the cap keeps.
        dict(name="go-stdlib", lang="go", license="BSD-3-Clause",
             origin=f"Debian golang-src ({go_root[-1] if go_root else 'missing'})",
             roots=go_root[-1:], exts=(".go",), skip_dirs={"testdata", "vendor"},
             package=f"golang-{go_root[-1].parent.name[3:]}-src" if go_root else None),
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


def npm_sources(npm_dir: Path, added: bool):
    out = []
    npm_dir.mkdir(parents=True, exist_ok=True)
    packages = [(*p, None, None) for p in NPM_PACKAGES]
    if added:
        packages += NPM_PACKAGES_ADDED
    for name, version, lic, subdirs, exts, lang, cap_mb in packages:
        flat = name.lstrip("@").replace("/", "-")  # npm pack's file name for scoped packages
        unpacked = npm_dir / f"{flat}-{version}"
        if not unpacked.exists():
            subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=npm_dir, check=True,
                           stdout=subprocess.DEVNULL)
            unpacked.mkdir()
            subprocess.run(["tar", "xzf", f"{flat}-{version}.tgz", "-C", unpacked.name],
                           cwd=npm_dir, check=True)
        # The tarball's one folder: "package", or the package's name (@types packages)
        pkg = next(d for d in sorted(unpacked.iterdir()) if d.is_dir())
        declared = json.loads((pkg / "package.json").read_text()).get("license")
        if declared != lic:
            sys.exit(f"corpus: npm {name}@{version} declares license {declared!r}, not {lic!r}")
        src = dict(name=f"npm-{flat}", lang=lang or ("ts" if ".ts" in exts else "js"), license=lic,
                   origin=f"npm {name}@{version}", roots=[pkg / s for s in subdirs], exts=exts,
                   skip_dirs={"node_modules"})
        if cap_mb is not None:
            src["cap_mb"] = cap_mb
        out.append(src)
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


def source_paths(src):
    """The files of a source: its `files`, or those under its roots (a root may be one file)."""
    if "files" in src:
        yield from src["files"]
        return
    for root in src["roots"]:
        if Path(root).is_file():
            yield Path(root)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in src["skip_dirs"])
            for fn in sorted(filenames):
                yield Path(dirpath) / fn


def collect(src, min_bytes, max_bytes):
    files = []
    owned = set(package_files(src["package"])) if src.get("package") else None
    for p in source_paths(src):
        if not p.name.endswith(src["exts"]) or p.is_symlink():
            continue
        if owned is not None and p not in owned:
            continue
        text = normalize(p.read_bytes())
        if text is None or not acceptable(text, min_bytes, max_bytes):
            continue
        files.append((str(p), text))
    return files


def take(src, files, seen, args):
    """One source's files -> (its manifest entry, its records, duplicates dropped): files whose
    normalized text is in `seen` are dropped (and the rest added to it), the rest capped at
    --cap-mb (or the source's own cap) in an order fixed by the seed, and --heldout-fraction of
    the kept files (at least 3) held out, whole."""
    uniq = []
    dupes = 0
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
    cap = int(min(args.cap_mb, src.get("cap_mb", args.cap_mb)) * 1e6)
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
    st = dict(name=src["name"], set=src["set"], lang=src["lang"], license=src["license"], origin=src["origin"],
              files_found=len(files), files_unique=len(uniq), files_kept=len(kept),
              bytes_kept=total, files_heldout=len(held),
              bytes_heldout=sum(len(kept[i][1].encode("utf-8")) for i in held))
    if "cap_mb" in src:
        st["cap_mb"] = src["cap_mb"]
    records = [dict(source=src["name"], lang=src["lang"], path=path, sha256=h,
                    split="heldout" if i in held else "train", text=text)
               for i, (path, text, h) in enumerate(kept)]
    return st, records, dupes


def drop_near_duplicate_stats(stats, records, dropped):
    """Brings each source's manifest entry to the records that remain after
    neardup.drop_near_duplicates (which drops training files only)."""
    kept = {}
    for r in records:
        k = kept.setdefault(r["source"], [0, 0])
        k[0] += 1
        k[1] += len(r["text"].encode("utf-8"))
    for st in stats:
        n = dropped.get(st["name"], 0)
        st["near_duplicates_dropped"] = n
        if n:
            st["files_kept"], st["bytes_kept"] = kept.get(st["name"], [0, 0])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--heldout-fraction", type=float, default=0.03)
    ap.add_argument("--cap-mb", type=float, default=20.0, help="max MB per source family after dedup")
    ap.add_argument("--min-bytes", type=int, default=200)
    ap.add_argument("--max-bytes", type=int, default=200_000)
    ap.add_argument("--sources", choices=["all", "shipped"], default="all",
                    help="all sources, or only those the shipped models were trained on")
    ap.add_argument("--near-dup", type=float, default=None,
                    help="drop training files whose estimated Jaccard similarity (5-token shingles) to a "
                         "held-out file or to a training file kept before reaches this; 0: off (default: "
                         f"{neardup.DEFAULT_THRESHOLD}, off for --sources shipped, which rebuilds that corpus "
                         "as it was)")
    ap.add_argument("--apt-packages", action="store_true",
                    help="print the Debian packages of the sources added after the shipped models, and exit")
    args = ap.parse_args()
    if args.apt_packages:
        print(" ".join(added_debian_packages()))
        return

    work = Path(args.workdir)
    (work / "data").mkdir(parents=True, exist_ok=True)
    added = args.sources == "all"
    # Each source records its set, so that a later run can take only the sources the shipped
    # models never saw (pack.py corpus-pack --sets added). The order is the same either way.
    sources = [dict(s, set="shipped") for s in debian_sources() + npm_sources(work / "npm", False)]
    if added:
        names = {s["name"] for s in sources}
        sources += [dict(s, set="added") for s in npm_sources(work / "npm", True) if s["name"] not in names]
        sources += [dict(s, set="added") for s in added_debian_sources()]

    seen = set()
    records = []
    stats = []
    dupes = 0
    for src in sources:
        st, recs, d = take(src, collect(src, args.min_bytes, args.max_bytes), seen, args)
        stats.append(st)
        records += recs
        dupes += d
        print(json.dumps(st), file=sys.stderr)

    near = args.near_dup if args.near_dup is not None else (0.0 if args.sources == "shipped"
                                                             else neardup.DEFAULT_THRESHOLD)
    near_dropped = like_heldout = 0
    if near > 0:
        records, dropped, like_heldout = neardup.drop_near_duplicates(records, near)
        drop_near_duplicate_stats(stats, records, dropped)
        near_dropped = sum(dropped.values())
        print(f"corpus: {near_dropped} training files dropped as near-duplicates (similarity >= {near}), "
              f"{like_heldout} of them of held-out files", file=sys.stderr)

    with open(work / "data" / "corpus.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    manifest = dict(sources_set=args.sources, seed=args.seed, heldout_fraction=args.heldout_fraction, cap_mb=args.cap_mb,
                    duplicates_dropped=dupes, near_dup_threshold=near, near_duplicates_dropped=near_dropped,
                    near_duplicates_of_heldout=like_heldout,
                    sources=stats,
                    train_bytes=sum(len(r["text"].encode()) for r in records if r["split"] == "train"),
                    heldout_bytes=sum(len(r["text"].encode()) for r in records if r["split"] == "heldout"))
    (work / "data" / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(json.dumps({k: v for k, v in manifest.items() if k != "sources"}), file=sys.stderr)


if __name__ == "__main__":
    main()
