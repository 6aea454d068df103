# SPDX-License-Identifier: MIT
"""Dump target: methods, a nested class, static/class methods, closures,
and a class call whose Python __init__ blocks, made from a call site run
often enough to be specialized (3.13+ then runs __init__ above a frame
of the interpreter's own, which is no frame of the program's).

On 3.11+ the expected names are qualified (Outer.Inner.method,
outer.<locals>.inner); before, plain co_name.  Usage: classes.py REPORT.json
"""

import sys
import threading
import time

import selfreport


class Outer(object):
    class Inner(object):
        def method(self):
            return Outer.static_method()

    def method(self):
        return Outer.Inner().method()

    @staticmethod
    def static_method():
        return Outer.class_method()

    @classmethod
    def class_method(cls):
        return cls().blocking()

    def blocking(self):
        selfreport.ready()
        time.sleep(3600)

    @property
    def prop(self):
        helper = lambda: outer()
        return helper()


class Waiter(object):
    def __init__(self, block):
        self.block = block
        if block:
            selfreport.ready()
            time.sleep(3600)


def make_waiters():
    for i in range(200):
        Waiter(i == 199)


def outer():
    def inner():
        def innermost():
            selfreport.ready()
            time.sleep(3600)
        return innermost()
    return inner()


def main():
    t = threading.Thread(target=Outer().method, name="methods")
    t.daemon = True
    t.start()
    t = threading.Thread(target=make_waiters, name="init")
    t.daemon = True
    t.start()
    selfreport.start(sys.argv[1], 3)
    Outer().prop


if __name__ == "__main__":
    main()
