#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a cycle.

    python3 scripts/check-cycles.py crates/core crates/cli [--graph]

Each argument is a crate folder (with src/lib.rs or src/main.rs). A module is one source file
(src/a/b.rs or src/a/b/mod.rs is `a::b`; modules written inline, such as `mod tests { .. }`, count
as part of their file). Module A depends on module B when A names an item of B: in a `use`
declaration or in a path in the code (`crate::..`, `super::..`, `self::..`, or through a child
module or an imported module). A name that B only re-exports (`pub use c::Item`) is followed to
the module that defines it, so a facade `mod.rs` adds no dependency of its own. A module may use
what its ancestors define (they enclose it), so a dependency on an ancestor is left out; every
other dependency counts, and any cycle among them is reported with the lines that make it.
`--graph` prints every dependency. Exit status 1 when a checked crate has a cycle.
"""

import os
import re
import sys

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern\s+\"C\")\s+)*"
    r"(?:fn|struct|enum|union|trait|type|const|static|macro_rules!)\s+([A-Za-z_]\w*)",
    re.M,
)
MOD_DECL = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*;", re.M)
USE = re.compile(r"(?:^|[;{}\s])(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.S)
PATH = re.compile(r"(?<![\w:$])((?:[A-Za-z_]\w*)(?:\s*::\s*[A-Za-z_]\w*)+)")


def strip(src):
    """Source without comments, strings and char literals (newlines kept, for line numbers)."""
    out = []
    i, n = 0, len(src)
    keep_lines = lambda s: "\n" * s.count("\n")
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep_lines(src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 40]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.match(r'r(#*)"', src[i:])
            end = src.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + keep_lines(src[i:end]))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + keep_lines(src[i:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^'\\\n])'", src[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree):
    """`a::{b, c::{d, e as f}}` -> [(["a","b"], "b"), (["a","c","d"], "d"), (["a","c","e"], "f")]."""
    tree = re.sub(r"\s*::\s*", "::", re.sub(r"\s+", " ", tree)).strip()
    out = []

    def go(prefix, t):
        t = t.strip()
        if t.startswith("::"):
            t = t[2:]
        brace = t.find("{")
        if brace < 0:
            m = re.match(r"^(.*?)\s+as\s+([A-Za-z_]\w*)$", t)
            path, alias = (m.group(1), m.group(2)) if m else (t, None)
            segs = prefix + [x for x in path.split("::") if x]
            if segs and segs[-1] == "self":
                segs = segs[:-1]
            if segs:
                out.append((segs, alias or segs[-1]))
            return
        head = [x for x in t[:brace].split("::") if x]
        inner = t[brace + 1:t.rfind("}")]
        depth, start = 0, 0
        for k, ch in enumerate(inner + ","):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                if inner[start:k].strip():
                    go(prefix + head, inner[start:k])
                start = k + 1

    go([], tree)
    return out


class Crate:
    def __init__(self, root):
        self.root = root
        src = os.path.join(root, "src")
        entry = next(p for p in ("lib.rs", "main.rs") if os.path.isfile(os.path.join(src, p)))
        self.files = {}  # module path (tuple) -> file
        self.children = {}  # module -> set of child module names
        self.defs = {}  # module -> names defined there
        self.uses = {}  # module -> {alias: (segments, line)}
        self.refs = {}  # module -> [(segments, line)]
        self._load((), os.path.join(src, entry), src)

    def _load(self, mod, path, src):
        raw = open(path, encoding="utf-8").read()
        code = strip(raw)
        self.files[mod] = path
        self.children[mod] = set()
        base = os.path.dirname(path) if os.path.basename(path) in ("lib.rs", "main.rs", "mod.rs") else path[:-3]
        for m in MOD_DECL.finditer(code):
            name = m.group(1)
            for cand in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
                if os.path.isfile(cand):
                    self.children[mod].add(name)
                    self._load(mod + (name,), cand, src)
                    break
        # Inline modules (`mod tests { .. }`) are part of the file; their names are children too.
        for m in re.finditer(r"\bmod\s+([A-Za-z_]\w*)\s*\{", code):
            self.defs.setdefault(mod, set()).add(m.group(1))
        self.defs.setdefault(mod, set()).update(m.group(1) for m in ITEM.finditer(code))
        uses, refs = {}, []
        spans = []
        for m in USE.finditer(code):
            line = code.count("\n", 0, m.start(1)) + 1
            spans.append((m.start(), m.end()))
            for segs, alias in expand(m.group(1)):
                if segs[-1] == "*":
                    refs.append((segs[:-1], line))
                    continue
                uses[alias] = (segs, line)
                refs.append((segs, line))
        rest = list(code)
        for a, b in spans:
            for k in range(a, b):
                if rest[k] != "\n":
                    rest[k] = " "
        rest = "".join(rest)
        for m in PATH.finditer(rest):
            segs = [s.strip() for s in m.group(1).split("::")]
            refs.append((segs, rest.count("\n", 0, m.start()) + 1))
        self.uses[mod] = uses
        self.refs[mod] = refs

    def resolve(self, mod, segs, depth=0):
        """The module that defines what `segs` (as written in `mod`) names; None when outside."""
        if depth > 16 or not segs:
            return None
        cur = mod
        i = 0
        if segs[0] == "crate":
            cur, i = (), 1
        elif segs[0] in ("super", "self"):
            while i < len(segs) and segs[i] in ("super", "self"):
                if segs[i] == "super":
                    if not cur:
                        return None
                    cur = cur[:-1]
                i += 1
        elif segs[0] in self.children[cur]:
            pass
        elif segs[0] in self.uses[cur] and self.uses[cur][segs[0]][0] != segs:
            target = self.resolve_module(cur, self.uses[cur][segs[0]][0], depth + 1)
            if target is None:
                return None
            cur, i = target, 1
        else:
            return None
        while i < len(segs) and segs[i] in self.children.get(cur, ()):
            cur = cur + (segs[i],)
            i += 1
        if i < len(segs):
            name = segs[i]
            if name not in self.defs.get(cur, ()) and name in self.uses.get(cur, {}):
                follow = self.resolve(cur, self.uses[cur][name][0], depth + 1)
                if follow is not None:
                    return follow
        return cur

    def resolve_module(self, mod, segs, depth):
        """Like resolve, but only when the path names a module itself."""
        target = self.resolve(mod, segs, depth)
        if target is not None and target[-1:] == tuple(segs[-1:]):
            return target
        return None

    def edges(self):
        out = {}
        for mod, refs in self.refs.items():
            for segs, line in refs:
                target = self.resolve(mod, segs)
                if target is None or target == mod or mod[:len(target)] == target:
                    continue
                out.setdefault((mod, target), line)
        return out


def name(mod):
    return "::".join(("crate",) + mod)


def cycles(nodes, edges):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            if k < len(succ[v]):
                work.append((v, k + 1))
                w = succ[v][k]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in succ[v]:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return comps


def main(argv):
    show = "--graph" in argv
    roots = [a for a in argv if not a.startswith("--")]
    if not roots:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    failed = False
    for root in roots:
        crate = Crate(root)
        edges = crate.edges()
        if show:
            for (a, b), line in sorted(edges.items()):
                print(f"{root}: {name(a)} -> {name(b)}  ({os.path.relpath(crate.files[a])}:{line})")
        comps = cycles(sorted(crate.files), edges)
        if not comps:
            print(f"check-cycles: {root}: {len(crate.files)} modules, {len(edges)} dependencies, no cycle")
            continue
        failed = True
        for comp in comps:
            members = set(comp)
            print(f"check-cycles: {root}: a cycle among {len(comp)} modules: {', '.join(name(m) for m in comp)}")
            for (a, b), line in sorted(edges.items()):
                if a in members and b in members:
                    print(f"  {name(a)} -> {name(b)}  ({os.path.relpath(crate.files[a])}:{line})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
