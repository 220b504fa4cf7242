#!/usr/bin/python3
"""What a user sees at four kinds of cursor positions in held-out code, through `ghostline complete`.

Samples (seeded) from the held-out split of the training corpus, each written to a file with the
sample's extension and completed at the cursor as an editor asks while the user types
(`--automatic`; a binary without that flag is asked plainly):

  line     a line cut at a random column (the rest of the line removed): the rest of the line is
           right. Exact match of the first line shown, share of empty answers.
  word     the cursor inside an identifier, nothing removed: nothing is right (text typed into
           the middle of a word breaks it). Share answered with nothing.
  comment  the cursor after a space inside a line comment, nothing removed: nothing is right (no
           completions in comments by default). Share answered with nothing.
  block    the cursor at the end of a line that opens a block (`:` or `{`), the block's body
           removed: the body is right. Share answered with several lines, exact match of the
           body, and "cut right": the completion has as many lines as the body (it stopped where
           the block ends).

Prints one JSON object of figures per kind.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

EXT = {"python": ".py", "go": ".go", "cpp": ".cpp", "ts": ".ts", "js": ".js"}
LINE_COMMENT = {"python": "#", "go": "//", "cpp": "//", "ts": "//", "js": "//"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def indent(line):
    return len(line) - len(line.lstrip(" \t"))


def sample_line(rng, text, lang):
    lines = text.split("\n")
    for _ in range(50):
        k = rng.randrange(len(lines))
        line = lines[k]
        if not line.strip():
            continue
        col = rng.randrange(len(line))
        middle = line[col:]
        if not middle.strip():
            continue
        start = sum(len(x) + 1 for x in lines[:k])
        return dict(text=text[:start + col] + text[start + len(line):], cursor=start + col, expected=middle)
    return None


def sample_word(rng, text, lang):
    words = [m for m in IDENT.finditer(text)]
    if not words:
        return None
    m = rng.choice(words)
    cut = m.start() + rng.randrange(1, len(m.group()) - 1)
    return dict(text=text, cursor=cut, expected="")


def sample_comment(rng, text, lang):
    marker = LINE_COMMENT[lang]
    spots = []
    pos = 0
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith(marker) and len(stripped) > len(marker) + 12:
            body_start = pos + len(line) - len(stripped) + len(marker)
            for i in range(body_start + 1, pos + len(line) - 1):
                if text[i - 1] == " " and text[i] != " ":
                    spots.append(i)
        pos += len(line) + 1
    if not spots:
        return None
    return dict(text=text, cursor=rng.choice(spots), expected="")


def sample_block(rng, text, lang):
    lines = text.split("\n")
    opener = ":" if lang == "python" else "{"
    heads = [k for k, l in enumerate(lines[:-2])
             if l.rstrip().endswith(opener) and lines[k + 1].strip() and indent(lines[k + 1]) > indent(l)
             and not l.lstrip().startswith(LINE_COMMENT[lang])]
    if not heads:
        return None
    k = rng.choice(heads)
    base = indent(lines[k])
    end = k + 1
    while end < len(lines) and (not lines[end].strip() or indent(lines[end]) > base):
        end += 1
    body = lines[k + 1:end]
    while body and not body[-1].strip():
        body.pop()
    if not body or len(body) > 8:
        return None
    head_end = sum(len(x) + 1 for x in lines[:k]) + len(lines[k].rstrip())
    rest = "\n".join(lines[k + 1 + len(body):])
    return dict(text=text[:head_end] + "\n" + rest, cursor=head_end, expected="\n" + "\n".join(body),
                continuation=text[head_end:])


KINDS = {"line": sample_line, "word": sample_word, "comment": sample_comment, "block": sample_block}


def load_heldout(corpus):
    docs = []
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d.get("split") == "heldout" and d["lang"] in EXT and len(d["text"]) < 200_000:
                docs.append(d)
    return docs


def make_samples(docs, kind, n, seed):
    rng = random.Random(f"{seed}-{kind}")
    by_lang = {}
    for d in docs:
        by_lang.setdefault(d["lang"], []).append(d)
    langs = sorted(by_lang)
    out, tries = [], 0
    while len(out) < n and tries < n * 50:
        tries += 1
        lang = langs[len(out) % len(langs)]
        d = rng.choice(by_lang[lang])
        s = KINDS[kind](rng, d["text"], lang)
        if s:
            s.update(lang=lang, kind=kind)
            out.append(s)
    return out


def supports_automatic(binary):
    r = subprocess.run([binary, "complete", "--help"], capture_output=True, text=True)
    return "--automatic" in r.stdout


def complete(binary, model, path, text, cursor, automatic, threads, deadline_ms):
    before = text[:cursor]
    line = before.count("\n") + 1
    col = len(before) - (before.rfind("\n") + 1) + 1
    cmd = [binary, "complete", "--json", "--model", model, "--threads", str(threads), "--deadline-ms",
           str(deadline_ms), f"{path}:{line}:{col}"]
    if automatic:
        cmd.append("--automatic")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ghostline", required=True, help="path to the ghostline binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--corpus", default=os.path.expanduser("~/.cache/ghostline-train/data/corpus.jsonl"))
    ap.add_argument("--samples", type=int, default=100, help="per kind")
    ap.add_argument("--kinds", default="line,word,comment,block")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--deadline-ms", type=int, default=5000,
                    help="generous, so that the figures measure what is generated, not how fast")
    ap.add_argument("--out", default=None, help="JSON file for the figures and every completion")
    ap.add_argument("--dump-blocks", default=None,
                    help="write the block samples as JSON lines (text, cursor, expected, the original "
                         "continuation) for tools/bench's stop-rules eval, and stop")
    args = ap.parse_args()
    docs = load_heldout(args.corpus)
    if not docs:
        raise SystemExit(f"no held-out documents in {args.corpus} (make it with tools/train/data.py)")
    if args.dump_blocks:
        with open(args.dump_blocks, "w", encoding="utf-8") as f:
            for s in make_samples(docs, "block", args.samples, args.seed):
                cursor = len(s["text"][:s["cursor"]].encode("utf-8"))
                f.write(json.dumps(dict(text=s["text"], cursor=cursor, expected=s["expected"],
                                        continuation=s["continuation"], lang=s["lang"],
                                        path="sample" + EXT[s["lang"]])) + "\n")
        return
    automatic = supports_automatic(args.ghostline)
    report, rows = {"binary": args.ghostline, "model": args.model, "automatic": automatic}, []
    with tempfile.TemporaryDirectory() as d:
        for kind in args.kinds.split(","):
            samples = make_samples(docs, kind, args.samples, args.seed)
            shown_nothing = em = multi = cut_right = 0
            for i, s in enumerate(samples):
                path = Path(d) / f"{kind}{i:04d}{EXT[s['lang']]}"
                path.write_text(s["text"], encoding="utf-8")
                res = complete(args.ghostline, args.model, path, s["text"], s["cursor"], automatic, args.threads,
                               args.deadline_ms)
                got = res["completion"]
                exp = s["expected"]
                shown_nothing += got == ""
                if kind == "line":
                    em += got.split("\n")[0] == exp
                elif kind == "block":
                    em += got.rstrip() == exp.rstrip()
                    multi += "\n" in got
                    cut_right += got != "" and got.rstrip().count("\n") == exp.rstrip().count("\n")
                rows.append(dict(kind=kind, lang=s["lang"], expected=exp, got=got,
                                 decision=res["stats"].get("decision"), generated=res["stats"].get("generatedText"),
                                 stop=res["stats"].get("stop")))
            n = max(1, len(samples))
            fig = {"samples": len(samples), "answered_with_nothing": shown_nothing / n}
            if kind == "line":
                fig["exact_match"] = em / n
            if kind == "block":
                fig.update(multi_line=multi / n, exact_match=em / n, cut_right=cut_right / n)
            report[kind] = fig
            print(f"{kind}: {json.dumps(fig)}", file=sys.stderr, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(dict(report, completions=rows), indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
