#!/usr/bin/env python3
"""`cmake --install BUILD --prefix P` gives a ghostline that runs from anywhere: P/bin/ghostline
finds its default model in P/share/ghostline/models (not in the source tree), and
GHOSTLINE_MODEL_DIR still overrides it."""
import os
import shutil
import subprocess
import sys
import tempfile

CMAKE, BUILD = sys.argv[1], sys.argv[2]


def main():
    prefix = tempfile.mkdtemp(prefix="ghostline-install-")
    try:
        subprocess.run([CMAKE, "--install", BUILD, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
        binary = os.path.join(prefix, "bin", "ghostline")
        models = os.path.join(prefix, "share", "ghostline", "models")
        for name in ("ghostline-code.gguf", "ghostline-code-draft.gguf"):
            assert os.path.isfile(os.path.join(models, name)), name
        src = os.path.join(prefix, "a.py")
        with open(src, "w") as f:
            f.write("def square(x):\n    return x")
        env = {k: v for k, v in os.environ.items() if k != "GHOSTLINE_MODEL_DIR"}
        p = subprocess.run([binary, "complete", "--log-level", "info", "--max-tokens", "4", src], cwd="/",
                           env=env, capture_output=True, text=True, timeout=120)
        expected = "loaded %s (" % os.path.join(models, "ghostline-code.gguf")
        assert p.returncode == 0 and expected in p.stderr, (p.returncode, p.stderr)
        env["GHOSTLINE_MODEL_DIR"] = os.path.join(prefix, "elsewhere")
        p = subprocess.run([binary, "serve", "--help"], env=env, capture_output=True, text=True, timeout=60)
        assert os.path.join(prefix, "elsewhere", "ghostline-code.gguf") in p.stdout, p.stdout
        print("ok   installed binary finds its default model")
        return 0
    except AssertionError as e:
        print("FAIL %s" % e)
        return 1
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
