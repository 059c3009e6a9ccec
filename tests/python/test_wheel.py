"""Checks of the installed wheel, run with a fresh venv's python (scripts/test.sh builds the
wheel and the venv): `memviz` on PATH with every subcommand, byte-identical `stats`, the Python
API on paths, bytes and dicts, and the notebook display.

    MEMVIZ_WHEEL_PAGE_DIR=DIR python -m unittest discover -s tests/python -v

writes the pages the e2e test opens in Chromium (tests/e2e/test/wheel.test.mjs) into DIR.
"""
import gzip
import html
import os
import pickle
import shutil
import subprocess
import sys
import types
import unittest
from pathlib import Path

import memviz

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "real"
CONTAINERS = ROOT / "tests" / "data" / "containers"
OOM = CONTAINERS / "oom.pickle.gz"  # in the repository; the plain one may be absent


def ref(name):
    return (CONTAINERS / name).read_text()


def plain_oom():
    return gzip.decompress(OOM.read_bytes())


class Binary(unittest.TestCase):
    def test_memviz_is_installed_in_the_venv_and_on_path(self):
        exe = memviz.binary()
        self.assertTrue(exe.startswith(sys.prefix), f"{exe} is not in {sys.prefix}")
        self.assertEqual(shutil.which("memviz", path=os.path.dirname(exe)), exe)
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
        self.assertRegex(out, r"^memviz \d+\.\d+\.\d+")
        self.assertEqual(memviz.__version__, out.split()[-1])

    def test_stats_and_trace_are_byte_identical(self):
        for src in ["oom.pickle.gz", "oom.pickle.xz", "oom.pickle.zst", "oom.html"]:
            for cmd in ["stats", "trace"]:
                out = subprocess.run([memviz.binary(), cmd, str(CONTAINERS / src)], capture_output=True, check=True).stdout
                self.assertEqual(out.decode(), ref(f"oom.ref.{cmd}.txt"), f"{cmd} {src}")
        fixture = FIXTURES / "resnet50_fixed.pickle"
        out = subprocess.run([memviz.binary(), "stats", str(fixture)], capture_output=True, check=True).stdout
        self.assertEqual(out, (FIXTURES / "resnet50_fixed.ref.stats.txt").read_bytes())

    def test_html_commands_work(self):
        out = subprocess.run([memviz.binary(), "viewer", "-o", "-"], capture_output=True, check=True).stdout
        self.assertTrue(out.startswith(b"<!doctype html>"))
        self.assertIn(b'id="memviz-embedded"', out)


class Api(unittest.TestCase):
    def test_stats_and_info_of_a_path_bytes_and_a_dict(self):
        want = ref("oom.ref.stats.txt")
        raw = plain_oom()
        for snap in [str(OOM), OOM, raw, pickle.loads(raw)]:
            self.assertEqual(memviz.stats(snap), want, type(snap).__name__)
        info = memviz.info(pickle.loads(raw))
        self.assertEqual(info["devices"][0]["ooms"], 1)

    def test_to_html_of_a_path_and_a_dict(self):
        for snap in [str(OOM), pickle.loads(plain_oom())]:
            page = memviz.to_html(snap)
            self.assertTrue(page.startswith("<!doctype html>"))
            self.assertIn('id="memviz-embedded"', page)
            self.assertIn("connect-src 'none'", page)
            self.assertIn('"view":"active-memory-timeline"', page)
        page = memviz.to_html(str(OOM), view="Allocator State History")
        self.assertIn('"view":"allocator-state-history"', page)

    def test_save_html_writes_the_page(self):
        out_dir = Path(os.environ.get("MEMVIZ_WHEEL_PAGE_DIR") or ROOT / "target" / "wheel-pages")
        out_dir.mkdir(parents=True, exist_ok=True)
        p = memviz.save_html(pickle.loads(plain_oom()), out_dir / "from_dict.html")
        self.assertEqual(Path(p).read_text()[:15], "<!doctype html>")
        memviz.save_html(str(CONTAINERS / "oom.html"), out_dir / "from_pytorch_page.html")
        # A notebook's output: the iframe of _repr_html_ in a page of its own.
        frame = memviz.Viewer(str(CONTAINERS / "oom.pickle.zst"))._repr_html_()
        (out_dir / "notebook_iframe.html").write_text(f"<!doctype html>\n<html><body>{frame}</body></html>\n")

    def test_errors_are_one_line(self):
        with self.assertRaises(memviz.MemvizError) as e:
            memviz.stats(b"\x89PNG\r\n\x1a\n0000")
        self.assertIn("image", str(e.exception))
        self.assertNotIn("\n", str(e.exception))
        with self.assertRaises(TypeError):
            memviz.stats(42)

    def test_repr_html_and_show_give_the_iframe(self):
        v = memviz.Viewer(str(OOM), height=500)
        frame = v._repr_html_()
        self.assertTrue(frame.startswith('<iframe srcdoc="'))
        self.assertIn("height: 500px", frame)
        # The page is escaped: no raw quote or tag ends the attribute early.
        srcdoc = frame[len('<iframe srcdoc="'):frame.index('" style=')]
        self.assertNotIn('"', srcdoc)
        self.assertNotIn("<", srcdoc)
        self.assertEqual(html.unescape(srcdoc), v.page)
        # Outside IPython, show() returns the viewer.
        shown = memviz.show(str(OOM))
        self.assertIsInstance(shown, memviz.Viewer)
        # Only the frame's own height differs (the page inside may say 500px too).
        self.assertEqual(shown._repr_html_(), frame.replace("height: 500px", "height: 640px"))
        # In IPython it displays it at once.
        displayed = []
        ipython = types.ModuleType("IPython")
        ipython.get_ipython = lambda: object()
        display_mod = types.ModuleType("IPython.display")
        display_mod.display = displayed.append
        ipython.display = display_mod
        saved = {k: sys.modules.get(k) for k in ["IPython", "IPython.display"]}
        sys.modules["IPython"], sys.modules["IPython.display"] = ipython, display_mod
        try:
            self.assertIsNone(memviz.show(str(OOM)))
        finally:
            for k, m in saved.items():
                if m is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = m
        self.assertEqual(len(displayed), 1)
        self.assertTrue(displayed[0]._repr_html_().startswith("<iframe srcdoc="))

    def test_no_torch_needed(self):
        self.assertNotIn("torch", sys.modules)


if __name__ == "__main__":
    unittest.main()
