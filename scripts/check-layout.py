#!/usr/bin/env python3
"""Checks the shape docs/architecture.md promises: no import cycle between top-level modules
of src/ or between its files (test code counted too), and no source file over 800 lines.
Usage: scripts/check-layout.py [src]; exits 1 and names what is wrong."""
import os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 else 'src'
mods = {}
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p = os.path.join(dp, f); rel = os.path.relpath(p, root)[:-3].split(os.sep)
        if rel[-1] in ('mod', 'lib', 'main'): rel = rel[:-1]
        mods[tuple(rel)] = p
def resolve(path):
    path = list(path)
    while path and tuple(path) not in mods: path.pop()
    return tuple(path)
edges = {}
for m, p in mods.items():
    src = open(p).read()
    src = re.sub(r'//.*', '', src)
    is_dir = os.path.basename(p) == 'mod.rs'
    base = list(m) if is_dir else list(m[:-1])
    targets = set()
    for mt in re.finditer(r'\b(crate|super)((?:::\w+)+)', src):
        parts = mt.group(2).split('::')[1:]
        if mt.group(1) == 'crate': full = parts
        else:
            b = list(base); 
            while parts and parts[0] == 'super': parts = parts[1:]; b = b[:-1]
            full = b + parts
        # handle `use crate::x::{a, b}` groups
        t = resolve(full)
        if t and t != m: targets.add(t)
    for mt in re.finditer(r'use (crate|super)((?:::\w+)*)::\{([^}]*)\}', src, flags=re.S):
        prefix = mt.group(2).split('::')[1:]
        b = [] if mt.group(1) == 'crate' else (list(base))
        for item in mt.group(3).split(','):
            item = item.strip().split('::')[0].strip()
            if not item or item == 'self': continue
            t = resolve(b + prefix + [item])
            if t and t != m: targets.add(t)
    edges[m] = targets
def sccs(nodes, edges):
    idx = {}; low = {}; st = []; on = set(); out = []; c = [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in idx: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(comp)
    for v in nodes:
        if v not in idx: visit(v)
    return out
top = {}
for m, ts in edges.items():
    if not m: continue
    for t in ts:
        if t and t[0] != m[0]: top.setdefault(m[0], set()).add(t[0])
bad = 0
for comp in sccs(list(top), top):
    bad += 1; print('top-level cycle:', ' <-> '.join(sorted(comp)))
# file level: ignore edges from a parent mod to its own children (declaring/re-exporting them)
fe = {m: {t for t in ts if not (t[:len(m)] == m)} for m, ts in edges.items()}
for comp in sccs(list(fe), fe):
    bad += 1; print('file cycle:', ' <-> '.join('/'.join(c) or 'lib' for c in sorted(comp)))
for m, p in sorted(mods.items()):
    lines = sum(1 for _ in open(p))
    if lines > 800:
        bad += 1; print(f'too long: {p} has {lines} lines (at most 800)')
sys.exit(1 if bad else 0)
