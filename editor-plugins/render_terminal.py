#!/usr/bin/python3
"""Renders a terminal screen captured with `tmux capture-pane -p -e` (text with SGR colour
escapes) to a PNG, cell by cell, with DejaVu Sans Mono. Uses Debian's python3-pil, so it runs
with /usr/bin/python3.

  render_terminal.py CAPTURE.txt OUT.png [--title TEXT]
"""
import re
import sys

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
FONT_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
BASE16 = [(0x1e, 0x1e, 0x1e), (0xcd, 0x31, 0x31), (0x0d, 0xbc, 0x79), (0xe5, 0xe5, 0x10),
          (0x24, 0x72, 0xc8), (0xbc, 0x3f, 0xbc), (0x11, 0xa8, 0xcd), (0xe5, 0xe5, 0xe5),
          (0x66, 0x66, 0x66), (0xf1, 0x4c, 0x4c), (0x23, 0xd1, 0x8b), (0xf5, 0xf5, 0x43),
          (0x3b, 0x8e, 0xea), (0xd6, 0x70, 0xd6), (0x29, 0xb8, 0xdb), (0xff, 0xff, 0xff)]
DEFAULT_FG = (0xd4, 0xd4, 0xd4)
DEFAULT_BG = (0x1e, 0x1e, 0x1e)


def color256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return steps[n // 36], steps[(n // 6) % 6], steps[n % 6]
    v = 8 + (n - 232) * 10
    return v, v, v


def parse(text):
    """Rows of cells (char, fg, bg, bold)."""
    rows = []
    fg, bg, bold, reverse = None, None, False, False
    for line in text.split("\n"):
        cells = []
        for m in re.finditer(r"\x1b\[([0-9;]*)m|(.)", line):
            if m.group(2) is not None:
                f, b = (bg, fg) if reverse else (fg, bg)
                cells.append((m.group(2), f or (DEFAULT_BG if reverse else DEFAULT_FG),
                              b or (DEFAULT_FG if reverse else DEFAULT_BG), bold))
                continue
            codes = [int(c) if c else 0 for c in m.group(1).split(";")]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c == 0:
                    fg, bg, bold, reverse = None, None, False, False
                elif c == 1:
                    bold = True
                elif c == 22:
                    bold = False
                elif c == 7:
                    reverse = True
                elif c == 27:
                    reverse = False
                elif 30 <= c <= 37:
                    fg = BASE16[c - 30]
                elif 90 <= c <= 97:
                    fg = BASE16[c - 90 + 8]
                elif 40 <= c <= 47:
                    bg = BASE16[c - 40]
                elif 100 <= c <= 107:
                    bg = BASE16[c - 100 + 8]
                elif c == 39:
                    fg = None
                elif c == 49:
                    bg = None
                elif c in (38, 48) and i + 1 < len(codes):
                    if codes[i + 1] == 5 and i + 2 < len(codes):
                        value = color256(codes[i + 2])
                        i += 2
                    elif codes[i + 1] == 2 and i + 4 < len(codes):
                        value = tuple(codes[i + 2:i + 5])
                        i += 4
                    else:
                        value = None
                    if c == 38:
                        fg = value
                    else:
                        bg = value
                i += 1
        rows.append(cells)
    while rows and not rows[-1]:
        rows.pop()
    return rows


def render(text, out, title=None, size=16):
    rows = parse(text)
    font = ImageFont.truetype(FONT, size)
    bold_font = ImageFont.truetype(FONT_BOLD, size)
    cw = int(round(font.getlength("M")))
    ch = int(size * 1.35)
    cols = max((len(r) for r in rows), default=1)
    pad = 12
    top = pad + (ch + 8 if title else 0)
    img = Image.new("RGB", (cols * cw + 2 * pad, len(rows) * ch + top + pad), DEFAULT_BG)
    d = ImageDraw.Draw(img)
    if title:
        d.text((pad, pad), title, fill=(0x9c, 0xdc, 0xfe), font=font)
    for y, row in enumerate(rows):
        for x, (c, fg, bg, bold) in enumerate(row):
            x0, y0 = pad + x * cw, top + y * ch
            if bg != DEFAULT_BG:
                d.rectangle([x0, y0, x0 + cw - 1, y0 + ch - 1], fill=bg)
            if c != " ":
                d.text((x0, y0 + 2), c, fill=fg, font=bold_font if bold else font)
    img.save(out)


if __name__ == "__main__":
    args = sys.argv[1:]
    title = None
    if "--title" in args:
        i = args.index("--title")
        title = args[i + 1]
        del args[i:i + 2]
    with open(args[0], encoding="utf-8") as f:
        render(f.read(), args[1], title)
