#!/usr/bin/python3
"""Cross-checks an exported GGUF against the Ghostline engine (`ghostline` binary).

For a few code prompts: the engine's token ids must equal tokenizer.py's, and the engine's top
logits (`ghostline logits`) must match the PyTorch model loaded from the same GGUF. Prints the
largest logit difference; exits non-zero on a tokenizer mismatch or a difference above --tol.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval import load_gguf_model  # noqa: E402

PROMPTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fib",
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"héllo, 世界\", 12345)\n}\n",
    "#include <vector>\ntemplate <typename T>\nT sum(const std::vector<T>& v) {\n  T s{};\n  for (",
    "export function map<T, R>(project: (value: T, index: number) => R): OperatorFunction<T, R> {\n\treturn",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ghostline", required=True, help="path to the ghostline binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tol", type=float, default=0.05)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, tok, _ = load_gguf_model(args.model)
    worst = 0.0
    for text in PROMPTS:
        ids = tok.encode(text)
        got = subprocess.run([args.ghostline, "generate", "-m", args.model, "-p", text, "-n", "1", "--ids",
                              "-t", "1"], capture_output=True, text=True, check=True).stdout
        line = next(l for l in got.splitlines() if l.startswith("prompt:"))
        engine_ids = [int(x) for x in line.split()[1:]]
        if engine_ids != ids:
            print(f"tokenizer mismatch for {text[:30]!r}:\n  engine {engine_ids}\n  python {ids}")
            sys.exit(1)
        out = subprocess.run([args.ghostline, "logits", "-m", args.model, "--ids", ",".join(map(str, ids)),
                              "--top", "5", "-t", "1"], capture_output=True, text=True, check=True).stdout
        data = json.loads(out)
        with torch.no_grad():
            logits, _ = model(torch.tensor([ids]))
        for row in data["positions"]:
            pos = row["pos"]
            for tid, val in row["top"]:
                worst = max(worst, abs(float(logits[0, pos, tid]) - float(val)))
        print(f"ok: {len(ids)} tokens, ids match; max |logit diff| so far {worst:.4f}")
    if worst > args.tol:
        print(f"logits differ by {worst:.4f} > {args.tol}")
        sys.exit(1)


if __name__ == "__main__":
    main()
