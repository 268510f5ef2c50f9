#!/usr/bin/env python3
"""Import circles between the files of a crate.

    scripts/import_cycles.py [--strict] crates/sim [crates/bench ...]

For each source file of the crate's `src/`, every path it names in code (not in comments)
that starts with `crate::`, `super::` or `self::` (in `use` items, grouped or not, and inline)
is resolved to the file of the longest module prefix that exists; each such file is an edge.
A strongly connected component of more than one file is an import circle, printed with its
files; the exit status is 1 if there is one. A file's edge to its own submodules through
`mod` declarations is not an import and is not counted. Paths inside an inline module
(`mod bench { use super::x; }`) are resolved from that module, so its `super::` is the file
itself.

With --strict, a path into a child module the file declares (`mod lines;` ... `lines::Lines`)
counts too, as does the module a `pub use` names when another file names the item through it
(a re-export is followed to the file that defines the item, and is not itself an edge). A parent
that dispatches to its children and defines the types they import is then a circle: the types
belong in a file of their own.
"""

import re
import sys
from pathlib import Path


def module_files(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    files = {}
    for path in src.rglob("*.rs"):
        rel = path.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts in (["lib"], ["main"]):
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        files[tuple(parts)] = path
    return files


def code_of(text):
    """The text without comments (line, block, doc) and with string and character literals
    emptied, read left to right so that a quote in a comment or a `//` in a string is taken
    for what it is."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif (raw := re.match(r'b?r(#*)"', text[i:i + 260])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + raw.group(1)
            j = text.find(end, i + raw.end())
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif (char := re.match(r"'(\\.[^']*|[^'\\])'", text[i:i + 12])):
            out.append("' '")
            i += char.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def without_tests(code):
    """The code without its `#[cfg(test)]` items (a test module's block, or one item)."""
    out, i = [], 0
    for mark in re.finditer(r"#\[cfg\(test\)\]", code):
        if mark.start() < i:
            continue
        out.append(code[i : mark.start()])
        j, depth = mark.end(), 0
        while j < len(code):
            if code[j] == ";" and depth == 0:
                break
            depth += code[j] == "{"
            depth -= code[j] == "}"
            if code[j] == "}" and depth == 0:
                break
            j += 1
        i = j + 1
    out.append(code[i:])
    return "".join(out)


def scopes(code, inner=()):
    """(inline module path, its code) for the file's own code and each inline `mod name { .. }`
    block in it, nested ones included; each block's text is left out of its parent's."""
    out, outer, i = [], [], 0
    for mark in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        if mark.start() < i:
            continue
        outer.append(code[i : mark.start()])
        j, depth = mark.end(), 1
        while j < len(code) and depth:
            depth += code[j] == "{"
            depth -= code[j] == "}"
            j += 1
        out.extend(scopes(code[mark.end() : j - 1], inner + (mark.group(1),)))
        i = j
    outer.append(code[i:])
    return [(inner, "".join(outer))] + out


def expand_uses(code):
    """Every path named by `use` items (groups expanded) and inline paths."""
    paths = []
    for match in re.finditer(r"\buse\s+([^;]+);", code):
        paths.extend(expand(match.group(1).replace("\n", " ")))
    paths.extend(re.findall(r"\b(?:crate|super|self)(?:::\w+)+", code))
    return paths


def expand(tree):
    """`a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [tree.split(" as ")[0]]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rindex("}")]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    items.append(inner[start:])
    return [p for item in items if item for p in expand(prefix + item)]


def strict_paths(code):
    """--strict: the paths a file names (as expand_uses, with paths into its declared child
    modules), leaving out its re-exports (`pub use`)."""
    children = set(re.findall(r"\bmod\s+(\w+)\s*;", code))
    paths = []
    for match in re.finditer(r"(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", code):
        if not match.group(1):
            paths.extend(expand(match.group(2).replace("\n", " ")))
    starts = "|".join(["crate", "super", "self"] + [re.escape(c) for c in sorted(children)])
    rest = re.sub(r"\buse\s+[^;]+;", "", code)
    paths.extend(re.findall(r"(?<![\w:])(?:%s)(?:::\w+)+" % starts, rest))
    return [p if p.split("::")[0] in ("crate", "super", "self") else "self::" + p for p in paths]


def reexports(code):
    """--strict: item name -> path of each `pub use` of a file (globs left out)."""
    out = {}
    for match in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", code):
        for path in expand(match.group(1).replace("\n", " ")):
            path = path if path.split("::")[0] in ("crate", "super", "self") else "self::" + path
            segments = path.split("::")
            if segments[-1] not in ("*", "self"):
                out[segments[-1]] = path
    return out


def resolve_through(path, here, files, faces, seen=()):
    """--strict: as resolve, then, when the next segment of the path is an item the module found
    re-exports, the file the re-export names."""
    found = resolve(path, here, files)
    if found is None or found in seen:
        return found
    parts = path.split("::")
    base = list(here) if parts[0] != "crate" else []
    for part in parts:
        if part == "super":
            base = base[:-1]
    named = [p for p in parts if p not in ("crate", "super", "self")]
    after = named[len(found) - len(base) :] if len(found) >= len(base) else []
    if after and after[0] in faces.get(found, {}):
        return resolve_through(faces[found][after[0]], found, files, faces, seen + (found,)) or found
    return found


def resolve(path, here, files):
    """The file of the longest existing module prefix of `path`, seen from module `here`."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = [], parts[1:]
    elif parts[0] in ("super", "self"):
        base = list(here)
        rest = parts
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    for n in range(len(rest), -1, -1):
        key = tuple(base + rest[:n])
        if key in files:
            return key
    return None


def cycles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main():
    found = False
    strict = "--strict" in sys.argv[1:]
    for crate in [a for a in sys.argv[1:] if a != "--strict"]:
        src = Path(crate) / "src"
        files = module_files(src)
        codes = {m: without_tests(code_of(p.read_text())) for m, p in files.items()}
        scoped = {m: scopes(code) for m, code in codes.items()}
        faces = {m: reexports(s[0][1]) for m, s in scoped.items()} if strict else {}
        edges = {}
        for module, parts in scoped.items():
            # A file's own module: for foo.rs, `super::` is its parent.
            targets = set()
            for inner, code in parts:
                here = module + inner
                if strict:
                    targets |= {resolve_through(p, here, files, faces) for p in strict_paths(code)}
                else:
                    targets |= {resolve(p, here, files) for p in expand_uses(code)}
            edges[module] = {t for t in targets if t is not None and t != module}
        circles = cycles(edges)
        count = sum(len(e) for e in edges.values())
        print(f"{crate}: {len(files)} files, {count} import edges, {len(circles)} circles")
        for circle in circles:
            found = True
            print("  circle: " + ", ".join(str(files[m].relative_to(src)) for m in circle))
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
