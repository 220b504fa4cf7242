#!/usr/bin/env python3
"""Speculative decoding in the daemon: with a draft, completions are exactly those of plain
decoding; a draft that is the target itself has every proposal accepted; a draft with another
vocabulary is refused with an error naming both files."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import run_tests  # noqa: E402

BINARY = sys.argv[1]
MODEL = "../shared/data/models/ref-qwen2-dscoder-q8_0.gguf"
POSITIONS = ["examples/primes.py:5:1", "examples/primes.py:9:9", "examples/primes.py:12:20"]


def complete(position, *extra):
    out = subprocess.run([BINARY, "complete", position, "--model", MODEL, "--threads", "2", "--json",
                          "--max-tokens", "24", "--deadline-ms", "60000", "--log-level", "warn", *extra],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_speculation_is_lossless_and_a_self_draft_is_always_accepted():
    for position in POSITIONS:
        plain = complete(position, "--speculation", "off")
        assert plain["stats"]["generatedTokens"] == 24, plain
        for mode in ["auto", "ngram", "draft"]:
            spec = complete(position, "--draft", MODEL, "--speculation", mode)
            assert spec["stats"]["generatedText"] == plain["stats"]["generatedText"], (position, mode, spec, plain)
            assert spec["completion"] == plain["completion"], (position, mode, spec, plain)
            s = spec["stats"]["speculation"]
            assert s["targetSteps"] < spec["stats"]["generatedTokens"], spec
            if mode == "draft":
                # The draft is the target itself: every proposal is accepted.
                assert s["proposedDraft"] > 0 and s["acceptedDraft"] == s["proposedDraft"], spec
                assert s["proposedNgram"] == 0, spec
            if mode == "ngram":
                assert s["proposedDraft"] == 0 and s["draftSteps"] == 0, spec


def test_a_draft_with_another_vocabulary_is_refused():
    out = subprocess.run([BINARY, "complete", POSITIONS[0], "--model", MODEL,
                          "--draft", "models/ghostline-code-draft.gguf"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0, out
    assert "vocabularies differ" in out.stderr, out.stderr
    assert "ghostline-code-draft.gguf" in out.stderr and "ref-qwen2-dscoder-q8_0.gguf" in out.stderr, out.stderr


def test_a_missing_draft_is_a_clear_error():
    out = subprocess.run([BINARY, "complete", POSITIONS[0], "--model", MODEL, "--draft", "no/such/draft.gguf"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "no/such/draft.gguf" in out.stderr, out


if __name__ == "__main__":
    run_tests(globals())
