#!/usr/bin/env python3
"""Replays the sessions recorded from real editors (tests/sessions/recorded/, written by
record_sessions.py) against a daemon with the binary's default model, and fails when the replay
reports a problem (an unanswered request, a stale answer, a document text that differs from the
recording's final text).

  replay_recorded.py GHOSTLINE_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = os.path.join(os.path.dirname(HERE), "tests", "sessions", "recorded")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        p = subprocess.run([binary, "replay", FOLDER, "--speed", "max", "-q", "--json", out,
                            "--daemon-log", os.path.join(tmp, "daemon.log")])
        if not os.path.exists(out):
            print("no report from ghostline replay (exit %d)" % p.returncode)
            return 1
        with open(out) as f:
            report = json.load(f)
    for s in report["sessions"]:
        m = s["summary"]
        print("%s: %d edits, %d requests (%d answered, %d invalidated by an edit), text %s"
              % (s["name"], m["keystrokes"], m["requests"], m["answered"], m["invalidatedByEdit"],
                 "ok" if s["textMatches"] else s["textProblem"]))
    print("problems: %s" % (report["problems"] or "none"))
    good = p.returncode == 0 and not report["problems"] and len(report["sessions"]) >= 2 \
        and all(s["textMatches"] for s in report["sessions"])
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
