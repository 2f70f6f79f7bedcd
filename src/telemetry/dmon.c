/*
 * dmon.c — `nvidia-smi dmon` logs: a "#Date Time gpu pwr gtemp ... pclk"
 * header, then a units line, then whitespace-separated rows, one per GPU
 * and moment; "-" is a missing value. The rows become samples for the
 * sink (tl_gpu, tl_push); numbers and times are read by parse.c.
 */
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

int tl_read_dmon(tl_src *src, tl_lines *L)
{
	enum { D_SKIP, D_DATE, D_TIME, D_GPU, D_NUM };
	int kind[64], field[64], ncols = 0, rc;
	const char *line;
	size_t len;
	double last_tod = NAN, wrap = 0;

	src->format = "nvidia-smi dmon";
	if (!src->host)
		return tm_fail(src->err, TM_EINPUT, "%s: no host: name it with "
		               "--host NAME or a file name like HOST.txt",
		               src->file);
	while ((rc = tl_lines_next(L, &line, &len)) == 1) {
		char buf[1024], *tok, *save = NULL;
		int c = 0, gpu = -1, id;
		tl_sample s;
		double date = NAN, tod = NAN;

		src->line = L->lineno;
		if (len >= sizeof buf)
			return tm_fail(src->err, TM_EINPUT, "%s:%ld: dmon line "
			               "longer than %zu bytes", src->file,
			               src->line, sizeof buf - 1);
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (buf[0] == '#') {
			char *h = buf + 1;
			if (ncols > 0 && strstr(h, "YYYY") == NULL &&
			    strstr(h, "Idx") == NULL && strstr(h, "gpu") == NULL)
				continue;
			if (strstr(h, "Idx") || strstr(h, "YYYY") ||
			    strstr(h, "HH:MM"))
				continue;  /* the units line */
			ncols = 0;
			for (tok = strtok_r(h, " \t", &save); tok && ncols < 64;
			     tok = strtok_r(NULL, " \t", &save), ncols++) {
				kind[ncols] = D_SKIP;
				if (!strcmp(tok, "Date"))
					kind[ncols] = D_DATE;
				else if (!strcmp(tok, "Time"))
					kind[ncols] = D_TIME;
				else if (!strcmp(tok, "gpu"))
					kind[ncols] = D_GPU;
				else if (!strcmp(tok, "pwr"))
					kind[ncols] = D_NUM, field[ncols] = TL_POWER;
				else if (!strcmp(tok, "gtemp"))
					kind[ncols] = D_NUM, field[ncols] = TL_TEMP;
				else if (!strcmp(tok, "sm"))
					kind[ncols] = D_NUM, field[ncols] = TL_UTIL;
				else if (!strcmp(tok, "pclk"))
					kind[ncols] = D_NUM,
					field[ncols] = TL_SM_CLOCK;
			}
			continue;
		}
		if (strspn(buf, " \t") == len)
			continue;
		if (ncols == 0)
			return tm_fail(src->err, TM_EINPUT, "%s:%ld: dmon row "
			               "before the \"# gpu ...\" header",
			               src->file, src->line);
		tl_sample_clear(&s);
		for (tok = strtok_r(buf, " \t", &save); tok;
		     tok = strtok_r(NULL, " \t", &save), c++) {
			double v;
			const char *r;
			if (c >= ncols)
				return tm_fail(src->err, TM_EINPUT, "%s:%ld: "
				               "expected %d fields, found more",
				               src->file, src->line, ncols);
			if (kind[c] == D_SKIP)
				continue;
			if (kind[c] == D_DATE) {
				char d[32];
				if (strlen(tok) != 8)
					return tm_fail(src->err, TM_EINPUT,
					       "%s:%ld: date: expected YYYYMMDD, "
					       "found \"%.20s\"", src->file,
					       src->line, tok);
				snprintf(d, sizeof d, "%.4s-%.2s-%.2sT00:00:00",
				         tok, tok + 4, tok + 6);
				if (!tl_parse_time(d, strlen(d), &date))
					return tm_fail(src->err, TM_EINPUT,
					       "%s:%ld: date: expected YYYYMMDD, "
					       "found \"%.20s\"", src->file,
					       src->line, tok);
				continue;
			}
			if (kind[c] == D_TIME) {
				char d[40];
				snprintf(d, sizeof d, "1970-01-01T%.12s", tok);
				if (!tl_parse_time(d, strlen(d), &tod))
					return tm_fail(src->err, TM_EINPUT,
					       "%s:%ld: time: expected HH:MM:SS, "
					       "found \"%.20s\"", src->file,
					       src->line, tok);
				continue;
			}
			if (!strcmp(tok, "-"))
				continue;
			r = tl_parse_num(tok, tok + strlen(tok), &v);
			if (!r || *r)
				return tm_fail(src->err, TM_EINPUT, "%s:%ld: "
				               "field %d: expected a number, "
				               "found \"%.20s\"", src->file,
				               src->line, c + 1, tok);
			if (kind[c] == D_GPU) {
				if (!(v >= 0 && v <= 65535 && v == floor(v)))
					return tm_fail(src->err, TM_EINPUT,
					       "%s:%ld: gpu: expected an index from 0 "
					       "to 65535, found \"%.20s\"", src->file,
					       src->line, tok);
				gpu = (int)v;
			} else
				s.v[field[c]] = v;
		}
		if (c < ncols)
			return tm_fail(src->err, TM_EINPUT, "%s:%ld: expected %d "
			               "fields, found %d", src->file, src->line,
			               ncols, c);
		if (!isnan(tod)) {
			if (!isnan(date)) {
				s.t = date + tod;
			} else {
				/* time of day only: count midnights */
				if (!isnan(last_tod) && tod < last_tod - 43200)
					wrap += 86400;
				last_tod = tod;
				s.t = tod + wrap;
			}
		}
		src->rows++;
		id = tl_gpu(src, src->host, NULL, NULL, gpu < 0 ? 0 : gpu);
		if (id < 0)
			return TM_EINPUT;
		if ((rc = tl_push(src, id, &s)))
			return rc;
	}
	if (rc == 0 && ncols == 0)
		return tm_fail(src->err, TM_EINPUT, "%s: no dmon header",
		               src->file);
	return rc;
}
