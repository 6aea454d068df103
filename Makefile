# SPDX-License-Identifier: MIT
# spyc: build the profiler, run its tests and benchmarks.
#   make               build ./spyc (objects in build/obj/); installs nothing
#   make DEVELOPER=1   the same with -Werror and stricter warnings
#   make deps-build    install what building spyc needs (Debian packages)
#   make deps          install what building and testing need (and npm's)
#   make test          make deps, then unit tests and the quick tier of the
#                      live tests: core paths on every CPython found, the
#                      rest on the newest (about 10 minutes)
#   make test-all      make deps, then unit tests, every live test on every
#                      CPython found, test-sanitize and test-valgrind (CI)
#   make bench         benchmark table (not part of make test)
#   make stress        spyc killed and stopped at random, hundreds of times
#   make soak          an hour at 1 kHz on a churning target: RSS must plateau
#   make demo          make deps-build, then profile a bundled example:
#                      demo-out/demo.json, .html and .svg
#   make offsets       regenerate offsets/ from installed CPython headers
#   make install       spyc, its GPU agent, man page and shell completions
#                      under PREFIX (default /usr/local), staged in DESTDIR
#   make FAULTS=1      also tests/build/spyc-faults: spyc with fault injection
#                      (SPYC_FAULTS), for tests/test_faults.py
#   make SANITIZE=1    also tests/build/spyc-asan and unit tests under
#                      AddressSanitizer + UndefinedBehaviorSanitizer
#   make test-sanitize those unit tests and some live tests with spyc-asan
#   make test-valgrind dump, record and top under valgrind, every CPython

CC ?= cc
PKG_CONFIG ?= pkg-config
PYTEST ?= pytest-3
PYTHON3 ?= python3

CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -MMD -MP \
	  -D_GNU_SOURCE -Isrc -Ioffsets -Ibuild/proto
ifdef DEVELOPER
CFLAGS += -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	  -Wpointer-arith -Wformat=2 -Wvla -Wundef
endif

PKGS = libelf libdw libcjson ncursesw libunwind-ptrace libunwind-generic
PKGS += libprotobuf-c zlib
PROTOC_C ?= protoc-c
BUILD_DEPS_MISSING := $(shell scripts/install-deps --build --check 2>&1 >/dev/null)

