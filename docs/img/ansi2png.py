#!/usr/bin/env python3
"""Draws a terminal capture (text with ANSI colour codes, as `tmux
capture-pane -e -p` prints it) as a PNG through gnuplot's pngcairo terminal,
one cell per character on a fixed grid, so what the PNG shows is the
capture, character for character and colour for colour.

usage: ansi2png.py CAPTURE OUT.png [--cols N] [--rows N]
"""
import argparse
import re
import subprocess
import sys

# xterm's 16 colours, then the 256-colour cube and grey ramp.
BASE16 = ["000000", "cd0000", "00cd00", "cdcd00", "3b78ff", "cd00cd", "00cdcd", "e5e5e5",
          "7f7f7f", "ff0000", "00ff00", "ffff00", "5c5cff", "ff00ff", "00ffff", "ffffff"]
FG, BG = "d0d0d0", "101418"
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESC = re.compile(r"\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07]*\x07|[()][0-9A-Z])")


def colour256(n):
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + 10 * (n - 232)
    return "%02x%02x%02x" % (v, v, v)


def apply_sgr(params, st):
    ps = [int(p) if p else 0 for p in re.split("[;:]", params)] if params else [0]
    i = 0
    while i < len(ps):
        p = ps[i]
        if p == 0:
            st.update(fg=None, bg=None, bold=False, rev=False)
        elif p == 1:
            st["bold"] = True
        elif p == 22:
            st["bold"] = False
        elif p == 7:
            st["rev"] = True
        elif p == 27:
            st["rev"] = False
        elif 30 <= p <= 37:
            st["fg"] = BASE16[p - 30]
        elif 90 <= p <= 97:
            st["fg"] = BASE16[p - 90 + 8]
        elif 40 <= p <= 47:
            st["bg"] = BASE16[p - 40]
        elif 100 <= p <= 107:
            st["bg"] = BASE16[p - 100 + 8]
        elif p == 39:
            st["fg"] = None
        elif p == 49:
            st["bg"] = None
        elif p in (38, 48) and i + 2 < len(ps) and ps[i + 1] == 5:
            st["fg" if p == 38 else "bg"] = colour256(ps[i + 2])
            i += 2
        elif p in (38, 48) and i + 4 < len(ps) and ps[i + 1] == 2:
            st["fg" if p == 38 else "bg"] = "%02x%02x%02x" % tuple(ps[i + 2:i + 5])
            i += 4
        i += 1


def cells(text):
    """[[(char, fg, bg, bold)]] per line."""
    st = dict(fg=None, bg=None, bold=False, rev=False)
    out = []
    for line in text.split("\n"):
        row, pos = [], 0
        line = OTHER_ESC.sub("", line)
        for m in list(SGR.finditer(line)) + [None]:
            chunk = line[pos:m.start() if m else len(line)]
            for ch in chunk:
                fg, bg = st["fg"] or FG, st["bg"] or BG
                if st["rev"]:
                    fg, bg = bg, fg
                row.append((ch, fg, bg, st["bold"]))
            if m:
                apply_sgr(m.group(1), st)
                pos = m.end()
        out.append(row)
    while out and not any(c[0].strip() for c in out[-1]):
        out.pop()
    return out


def quote(ch):
    return '"%s"' % ch.replace("\\", "\\\\").replace('"', '\\"')


def script(grid, cols, rows, out, cw=9, ch=18):
    w, h = cols * cw + 2 * cw, rows * ch + ch
    s = ['set terminal pngcairo size %d,%d noenhanced font "DejaVu Sans Mono,10" '
         'background rgb "#%s"' % (w, h, BG),
         'set output %s' % quote(out),
         "unset border; unset tics; unset key",
         "set lmargin at screen 0; set rmargin at screen 1; set tmargin at screen 1; "
         "set bmargin at screen 0",
         "set xrange [-1:%d]; set yrange [%f:-0.5]" % (cols + 1, rows + 0.5)]
    n = 1
    for y, row in enumerate(grid[:rows]):
        x = 0
        while x < min(len(row), cols):  # runs of one background
            bg, x1 = row[x][2], x
            while x1 < min(len(row), cols) and row[x1][2] == bg:
                x1 += 1
            if bg != BG:
                s.append("set object %d rect from %d,%f to %d,%f fc rgb \"#%s\" fs solid "
                         "noborder behind" % (n, x, y - 0.5, x1, y + 0.5, bg))
                n += 1
            x = x1
        for x, (c, fg, _, bold) in enumerate(row[:cols]):
            if c.strip():
                s.append('set label %s at %f,%d center%s tc rgb "#%s" front'
                         % (quote(c), x + 0.5, y,
                            ' font "DejaVu Sans Mono:Bold,10"' if bold else "", fg))
    s.append("plot NaN")
    return "\n".join(s) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("out")
    ap.add_argument("--cols", type=int, default=0)
    ap.add_argument("--rows", type=int, default=0)
    a = ap.parse_args()
    with open(a.capture, encoding="utf-8", errors="replace") as f:
        grid = cells(f.read())
    cols = a.cols or max(len(r) for r in grid)
    rows = a.rows or len(grid)
    p = subprocess.run(["gnuplot"], input=script(grid, cols, rows, a.out), text=True,
                       capture_output=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
