"""Reads N pages of FILE through mmap in a fixed random order and prints the sum of their
first bytes (the mmap-only program of docs/record.md, "Trials").

Usage: python3 mmap_reader.py FILE N
"""
import mmap, random, sys
f = open(sys.argv[1], 'rb')
m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
pages = len(m) // 4096
order = random.Random(7).sample(range(pages), int(sys.argv[2]))
print(sum(m[p * 4096] for p in order))
