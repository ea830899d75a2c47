#!/usr/bin/env python3
"""check_layers.py -- checks every #include "..." in src/ against the layer table in
docs/DESIGN.md ("Modules (src/)"): a file may include only headers of its own layer or a
lower one, and every file of src/ must be in the table. Exits 1 and names each violation.

Usage: scripts/check_layers.py [REPO_DIR]   (default: the repository holding this script)
"""
import os
import re
import sys

def load_table(design):
    layers = {}
    in_section = False
    for line in open(design, encoding="utf-8"):
        if line.startswith("## "):
            in_section = line.strip() == "## Modules (src/)"
            continue
        m = re.match(r"\|\s*L(\d+)\s*\|([^|]*)\|", line)
        if not (in_section and m):
            continue
        for name in re.findall(r"`([^`]+)`", m.group(2)):
            names = [name, name[:-2] + ".h"] if name.endswith(".c") else [name]
            for n in names:
                if n in layers and layers[n] != int(m.group(1)):
                    sys.exit(f"check_layers: {n} is listed in layers L{layers[n]} and L{m.group(1)}")
                layers[n] = int(m.group(1))
    return layers

def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(repo, "src")
    layers = load_table(os.path.join(repo, "docs", "DESIGN.md"))
    if not layers:
        sys.exit("check_layers: no layer table found in docs/DESIGN.md")
    files = sorted(f for f in os.listdir(src) if f.endswith((".c", ".h")))
    bad = []
    for f in files:
        if f not in layers:
            bad.append(f"src/{f}: not in the layer table of docs/DESIGN.md")
            continue
        for n, line in enumerate(open(os.path.join(src, f), encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m or not os.path.exists(os.path.join(src, m.group(1))):
                continue
            inc = m.group(1)
            if inc not in layers:
                bad.append(f"src/{f}:{n}: includes {inc}, which is not in the layer table")
            elif layers[inc] > layers[f]:
                bad.append(f"src/{f}:{n}: L{layers[f]} includes {inc} of L{layers[inc]} (a higher layer)")
    for b in bad:
        print(b)
    print(f"check_layers: {len(files)} files, {len(bad)} violations")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
