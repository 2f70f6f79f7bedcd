/*
 * opt.c — what every command of the program shares: the option parser
 * (one grammar), the messages and exit codes of the command line, and
 * loading the inputs that several commands read. Nothing here decides a
 * placement.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Every line below goes to people: what it quotes from the command line
 * or from an input is shown as tm_text shows it (one line, no control
 * characters, valid UTF-8). */
void say(FILE *f, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void say(FILE *f, const char *prefix, const char *fmt, ...)
{
	va_list ap;
	strbuf b;
	char *raw;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	raw = xmalloc(n > 0 ? (size_t)n + 1 : 1);
	raw[0] = '\0';
	if (n > 0) {
		va_start(ap, fmt);
		vsnprintf(raw, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	sb_init(&b);
	sb_add_text(&b, raw);
	fprintf(f, "%s%s\n", prefix, b.s);
	sb_free(&b);
	free(raw);
}

/* Text of several lines from the library (summaries, tables): each line
 * shown as tm_text shows it. The library shows what it quotes, so this
 * changes nothing unless something was missed there. */
void put_lines(FILE *f, const char *text)
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

/* Prints a warning once: commands that build many problems from one
 * input (compare, replan) would repeat the same line. */
void on_warn(void *ud, const char *msg)
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
	say(stderr, "thermap: warning: ", "%s", msg);
}

/* fmt is the program's; arg is often the user's (an option, a value) */
int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	say(stderr, "thermap: ", fmt, arg);
	fprintf(stderr, "Try 'thermap %s--help'.\n", cmd);
	return TM_EUSAGE;
}

int report(const tm_error *err)
{
	say(stderr, "thermap: error: ", "%s", err->msg);
	return err->code ? err->code : TM_EINTERNAL;
}

/* 0 or TM_EUSAGE (printed). *help: --help or -h was given. */
int parse(int argc, char **argv, opt *opts, const char *cmd,
                 opt_each each, void *ud, bool *help)
{
	char cmdsp[32];
	bool operands = false;
	int rc;
	snprintf(cmdsp, sizeof cmdsp, "%s ", cmd);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *eq = NULL, *v = NULL;
		char name[64];
		size_t n;
		opt *o = NULL;
		if (operands || a[0] != '-' || a[1] == '\0') {
			if (!each)
				return usage_error(cmdsp, "unexpected argument '%s'", a);
			if ((rc = each(ud, NULL, a)))
				return rc;
			continue;
		}
		if (!strcmp(a, "--")) {
			operands = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = true;
			return 0;
		}
		if (a[1] == '-')
			eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		for (opt *p = opts; p->name; p++)
			if ((strlen(p->name) == n && !strncmp(p->name, a, n)) ||
			    (p->alias && !eq && !strcmp(p->alias, a)))
				o = p;
		if (!o)
			return usage_error(cmdsp, "unknown option '%s'", a);
		snprintf(name, sizeof name, "%.*s", (int)(n < 60 ? n : 60), a);
		if (o->kind == OPT_FLAG || o->kind == OPT_EACH_FLAG) {
			if (eq)
				return usage_error(cmdsp, "option '%s' takes no value", a);
			if (o->kind == OPT_FLAG)
				*o->set = true;
			else if ((rc = each(ud, o, NULL)))
				return rc;
			continue;
		}
		if (eq)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return usage_error(cmdsp, "option '%s' needs a value", a);
		if (o->kind == OPT_ONE) {
			if (o->given++)
				return usage_error(cmdsp, "option '%s' is given more than "
				                   "once; it takes one value", name);
			*o->value = v;
		} else if ((rc = each(ud, o, v))) {
			return rc;
		}
	}
	return 0;
}

int load_inputs(const char *cf, const char *pf, const char *jf,
                       const char *polf, inputs *in, tm_error *err)
{
	int rc;
	memset(in, 0, sizeof *in);
	if ((rc = tm_cluster_load(cf, &in->c, err)) ||
	    (rc = tm_profile_load(pf, &in->p, err)) ||
	    (rc = tm_job_load(jf, &in->j, err)))
		return rc;
	return polf ? tm_policy_load(polf, &in->pol, err)
	            : tm_policy_default(&in->pol, err);
}

void free_inputs(inputs *in)
{
	tm_policy_free(in->pol);
	tm_job_free(in->j);
	tm_profile_free(in->p);
	tm_cluster_free(in->c);
}

int parse_when(const char *cmd, const char *name, const char *v,
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
	say(stderr, "thermap: ", "%s '%s': expected a time (2026/11/21 "
	    "12:15:28, 2026-11-21T12:15:28Z, seconds since 1970) or "
	    "+SECONDS", name, v);
	fprintf(stderr, "Try 'thermap %s --help'.\n", cmd);
	return TM_EUSAGE;
}

int tele_arg(void *ud, const opt *o, const char *v)
{
	tele_args *A = ud;
	if (!o) {
		A->in[A->n++] = (tm_tele_input){ v, A->host, A->fields };
	} else if (!strcmp(o->name, "--host")) {
		if (!tm_valid_host(v))
			return usage_error(A->cmd, "--host '%s': expected a host name",
			                   v);
		A->host = v;
	} else {
		A->fields = v;
	}
	return 0;
}
