#!/usr/bin/python3
"""Pass@1 of `ghostline complete` on 100 small Python functions no training data can hold.

The functions (`funcs/`) were written for this evaluation and are published nowhere else: each
has a signature, a docstring, a body of 3 to 12 lines and tests. One line of each body (the
entry's `blank`: the second non-empty line of the body or a later one, fixed so that runs are
comparable) is blanked. A file holding the function with that line reduced to its indentation
is written, and `ghostline complete FILE:LINE:COL` is asked with the cursor after the
indentation, as when a user has just typed it, with the daemon's defaults (prompt format,
context, stop rules, deadline) unless options say otherwise. The first line of what it would
show goes into the blank, and the function's tests run in a subprocess with a timeout.

Figures: pass@1 (share of functions whose completed program passes its tests), exact match of
the line (trailing blanks ignored), share of empty completions, and the latency the command
reports (its totalMs; median and p90). With the blank left empty no function passes (--check
makes sure of it), so pass@1 counts only what the completions add.

Under the daemon's deadline the completions depend on the machine's load: the prompt's prefix
is cut to what the measured prefill speed can take in time (`prompts_cut` counts those), and
generation stops at the deadline (`stops`). A long --deadline-ms (2000) takes the load out of
the completions, to compare models; the default measures what a user gets on this machine.

--check runs no model: every function must pass its tests as written and fail them with the
blanked line left empty or replaced by `pass` (a line whose absence the tests cannot see would
measure nothing), and every entry must keep the shape above. Exit status 1 if one does not.

Standard library only: runs with Debian's /usr/bin/python3.
"""
import argparse
import ast
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from funcs import FUNCS  # noqa: E402

BODY_LINES = (3, 12)


def source(f):
    return f["code"].strip("\n") + "\n"


def blank_at(f):
    """(0-based line index, indentation) of the blanked line; ValueError unless it occurs once."""
    lines = source(f).split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip() == f["blank"]]
    if len(hits) != 1:
        raise ValueError(f"the blanked line occurs {len(hits)} times in the code")
    line = lines[hits[0]]
    return hits[0], line[:len(line) - len(line.lstrip())]


def with_line(f, text):
    """The code with the blanked line's text after its indentation replaced by text."""
    lines = source(f).split("\n")
    i, indent = blank_at(f)
    lines[i] = indent + text
    return "\n".join(lines)


def program(f, text):
    """The code with text in the blank, then the entry's asserts as test(), then a call."""
    body = "".join(f"    {line}\n" if line.strip() else "\n"
                   for line in f["test"].strip("\n").split("\n"))
    return f"{with_line(f, text)}\n\ndef test():\n{body}\n\ntest()\n"


def run_tests(code, path, timeout):
    """Runs code as a script in its own interpreter: (passed, last line of the error)."""
    path.write_text(code, encoding="utf-8")
    try:
        r = subprocess.run([sys.executable, "-I", "-S", str(path)], cwd=path.parent,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"timeout after {timeout} s"
    if r.returncode == 0:
        return True, ""
    lines = r.stderr.strip().splitlines()
    return False, lines[-1] if lines else f"exit status {r.returncode}"


def shape_problems(f):
    """What is wrong with an entry's shape (empty when nothing is)."""
    src = source(f)
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        return [f"does not parse: {e}"]
    nodes = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
             and n.name == f["name"]]
    if len(nodes) != 1:
        return [f"defines {f['name']} {len(nodes)} times at the top level"]
    node = nodes[0]
    problems = []
    if ast.get_docstring(node) is None:
        problems.append("no docstring")
        first = node.body[0].lineno - 1
    else:
        first = node.body[0].end_lineno
    lines = src.split("\n")
    body = [i for i in range(first, node.end_lineno) if lines[i].strip()]
    if not BODY_LINES[0] <= len(body) <= BODY_LINES[1]:
        problems.append(f"the body has {len(body)} lines, not {BODY_LINES[0]} to {BODY_LINES[1]}")
    try:
        i, _ = blank_at(f)
    except ValueError as e:
        return problems + [str(e)]
    if i not in body[1:]:
        problems.append("the blanked line is not the second or a later line of the body")
    return problems


def check(funcs, timeout):
    """--check: shape, tests pass as written, fail without the line. Returns the exit status."""
    bad = {}
    names = [f["name"] for f in funcs]
    for name in sorted({n for n in names if names.count(n) > 1}):
        bad.setdefault(name, []).append("the name is used by more than one entry")
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        for f in funcs:
            problems = shape_problems(f)
            if not problems:
                path = Path(d) / f"test_{f['name']}.py"
                ok, why = run_tests(program(f, f["blank"]), path, timeout)
                if not ok:
                    problems.append(f"fails its tests as written: {why}")
                for variant, text in (("left empty", ""), ("replaced by pass", "pass")):
                    if run_tests(program(f, text), path, timeout)[0]:
                        problems.append(f"passes its tests with the blanked line {variant}")
            if problems:
                bad.setdefault(f["name"], []).extend(problems)
    for name, problems in bad.items():
        for p in problems:
            print(f"{name}: {p}")
    cats = {}
    for f in funcs:
        cats[f["category"]] = cats.get(f["category"], 0) + 1
    print(f"eval_funcs --check: {len(funcs)} functions "
          f"({', '.join(f'{k} {v}' for k, v in cats.items())}), {len(bad)} with problems; "
          f"{time.time() - t0:.1f} s")
    return 1 if bad else 0


