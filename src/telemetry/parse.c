/*
 * parse.c — numbers and times as the telemetry readers find them in text:
 * the number parser of the nvidia-smi readers (exact, without strtod for
 * plain decimals), the time parser every reader shares (nvidia-smi's
 * "2026/11/21 12:15:28.037", ISO 8601, seconds since 1970), and the ISO
 * time the summary prints.
 *
 * Below the sink and the readers: it knows no files, GPUs or samples.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

/* ---- numbers ------------------------------------------------------------ */

const double tl_pow10[23] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

const char *tl_parse_num(const char *p, const char *e, double *out)
{
	const char *s = p;
	bool neg = false;
	uint64_t m = 0;
	int nd = 0, frac = 0;
	if (p < e && (*p == '-' || *p == '+'))
		neg = *p++ == '-';
	while (p < e && (unsigned)(*p - '0') < 10) {
		m = m * 10 + (uint64_t)(*p++ - '0');
		nd++;
	}
	if (p < e && *p == '.') {
		p++;
		while (p < e && (unsigned)(*p - '0') < 10) {
			m = m * 10 + (uint64_t)(*p++ - '0');
			nd++;
			frac++;
		}
	}
	if (nd == 0)
		return NULL;
	if (nd > 15 || frac > 22 || (p < e && (*p == 'e' || *p == 'E'))) {
		char buf[64], *end;
		size_t n = (size_t)(e - s) < sizeof buf - 1 ? (size_t)(e - s)
		                                            : sizeof buf - 1;
		memcpy(buf, s, n);
		buf[n] = '\0';
		*out = strtod(buf, &end);
		if (end == buf)
			return NULL;
		return s + (end - buf);
	}
	*out = (double)m / tl_pow10[frac];
	if (neg)
		*out = -*out;
	return p;
}


/* ---- times ---------------------------------------------------------------- */

static bool blank_ch(char c)
{
	return c == ' ' || c == '\t';
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil). */
static long long days_from_civil(long long y, int m, int d)
{
	long long era, yoe, doy, doe;
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int num(const char *p, int n)  /* n digits, or -1 */
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* Reads ".fff…" at *pp: up to 9 digits kept as an integer, the rest only
 * checked. False when '.' has no digit after it. */
static bool fraction(const char **pp, const char *e, long long *f, int *k)
{
	const char *p = *pp + 1;
	*f = 0;
	*k = 0;
	if (p == e || *p < '0' || *p > '9')
		return false;
	for (; p < e && *p >= '0' && *p <= '9'; p++)
		if (*k < 9) {
			*f = *f * 10 + (*p - '0');
			(*k)++;
		}
	*pp = p;
	return true;
}

/* whole + f / 10^k, rounded once where the sum is exact as an integer,
 * so "…28.037" is the double nearest to …28.037. */
static double compose(long long whole, long long f, int k)
{
	static const long long p10[10] = { 1, 10, 100, 1000, 10000, 100000,
		1000000, 10000000, 100000000, 1000000000 };
	const long long lim = 1ll << 53;
	if ((whole < 0 ? -whole : whole) <= lim / p10[k]) {
		long long N = whole * p10[k] + f;
		if ((N < 0 ? -N : N) <= lim)
			return (double)N / (double)p10[k];
	}
	return (double)whole + (double)f / (double)p10[k];
}

bool tl_parse_time(const char *s, size_t n, double *t)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
		30, 31 };
	const char *p = s, *e = s + n, *q;
	int Y, M, D, h, mi, sec, dim, off = 0;
	long long f = 0, whole;
	int k = 0;
	char sep;

	while (p < e && blank_ch(*p))
		p++;
	while (e > p && blank_ch(e[-1]))
		e--;
	if (p == e)
		return false;

	/* seconds since 1970 */
	for (q = p; q < e && *q >= '0' && *q <= '9'; q++)
		;
	if (q > p && (q == e || *q == '.')) {
		if (q - p > 12)
			return false;
		whole = 0;
		for (const char *d = p; d < q; d++)
			whole = whole * 10 + (*d - '0');
		if (q < e && (!fraction(&q, e, &f, &k) || q != e))
			return false;
		*t = compose(whole, f, k);
		return true;
	}

	/* YYYY/MM/DD HH:MM:SS or YYYY-MM-DD[T ]HH:MM:SS, [.fff], [zone] */
	if (e - p < 19)
		return false;
	sep = p[4];
	Y = num(p, 4);
	M = num(p + 5, 2);
	D = num(p + 8, 2);
	h = num(p + 11, 2);
	mi = num(p + 14, 2);
	sec = num(p + 17, 2);
	if ((sep != '/' && sep != '-') || p[7] != sep ||
	    (p[10] != ' ' && p[10] != 'T' && p[10] != 't') ||
	    p[13] != ':' || p[16] != ':' || Y < 0 || M < 1 || M > 12 ||
	    D < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
	    sec > 60)
		return false;
	dim = mdays[M - 1] + (M == 2 && Y % 4 == 0 &&
	                      (Y % 100 != 0 || Y % 400 == 0));
	if (D > dim)
		return false;
	q = p + 19;
	if (q < e && *q == '.' && !fraction(&q, e, &f, &k))
		return false;
	if (q < e && *q == ' ' && q + 1 < e)
		q++;  /* "… +02:00" */
	if (q < e && (*q == 'Z' || *q == 'z')) {
		q++;
	} else if (q < e && (*q == '+' || *q == '-')) {
		int sign = *q == '-' ? -1 : 1, oh, om = 0;
		if (e - q < 3 || (oh = num(q + 1, 2)) < 0 || oh > 23)
			return false;
		q += 3;
		if (q < e) {
			if (*q == ':')
				q++;
			if (e - q < 2 || (om = num(q, 2)) < 0 || om > 59)
				return false;
			q += 2;
		}
		off = sign * (oh * 3600 + om * 60);
	}
	if (q != e)
		return false;
	whole = days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + sec -
	        off;
	*t = compose(whole, f, k);
	return true;
}

