/*
 * opt.c — what every command of the program shares: the option parser
 * (one grammar, read from each command's rows), `thermap CMD --help`
 * written from the same rows, the messages and exit codes of the command
 * line, and the values and inputs that several commands read.
 *
 * It knows no command: each cmd_<name>.c holds its rows and its code, and
 * main.c the table of commands. Nothing here decides a placement.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* ---- messages ------------------------------------------------------------ */

static void vsay(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	va_list aq;
	strbuf b;
	char *raw;
	int n;
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	raw = xmalloc(n > 0 ? (size_t)n + 1 : 1);
	raw[0] = '\0';
	if (n > 0)
		vsnprintf(raw, (size_t)n + 1, fmt, ap);
	sb_init(&b);
	sb_add_text(&b, raw);
	fprintf(f, "%s%s\n", prefix, b.s);
	sb_free(&b);
	free(raw);
}

void cli_say(FILE *f, const char *prefix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(f, prefix, fmt, ap);
	va_end(ap);
}

/* Each line shown as tm_text shows it. The library shows what it quotes,
 * so this changes nothing unless something was missed there. */
void cli_put_lines(FILE *f, const char *text)
{
	char *t = xstrdup(text), *line = t, *nl;
	strbuf b;
	sb_init(&b);
	for (; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		sb_add_text(&b, line);
		if (!nl)
			break;
		sb_add(&b, "\n");
	}
	fputs(b.s, f);
	sb_free(&b);
	free(t);
}

/* Once each: commands that build many problems from one input (compare,
 * replan) would repeat the same line. */
void cli_on_warn(void *ud, const char *msg)
{
	static uint64_t seen[256];
	static int nseen;
	uint64_t h = 1469598103934665603ull;
	(void)ud;
	for (const char *c = msg; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	for (int i = 0; i < nseen; i++)
		if (seen[i] == h)
			return;
	if (nseen < 256)
		seen[nseen++] = h;
	cli_say(stderr, "thermap: warning: ", "%s", msg);
}

/* fmt is the program's; its arguments are often the user's (an option, a
 * value) */
int cli_usage(const cli_cmd *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(stderr, "thermap: ", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'thermap %s%s--help'.\n", c ? c->name : "",
	        c ? " " : "");
	return TM_EUSAGE;
}

int cli_report(const tm_error *err)
{
	cli_say(stderr, "thermap: error: ", "%s", err->msg);
	return err->code ? err->code : TM_EINTERNAL;
}

/* ---- the rows ------------------------------------------------------------- */

static bool row_end(const cli_opt *o)
{
	return !o->name && !o->arg;
}

/* The option named by a (its first n bytes: before '='), or NULL. The
 * short alias is matched whole, never with '='. */
static const cli_opt *row_find(const cli_cmd *c, const char *a, size_t n,
                               bool eq)
{
	for (const cli_opt *o = c->opts; !row_end(o); o++)
		if (o->name && ((strlen(o->name) == n && !strncmp(o->name, a, n)) ||
		                (o->alias && !eq && !strcmp(o->alias, a))))
			return o;
	return NULL;
}

static void *row_target(const cli_opt *o, void *args)
{
	return (char *)args + o->at;
}

/* As --help names a row: "-o, --out DIR", "--quiet", "FILE..." */
static void row_left(strbuf *b, const cli_opt *o)
{
	if (!o->name) {
		sb_add(b, o->arg);
		return;
	}
	if (o->alias)
		sb_addf(b, "%s, ", o->alias);
	sb_add(b, o->name);
	if (o->arg)
		sb_addf(b, " %s", o->arg);
}

/* ---- --help --------------------------------------------------------------- */

/* Options and their help in two columns: the names in 21 columns after two
 * spaces, the help's lines from column 24. */
#define HELP_NAMES 19

void cli_help(const cli_cmd *c, FILE *f)
{
	const char *s = c->synopsis;
	int cont = (int)(strlen("usage: thermap ") + strlen(c->name) + 1);
	bool first = true;

	/* each form of the usage starts "thermap "; lines that continue one
	 * are indented to its first argument */
	while (*s) {
		size_t n = strcspn(s, "\n");
		if (!strncmp(s, "thermap ", 8))
			fputs(first ? "usage: " : "       ", f);
		else
			fprintf(f, "%*s", cont, "");
		fprintf(f, "%.*s\n", (int)n, s);
		first = false;
		s += n + (s[n] == '\n');
	}
	fputs("\n", f);
	if (c->about)
		fprintf(f, "%s\n", c->about);
	for (const cli_opt *o = c->opts; !row_end(o); o++) {
		strbuf b;
		const char *h = o->help;
		if (!h)
			continue;   /* printed with the row above */
		sb_init(&b);
		row_left(&b, o);
		for (const cli_opt *p = o + 1; !row_end(p) && !p->help; p++) {
			sb_add(&b, ", ");
			row_left(&b, p);
		}
		fprintf(f, "  %-*s  ", HELP_NAMES, b.s);
		sb_free(&b);
		for (;;) {
			size_t n = strcspn(h, "\n");
			fprintf(f, "%.*s\n", (int)n, h);
			if (!h[n])
				break;
			h += n + 1;
			fprintf(f, "%*s", HELP_NAMES + 4, "");
		}
	}
	fprintf(f, "  %-*s  this text\n", HELP_NAMES, "--help");
	if (c->after)
		fputs(c->after, f);
}

/* ---- the parser ----------------------------------------------------------- */

/* What asks the program something is never an option's value: given where
 * a value is due, the value is missing. */
static bool never_value(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h") ||
	       !strcmp(a, "--version");
}

bool cli_parse(const cli_cmd *c, int argc, char **argv, void *args,
               cli_each each, int *rc)
{
	bool operands = false;
	int nopnd = 0;

	*rc = 0;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *eq = NULL, *v = NULL;
		const cli_opt *o;
		size_t n;
		if (operands || a[0] != '-' || a[1] == '\0') {
			if (!each) {
				*rc = cli_usage(c, "unexpected argument '%s'", a);
				return false;
			}
			if ((*rc = each(args, NULL, a)))
				return false;
			nopnd++;
			continue;
		}
		if (!strcmp(a, "--")) {
			operands = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_help(c, stdout);
			return false;
		}
		if (a[1] == '-')
			eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		if (!(o = row_find(c, a, n, eq))) {
			*rc = cli_usage(c, "unknown option '%s'", a);
			return false;
		}
		if (!o->arg) {
			if (eq)
				*rc = cli_usage(c, "option '%s' takes no value", a);
			else if (o->flags & CLI_EACH)
				*rc = each(args, o, NULL);
			else
				*(bool *)row_target(o, args) = true;
			if (*rc)
				return false;
			continue;
		}
		if (eq) {
			v = eq + 1;
		} else if (i + 1 < argc && !never_value(argv[i + 1])) {
			v = argv[++i];
		} else {
			*rc = cli_usage(c, "option '%s' needs a value", a);
			return false;
		}
		if (o->flags & CLI_EACH) {
			if ((*rc = each(args, o, v)))
				return false;
		} else if (*(const char **)row_target(o, args)) {
			*rc = cli_usage(c, "option '%.*s' is given more than once; it "
			                "takes one value", (int)(n < 60 ? n : 60), a);
			return false;
		} else {
			*(const char **)row_target(o, args) = v;
		}
	}
	/* what is missing, in the rows' order */
	for (const cli_opt *o = c->opts; !row_end(o); o++)
		if ((o->flags & CLI_REQUIRED) &&
		    (o->name ? !*(const char **)row_target(o, args) : !nopnd)) {
			*rc = cli_usage(c, "%s needs %s", c->name,
			                o->need ? o->need : o->name);
			return false;
		}
	return true;
}

