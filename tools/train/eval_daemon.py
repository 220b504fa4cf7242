#!/usr/bin/python3
"""The single-line infill eval of eval.py, through the engine's own pipeline (`ghostline complete`).

Same held-out samples as eval.py (same seed). For each, a file holding prefix + suffix (the
expected middle removed) is written with the sample's file name, and `ghostline complete
FILE:LINE:COL` is asked at the cursor, with the daemon's defaults (its prompt format, context
cuts, stop rules, deadline) unless options say otherwise. The first line of what it would show is
compared with the expected rest of the line: exact match, edit similarity, share of empty
completions, and the latency the command reports. This is the figure a user gets.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import load_docs  # noqa: E402
from eval import edit_sim, make_samples  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", default=os.path.expanduser("~/.cache/ghostline-train"))
    ap.add_argument("--ghostline", required=True, help="path to the ghostline binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--draft", default=None)
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=4321, help="eval.py's sample seed")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--deadline-ms", type=int, default=0, help="0: the daemon's default")
    ap.add_argument("--out", default=None, help="JSON file for the figures")
    args = ap.parse_args()
    held = load_docs(Path(args.workdir) / "data" / "corpus.jsonl", "heldout")
    samples = make_samples(held, args.samples, args.seed)
    em = es = empty = 0
    lat = []
    per_lang = {}
    rows = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        for i, s in enumerate(samples):
            path = Path(d) / f"{i:04d}" / Path(s["path"]).name
            path.parent.mkdir()
            path.write_text(s["prefix"] + s["suffix"], encoding="utf-8")
            line = s["prefix"].count("\n") + 1
            col = len(s["prefix"]) - (s["prefix"].rfind("\n") + 1) + 1
            cmd = [args.ghostline, "complete", "--json", "--model", args.model, "--threads", str(args.threads),
                   f"{path}:{line}:{col}"]
            if args.draft:
                cmd += ["--draft", args.draft]
            if args.deadline_ms:
                cmd += ["--deadline-ms", str(args.deadline_ms)]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                raise SystemExit(f"sample {i}: {' '.join(cmd)} failed: {r.stderr[-500:]}")
            res = json.loads(r.stdout.strip().splitlines()[-1])
            got = res["completion"].split("\n")[0]
            e = int(got == s["middle"])
            em += e
            es += edit_sim(got, s["middle"])
            empty += int(got == "")
            lat.append(res["stats"]["totalMs"])
            rows.append(dict(lang=s["lang"], expected=s["middle"], got=got, ms=res["stats"]["totalMs"]))
            pl = per_lang.setdefault(s["lang"], [0, 0])
            pl[0] += 1
            pl[1] += e
            if (i + 1) % 100 == 0:
                print(f"daemon eval {i + 1}/{len(samples)}: EM {em / (i + 1):.3f} ES {es / (i + 1):.3f} "
                      f"empty {empty / (i + 1):.3f}; {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    n = len(samples)
    lat.sort()
    report = dict(model=args.model, draft=args.draft, threads=args.threads, deadline_ms=args.deadline_ms,
                  samples=n, exact_match=em / n, edit_similarity=es / n,
                  empty_completions=empty / n, latency_ms_p50=lat[n // 2], latency_ms_p99=lat[min(n - 1, int(n * 0.99))],
                  per_language_em={k: v[1] / v[0] for k, v in sorted(per_lang.items())}, completions=rows)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "completions"}, indent=1))


if __name__ == "__main__":
    main()