void tl_iso_time(char *buf, size_t cap, double t)
{
	long long s = (long long)floor(t), days = s / 86400, sod = s % 86400;
	if (sod < 0)
		sod += 86400, days--;
	int ms = (int)lround((t - (double)s) * 1000);
	long long z, era, doe, yoe, y, doy, mp, d, m;
	if (ms == 1000) {   /* rounding carried into the next second */
		ms = 0;
		sod++;
		if (sod == 86400)
			sod = 0, days++;
	}
	/* civil_from_days (H. Hinnant) */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	snprintf(buf, cap, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03dZ",
	         y, m, d, sod / 3600, sod / 60 % 60, sod % 60, ms);
}

bool tl_parse_duration(const char *str, double *s)
{
	/* Prometheus's units, "ms" before "m"; rank: their order by size,
	 * which a later unit must follow */
	static const struct { const char *u; double s; int rank; } units[] = {
		{ "y", 365 * 86400.0, 0 }, { "w", 7 * 86400.0, 1 },
		{ "d", 86400, 2 }, { "h", 3600, 3 }, { "ms", 0.001, 6 },
		{ "m", 60, 4 }, { "s", 1, 5 },
	};
	const char *p = str, *e = str + strlen(str), *end;
	double total = 0;
	int last = -1;

	if (p == e)
		return false;
	end = tl_parse_num(p, e, &total);
	if (!end || end != e) {       /* not a plain number of seconds */
		total = 0;
		while (p < e) {
			double v = 0;
			const char *q = p;
			int u = -1;
			while (q < e && *q >= '0' && *q <= '9' && q - p < 12)
				v = v * 10 + (*q++ - '0');
			if (q == p || (q < e && *q >= '0' && *q <= '9'))
				return false;
			for (int i = 0; i < (int)(sizeof units / sizeof *units); i++) {
				size_t n = strlen(units[i].u);
				if ((size_t)(e - q) >= n && !memcmp(q, units[i].u, n)) {
					u = i;
					p = q + n;
					break;
				}
			}
			if (u < 0 || units[u].rank <= last)
				return false;
			last = units[u].rank;
			total += v * units[u].s;
		}
	}
	if (!(total > 0 && total <= 10 * 365 * 86400.0))
		return false;
	*s = total;
	return true;
}