SRCS = $(wildcard src/*.c src/*/*.c) $(wildcard offsets/*.c)
OBJDIR = build/obj
OBJS = $(SRCS:%.c=$(OBJDIR)/%.o)
# --format pprof: C code that protoc-c generates from proto/profile.proto.
PROTO_GEN = build/proto/profile.pb-c.c build/proto/profile.pb-c.h
PROTO_OBJ = build/proto/profile.pb-c.o
OBJS += $(PROTO_OBJ)
LIB_OBJS = $(filter-out $(OBJDIR)/src/cmd/spyc.o,$(OBJS))

UNIT_SRCS = $(wildcard tests/unit/*.c)
UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=tests/build/unit-%)

# The channel's writer is pure C: spyc's unit tests run it without CUPTI.
RING_OBJ = $(OBJDIR)/agent/ring.o

# The GPU agent (agent/) is built when CUPTI's headers are found: a
# feature probe compiles a tiny program against them, as linux perf's
# do.  The toolkit is CUDA_HOME, else the one holding the nvcc on PATH.
NVCC_PATH := $(shell command -v nvcc 2>/dev/null)
CUDA_HOME ?= $(if $(NVCC_PATH),$(patsubst %/bin/,%,$(dir $(realpath $(NVCC_PATH)))))
CUPTI_INC := $(patsubst %/cupti.h,%,$(firstword $(wildcard \
	$(CUDA_HOME)/include/cupti.h $(CUDA_HOME)/extras/CUPTI/include/cupti.h)))
CUPTI_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so \
	$(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so $(CUDA_HOME)/lib/libcupti.so))
ifneq ($(CUPTI_INC),)
HAVE_CUPTI := $(shell $(CC) -I$(CUPTI_INC) -I$(CUDA_HOME)/include -c \
	scripts/feature/test-cupti.c -o /dev/null >/dev/null 2>&1 && echo yes)
endif
AGENT_SRCS = agent/agent.c agent/nvtx.c agent/ring.c agent/pystack.c
AGENT_CFLAGS = $(filter-out -MMD -MP,$(CFLAGS)) -fPIC -fvisibility=hidden \
	-DSPYC_AGENT -I$(CUPTI_INC) -I$(CUDA_HOME)/include \
	$(if $(CUPTI_LIB),-DSPYC_CUPTI_FALLBACK='"$(CUPTI_LIB)"')
ifeq ($(HAVE_CUPTI),yes)
AGENT = spyc-agent.so
CFLAGS += -DHAVE_CUPTI
endif

# What live tests load into targets: tests/lib/*.c, and the injector's driver.
TEST_LIB_SRCS = $(wildcard tests/lib/*.c)
TEST_LIBS = $(TEST_LIB_SRCS:tests/lib/%.c=tests/build/lib/%.so)
TEST_TOOLS = tests/build/spyc-inject tests/build/spyc-sleeploop
# A program that loads the agent under an older glibc (x86-64 only).
ifeq ($(shell uname -m),x86_64)
TEST_TOOLS += $(if $(AGENT),tests/build/spyc-agent-load)
endif
# Stand-ins for CUPTI and the CUDA driver (tests/fakecuda/): --gpu tested
# end to end where there is no GPU.  Built with CUPTI's headers.
FAKE_CUDA = $(if $(AGENT),tests/build/fakecuda/libcupti.so \
	tests/build/fakecuda/libcuda.so.1 tests/build/fakecuda/libnvtx.so)

.PHONY: all deps deps-build build-deps-check test test-all test-all-run \
	unit-test live-test live-test-quick test-tools bench stress soak demo \
	offsets clean install uninstall

PREFIX ?= /usr/local
BINDIR = $(DESTDIR)$(PREFIX)/bin
LIBDIR = $(DESTDIR)$(PREFIX)/lib/spyc
MAN1DIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASHCOMPDIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions

all: spyc $(AGENT)

deps:
	scripts/install-deps

deps-build:
	scripts/install-deps --build

# A plain make installs nothing: it says what is missing, and how to get it.
build-deps-check:
ifneq ($(BUILD_DEPS_MISSING),)
	@echo "spyc: cannot build: $(BUILD_DEPS_MISSING); make deps-build installs them" >&2
	@exit 1
endif

$(OBJDIR)/%.o: %.c | build-deps-check
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Made by a pattern rule for the unit tests' pattern rule only: kept.
.SECONDARY: $(RING_OBJ) $(ASAN_RING_OBJ)

CFLAGS += $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LDLIBS += $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null || echo -lelf -ldw -lcjson -lprotobuf-c -lz) -lm

# C++ names (CUDA kernels, native frames) are demangled with libstdc++'s
# __cxa_demangle (Debian: libstdc++-12-dev, which g++ brings) when a probe
# links with it; without it they stay mangled, and the link says so once.
HAVE_DEMANGLE := $(shell $(CC) scripts/feature/test-demangle.c -o /dev/null \
	-lstdc++ >/dev/null 2>&1 && echo yes)
ifeq ($(HAVE_DEMANGLE),yes)
CFLAGS += -DHAVE_DEMANGLE
LDLIBS += -lstdc++
endif

# Generated, so not held to DEVELOPER's warnings; rebuilt when the schema
# changes.  The pattern rule makes one protoc-c run yield both files.
build/proto/%.pb-c.c build/proto/%.pb-c.h: proto/%.proto | build-deps-check
	@mkdir -p build/proto
	$(PROTOC_C) --proto_path=proto --c_out=build/proto $<

$(PROTO_OBJ): build/proto/profile.pb-c.c build/proto/profile.pb-c.h
	$(CC) $(filter-out -Werror -Wmissing-prototypes -Wstrict-prototypes,$(CFLAGS)) -c -o $@ $<

$(OBJDIR)/src/out/pprof.o $(OBJDIR)/src/profile/profile-read.o: \
	build/proto/profile.pb-c.h

spyc: $(OBJS)
	$(CC) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS)
ifneq ($(HAVE_DEMANGLE),yes)
	@echo "spyc: no C++ demangler (libstdc++'s __cxa_demangle):" \
		"kernel and native C++ names stay mangled"
endif
ifneq ($(HAVE_CUPTI),yes)
	@echo "spyc: no CUPTI headers found (CUDA_HOME='$(CUDA_HOME)'):" \
		"built without the GPU agent (--gpu)"
endif

# The agent loads into targets whose glibc may be older than this one's
# (agent/libc-compat.h): libdl and libpthread are named as needed, where
# a glibc before 2.34 keeps the first versions of the calls it binds.
spyc-agent.so: $(AGENT_SRCS) agent/agent.h agent/ring.h agent/pystack.h \
		agent/libc-compat.h src/gpu/gpuchan-layout.h
	$(CC) $(AGENT_CFLAGS) -Isrc -shared -o $@ $(AGENT_SRCS) \
		-Wl,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0 \
		-Wl,--as-needed -Wl,-z,defs

tests/build/unit-%: tests/unit/%.c $(LIB_OBJS) $(RING_OBJ)
	@mkdir -p tests/build
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(RING_OBJ) $(LDLIBS) \
		-pthread

tests/build/lib/%.so: tests/lib/%.c
	@mkdir -p tests/build/lib
	$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -fPIC -shared -o $@ $<

tests/build/spyc-inject: tests/tools/spyc-inject.c $(LIB_OBJS)
	@mkdir -p tests/build
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

tests/build/spyc-agent-load: tests/tools/spyc-agent-load.c agent/libc-compat.h
	@mkdir -p tests/build
	$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -DSPYC_AGENT -nostartfiles \
		-o $@ $< -Wl,--no-as-needed -l:libdl.so.2

tests/build/spyc-sleeploop: tests/tools/spyc-sleeploop.c $(LIB_OBJS)
	@mkdir -p tests/build
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LDLIBS)

tests/build/fakecuda/libcupti.so: tests/fakecuda/cupti.c
	@mkdir -p tests/build/fakecuda
	$(CC) $(AGENT_CFLAGS) -shared -o $@ $< -pthread

# Not a stand-in: NVIDIA's NVTX headers, loader and all (tests/fakecuda/nvtx.c).
tests/build/fakecuda/libnvtx.so: tests/fakecuda/nvtx.c
	@mkdir -p tests/build/fakecuda
	$(CC) $(AGENT_CFLAGS) -Wno-missing-prototypes -shared -o $@ $< -ldl

tests/build/fakecuda/libcuda.so.1: tests/fakecuda/cuda.c
	@mkdir -p tests/build/fakecuda
	$(CC) $(AGENT_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $<

test-tools: spyc $(AGENT) $(TEST_LIBS) $(TEST_TOOLS) $(FAKE_CUDA)

unit-test: $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

# Every test of 3 s or more is listed at the end: the whole run must stay
# short.
live-test: test-tools
	$(PYTEST) -ra --durations=0 --durations-min=3 tests/

# The quick tier (tests/conftest.py, SPYC_TEST_TIER).
live-test-quick: test-tools
	SPYC_TEST_TIER=quick $(PYTEST) -ra tests/

# The packages first, in a make of their own: the rest is planned after.
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory unit-test live-test-quick

test-all:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory test-all-run

test-all-run: unit-test live-test

bench: spyc $(AGENT) $(FAKE_CUDA) tests/build/spyc-sleeploop
	$(PYTHON3) tests/bench.py

stress: spyc
	$(PYTHON3) tests/stress.py

soak: spyc
	$(PYTHON3) tests/soak.py

demo:
	@$(MAKE) --no-print-directory deps-build
	@$(MAKE) --no-print-directory spyc
	@mkdir -p demo-out
	./spyc record --rate 250 -o demo-out/demo.json -- $(PYTHON3) tests/targets/demo.py
	./spyc record --rate 250 -o demo-out/demo.html -- $(PYTHON3) tests/targets/demo.py
	./spyc record --rate 250 -o demo-out/demo.svg -- $(PYTHON3) tests/targets/demo.py
	@echo "open demo-out/demo.json at https://www.speedscope.app, demo-out/demo.html and demo-out/demo.svg in a browser"

offsets:
	scripts/gen-offsets

# The agent goes to lib/spyc/, where an installed spyc looks for it.
install: all
	install -D -m 755 spyc $(BINDIR)/spyc
ifeq ($(HAVE_CUPTI),yes)
	install -D -m 644 $(AGENT) $(LIBDIR)/$(AGENT)
endif
	install -D -m 644 man/spyc.1 $(MAN1DIR)/spyc.1
	install -D -m 644 scripts/completions/spyc.bash $(BASHCOMPDIR)/spyc
	install -D -m 644 scripts/completions/_spyc $(ZSHCOMPDIR)/_spyc

uninstall:
	rm -f $(BINDIR)/spyc $(LIBDIR)/spyc-agent.so $(MAN1DIR)/spyc.1 \
		$(BASHCOMPDIR)/spyc $(ZSHCOMPDIR)/_spyc
	-rmdir $(LIBDIR)

clean:
	rm -rf $(OBJDIR)
	rm -f spyc spyc-agent.so $(UNIT_BINS) $(UNIT_BINS:=.d) $(TEST_LIBS) \
		$(TEST_TOOLS) $(TEST_TOOLS:=.d) $(PROTO_GEN) $(PROTO_OBJ) \
		$(PROTO_OBJ:.o=.d)

-include $(OBJS:.o=.d) $(UNIT_BINS:=.d) $(RING_OBJ:.o=.d) $(TEST_TOOLS:=.d)

# Reliability builds: the same sources compiled again into objects of their
# own under tests/build/, so that ./spyc is never one of them.
#
# FAULTS: spyc with src/sys/faults.c switched on (SPYC_FAULTS makes remote
# reads and ptrace calls fail on purpose); a normal build compiles it out.
FAULTS_DIR = tests/build/faults
# The generated protobuf code is the same in every build: linked as is.
FAULTS_OBJS = $(SRCS:%.c=$(FAULTS_DIR)/%.o) $(PROTO_OBJ)
FAULTS_BIN = tests/build/spyc-faults

$(FAULTS_DIR)/%.o: %.c | build-deps-check
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSPYC_FAULTS -c -o $@ $<

$(FAULTS_DIR)/src/out/pprof.o $(ASAN_DIR)/src/out/pprof.o \
$(FAULTS_DIR)/src/profile/profile-read.o \
$(ASAN_DIR)/src/profile/profile-read.o: \
	build/proto/profile.pb-c.h

$(FAULTS_BIN): $(FAULTS_OBJS)
	$(CC) $(LDFLAGS) -o $@ $(FAULTS_OBJS) $(LDLIBS)

# SANITIZE: AddressSanitizer and UndefinedBehaviorSanitizer, every report
# fatal, for spyc and its unit tests.  spyc-asan has the fault injection
# too (idle unless SPYC_FAULTS is set): test_faults.py runs it, so that the
# sanitizers watch spyc parse garbage.
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
ASAN_DIR = tests/build/asan
ASAN_OBJS = $(SRCS:%.c=$(ASAN_DIR)/%.o) $(PROTO_OBJ)
ASAN_LIB_OBJS = $(filter-out $(ASAN_DIR)/src/cmd/spyc.o,$(ASAN_OBJS))
ASAN_RING_OBJ = $(ASAN_DIR)/agent/ring.o
ASAN_BIN = tests/build/spyc-asan
ASAN_UNIT_BINS = $(UNIT_SRCS:tests/unit/%.c=$(ASAN_DIR)/unit-%)
# Any report ends the program with an error (exit 99); leaks are reports
# too.  Reports go to files, so that one in a run whose failure a test
# expects is not missed: test-sanitize fails if any was written.
SANITIZE_REPORTS = tests/build/asan/reports
SANITIZE_ENV = \
	ASAN_OPTIONS=halt_on_error=1:exitcode=99:detect_leaks=1:detect_stack_use_after_return=1:log_path=$(CURDIR)/$(SANITIZE_REPORTS)/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99:log_path=$(CURDIR)/$(SANITIZE_REPORTS)/ubsan
# The live tests run with spyc-asan on the newest Python only.
SANITIZE_LIVE = tests/test_record.py tests/test_dump.py tests/test_top.py \
	tests/test_errors.py tests/test_faults.py tests/test_hostile.py \
	tests/test_report.py

$(ASAN_DIR)/%.o: %.c | build-deps-check
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SANITIZE_FLAGS) -DSPYC_FAULTS -c -o $@ $<

$(ASAN_BIN): $(ASAN_OBJS)
	$(CC) $(SANITIZE_FLAGS) $(LDFLAGS) -o $@ $(ASAN_OBJS) $(LDLIBS)

$(ASAN_DIR)/unit-%: tests/unit/%.c $(ASAN_LIB_OBJS) $(ASAN_RING_OBJ)
	$(CC) $(CFLAGS) $(SANITIZE_FLAGS) $(LDFLAGS) -o $@ $< \
		$(ASAN_LIB_OBJS) $(ASAN_RING_OBJ) $(LDLIBS) -pthread

ifdef FAULTS
all: $(FAULTS_BIN)
endif
ifdef SANITIZE
all: $(ASAN_BIN) $(ASAN_UNIT_BINS)
endif

test-tools: $(FAULTS_BIN)
test-all-run: test-sanitize test-valgrind
stress: $(FAULTS_BIN)

test-sanitize: $(ASAN_BIN) $(ASAN_UNIT_BINS) test-tools
	@rm -rf $(SANITIZE_REPORTS) && mkdir -p $(SANITIZE_REPORTS)
	@status=0; for t in $(ASAN_UNIT_BINS); do echo "== $$t"; \
		$(SANITIZE_ENV) $$t || status=1; done; \
	$(SANITIZE_ENV) SPYC_TEST_BINARY=$(ASAN_BIN) \
		SPYC_FAULTS_BINARY=$(ASAN_BIN) SPYC_TEST_SLOTS=newest \
		$(PYTEST) -ra $(SANITIZE_LIVE) || status=1; \
	if [ -n "$$(ls $(SANITIZE_REPORTS))" ]; then \
		cat $(SANITIZE_REPORTS)/*; \
		echo "test-sanitize: sanitizer reports above (in $(SANITIZE_REPORTS))"; \
		status=1; fi; \
	exit $$status

# VALGRIND: ./spyc under memcheck, dump and short records of the newest
# CPython (tests/test_valgrind.py); make test runs it last.
test-valgrind: spyc
	SPYC_VALGRIND=1 $(PYTEST) -ra tests/test_valgrind.py

clean: clean-reliability
clean-reliability:
	rm -rf $(FAULTS_DIR) $(FAULTS_BIN) $(ASAN_DIR) $(ASAN_BIN)

.PHONY: test-sanitize test-valgrind clean-reliability

-include $(FAULTS_OBJS:.o=.d) $(ASAN_OBJS:.o=.d) $(ASAN_RING_OBJ:.o=.d) \
	$(ASAN_UNIT_BINS:=.d)