def complete(args, path, line, col):
    """Runs `ghostline complete --json` at the cursor and returns its JSON result."""
    cmd = [args.ghostline, "complete", "--json", "--threads", str(args.threads)]
    if args.model:
        cmd += ["--model", args.model]
    if args.draft:
        cmd += ["--draft", args.draft]
    if args.deadline_ms:
        cmd += ["--deadline-ms", str(args.deadline_ms)]
    cmd.append(f"{path}:{line}:{col}")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-500:]}")
    # The result is the last line of stdout that is a JSON object with a completion.
    for out in reversed(r.stdout.splitlines()):
        out = out.strip()
        if out.startswith("{"):
            try:
                res = json.loads(out)
            except json.JSONDecodeError:
                continue
            if isinstance(res, dict) and isinstance(res.get("completion"), str):
                return res
    raise SystemExit(f"{' '.join(cmd)} printed no JSON result: {r.stdout[-500:]!r}")


def evaluate(args, funcs):
    rows = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        for k, f in enumerate(funcs):
            i, indent = blank_at(f)
            # One folder per function, so that no other file is there to be read as context.
            path = Path(d) / f"{k:03d}" / f"{f['name'].lower()}.py"
            path.parent.mkdir()
            path.write_text(with_line(f, ""), encoding="utf-8")
            res = complete(args, path, i + 1, len(indent) + 1)
            got = res["completion"].split("\n")[0]
            run_dir = Path(d) / f"{k:03d}-run"
            run_dir.mkdir()
            passed, why = run_tests(program(f, got), run_dir / "test_completed.py", args.timeout)
            stats = res.get("stats", {})
            cut = stats.get("prefillBound", {}).get("droppedPromptTokens", 0)
            rows.append(dict(name=f["name"], category=f["category"], expected=f["blank"], got=got,
                             passed=passed, exact=got.rstrip() == f["blank"], error=why,
                             ms=stats.get("totalMs"), stop=stats.get("stop"),
                             prompt_tokens=stats.get("promptTokens"), prompt_cut_tokens=cut))
            n = k + 1
            if n % 10 == 0 or n == len(funcs):
                print(f"eval_funcs {n}/{len(funcs)}: "
                      f"pass@1 {sum(r['passed'] for r in rows) / n:.3f} "
                      f"exact {sum(r['exact'] for r in rows) / n:.3f} "
                      f"empty {sum(r['got'] == '' for r in rows) / n:.3f}; "
                      f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return rows


def report(args, rows):
    n = len(rows)
    lat = sorted(r["ms"] for r in rows if r["ms"] is not None)
    per_cat = {}
    for r in rows:
        c = per_cat.setdefault(r["category"], dict(functions=0, passed=0, exact=0))
        c["functions"] += 1
        c["passed"] += r["passed"]
        c["exact"] += r["exact"]
    stops = {}
    for r in rows:
        stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    return dict(
        model=args.model or "(ghostline's default)", draft=args.draft, threads=args.threads,
        deadline_ms=args.deadline_ms or "(ghostline's default)", functions=n,
        pass_at_1=sum(r["passed"] for r in rows) / n, passed=sum(r["passed"] for r in rows),
        exact_match=sum(r["exact"] for r in rows) / n,
        empty_completions=sum(r["got"] == "" for r in rows) / n,
        latency_ms_p50=statistics.median(lat) if lat else None,
        latency_ms_p90=lat[min(len(lat) - 1, int(len(lat) * 0.9))] if lat else None,
        stops=dict(sorted(stops.items(), key=lambda kv: str(kv[0]))),
        prompts_cut=sum(r["prompt_cut_tokens"] > 0 for r in rows),
        per_category={k: dict(functions=v["functions"], pass_at_1=v["passed"] / v["functions"],
                              exact_match=v["exact"] / v["functions"])
                      for k, v in per_cat.items()},
        completions=rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ghostline", help="path to the ghostline binary (required unless --check)")
    ap.add_argument("--model", default=None, help="target model (default: ghostline's default)")
    ap.add_argument("--draft", default=None, help="draft model for speculative decoding")
    ap.add_argument("--threads", type=int, default=0, help="compute threads (0: all cores)")
    ap.add_argument("--deadline-ms", type=int, default=0, help="0: the daemon's default")
    ap.add_argument("--timeout", type=float, default=10.0,
                    help="seconds a function's tests may run (default 10)")
    ap.add_argument("--only", type=int, default=0, help="the first N functions only")
    ap.add_argument("--out", default=None, help="JSON file for the figures and completions")
    ap.add_argument("--check", action="store_true",
                    help="no model: check that every blanked line matters to its tests")
    args = ap.parse_args()
    funcs = FUNCS[:args.only] if args.only else FUNCS
    if args.check:
        sys.exit(check(funcs, args.timeout))
    if not args.ghostline:
        ap.error("--ghostline is required (unless --check)")
    rep = report(args, evaluate(args, funcs))
    if args.out:
        Path(args.out).write_text(json.dumps(rep, indent=1) + "\n", encoding="utf-8")
    print(f"eval_funcs: {rep['functions']} functions, pass@1 {rep['pass_at_1']:.3f} "
          f"({rep['passed']}), exact match {rep['exact_match']:.3f}, "
          f"empty {rep['empty_completions']:.3f}, latency p50 {rep['latency_ms_p50']:.1f} ms "
          f"p90 {rep['latency_ms_p90']:.1f} ms; model {rep['model']}, draft {rep['draft']}")


if __name__ == "__main__":
    main()
