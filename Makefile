# llmsim - a boring Makefile.
#
#   make            build build/llmsim and the measurement backends whose
#                   compilers are installed (src/backend/backend.mk)
#   make run        run the default job (workloads/jobs/default.yaml)
#   make test       build and run every test
#   make check      the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      benchmarks (engine events/s, a 16k-GPU run, max-min re-solve)
#   make validate   predicted vs measured for the reference cases and any
#                   stored measurements (llmsim validate, the targets)
#   make man        the man page and bash completion, from the binary
#   make install    PREFIX=/usr/local (DESTDIR too): binary, presets,
#                   man page, completion, docs; make uninstall removes them
#   make clean
#
# Local overrides (CC, extra flags) go in config.mak, which is not tracked.
# BUILD=dir builds elsewhere (make check uses build/asan).

BUILD ?= build
CC ?= cc
-include config.mak

PKGS := yaml-0.1 libcjson gsl sqlite3
TEST_PKGS := criterion

# A fresh machine needs no manual step: when pkg-config cannot find a
# dependency, or the backends' compilers (mpicc, hipcc) are missing,
# install them all (scripts/install-deps.sh is idempotent).
ifeq ($(filter clean,$(MAKECMDGOALS)),)
ifneq ($(shell pkg-config --exists $(PKGS) $(TEST_PKGS) 2>/dev/null && \
	command -v mpicc >/dev/null && command -v hipcc >/dev/null && echo ok),ok)
$(info llmsim: installing build dependencies (scripts/install-deps.sh))
ifneq ($(shell scripts/install-deps.sh >&2; echo $$?),0)
$(error scripts/install-deps.sh failed; install the packages it names and run make again)
endif
endif
endif

WARN := -Wall -Wextra -Wshadow -Wconversion -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wundef -Werror
BASE_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O2
ifeq ($(SAN),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
BASE_CFLAGS := $(filter-out -O2,$(BASE_CFLAGS)) -O1
endif

# The program is linked with link-time optimization (LTO=1, the default
# when the compiler takes the flags): calls between files are inlined
# (units, the engine's task accessors, the fabric's flow and solver
# calls), 7 % fewer instructions on the DSV3 2,048-GPU bench job with the
# same output bit for bit (no fast-math, and without -march no FMA, so
# inlining cannot change a rounding). The objects are fat (machine code
# beside the LTO bytecode): the tests, tools and benchmarks link them
# without LTO, as before. LTO=0 turns it off; the sanitizer build never
# uses it.
ifneq ($(SAN),1)
LTO ?= $(shell $(CC) -flto=auto -ffat-lto-objects -x c -c /dev/null \
	-o /dev/null 2>/dev/null && echo 1)
endif
ifeq ($(LTO),1)
LTO_FLAGS := -flto=auto -ffat-lto-objects
endif

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS)) -lm $(SWEEP_MPI_LIBS)

# MPI: `mpirun -n R llmsim sweep` splits a sweep over ranks when the build
# finds mpicc (Open MPI's --showme, else MPICH's -show); NO_MPI=1 builds
# without. Only src/sweep/sweep_mpi.c uses MPI. (SWEEP_: backend.mk has
# MPI_CFLAGS and MPI_LIBS of its own, for the mpi measurement backend.)
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ifneq ($(NO_MPI),1)
ifneq ($(MPICC),)
MPI_SHOW := $(shell $(MPICC) --showme 2>/dev/null || $(MPICC) -show 2>/dev/null)
SWEEP_MPI_CFLAGS := -DLLMSIM_MPI \
	$(patsubst -I%,-isystem %,$(filter -I%,$(MPI_SHOW)))
SWEEP_MPI_LIBS := $(filter -L% -l% -Wl%,$(MPI_SHOW)) \
	$(filter -pthread,$(MPI_SHOW))
endif
endif
TEST_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS))
TEST_LIBS = $(shell pkg-config --libs $(TEST_PKGS))

ALL_CFLAGS = $(BASE_CFLAGS) $(WARN) $(SAN_FLAGS) $(LTO_FLAGS) \
	-I$(BUILD)/gen -Isrc $(PKG_CFLAGS) $(CFLAGS) -MMD -MP