bool cli_version_asked(const cli_cmd *c, int argc, char **argv)
{
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++) {
		const char *a = argv[i];
		const cli_opt *o;
		if (!strcmp(a, "--version"))
			return true;
		if (!c || a[0] != '-' || (a[1] == '-' && strchr(a, '=')) ||
		    !(o = row_find(c, a, strlen(a), false)) || !o->arg)
			continue;
		/* an option that expects its value next: the value is skipped,
		 * and a --version in its place is cli_parse's usage error */
		if (i + 1 < argc && never_value(argv[i + 1]))
			return false;
		i++;
	}
	return false;
}

/* ---- values and inputs ------------------------------------------------------ */

static int when(const cli_cmd *c, const char *name, const char *v,
                double *t, bool *rel)
{
	char *end;
	*rel = v[0] == '+';
	if (*rel) {
		*t = strtod(v + 1, &end);
		if (end != v + 1 && !*end && *t >= 0 && isfinite(*t))
			return 0;
	} else if (tl_parse_time(v, strlen(v), t)) {
		return 0;
	}
	return cli_usage(c, "%s '%s': expected a time (2026/11/21 12:15:28, "
	                 "2026-11-21T12:15:28Z, seconds since 1970) or +SECONDS",
	                 name, v);
}

int cli_window(const cli_cmd *c, const char *from, const char *to,
               tm_tele_opts *w)
{
	int rc = 0;
	*w = (tm_tele_opts){ NAN, NAN, false, false, 0 };
	if ((from && (rc = when(c, "--from", from, &w->from, &w->from_rel))) ||
	    (to && (rc = when(c, "--to", to, &w->to, &w->to_rel))))
		return rc;
	if (!isnan(w->from) && !isnan(w->to) && w->from_rel == w->to_rel &&
	    w->to < w->from)
		return cli_usage(c, "%s", "--to is before --from");
	return 0;
}

int cli_tele_add(const cli_cmd *c, cli_tele *t, const cli_opt *o,
                 const char *v)
{
	if (!o) {
		t->in[t->n++] = (tm_tele_input){ v, t->host, t->fields };
	} else if (!strcmp(o->name, "--host")) {
		if (!tm_valid_host(v))
			return cli_usage(c, "--host '%s': expected a host name", v);
		t->host = v;
	} else {
		t->fields = v;
	}
	return 0;
}

int cli_inputs_load(cli_inputs *in, const char *cluster, const char *profile,
                    const char *job, tm_error *err)
{
	int rc = 0;
	if ((cluster && (rc = tm_cluster_load(cluster, &in->c, err))) ||
	    (profile && (rc = tm_profile_load(profile, &in->p, err))) ||
	    (job && (rc = tm_job_load(job, &in->j, err))))
		return rc;
	return 0;
}

int cli_policy_load(cli_inputs *in, const char *file, tm_error *err)
{
	return file ? tm_policy_load(file, &in->pol, err)
	            : tm_policy_default(&in->pol, err);
}

void cli_inputs_clear(cli_inputs *in)
{
	tm_policy_free(in->pol);
	tm_job_free(in->j);
	tm_profile_free(in->p);
	tm_cluster_free(in->c);
	memset(in, 0, sizeof *in);
}
