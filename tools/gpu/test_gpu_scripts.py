#!/usr/bin/python3
"""Tests of the prepared GPU call's scripts on a machine without a GPU:
/usr/bin/python3 -m unittest tools/gpu/test_gpu_scripts.py (after tools/gpu/bundle)."""
import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "build" / "gpu-bundle"
HAVE_GPU = Path("/dev/nvidiactl").exists()


@unittest.skipUnless((BUNDLE / "bin" / "ghostline").exists(), "no build/gpu-bundle (run tools/gpu/bundle)")
class BundleTest(unittest.TestCase):
    def test_carries_what_the_binaries_link_and_not_the_system(self):
        libs = {p.name for p in (BUNDLE / "lib").iterdir()}
        for name in ("libspdlog.so.1.10", "libfmt.so.9", "libtree-sitter.so.0", "libpcre2-8.so.0", "libxxhash.so.0"):
            self.assertIn(name, libs)
        for name in libs:
            self.assertFalse(re.match(r"(libc|libm|libstdc\+\+|libgcc_s|libcuda|libcublas)\.so", name), name)
        self.assertEqual(set(os.listdir(BUNDLE / "bin")), {"ghostline", "libghostline_cuda.so", "cuda_gpu_tests"})
        # with the wrappers' library path, every library resolves, the carried ones from lib/
        for binary in ("ghostline", "cuda_gpu_tests", "libghostline_cuda.so"):
            r = subprocess.run(["bash", "-c", '. "$0/env.sh"; LD_LIBRARY_PATH=$GHOSTLINE_LD_LIBRARY_PATH ldd "$0/bin/$1"',
                                str(BUNDLE), binary], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("not found", r.stdout, binary)
            if binary != "libghostline_cuda.so":
                self.assertIn(str(BUNDLE / "lib" / "libpcre2-8.so.0"), r.stdout, binary)
        r = subprocess.run([str(BUNDLE / "ghostline"), "model-info", str(ROOT / "models" / "ghostline-code-draft.gguf")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_llama_bench_finds_its_libraries_but_the_driver(self):
        if not (BUNDLE / "llama-bench").exists():
            self.skipTest("the bundle carries no llama-bench (tools/gpu/bundle --llama-cpp)")
        r = subprocess.run(["bash", "-c", '. "$0/env.sh"; LD_LIBRARY_PATH=$0/llama/lib:$GHOSTLINE_LD_LIBRARY_PATH '
                                          'ldd "$0/llama/bin/llama-bench"', str(BUNDLE)], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        missing = [line for line in r.stdout.splitlines() if "not found" in line and "libcuda.so" not in line]
        self.assertEqual(missing, [])
        # the CUDA runtime travels with it; the driver's library is the machine's own
        self.assertIn(str(BUNDLE / "llama" / "lib" / "libcudart.so.13"), r.stdout)
        self.assertFalse((BUNDLE / "llama" / "lib" / "libcuda.so.1").exists())


@unittest.skipUnless((BUNDLE / "bin" / "ghostline").exists(), "no build/gpu-bundle (run tools/gpu/bundle)")
@unittest.skipIf(HAVE_GPU, "this machine has a GPU: the check would measure it")
class CheckWithoutGpuTest(unittest.TestCase):
    def run_check(self, extra_env):
        out = tempfile.mkdtemp()
        env = dict(os.environ, GHOSTLINE_PYTHON="/usr/bin/python3", **extra_env)
        r = subprocess.run([str(ROOT / "tools" / "gpu" / "check"), out], capture_output=True, text=True, env=env,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return Path(out), (Path(out) / "gpu-report.md").read_text()

    def test_every_gpu_step_says_it_was_skipped(self):
        out, report = self.run_check({})
        self.assertEqual(sorted(os.listdir(out)), ["gpu-check.log", "gpu-report.md"])
        sections = report.split("\n## ")
        for title in ("compute-sanitizer", "Speed", "llama.cpp", "Keystroke"):
            body = next(s for s in sections if s.startswith(title))
            self.assertIn("skipped: no GPU", body, title)
        tests = next(s for s in sections if s.startswith("GPU tests"))
        self.assertIn("skipped: no GPU", tests)
        counts = re.search(r"Passed (\d+), failed 0, skipped (\d+)\*\* of (\d+) tests", tests)
        self.assertIsNotNone(counts, tests)
        passed, skipped, total = map(int, counts.groups())
        self.assertGreater(skipped, 0)
        self.assertEqual(passed + skipped, total)

    def test_the_cpu_rehearsal_fills_every_table(self):
        out, report = self.run_check({"GPU_CHECK_REHEARSE": "cpu"})
        self.assertIn("no figure below is a GPU figure", report)
        self.assertEqual(len(re.findall(r"^\| tiny \(for [01]\.5B\) \| Q(8_0|4_K_M) \| cpu \| (pp512|tg128) \|", report,
                                        re.MULTILINE)), 8)
        self.assertEqual(len(re.findall(r"tg64 @ d4096", report)), 2)
        self.assertRegex(report, r"A cancelled prefill, tiny \(for 1\.5B\) Q4_K_M .*: cancel 20\.0 ms into pp256: "
                                 r"(stopped|every batch ended)")
        self.assertEqual(len(re.findall(r"^- .*keystrokes 8: prefilled", report, re.MULTILINE)), 5)
        self.assertEqual(len(re.findall(r"^\| tiny \(for [01]\.5B\) \| Q(8_0|4_K_M) \| (2|4|8|24) \| [0-9.]+ \| [0-9.]+x \|$",
                                        report, re.MULTILINE)), 8)
        llama = next(s for s in report.split("\n## ") if s.startswith("llama.cpp"))
        if (BUNDLE / "llama-bench").exists():
            # llama.cpp on the CPU here: pp512 and tg128 of the four files, each beside ghostline's
            rows = re.findall(r"^\| tiny \(for [01]\.5B\) \| Q(?:8_0|4_K_M) \| (pp512|tg128) \| [0-9.]+ ± [0-9.]+ \| "
                              r"[0-9.]+ \| [0-9.]+x \|$", llama, re.MULTILINE)
            self.assertEqual(sorted(rows), ["pp512"] * 4 + ["tg128"] * 4, llama)
        else:
            self.assertIn("Not run: the bundle carries no llama-bench", llama)


if __name__ == "__main__":
    unittest.main()