ALL_LDFLAGS = $(SAN_FLAGS) $(LDFLAGS)

# Every folder of src/ is one layer (docs/architecture.md); the library is
# all of them but the program's entry point.
LIB_SRC := $(filter-out src/cli/main.c src/backend/%,$(wildcard src/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/unit/*.c tests/unit/*/*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_SRC := $(wildcard tests/bench/*.c)
BENCH_BIN := $(BENCH_SRC:tests/bench/%.c=$(BUILD)/bench/%)
# Small programs the validate and bench scripts call (find them through
# $LLMSIM_TOOLS).
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
# The fuzz harnesses (tests/fuzz, make fuzz below); make test replays their
# kept corpus through these.
FUZZ_TARGETS ?= config units model_json measure sweep megatron
REPLAY_BIN := $(FUZZ_TARGETS:%=$(BUILD)/fuzz-replay/replay_%)

LIB := $(BUILD)/libllmsim.a
BIN := $(BUILD)/llmsim
UNIT := $(BUILD)/unit-tests

.PHONY: all run test unit tools backends check bench validate validate-plan \
	clean fuzz fuzz-seeds fuzz-merge replay FORCE man install uninstall

all: $(BIN) backends

include src/backend/backend.mk

# The git revision goes into the version string; the header is rewritten
# only when it changes, so an unchanged tree does not rebuild.
$(BUILD)/gen/gitrev.h: FORCE
	@mkdir -p $(@D)
	@rev=$$(git rev-parse --short HEAD 2>/dev/null); \
	if [ -n "$$rev" ]; then line="#define LLMSIM_GIT_REV \"$$rev\""; \
	else line="/* not built from a git checkout */"; fi; \
	if [ ! -f $@ ] || [ "$$(cat $@)" != "$$line" ]; then echo "$$line" > $@; fi

$(BUILD)/obj/src/cli/cli_store.o: $(BUILD)/gen/gitrev.h

# The compiler and flags, rewritten only when they change: every object
# depends on them, so a build folder made with other flags (LTO=0, an
# older Makefile) is rebuilt, not linked as it was. (Expanded here, once:
# an object's own additions, sweep_mpi.o's, must not leak into it.)
FLAGS_STAMP := $(CC) $(BASE_CFLAGS) $(WARN) $(SAN_FLAGS) $(LTO_FLAGS) $(CFLAGS)
$(BUILD)/gen/cflags: FORCE
	@mkdir -p $(@D)
	@line='$(FLAGS_STAMP)'; \
	if [ ! -f $@ ] || [ "$$(cat $@)" != "$$line" ]; then echo "$$line" > $@; fi

$(BUILD)/obj/src/sweep/sweep_mpi.o: ALL_CFLAGS += $(SWEEP_MPI_CFLAGS)

$(BUILD)/obj/%.o: %.c $(BUILD)/gen/cflags
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Tests use Criterion's macros, which trip -Wconversion; keep the rest.
# They never link with LTO: no bytecode.
$(BUILD)/obj/tests/%.o: tests/%.c $(BUILD)/gen/cflags
	@mkdir -p $(@D)
	$(CC) $(filter-out $(LTO_FLAGS),$(ALL_CFLAGS)) -Wno-conversion \
		$(TEST_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/obj/src/cli/main.o $(LIB)
	$(CC) $(BASE_CFLAGS) $(LTO_FLAGS) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The backends' shared data and check code is plain C with no dependency:
# its unit tests (tests/unit/backend) link it in.
$(UNIT): $(TEST_OBJ) $(LIB) $(BK_COMMON)
	$(CC) $(ALL_LDFLAGS) -o $@ $(TEST_OBJ) $(LIB) $(BK_COMMON) $(TEST_LIBS) \
		$(PKG_LIBS)

$(BUILD)/bench/%: $(BUILD)/obj/tests/bench/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

$(BUILD)/tools/%: $(BUILD)/obj/tests/tools/%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

tools: $(TOOL_BIN)

# The bench and tool objects are intermediate files of a pattern rule: keep
# them, so make neither deletes them ("rm build/obj/tests/tools/...") nor
# rebuilds them on the next make test.
.SECONDARY: $(TOOL_BIN:$(BUILD)/tools/%=$(BUILD)/obj/tests/tools/%.o) \
	$(BENCH_BIN:$(BUILD)/bench/%=$(BUILD)/obj/tests/bench/%.o) \
	$(FUZZ_TARGETS:%=$(BUILD)/obj/tests/fuzz/fuzz_%.o) \
	$(BUILD)/obj/tests/fuzz/replay.o $(BUILD)/obj/tests/fuzz/scratch.o

run: $(BIN)
	$(BIN) run workloads/jobs/default.yaml

# Criterion runs each test in a worker process and ignores how it exits,
# so a leak LeakSanitizer reports when a worker ends would pass unnoticed:
# keep the workers' stderr and fail on any sanitizer report in it.
# Quiet on success: the log (which holds the messages of the tests that
# expect a BUG or an error) is shown only when something failed; a pass
# prints Criterion's one-line synthesis.
RUN_UNIT = $(UNIT) --jobs 2 2>$(BUILD)/unit.log; rc=$$?; \
	if grep -q 'Sanitizer\|runtime error:' $(BUILD)/unit.log; then \
		cat $(BUILD)/unit.log >&2; \
		echo "unit tests: sanitizer report above" >&2; exit 1; fi; \
	if [ $$rc -ne 0 ]; then cat $(BUILD)/unit.log >&2; \
	else grep 'Synthesis' $(BUILD)/unit.log | sed 's/^\[====\] /unit tests: /' >&2; fi; \
	exit $$rc

unit: $(UNIT)
	@$(RUN_UNIT)

# Every test: unit tests, the kept fuzz corpus, then the tests that
# drive the real binary. Quiet on success: a failing script's output is
# shown, a passing one's only where it says it SKIPPED something. The
# benchmarks are built, not run (make bench runs them): an API change
# that breaks one fails here, not in the next bench run.
test: $(BIN) $(UNIT) $(TOOL_BIN) $(BENCH_BIN) backends $(REPLAY_BIN)
	@$(RUN_UNIT)
	@$(REPLAY)
	@n=0; for t in tests/*.sh; do \
		[ -x "$$t" ] || continue; \
		if ! LLMSIM=$(BIN) LLMSIM_TOOLS=$(BUILD)/tools "$$t" \
			>$(BUILD)/test.log 2>&1; then \
			cat $(BUILD)/test.log; echo "FAILED: $$t"; exit 1; \
		fi; \
		grep 'SKIPPED' $(BUILD)/test.log || true; n=$$((n + 1)); \
	done; echo "all tests passed ($$n test scripts)"

check:
	$(MAKE) BUILD=build/asan SAN=1 test

# Every benchmark runs even when an earlier one misses its target; the
# misses are listed at the end and make bench exits 1.
bench: $(BIN) $(BENCH_BIN) $(TOOL_BIN)
	@failed=""; \
	for b in $(BENCH_BIN); do echo "== $$b"; $$b || failed="$$failed $$b"; done; \
	for s in scripts/bench-*.sh; do \
		[ -x "$$s" ] || continue; echo "== $$s"; \
		LLMSIM=$(BIN) LLMSIM_TOOLS=$(BUILD)/tools "$$s" || failed="$$failed $$s"; \
	done; \
	if [ -n "$$failed" ]; then echo "bench: missed or failed:$$failed"; exit 1; fi

validate: $(BIN)
	$(BIN) validate --no-store

# The planner's checks (issue 12): the analytical tier's ranking against
# the full simulation, the practitioners' layouts in the plan (slow).
validate-plan: $(BIN) $(TOOL_BIN)
	LLMSIM=$(BIN) LLMSIM_TOOLS=$(BUILD)/tools scripts/validate-plan.sh

# The man page and completion are generated by the binary from its
# command registry and config schemas (src/cli/cli_doc.c).
MAN := $(BUILD)/man/llmsim.1
COMPLETION := $(BUILD)/man/llmsim.bash

$(MAN): $(BIN)
	@mkdir -p $(@D)
	$(BIN) help --man > $@.tmp && mv $@.tmp $@

$(COMPLETION): $(BIN)
	@mkdir -p $(@D)
	$(BIN) help --bash-completion > $@.tmp && mv $@.tmp $@

man: $(MAN) $(COMPLETION)

# An installed llmsim finds its presets in PREFIX/share/llmsim (from its
# own location: no rebuild for another PREFIX) and keeps results in
# ./results/llmsim.db of the directory it runs in.
PREFIX ?= /usr/local
DATADIR = $(DESTDIR)$(PREFIX)/share/llmsim
DOCS := docs/cli-output.md docs/sweeps.md docs/results-store.md \
	docs/report.md docs/megatron.md docs/architecture.md docs/plan.md

install: $(BIN) $(MAN) $(COMPLETION)
	install -d $(DESTDIR)$(PREFIX)/bin $(DATADIR) \
		$(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/doc/llmsim
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/llmsim
	rm -rf $(DATADIR)/configs $(DATADIR)/workloads
	cp -R configs workloads $(DATADIR)/
	install -m 644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man1/llmsim.1
	install -m 644 $(COMPLETION) \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/llmsim
	install -m 644 $(DOCS) $(DESTDIR)$(PREFIX)/share/doc/llmsim/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/llmsim \
		$(DESTDIR)$(PREFIX)/share/man/man1/llmsim.1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/llmsim
	rm -rf $(DATADIR) $(DESTDIR)$(PREFIX)/share/doc/llmsim

clean:
	rm -rf $(BUILD) build

FORCE:

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/obj/src/cli/main.d \
	$(BENCH_SRC:%.c=$(BUILD)/obj/%.d) $(TOOL_SRC:%.c=$(BUILD)/obj/%.d) \
	$(wildcard $(BUILD)/obj/tests/fuzz/*.d)

# libFuzzer harnesses (clang): make fuzz [FUZZ_SECONDS=N] [FUZZ_TARGETS=...]
#   config      the config loader: jobs, models, GPUs, --set lines (the first
#               byte picks the form); whatever loads must show and reload
#   units       the unit parser and formatter: parse -> format -> parse
#               identity, for text and for raw doubles
#   model_json  Hugging Face config.json models: YAML and JSON round trips
#   measure     measure --import's readers: the backends' JSON lines and
#               nccl-tests text; every point kept is one the store takes
#   sweep       sweep files: load, every point's axis values, overrides and
#               job (loaded from the base with them), for up to 16 points
#   megatron    config import-megatron: a Megatron-LM command line (one
#               string or NUL-separated words); a job it prints loads
# Each runs FUZZ_SECONDS in turn, one at a time, over build/fuzz/corpus-NAME,
# seeded from tests/fuzz/corpus/NAME (kept in git) and, for config, the
# bad-input corpus and the fixture presets. Every sanitizer report is
# fatal (-fno-sanitize-recover=all), so UBSan findings stop the run.
# make fuzz-merge adds what the runs grew that covers something new to
# tests/fuzz/corpus/, which make test (and make check, under GCC's
# sanitizers: clang does not check nonnull on builtin memcpy) replays.
FUZZ_SECONDS ?= 120
FUZZ_CC ?= clang
FUZZ_SRC := $(wildcard src/config/*.c src/base/*.c)
# what a harness reads beyond the config loader (the measure readers call
# store_meas_from_v1; a sweep file names the planner's objectives)
FUZZ_SRC_measure := src/cli/measure_proto.c src/cli/measure_nccl.c \
	src/cli/measure_print.c $(wildcard src/store/*.c)
FUZZ_SRC_sweep := src/sweep/sweep_file.c src/sweep/sweep_point.c \
	src/plan/plan_layout.c src/gpu/gpu.c
FUZZ_SRC_megatron := $(wildcard src/cli/cli_megatron*.c) src/cli/cli_opt.c
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L \
	-D_DEFAULT_SOURCE -Isrc
FUZZ_BIN := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)

.SECONDEXPANSION:
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/scratch.c $(FUZZ_SRC) \
		$$(FUZZ_SRC_$$*)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(PKG_CFLAGS) $< tests/fuzz/scratch.c \
		$(FUZZ_SRC) $(FUZZ_SRC_$*) -o $@ $(PKG_LIBS)

# Seeds of the config harness beyond its kept corpus: the first byte says
# what the rest is (tests/fuzz/fuzz_config.c). The shipped GPU presets
# seed it too, their comments cut to fit -max_len: they hold every GPU
# key (the fixtures only the older ones).
fuzz-seeds:
	@mkdir -p $(FUZZ_TARGETS:%=$(BUILD)/fuzz/corpus-%)
	@for t in $(FUZZ_TARGETS); do \
		cp tests/fuzz/corpus/$$t/* $(BUILD)/fuzz/corpus-$$t/; done
	@c=$(BUILD)/fuzz/corpus-config; [ -d $$c ] || exit 0; \
	for f in tests/bad/*.yaml tests/data/workloads/jobs/*.yaml; do \
		{ printf '\000'; cat "$$f"; } > $$c/j-$${f##*/}; done; \
	for f in tests/bad/*.json tests/data/workloads/models/*/*.json; do \
		{ printf '\001'; cat "$$f"; } > $$c/m-$${f##*/}; done; \
	for f in tests/data/configs/gpus/*.yaml; do \
		{ printf '\002'; cat "$$f"; } > $$c/g-$${f##*/}; done; \
	for f in configs/gpus/*.yaml; do \
		{ printf '\002'; sed -e '/^ *#/d' -e 's/  *#.*//' "$$f"; } \
			> $$c/gp-$${f##*/}; done; \
	printf '\003system.nodes=4\nparallelism={tp: 4, pp: 2}\n' > $$c/s-sets
	@c=$(BUILD)/fuzz/corpus-measure; [ -d $$c ] || exit 0; \
	for f in tests/measure/*.jsonl; do \
		{ printf '\000'; head -c 4000 "$$f"; } > $$c/j-$${f##*/}; done; \
	for f in tests/measure/*.txt; do \
		{ printf '\001'; head -c 4000 "$$f"; } > $$c/t-$${f##*/}; \
		{ printf '\003'; head -c 4000 "$$f"; } > $$c/o-$${f##*/}; done
	@c=$(BUILD)/fuzz/corpus-sweep; [ -d $$c ] || exit 0; \
	for f in tests/sweeps/*.yaml workloads/sweeps/*.yaml; do \
		[ -f "$$f" ] && sed -e '/^ *#/d' -e 's/  *#.*//' "$$f" \
			> $$c/s-$${f##*/}; done; true

fuzz: $(FUZZ_BIN) fuzz-seeds
	@for t in $(FUZZ_TARGETS); do \
		echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
		LLMSIM_DATA=tests/data $(BUILD)/fuzz/fuzz_$$t -max_len=4096 \
			-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/$$t- \
			$(BUILD)/fuzz/corpus-$$t || exit 1; \
	done

fuzz-merge: $(FUZZ_BIN)
	@for t in $(FUZZ_TARGETS); do \
		LLMSIM_DATA=tests/data $(BUILD)/fuzz/fuzz_$$t -merge=1 \
			tests/fuzz/corpus/$$t $(BUILD)/fuzz/corpus-$$t || exit 1; \
	done

# The kept corpus, replayed without libFuzzer by every make test (with
# this build's flags: GCC's ASan and UBSan under make check).
REPLAY = n=0; for t in $(FUZZ_TARGETS); do \
		if ! LLMSIM_DATA=tests/data $(BUILD)/fuzz-replay/replay_$$t \
			tests/fuzz/corpus/$$t >$(BUILD)/replay.log 2>&1; then \
			cat $(BUILD)/replay.log; echo "FAILED: replay_$$t"; \
			exit 1; fi; \
		n=$$((n + $$(sed -n 's/.*: \([0-9]*\) inputs replayed$$/\1/p' \
			$(BUILD)/replay.log))); \
	done; echo "fuzz corpus: $$n inputs replayed"

$(BUILD)/fuzz-replay/replay_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o \
		$(BUILD)/obj/tests/fuzz/replay.o \
		$(BUILD)/obj/tests/fuzz/scratch.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

replay: $(REPLAY_BIN)
	@$(REPLAY)
