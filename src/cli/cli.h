/*
 * cli.h — the command line's one header. A command is one entry of the
 * table in main.c (a cli_cmd, exported by its cmd_<name>.c); an option is
 * one row of its entry (a cli_opt). opt.c reads every command line by the
 * rows, writes every `thermap CMD --help` from the entry and its rows,
 * prints the program's messages and loads the inputs several commands
 * read.
 *
 * Adding an option to a command: a row in its cmd_<name>.c, a field of its
 * args struct, the code that uses it, and its entry in docs/thermap.1
 * (OPTIONS, in the rows' order: tests/cli/options.sh compares them row by
 * row). Adding a command: a cmd_<name>.c exporting its cli_cmd, and one
 * line in main.c's table (and its section of the man page).
 *
 * Nothing here decides a placement; the library does.
 * Layer: the top; above ops and everything below it.
 */
#ifndef THERMAP_CLI_H
#define THERMAP_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "ops/ops.h"

/* ---- the tables ------------------------------------------------------- */

/* What a row asks of the parser (cli_opt.flags). */
enum {
	CLI_REQUIRED = 1 << 0,  /* missing: "thermap: CMD needs NAME", exit 2
	                         * (a row of one value, or the operands') */
	CLI_EACH = 1 << 1,      /* repeatable: each one handed to the command's
	                         * cli_each in order, among the operands */
};

/* One option of a command, or its operands (name NULL): a line of its
 * --help and an entry of the man page's OPTIONS, in the same order. */
typedef struct cli_opt {
	const char *name;   /* "--cluster"; NULL: the operands' row */
	const char *alias;  /* "-o", or NULL */
	const char *arg;    /* the value's name ("FILE", "DIR"), or the
	                     * operands' ("FILE..."); NULL: a flag */
	int flags;          /* CLI_REQUIRED, CLI_EACH */
	size_t at;          /* offsetof its target in the command's args
	                     * struct: a const char * (a value) or a bool (a
	                     * flag); unused by CLI_EACH rows and operands */
	const char *help;   /* its --help text, lines apart by \n; NULL: it
	                     * shares the line of the row above */
	const char *need;   /* how "needs" names it when required and missing
	                     * ("-o DIR"); NULL: by its name */
} cli_opt;

#define CLI_END { NULL, NULL, NULL, 0, 0, NULL, NULL }

/* One command: its line in `thermap --help`, its own --help, its code. */
typedef struct cli_cmd {
	const char *name;      /* "plan" */
	const char *summary;   /* its line in `thermap --help` */
	const char *synopsis;  /* usage: a line per form ("thermap plan ..."),
	                        * each continued on lines that --help indents */
	const char *about;     /* the paragraph after the usage, or NULL */
	const cli_opt *opts;   /* its rows, ended by CLI_END */
	const char *after;     /* lines after the options (exit codes), or
	                        * NULL */
	int (*run)(int argc, char **argv);  /* argv[1] is name */
} cli_cmd;

/* ---- reading a command line (opt.c) ----------------------------------- */

/* Handed each CLI_EACH option (v NULL for a flag) and each operand (o
 * NULL), in command-line order: 0, or an exit code once it has printed
 * why. */
typedef int (*cli_each)(void *args, const cli_opt *o, const char *v);

/* Reads argv[2..] by c's rows into args (zeroed by the caller: an option
 * of one value whose target is set was given before). One grammar for
 * every command (docs/thermap.1, OPTIONS): --name VALUE and --name=VALUE
 * alike, -o VALUE; a flag takes no value; an option of one value given
 * twice is a usage error; --help, -h and --version are never a value;
 * '--' ends the options, and every argument after it is an operand even if
 * it starts with '-'; '-' alone is an operand. each: NULL when the
 * command takes no operands and no CLI_EACH rows.
 * true: go on. false: return *rc, 0 once --help is printed, else the exit
 * code of the usage error printed. */
bool cli_parse(const cli_cmd *c, int argc, char **argv, void *args,
               cli_each each, int *rc);
/* Whether argv asks for the version: --version as an option anywhere
 * after the command, before a '--', and not where an option of c expects
 * its value (c NULL: an unknown command, every --version counts). */
bool cli_version_asked(const cli_cmd *c, int argc, char **argv);
/* `thermap CMD --help`, from the entry and its rows. */
void cli_help(const cli_cmd *c, FILE *f);

/* ---- messages (opt.c) -------------------------------------------------- */

/* Every line below goes to people: what it quotes from the command line
 * or from an input is shown as tm_text shows it (one line, no control
 * characters, valid UTF-8). */
void cli_say(FILE *f, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Text of several lines from the library (summaries, tables). */
void cli_put_lines(FILE *f, const char *text);
/* The library's warnings, each printed once. */
void cli_on_warn(void *ud, const char *msg);
/* "thermap: MESSAGE" and the hint to run c's --help (c NULL: the
 * program's); returns TM_EUSAGE. */
int cli_usage(const cli_cmd *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "thermap: error: MESSAGE"; returns the error's exit code. */
int cli_report(const tm_error *err);

/* ---- values and inputs several commands share (opt.c) ----------------- */

/* --from and --to of profile and calibrate into w (NULL: not given): each
 * a time as in the logs or +SECONDS after each file's first sample; 0, or
 * TM_EUSAGE once printed, also for a --to before --from. */
int cli_window(const cli_cmd *c, const char *from, const char *to,
               tm_tele_opts *w);

/* The telemetry files of profile and calibrate, each with the --host and
 * --fields given before it. in: room for argc files (caller's). */
typedef struct cli_tele {
	tm_tele_input *in;
	int n;
	const char *host, *fields;  /* in force for the next file */
} cli_tele;
/* A cli_each for them: --host, --fields and the files in order. */
int cli_tele_add(const cli_cmd *c, cli_tele *t, const cli_opt *o,
                 const char *v);

/* The inputs of plan, replan, compare and check. */
typedef struct cli_inputs {
	tm_cluster *c;
	tm_profile *p;
	tm_job *j;
	tm_policy *pol;
} cli_inputs;
/* Loads each file that is named (NULL: left out), in this order; err names
 * the first that fails. */
int cli_inputs_load(cli_inputs *in, const char *cluster, const char *profile,
                    const char *job, tm_error *err);
/* The policy of file, or the built-in thermal one when file is NULL. */
int cli_policy_load(cli_inputs *in, const char *file, tm_error *err);
/* Frees what in holds; in itself is the caller's. */
void cli_inputs_clear(cli_inputs *in);

/* ---- output formats ----------------------------------------------------- */

/* compare's formats as tm_compare_format numbers them (the library's enum
 * is private to ops/compare.c) */
enum cli_compare_format {
	CLI_COMPARE_TEXT,
	CLI_COMPARE_MARKDOWN,
	CLI_COMPARE_CSV,
	CLI_COMPARE_JSON,
};

/* diff's, as tm_plan_diff takes them */
enum cli_diff_format {
	CLI_DIFF_TEXT,
	CLI_DIFF_JSON,
};

#endif
