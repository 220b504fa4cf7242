#!/usr/bin/env python3
"""Synthesizes a recorded typing session: a simulated person types a region of a real source
file (a function, a method, a whole short file) with a human timing model, typos corrected with
backspace, and the intent to accept a shown completion when it matches what they are about to
type. The output is a session file in the format of tools/replay/FORMAT.md; the timing model and
its sources are described in tools/replay/README.md.

  synthesize.py SOURCE --language python --lines 17-40 --seed 1 -o session.jsonl
  synthesize.py --manifest tests/sessions/manifest.json     # regenerates a whole set
"""
import argparse
import json
import math
import os
import random
import sys

TOOL = "ghostline-synthesize 1"

# Typist profiles. IKI means follow Dhakal et al., CHI 2018 ("Observations on Typing from 136
# Million Keystrokes"): about 239 ms for the average participant, about 120 ms for the fastest.
# Everything else is a modelling assumption documented in README.md.
PROFILES = {
    "average": {
        "iki_mean_ms": 239.0, "iki_cv": 0.55,
        "word_pause_median_ms": 220.0, "line_pause_median_ms": 650.0,
        "think_probability": 0.08, "think_ms": (1500.0, 5000.0),
        "shift_ms": 45.0, "typo_probability": 0.035,
        "notice_reaction_median_ms": 330.0, "backspace_factor": 0.75,
        "looks_at_completion": 0.9,
    },
    "fast": {
        "iki_mean_ms": 120.0, "iki_cv": 0.5,
        "word_pause_median_ms": 140.0, "line_pause_median_ms": 420.0,
        "think_probability": 0.05, "think_ms": (1000.0, 3500.0),
        "shift_ms": 25.0, "typo_probability": 0.02,
        "notice_reaction_median_ms": 250.0, "backspace_factor": 0.7,
        "looks_at_completion": 0.95,
    },
}

# Neighbouring keys on a US QWERTY keyboard, for substitution typos.
_ROWS = ["1234567890-=", "qwertyuiop[]", "asdfghjkl;'", "zxcvbnm,./"]
NEIGHBOURS = {}
for r, row in enumerate(_ROWS):
    for c, ch in enumerate(row):
        near = []
        for dr in (-1, 0, 1):
            if 0 <= r + dr < len(_ROWS):
                other = _ROWS[r + dr]
                for dc in (-1, 0, 1):
                    if (dr or dc) and 0 <= c + dc < len(other):
                        near.append(other[c + dc])
        NEIGHBOURS[ch] = near

SHIFTED = set('~!@#$%^&*()_+{}|:"<>?') | set("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def is_word(ch):
    return ch.isalnum() or ch == "_"


def lognormal(rng, mean, cv):
    sigma2 = math.log(1.0 + cv * cv)
    return rng.lognormvariate(math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2))


def utf16_len(s):
    return len(s.encode("utf-16-le")) // 2


class Document:
    """The text being typed, with LSP positions (UTF-16, as editors send them by default)."""

    def __init__(self, text):
        self.text = text

    def position(self, offset):
        before = self.text[:offset]
        line = before.count("\n")
        start = before.rfind("\n") + 1
        return {"line": line, "character": utf16_len(before[start:])}

    def insert(self, offset, s):
        pos = self.position(offset)
        self.text = self.text[:offset] + s + self.text[offset:]
        return {"range": {"start": pos, "end": pos}, "text": s}

    def delete_before(self, offset, n):
        change = {"range": {"start": self.position(offset - n), "end": self.position(offset)}, "text": ""}
        self.text = self.text[:offset - n] + self.text[offset:]
        return change


def keystrokes_of(region):
    """Splits the region into keystrokes: one character each, except that Enter also inserts
    the next line's indentation (an editor's auto-indent)."""
    keys = []
    i = 0
    while i < len(region):
        if region[i] == "\n":
            j = i + 1
            while j < len(region) and region[j] in " \t":
                j += 1
            # A blank line keeps no indentation (editors strip it).
            if j < len(region) and region[j] == "\n":
                j = i + 1
            keys.append(region[i:j])
            i = j
        else:
            keys.append(region[i])
            i += 1
    return keys


