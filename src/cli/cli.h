/*
 * cli.h — the command line's one header: what opt.c shares with the
 * commands (cmd_<name>.c) and main.c.
 *
 * Layer: the top; above ops and everything below it.
 */
#ifndef THERMAP_CLI_H
#define THERMAP_CLI_H

#include <stdio.h>

#include "ops/ops.h"
#include "topo/topo.h"

/* Every line below goes to people: what it quotes from the command line
 * or from an input is shown as tm_text shows it (one line, no control
 * characters, valid UTF-8). */
void say(FILE *f, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void put_lines(FILE *f, const char *text);
void on_warn(void *ud, const char *msg);
int usage_error(const char *cmd, const char *fmt, const char *arg);
int report(const tm_error *err);

/* One grammar for every command (docs/thermap.1, "Options"): --name VALUE
 * and --name=VALUE alike, -o VALUE; an option of one value given twice is
 * a usage error; flags take no value; '--' ends the options, and every
 * argument after it is an operand even if it starts with '-'; '-' alone is
 * an operand (standard input where a command reads files). */
enum opt_kind {
	OPT_FLAG,       /* no value; *set becomes true */
	OPT_ONE,        /* one value, at most once, into *value */
	OPT_EACH,       /* a value each time, handed to the command in order */
	OPT_EACH_FLAG,  /* no value, handed to the command each time */
};

typedef struct opt {
	const char *name;   /* "--cluster" */
	const char *alias;  /* "-o" or NULL */
	int kind;           /* enum opt_kind */
	const char **value; /* OPT_ONE: where the value goes */
	bool *set;          /* OPT_FLAG: where the flag goes */
	int given;          /* times given, counted by parse */
} opt;

/* Handed each OPT_EACH and OPT_EACH_FLAG option (v NULL for a flag) and
 * each operand (o NULL) in command-line order; 0 or an exit code, the
 * message printed. NULL: the command takes no operands. */
typedef int (*opt_each)(void *ud, const opt *o, const char *v);


int parse(int argc, char **argv, opt *opts, const char *cmd,
          opt_each each, void *ud, bool *help);

#define OPT_END { NULL, NULL, OPT_FLAG, NULL, NULL, 0 }


/* The four inputs of plan and replan; the policy defaults to the built-in
 * thermal one. */
typedef struct inputs {
	tm_cluster *c;
	tm_profile *p;
	tm_job *j;
	tm_policy *pol;
} inputs;

int load_inputs(const char *cf, const char *pf, const char *jf,
                const char *polf, inputs *in, tm_error *err);
void free_inputs(inputs *in);

int parse_when(const char *cmd, const char *name, const char *v,
               double *t, bool *rel);

/* The telemetry files of profile and calibrate, each with the --host and
 * --fields given before it. */
typedef struct tele_args {
	const char *cmd;     /* "profile " */
	tm_tele_input *in;
	int n;
	const char *host, *fields;
} tele_args;

int tele_arg(void *ud, const opt *o, const char *v);

/* the commands, one file each */
int cmd_topo(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_replan(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

#endif
