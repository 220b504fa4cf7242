#!/usr/bin/env python3
"""Turns the daemon recordings of the editor e2e tests into replay sessions in
tests/sessions/recorded/ and lists them under "recorded" in tests/sessions/manifest.json.

The e2e tests run the daemon with --record; their artifacts hold the recordings:
  editor-plugins/artifacts/vscode/vscode-record.jsonl        (editor-plugins/test)
  editor-plugins/artifacts/neovim/nvim-model-record.jsonl
Each is converted by tools/replay/convert_recording.py; the document's URI (a temporary folder
of the test) is replaced by the session set's uriRoot, and the header says which editor and
client sent the messages.

  editor-plugins/record_sessions.py [--artifacts DIR]

The recorded sessions live in a subfolder because they hold LSP edits, not the synthesized
`key` events with `progress` that the checks of the synthesized set (tests/replay) expect;
replay them with `ghostline replay tests/sessions/recorded`.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SESSIONS = os.path.join(ROOT, "tests", "sessions")
CONVERTER = os.path.join(ROOT, "tools", "replay", "convert_recording.py")

EDITORS = [
    {
        "name": "vscode-py-ops",
        "recording": "vscode/vscode-record.jsonl",
        "editor": "VS Code 1.100.3 (code-server 4.100.3) with the Ghostline extension (vscode-languageclient 11)",
        "driven": "editor-plugins/vscode/e2e/run.js: puppeteer-core types into the editor through chromium",
    },
    {
        "name": "nvim-py-ops",
        "recording": "neovim/nvim-model-record.jsonl",
        "editor": "Neovim 0.7.2 with the Ghostline Lua plugin (vim.lsp)",
        "driven": "editor-plugins/neovim/test/e2e.py: tmux send-keys types into nvim",
    },
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifacts", default=os.path.join(HERE, "artifacts"))
    args = ap.parse_args()
    manifest_path = os.path.join(SESSIONS, "manifest.json")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    out_dir = os.path.join(SESSIONS, "recorded")
    os.makedirs(out_dir, exist_ok=True)
    recorded = []
    for e in EDITORS:
        src = os.path.join(args.artifacts, e["recording"])
        if not os.path.exists(src):
            sys.exit("no recording at %s: run editor-plugins/test first" % src)
        raw = subprocess.run([sys.executable, CONVERTER, src], check=True, capture_output=True, text=True).stdout
        lines = raw.splitlines()
        header = json.loads(lines[0])
        name = os.path.basename(header["uri"])
        header["uri"] = manifest["uriRoot"] + name
        header["source"] = {"recording": True, "editor": e["editor"], "driven": e["driven"],
                            "file": name, "license": manifest["license"]}
        path = os.path.join(out_dir, e["name"] + ".jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(header, ensure_ascii=False) + "\n")
            for line in lines[1:]:
                f.write(line + "\n")
        events = [json.loads(l) for l in lines[1:]]
        recorded.append({"name": e["name"], "file": "recorded/%s.jsonl" % e["name"], "language": header["language"],
                         "editor": e["editor"], "driven": e["driven"],
                         "edits": sum(1 for x in events if x["type"] == "edit"),
                         "requests": sum(1 for x in events if x["type"] == "complete")})
        print("%s: %d edits, %d requests, %.1f s" % (path, recorded[-1]["edits"], recorded[-1]["requests"],
                                                    header["durationMs"] / 1000))
    manifest["recorded"] = recorded
    manifest["recordedComment"] = ("Sessions recorded from real editors by the editor-plugins e2e tests; "
                                   "regenerate with: editor-plugins/test BINARY && editor-plugins/record_sessions.py")
    with open(manifest_path, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