def synthesize(source_text, language, uri, line_range, profile_name, seed, open_files, source_note):
    rng = random.Random(seed)
    prof = PROFILES[profile_name]
    lines = source_text.split("\n")
    first, last = line_range
    if not (1 <= first <= last <= len(lines)):
        raise SystemExit("lines %d-%d are outside the file (%d lines)" % (first, last, len(lines)))
    # The region starts after the first line's indentation and ends at the last line's end.
    start = sum(len(l) + 1 for l in lines[:first - 1])
    start += len(lines[first - 1]) - len(lines[first - 1].lstrip(" \t"))
    end = sum(len(l) + 1 for l in lines[:last]) - 1
    region = source_text[start:end]
    initial = source_text[:start] + source_text[end:]
    doc = Document(initial)
    cursor = start
    progress = 0  # characters of the region typed correctly (the document is clean)
    pending_typos = 0
    t = 0.0
    events = []
    keystrokes = 0

    def emit_key(key, clean):
        # A keystroke at the cursor, followed by the editor's automatic inline-completion
        # request at the new cursor. `progress` marks the states where the document holds
        # exactly the first `progress` bytes of the typed region (no typo pending).
        nonlocal keystrokes
        keystrokes += 1
        ev = {"t": round(t, 1), "type": "key", "key": key, "complete": "automatic"}
        if clean:
            ev["progress"] = len(region[:progress].encode("utf-8"))
            if rng.random() >= prof["looks_at_completion"]:
                ev["ignore"] = True
        events.append(ev)

    def iki():
        return lognormal(rng, prof["iki_mean_ms"], prof["iki_cv"])

    keys = keystrokes_of(region)
    previous = ""
    for k, key in enumerate(keys):
        # Time before this key.
        gap = iki()
        if previous.startswith("\n"):
            gap += lognormal(rng, prof["line_pause_median_ms"], 0.6)
            if rng.random() < prof["think_probability"]:
                gap += rng.uniform(*prof["think_ms"])
        elif is_word(key[0]) and previous and not is_word(previous[-1]):
            gap += lognormal(rng, prof["word_pause_median_ms"], 0.6)
        if key[0] in SHIFTED:
            gap += prof["shift_ms"]
        t += gap
        previous = key

        typo_possible = len(key) == 1 and key.lower() in NEIGHBOURS and key != "\n"
        if typo_possible and rng.random() < prof["typo_probability"]:
            wrong = rng.choice(NEIGHBOURS[key.lower()])
            if key.isupper():
                wrong = wrong.upper()
            # The person notices after 0-3 more characters of the same line, then backspaces.
            extra = 0
            while extra < 3 and rng.random() < 0.45:
                extra += 1
            typed = [wrong]
            ahead = keys[k + 1:k + 1 + extra]
            ahead = [a for a in ahead if len(a) == 1 and a != "\n"][:extra]
            typed += ahead
            for i, ch in enumerate(typed):
                if i:
                    t += iki()
                doc.insert(cursor, ch)
                cursor += len(ch)
                emit_key(ch, False)
            t += lognormal(rng, prof["notice_reaction_median_ms"], 0.5)
            for i in range(len(typed)):
                if i:
                    t += iki() * prof["backspace_factor"]
                n = len(typed[-1 - i])
                doc.delete_before(cursor, n)
                cursor -= n
                emit_key("Backspace", i == len(typed) - 1)
            t += iki()
        doc.insert(cursor, key)
        cursor += len(key)
        progress += len(key)
        emit_key(key, True)

    assert doc.text == source_text, "the typed document differs from the source"
    header = {
        "type": "header",
        "format": "ghostline-session",
        "version": 1,
        "tool": TOOL,
        "language": language,
        "uri": uri,
        "positionEncoding": "utf-16",
        "text": initial,
        "openFiles": open_files,
        "finalText": source_text,
        "cursor": Document(initial).position(start),
        "typed": {"start": len(initial[:start].encode("utf-8")), "bytes": len(region.encode("utf-8"))},
        "accepts": ["full", "line", "word"],
        "typist": dict(profile=profile_name, seed=seed),
        "keystrokes": keystrokes,
        "durationMs": round(t, 1),
        "source": source_note,
    }
    return header, events


def write_session(path, header, events):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False) + "\n")
        for ev in events:
            f.write(json.dumps(ev, ensure_ascii=False, separators=(",", ":")) + "\n")


def parse_lines(text):
    a, _, b = text.partition("-")
    return int(a), int(b or a)


def from_manifest(path):
    base = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    for s in manifest["sessions"]:
        source = os.path.join(base, s["source"])
        with open(source, encoding="utf-8") as f:
            text = f.read()
        open_files = []
        for other in s.get("openFiles", []):
            with open(os.path.join(base, other), encoding="utf-8") as f:
                open_files.append({"uri": manifest["uriRoot"] + os.path.basename(other),
                                   "languageId": s["language"], "text": f.read()})
        note = {"file": s["source"], "license": manifest["license"]}
        header, events = synthesize(text, s["language"], manifest["uriRoot"] + os.path.basename(source),
                                    parse_lines(s["lines"]), s.get("profile", "average"), s["seed"],
                                    open_files, note)
        out = os.path.join(base, s["name"] + ".jsonl")
        write_session(out, header, events)
        print("%-28s %4d keystrokes, %6.1f s" % (s["name"], header["keystrokes"], header["durationMs"] / 1000))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", nargs="?", help="source file to type")
    ap.add_argument("--manifest", help="regenerate every session listed in this manifest, beside it")
    ap.add_argument("--language", help="LSP language id (python, typescript, c, cpp, go, rust, ...)")
    ap.add_argument("--lines", default=None, help="FIRST-LAST lines to type (1-based; default: all)")
    ap.add_argument("--profile", default="average", choices=sorted(PROFILES))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--uri", help="document URI (default: file:// + the absolute source path)")
    ap.add_argument("--license", default="unknown", help="license of the source file, noted in the header")
    ap.add_argument("-o", "--output", help="session file to write")
    args = ap.parse_args(argv)
    if args.manifest:
        from_manifest(args.manifest)
        return 0
    if not args.source or not args.language or not args.output:
        ap.error("SOURCE, --language and -o are needed (or --manifest)")
    with open(args.source, encoding="utf-8") as f:
        text = f.read()
    n_lines = len(text.split("\n"))
    line_range = parse_lines(args.lines) if args.lines else (1, n_lines - 1 if text.endswith("\n") else n_lines)
    uri = args.uri or "file://" + os.path.abspath(args.source)
    header, events = synthesize(text, args.language, uri, line_range, args.profile, args.seed, [],
                                {"file": os.path.basename(args.source), "license": args.license})
    write_session(args.output, header, events)
    print("%s: %d keystrokes, %.1f s" % (args.output, header["keystrokes"], header["durationMs"] / 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
