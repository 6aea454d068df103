# SPDX-License-Identifier: MIT
"""Dump target: a non-ASCII file name and non-ASCII function names.

CPython stores a str in the narrowest of four layouts, and a profiler
reading memory must decode each: ASCII (plain), UCS1 (café: all below
U+0100), UCS2 (函数_名前: below U+10000) and UCS4 (𐌰𐌱𐌲_𠀀: Gothic letters
and a CJK Extension B ideograph, above U+FFFF).  Identifiers are NFKC-
normalized by the compiler, so these are chosen to survive that (fraktur
letters would not); the report says what the code objects really hold.

Usage: unicode_名前.py REPORT.json
"""

import sys
import threading
import time

import selfreport


def plain_ascii():
    selfreport.ready()
    time.sleep(3600)


def 𐌰𐌱𐌲_𠀀():
    return plain_ascii()


def 函数_名前():
    return 𐌰𐌱𐌲_𠀀()


def café():
    return 函数_名前()


class Ñandú(object):
    def método(self):
        selfreport.ready()
        time.sleep(3600)


def main():
    t = threading.Thread(target=Ñandú().método, name="hilo-ñ-线程")
    t.daemon = True
    t.start()
    selfreport.start(sys.argv[1], 2)
    café()


if __name__ == "__main__":
    main()
