#!/usr/bin/env python3
"""Compares two captures of scripts/sim_outputs.sh, file by file.

    scripts/compare_sim_outputs.py OLD NEW [POLICY ...]

Files that differ are compared row by row (the `--json` rows): a difference only in rows of
the named POLICYs (a named fix, e.g. `cp`, which also matches `cp:depth=512K`) is reported as
such; any other difference is listed. Exit status 1 if any file differs beyond those rows.
"""

import json
import os
import sys


def rows(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def named(policy, names):
    return any(policy == n or policy.startswith(n + ":") for n in names)


def main():
    old, new, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    same, fixed, other = 0, 0, []
    for name in sorted(os.listdir(new)):
        a, b = os.path.join(old, name), os.path.join(new, name)
        if not os.path.isfile(b):
            continue
        if not os.path.isfile(a):
            other.append(f"{name}: only in {new}")
            continue
        if open(a, "rb").read() == open(b, "rb").read():
            same += 1
            continue
        ra, rb = rows(a), rows(b)
        if not (isinstance(ra, list) and isinstance(rb, list) and len(ra) == len(rb)):
            other.append(f"{name}: differs")
            continue
        beyond = sorted({x.get("policy", "?") for x, y in zip(ra, rb)
                         if x != y and not named(x.get("policy", ""), names)})
        if beyond:
            other.append(f"{name}: rows of {', '.join(beyond)} differ")
        else:
            fixed += 1
    print(f"identical: {same}; differing only in rows of {', '.join(names) or '-'}: {fixed}; "
          f"other differences: {len(other)}")
    for line in other:
        print("  " + line)
    sys.exit(1 if other else 0)


if __name__ == "__main__":
    main()
