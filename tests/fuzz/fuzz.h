/*
 * fuzz.h — what every fuzz harness of tests/fuzz/ shares. Each harness is
 * one small file defining LLVMFuzzerTestOneInput over one parser entry
 * point; linked with libFuzzer it fuzzes (`make fuzz`), linked with
 * replay.c it replays files through the same entry point without libFuzzer
 * (`make fuzz-replay`, part of `make check`).
 *
 * Beyond what the sanitizers see, the harnesses hold the parsers to the
 * rules every input is under (docs/fuzzing.md): a rejection is one
 * non-empty line with a documented exit code, and what a reader writes
 * is a document the loaders accept. A broken rule aborts, so libFuzzer
 * keeps the input as a crash.
 */
#ifndef THERMAP_FUZZ_H
#define THERMAP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Called first in every run: warnings are dropped (they go to stderr,
 * which would slow fuzzing down and say nothing the harness checks). */
void fuzz_init(void);

/* A NUL-terminated copy of the input, to be freed. */
char *fuzz_text(const uint8_t *data, size_t size);

/* Aborts with "fuzz: what" on stderr: an input broke a rule. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                    noreturn));

/* A rejection by a reader: rc must be TM_EINPUT, and err must hold it as
 * one non-empty line. */
void fuzz_rejected(const char *who, int rc, const tm_error *err);

/* What a reader wrote must load: a cluster or a profile document. */
void fuzz_cluster_loads(const char *who, const char *text);
void fuzz_profile_loads(const char *who, const char *text);

/* Telemetry: reads the input as one file of the given kind ("csv",
 * "dmon", "capture", "prom", "qrange") with that reader, as `thermap
 * profile` would, and holds the profile it writes to the loader. */
void fuzz_telemetry(const char *kind, const uint8_t *data, size_t size);

/* Topology: reads the input as one source of the given kind ("smi-topo",
 * "gpus", "hwloc", "nccl") and joins it into a cluster, which must load.
 * A GPU list, which has no links, is joined with every pair SYS. */
void fuzz_topology(const char *kind, const uint8_t *data, size_t size);

#endif
