# SPDX-License-Identifier: MIT
"""Measure the layout of a dict's keys object in the running CPython.

Up to 3.10, CPython does not install the header that defines
PyDictKeysObject (it lives in Objects/dict-common.h), so gen-offsets
cannot take its offsets with offsetof().  This script finds them in a
live dict instead, with ctypes: it builds dicts whose keys, values,
hashes and sizes it knows and locates each of them in the keys object's
memory.  It prints "field value" lines for offsets-probe.c to emit.

Usage: dict-layout.py MA_KEYS_OFFSET   (offsetof(PyDictObject, ma_keys))
Runs on CPython 3.6 .. 3.10.
"""

import ctypes
import sys

WORD = ctypes.sizeof(ctypes.c_void_p)
SCAN = 2048


def fail(msg):
    sys.stderr.write("dict-layout: %s\n" % msg)
    sys.exit(1)


def words(addr, n):
    return [ctypes.c_ssize_t.from_address(addr + i * WORD).value
            for i in range(n)]


def measure(keys_at, n):
    """Layout seen in a dict of n fresh str keys, or fail."""
    keys = [sys.intern("spyc_dict_layout_%d_%d" % (n, i)) for i in range(n)]
    values = [object() for _ in keys]
    d = {}
    for k, v in zip(keys, values):
        d[k] = v
    dk = ctypes.c_void_p.from_address(id(d) + keys_at).value
    raw = words(dk, SCAN // WORD)

    def where(value):
        hits = [i * WORD for i, w in enumerate(raw) if w == value]
        if len(hits) != 1:
            fail("%d dict: %d places hold one value" % (n, len(hits)))
        return hits[0]

    def signed(x):
        return ctypes.c_ssize_t(x).value

    # Entries: hash, key and value of entry i, in some order.
    at = [dict(hash=where(signed(hash(k))), key=where(id(k)),
               value=where(id(v))) for k, v in zip(keys, values)]
    first = min(at[0].values())
    size = min(at[1].values()) - first
    for i, e in enumerate(at):
        if min(e.values()) != first + i * size:
            fail("%d dict: entries are not evenly spaced" % n)
    # dk_size slots, then n entries; the index array sits just before
    # the entries, one byte per slot while dk_size < 256.
    slots = [s for s in (8, 16, 32, 64) if n <= s * 2 // 3][0]
    indices = first - slots
    ix = bytearray(ctypes.string_at(dk + indices, slots))
    if sorted(b for b in ix if b != 0xff) != list(range(n)):
        fail("%d dict: no index array before the entries" % n)
    head = raw[:indices // WORD]
    out = {
        "dictkeys_size": head.index(slots) * WORD,
        "dictkeys_nentries": head.index(n) * WORD,
        "dictkeys_indices": indices,
        "dictentry_size": size,
        "dictentry_key": at[0]["key"] - first,
        "dictentry_value": at[0]["value"] - first,
    }
    if head.count(slots) != 1 or head.count(n) != 1:
        fail("%d dict: size or count ambiguous in the header" % n)
    return out


def main():
    if len(sys.argv) != 2:
        fail("usage: dict-layout.py MA_KEYS_OFFSET")
    keys_at = int(sys.argv[1])
    small, large = measure(keys_at, 5), measure(keys_at, 20)
    if small != large:
        fail("dicts of 5 and 20 keys disagree: %r %r" % (small, large))
    for name in sorted(small):
        print("%s %d" % (name, small[name]))


main()
