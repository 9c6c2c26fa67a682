#!/usr/bin/env python3
"""Checks the shape docs/architecture.md promises: no import cycle between top-level modules
of src/ or between its files (test code counted too), no source file over 800 lines, and no
function over 80 lines outside tests, and no `use super::*` outside tests (a production file
imports what it uses by name, so no part reaches another's private items unseen). The functions that were longer when the rule came are
listed in scripts/long-functions.txt with their length then: each may only get shorter, and
must leave the list once it is within 80 lines.
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

MAX_FN = 80
FN = re.compile(r'\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)')
def functions(path):
    """(name, first line, length) of each function with a body, test code left out."""
    lines = open(path).read().split('\n')
    end = len(lines)
    for i, l in enumerate(lines):
        if l.strip() == '#[cfg(test)]' and i + 1 < len(lines) and re.match(r'\s*(pub\s+)?mod\s+\w+\s*\{', lines[i + 1]):
            end = i
            break
    for i in range(end):
        m = FN.match(lines[i])
        if not m: continue
        depth = 0; started = False; j = i
        while j < end:
            code = re.sub(r'//.*', '', lines[j])
            code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
            code = re.sub(r"'(\\.|[^'\\])'", "''", code)
            if not started and ';' in code and '{' not in code: break
            for ch in code:
                if ch == '{': depth += 1; started = True
                elif ch == '}': depth -= 1
            if started and depth <= 0: break
            j += 1
        if started: yield m.group(6), i + 1, j - i + 1
def is_test_file(path):
    parts = os.path.relpath(path, root).split(os.sep)
    return 'tests' in parts[:-1] or 'fakes' in parts[:-1] or parts[-1] in ('tests.rs', 'fakes.rs')
known = {}
listed = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'long-functions.txt')
for line in open(listed):
    line = line.split('#')[0].split()
    if len(line) == 3: known[(line[0], line[1])] = int(line[2])
seen = set()
for m, p in sorted(mods.items()):
    if is_test_file(p): continue
    rel = os.path.relpath(p, root)
    for name, first, length in functions(p):
        if length <= MAX_FN: continue
        was = known.get((rel, name))
        seen.add((rel, name))
        if was is None:
            bad += 1; print(f'too long: {p}:{first} fn {name} has {length} lines (at most {MAX_FN})')
        elif length > was:
            bad += 1; print(f'grew: {p}:{first} fn {name} has {length} lines, {was} in scripts/long-functions.txt (it may only get shorter)')
for m, p in sorted(mods.items()):
    if is_test_file(p): continue
    for n, line in enumerate(open(p), 1):
        if line.startswith('use super::*'):
            bad += 1; print(f'glob import: {p}:{n} `use super::*` outside a test module (import each item by name)')
for (rel, name) in sorted(set(known) - seen):
    bad += 1; print(f'within {MAX_FN} lines now: remove `{rel} {name}` from scripts/long-functions.txt')
sys.exit(1 if bad else 0)
