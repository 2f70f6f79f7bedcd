# thermap — plain Makefile. `make` builds libthermap.a and thermap;
# `make check` runs every test, then again under ASan/UBSan;
# `make demo` installs what is missing (as root), builds and plans the
# bundled real 4xH200 example; `make bench` reports speed figures.

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN     = -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow \
           -Wstrict-prototypes -Wno-error=format-truncation
CPPFLAGS = -D_POSIX_C_SOURCE=200809L -Iinclude -Isrc -MMD -MP
LDLIBS   = -lglpk -ljansson -lhwloc -lcurl -lm -pthread
SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all \
           -fno-omit-frame-pointer

B       ?= build
# the library: every source file below src/ but the command line's
LIB_SRC  = $(sort $(wildcard src/base/*.c src/format/*.c src/telemetry/*.c \
                  src/topo/*.c src/model/*.c src/solve/*.c src/ops/*.c))
LIB_OBJ  = $(LIB_SRC:src/%.c=$(B)/%.o)
# the program: every source file of src/cli/ (main.c, the option parser,
# one file per command), linked against the library
CLI_SRC  = $(sort $(wildcard src/cli/*.c))
CLI_OBJ  = $(CLI_SRC:src/%.c=$(B)/%.o)
TESTS    = test_base test_sha256 test_layout test_rebalance test_inputs test_model test_decide test_sim test_oracle test_profile \
           test_coupling \
           test_tele_prom test_topo_smi test_topo_xml test_svg test_diff test_replan \
           test_calibrate test_output
TEST_BIN = $(TESTS:%=$(B)/%)

# fuzzing (docs/fuzzing.md): one harness per parser entry point in
# tests/fuzz/. `make fuzz` runs each under libFuzzer (clang) for
# FUZZ_SECONDS; `make fuzz-replay` replays their regression inputs and
# seed corpora with a plain driver (any compiler; `make check` runs it
# under the sanitizers)
FUZZ     = cluster profile job policy plan layout tele_csv tele_dmon \
           tele_capture tele_prom tele_qrange tele_labels tele_phases topo_smi topo_gpus \
           topo_hwloc topo_nccl procs
FUZZ_SECONDS ?= 10
FUZZ_CC  ?= clang
FUZZ_WARN = $(WARN) -Wno-unknown-warning-option

DEPS_DEB = build-essential libglpk-dev libjansson-dev libhwloc-dev \
           libcurl4-openssl-dev libcmocka-dev
# what the tests need beyond the build: two independent solvers that
# re-solve the --write-lp files (tests/lp/run.sh), jq and xmllint,
# outside readers of check's JSON and compare's SVG, and the launchers the
# plan's launcher files are tested with (tests/launch/run.sh): Open MPI,
# and Slurm with munge, which the test starts on this host by itself, and
# numactl, with which the entry point binds ranks; and Prometheus
# (with promtool), the real server profile --prometheus is tested against
# (tests/profile/prometheus.sh)
TEST_DEB = coinor-cbc glpk-utils jq libxml2-utils openmpi-bin \
           slurmctld slurmd slurm-client munge numactl prometheus

all: $(B)/thermap

$(B)/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) -c $< -o $@

$(B)/libthermap.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/thermap: $(CLI_OBJ) $(B)/libthermap.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(LDEXTRA)

$(B)/bench: $(B)/bench.o $(B)/libthermap.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# bench helpers: a replay generator, a synthetic cluster generator and a
# wall-time/peak-RSS wrapper
$(B)/gen_telemetry: tests/gen_telemetry.c | $(B)
	$(CC) -std=c11 -Wall -Wextra -Werror $(CFLAGS) -o $@ $<

$(B)/gen_cluster: tests/gen_cluster.c | $(B)
	$(CC) -std=c11 -Wall -Wextra -Werror $(CFLAGS) -o $@ $< -lm

# a stand-in NVML for the tests of profile --live and topo --local
# (tests/profile/live.sh, tests/topo/local.sh)
$(B)/fakenvml/libnvidia-ml.so.1: tests/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -Werror -fPIC -shared -O1 -o $@ $<

# a scripted HTTP server for profile --prometheus's failures that a real
# Prometheus does not give on demand (tests/profile/prometheus.sh)
$(B)/fakeprom: tests/fake_prom.c | $(B)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -O1 -o $@ $<

$(B)/runstat: tests/runstat.c | $(B)
	$(CC) -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror $(CFLAGS) -o $@ $<

$(B)/bench.o: tests/bench.c | $(B)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) -c $< -o $@

$(B)/test_%.o: tests/test_%.c | $(B)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) -c $< -o $@

$(B)/test_%: $(B)/test_%.o $(B)/libthermap.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) -lcmocka $(LDEXTRA)

$(B):
	mkdir -p $(B)

$(B)/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(B)/fuzz
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) -c $< -o $@

# the plain driver: files through one harness, without libFuzzer
$(B)/replay-%: $(B)/fuzz/%.o $(B)/fuzz/fuzz.o $(B)/fuzz/replay.o \
               $(B)/libthermap.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(LDEXTRA)

# libFuzzer's driver
$(B)/fuzz-%: $(B)/fuzz/%.o $(B)/fuzz/fuzz.o $(B)/libthermap.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS) $(LDEXTRA)

fuzz-replay: $(FUZZ:%=$(B)/replay-%)
	@sh tests/fuzz/replay.sh $(B) $(FUZZ)

# FUZZ_SECONDS per harness; FUZZ=... runs some of them
# clang and libFuzzer's runtime for that clang version, installed (as
# root) or named, as check-deps does for the build
fuzz-deps: check-deps
	@sh scripts/ensure-deps.sh clang
	@sh scripts/ensure-deps.sh \
	    "libclang-rt-$$($(FUZZ_CC) -dumpversion | cut -d. -f1)-dev"

fuzz: fuzz-deps
	$(MAKE) --no-print-directory B=build-fuzz CC=$(FUZZ_CC) \
	        WARN="$(FUZZ_WARN)" \
	        CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $(SAN)" \
	        LDEXTRA="$(SAN)" $(FUZZ:%=build-fuzz/fuzz-%)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh build-fuzz $(FUZZ)

libthermap.a: $(B)/libthermap.a
	cp $< $@

# The shell harnesses (each sources tests/lib.sh), listed once: check runs
# them against $(B)/thermap, check-san against the sanitizer build.
HARNESSES = tests/cli/run.sh tests/cli/options.sh tests/cli/inert.sh \
            tests/cli/writes.sh tests/profile/fixtures.sh \
            tests/topo/fixtures.sh tests/real/replay.sh tests/real/duty.sh \
            tests/real/loop.sh \
            tests/lp/run.sh tests/compare/run.sh tests/replan/run.sh \
            tests/calibrate/run.sh tests/scale/run.sh tests/fuzz/cli.sh \
            tests/launch/run.sh tests/profile/live.sh tests/topo/local.sh \
            tests/profile/prometheus.sh

# $(call harnesses,BIN): every harness against BIN, stopping at the first
# that fails; a check skipped by THERMAP_SKIP is logged for check's count
harnesses = @set -e; for h in $(HARNESSES); do \
	THERMAP=$(1) GEN=$(B)/gen_cluster FAKENVML=$(CURDIR)/build/fakenvml \
	FAKEPROM=$(CURDIR)/build/fakeprom \
	THERMAP_SKIPLOG=$(CURDIR)/$(B)/skipped.log sh $$h; done

# every test: the layer rule of src/, the unit tests, the harnesses; then
# the same under the sanitizers in a separate build directory. Every test
# runs: missing packages are installed (as root) or named, and a check
# that cannot run fails unless THERMAP_SKIP names it; the last line
# counts what was skipped that way
check: check-deps all $(TEST_BIN) $(B)/gen_cluster $(B)/fakenvml/libnvidia-ml.so.1 \
       $(B)/fakeprom
	@: >$(B)/skipped.log
	@sh tests/layers.sh
	@set -e; for t in $(TEST_BIN); do echo "== $$t"; ./$$t; done
	$(call harnesses,$(B)/thermap)
	$(MAKE) --no-print-directory check-san
	@n=$$(sort -u $(B)/skipped.log | wc -l); \
	if [ "$$n" = 0 ]; then echo "make check: every test ran, none skipped"; \
	else echo "make check: $$n check(s) skipped by THERMAP_SKIP:"; sort -u $(B)/skipped.log; fi

check-deps:
	@sh scripts/ensure-deps.sh $(DEPS_DEB) $(TEST_DEB)

check-san: $(B)/gen_cluster $(B)/fakenvml/libnvidia-ml.so.1 $(B)/fakeprom
	$(MAKE) --no-print-directory B=build-san CFLAGS="-O1 -g $(SAN)" \
	        LDEXTRA="$(SAN)" build-san/thermap \
	        $(TESTS:%=build-san/%)
	@set -e; for t in $(TESTS); do echo "== build-san/$$t"; \
	    ASAN_OPTIONS=detect_leaks=1 ./build-san/$$t; done
	$(call harnesses,build-san/thermap)
	$(MAKE) --no-print-directory B=build-san CFLAGS="-O1 -g $(SAN)" \
	        LDEXTRA="$(SAN)" fuzz-replay
	$(MAKE) --no-print-directory check-tsan

# the threaded CSV reader under ThreadSanitizer: workers and the thread
# that pushes rows must share nothing unguarded
check-tsan:
	$(MAKE) --no-print-directory B=build-tsan \
	        CFLAGS="-O1 -g -fsanitize=thread" LDEXTRA="-fsanitize=thread" \
	        build-tsan/test_profile
	TSAN_OPTIONS=halt_on_error=1 ./build-tsan/test_profile

# the launcher files against the real launchers alone (make check runs
# the same harness): Open MPI, and Slurm started privately on this host
check-launchers: check-deps all
	THERMAP=$(B)/thermap sh tests/launch/run.sh

# Installs missing Debian packages when run as root, then plans the real
# 4xH200 recording bundled in fixtures/h200x4-a.
demo:
	@sh scripts/ensure-deps.sh $(DEPS_DEB)
	@$(MAKE) --no-print-directory all
	@sh scripts/demo.sh $(B)/thermap

bench: all
	@sh scripts/bench.sh $(B)/thermap
	@echo
	@echo "== thermap plan at scale (docs/bench.md)"
	@sh scripts/bench-scale.sh $(B)/thermap
	@echo
	@echo "== the whole loop at 8,192 to 131,072 GPUs (docs/bench.md)"
	@sh scripts/bench-large.sh $(B)/thermap

# profile --prometheus against a real Prometheus on a synthetic fleet of
# up to 16,384 hosts (docs/bench.md, "Profiles from Prometheus"): about
# twenty minutes on 2 cores, most of it backfilling, so not part of bench
bench-prom: all
	@sh scripts/bench-prom.sh $(B)/thermap

clean:
	rm -rf build build-san build-tsan build-fuzz libthermap.a demo-plan

.PHONY: all check check-deps check-san check-tsan check-launchers demo bench \
        bench-prom \
        clean libthermap.a \
        fuzz fuzz-deps fuzz-replay
.SECONDARY:

-include $(wildcard $(B)/*.d $(B)/*/*.d)
