#!/usr/bin/env python3
"""Writes tests/data/profiler/memory_timeline_picture.html: a page in the form the profiler's
`export_memory_timeline("x.html")` writes (a PNG as base64 in an <img>, inside PyTorch's short
HTML template), with a small picture made here (8x4 pixels, four coloured bands) instead of a
matplotlib chart. Deterministic: running it again gives the same bytes.

Usage: python3 tests/gen/make_profiler_page.py [OUT_DIR]
"""

import base64
import struct
import sys
import zlib
from pathlib import Path


def png(width, height, rows):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(row) for row in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/profiler")
    out.mkdir(parents=True, exist_ok=True)
    colours = [(0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e), (0x2c, 0xa0, 0x2c), (0xd6, 0x27, 0x28)]
    rows = [[c for _ in range(8) for c in colours[y]] for y in range(4)]
    encoded = base64.b64encode(png(8, 4, rows)).decode("ascii")
    html = f"""<html>
<head><meta charset="utf-8" /><title>GPU Memory Timeline HTML</title></head>
<body>
  <img src='data:image/png;base64,{encoded}'>
</body>
</html>"""
    (out / "memory_timeline_picture.html").write_text(html)


if __name__ == "__main__":
    main()
