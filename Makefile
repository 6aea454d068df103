# SPDX-License-Identifier: MIT
# spyc: build the profiler, run its tests and benchmarks.
#   make               build ./spyc (installs missing build dependencies)
#   make DEVELOPER=1   the same with -Werror and stricter warnings
#   make test          unit tests, then live tests against every CPython found
#   make bench         benchmark table (not part of make test)
#   make demo          profile a bundled example: demo-out/demo.json and .svg
#   make offsets       regenerate offsets/ from installed CPython headers

CC ?= cc
PKG_CONFIG ?= pkg-config
PYTEST ?= pytest-3
PYTHON3 ?= python3

CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP \
	  -D_GNU_SOURCE -Isrc -Ioffsets
ifdef DEVELOPER
CFLAGS += -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	  -Wpointer-arith -Wformat=2 -Wvla -Wundef
endif

PKGS = libelf libdw libcjson ncursesw libunwind-ptrace libunwind-generic
DEPS_OK := $(shell scripts/install-deps --check >/dev/null 2>&1 && echo yes)

SRCS = $(wildcard src/*.c) $(wildcard offsets/*.c)
OBJS = $(SRCS:.c=.o)
LIB_OBJS = $(filter-out src/spyc.o,$(OBJS))

UNIT_SRCS = $(wildcard tests/unit/*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=tests/build/unit-%)

.PHONY: all deps test unit-test live-test bench demo offsets clean

all: spyc

deps:
ifneq ($(DEPS_OK),yes)
	scripts/install-deps
endif

$(OBJS): | deps

CFLAGS += $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LDLIBS += $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null || echo -lelf -ldw -lcjson) -lstdc++ -lm

spyc: $(OBJS)
	$(CC) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS)

tests/build/unit-%: tests/unit/%.c $(LIB_OBJS)
	@mkdir -p tests/build
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

unit-test: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

live-test: spyc
	$(PYTEST) -ra tests/

test: unit-test live-test

bench: spyc
	$(PYTHON3) tests/bench.py

demo: spyc
	@mkdir -p demo-out
	./spyc record --rate 250 -o demo-out/demo.json -- $(PYTHON3) tests/targets/demo.py
	./spyc record --rate 250 -o demo-out/demo.svg -- $(PYTHON3) tests/targets/demo.py
	@echo "open demo-out/demo.json at https://www.speedscope.app, demo-out/demo.svg in a browser"

offsets:
	scripts/gen-offsets

clean:
	rm -f spyc $(OBJS) $(OBJS:.o=.d) $(UNIT_BINS) $(UNIT_BINS:=.d)

-include $(OBJS:.o=.d) $(UNIT_BINS:=.d)
