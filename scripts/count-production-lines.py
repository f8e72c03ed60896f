#!/usr/bin/env python3
"""Production lines of kernpack at a revision (default: the working tree).

Production code is every .rs/.py/.cu/.cuh/.h file under src/, python/src/,
python/kernpack/ and cli/src/, less test code: `#[cfg(test)]` items, files
declared as `#[cfg(test)] mod x;`, `tests.rs` files, and src/reference/ where
lib.rs compiles it only for tests (the `reference` feature).

    python3 scripts/count-production-lines.py [REV] [-v]

prints the lines per folder and in total, and the code lines (blank, comment
and docstring lines left out); -v lists the largest files.
"""
import collections
import os
import re
import subprocess
import sys

ROOTS = ["src", "python/src", "python/kernpack", "cli/src"]
CFG_TEST = re.compile(r"#\[cfg\((all\()?test")
TEST_MOD = re.compile(r"#\[cfg\(test[^\n]*\]\s*(?:#\[[^\n]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+);")


def tracked(rev):
    cmd = ["git", "ls-tree", "-r", "--name-only", rev, "--"] if rev else ["git", "ls-files", "--"]
    names = subprocess.check_output(cmd + ROOTS, text=True).split()
    return [f for f in names if re.search(r"\.(rs|py|cu|cuh|h)$", f)]


def read(rev, path):
    if rev:
        return subprocess.check_output(["git", "show", f"{rev}:{path}"], text=True)
    with open(path) as f:
        return f.read()


def without_cfg_test(lines):
    """The lines of a Rust file less each `#[cfg(test)]` item (to its closing brace or `;`)."""
    kept, i = [], 0
    while i < len(lines):
        if not CFG_TEST.match(lines[i].strip()):
            kept.append(lines[i])
            i += 1
            continue
        j, depth, opened = i + 1, 0, False
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            opened |= "{" in lines[j]
            if (opened and depth <= 0) or (not opened and lines[j].rstrip().endswith(";")):
                break
            j += 1
        i = j + 1
    return kept


def test_only_files(texts):
    """Files that `#[cfg(test)] mod x;` declares, as x.rs or x/mod.rs."""
    found = set()
    for path, text in texts.items():
        if not path.endswith(".rs"):
            continue
        folder, stem = os.path.dirname(path), os.path.basename(path)[:-3]
        base = folder if stem in ("mod", "lib", "main") else os.path.join(folder, stem)
        for m in TEST_MOD.finditer(text):
            found |= {f"{base}/{m.group(1)}.rs", f"{base}/{m.group(1)}/mod.rs"}
    return found


def code_lines(path, lines):
    """Lines that are neither blank, nor comments, nor (in Python) docstrings."""
    count, in_doc = 0, False
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if path.endswith(".py"):
            if in_doc:
                in_doc = '"""' not in s
                continue
            if s.startswith('"""'):
                in_doc = s.count('"""') == 1
                continue
            if s.startswith("#"):
                continue
        elif s.startswith("//"):
            continue
        count += 1
    return count


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    rev = args[0] if args else None
    texts = {f: read(rev, f) for f in tracked(rev)}
    reference_gated = 'feature = "reference"))]\npub mod reference' in texts.get("src/lib.rs", "")
    tests = test_only_files(texts)
    per_root, per_file, code = collections.Counter(), {}, 0
    for path, text in texts.items():
        if path in tests or path.endswith("/tests.rs") or "/tests/" in path:
            continue
        if reference_gated and path.startswith("src/reference/"):
            continue
        lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
        if path.endswith(".rs"):
            lines = without_cfg_test(lines)
        root = next(r for r in ROOTS if path.startswith(r + "/"))
        per_root[root] += len(lines)
        per_file[path] = len(lines)
        code += code_lines(path, lines)
    print(dict(per_root), "production", sum(per_root.values()), "code", code)
    if "-v" in sys.argv:
        for path, n in sorted(per_file.items(), key=lambda x: x[1])[-40:]:
            print(n, path)


if __name__ == "__main__":
    main()
