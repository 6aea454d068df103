# SPDX-License-Identifier: MIT
"""Dump target: methods, a nested class, static/class methods, closures.

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
    selfreport.start(sys.argv[1], 2)
    Outer().prop


if __name__ == "__main__":
    main()
