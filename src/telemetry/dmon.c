/*
 * dmon.c — the dmon logs: `nvidia-smi dmon` (a "#Date Time gpu pwr gtemp
 * ... pclk" header, then a units line, then whitespace-separated rows, one
 * per GPU and moment; "-" is a missing value) and DCGM's `dcgmi dmon`
 * (below). The rows become samples for the sink (tl_gpu, tl_push);
 * numbers and times are read by parse.c.
 */
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

/* Neither log names its host: --host, or the file's name, must. */
static int no_host(const tl_src *src)
{
	return tm_fail(src->err, TM_EINPUT, "%s: no host: name it with --host "
	               "NAME or a file name like HOST.txt", src->file);
}

int tl_read_dmon(tl_src *src, tl_lines *L)
{
	enum { D_SKIP, D_DATE, D_TIME, D_GPU, D_NUM };
	int kind[64], field[64], ncols = 0, rc;
	const char *line;
	size_t len;
	double last_tod = NAN, wrap = 0;

	src->format = "nvidia-smi dmon";
	if (!src->host)
		return no_host(src);
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

/* ---- dcgmi dmon ---------------------------------------------------------- */

/*
 * `dcgmi dmon -e IDS [-d MS]` (NVIDIA/DCGM dcgmi/DeviceMonitor.cpp): a
 * header "#Entity" padded to 10 (later 11) characters, then each field's
 * short name (dcgmlib/src/dcgm_fields.cpp) padded to its width plus 6,
 * plus 2 spaces; a units line ("ID ..."); then one row per entity and
 * moment, "GPU 0" (or "vGPU 1", "Switch 0", "GPU-I 3", "CPU Core 5", ...)
 * padded like "#Entity", each value padded like its column: decimals with
 * 3 places, integers as integers, DCGM's blanks as "N/A", a field the
 * entity has no value for as nothing at all. The header comes again every
 * 14 samples; Ctrl-C ends the log with "dmon was stopped d[ou]e to
 * receiving a signal". There are no times: a sample is one pass over
 * the entities, taken tl_sink_interval() apart.
 */

/* The short names read, with what prom.c reads for the same field id. */
static const struct dcgmi_name {
	const char *name;
	int field;
} dcgmi_names[] = {
	{ "TMPTR", TL_TEMP },               /* 150 DCGM_FI_DEV_GPU_TEMP */
	{ "POWER", TL_POWER },              /* 155 DCGM_FI_DEV_POWER_USAGE */
	{ "EPLMT", TL_POWER_LIMIT },        /* 164 ..._ENFORCED_POWER_LIMIT */
	{ "PMLMT", TL_DCGMI_MGMT_LIMIT },   /* 160 DCGM_FI_DEV_POWER_MGMT_LIMIT */
	{ "SMCLK", TL_SM_CLOCK },           /* 100 DCGM_FI_DEV_SM_CLOCK */
	{ "SMMAX", TL_SM_CLOCK_MAX },       /* 110 DCGM_FI_DEV_MAX_SM_CLOCK */
	{ "GPUTL", TL_UTIL },               /* 203 DCGM_FI_DEV_GPU_UTIL */
	{ "SDTMP", TL_SLOWDOWN_C },         /* 158 DCGM_FI_DEV_SLOWDOWN_TEMP */
	{ "DVCCTR", TL_DCGMI_REASONS },     /* 112 ..._CLOCKS_EVENT_REASONS */
	{ "PVIOL", TL_PCAP_US },            /* 240 DCGM_FI_DEV_POWER_VIOLATION */
	{ "TVIOL", TL_THERMAL_US },         /* 241 ..._THERMAL_VIOLATION */
};

static bool sp(char c)
{
	return c == ' ' || c == '\t';
}

static bool word_is(const char *p, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(p, w, n) == 0;
}

int tl_dcgmi_header(const char *line, size_t len, tl_dcgmi_col *cols,
                    int max)
{
	size_t i = 7;
	int n = 0;

	if (len < 7 || memcmp(line, "#Entity", 7) != 0 ||
	    (len > 7 && !sp(line[7])))
		return -1;
	for (;;) {
		size_t b;
		while (i < len && sp(line[i]))
			i++;
		if (i == len)
			return n;
		if (n == max)
			return -1;
		for (b = i; i < len && !sp(line[i]); i++)
			;
		cols[n].start = b;
		cols[n].name = line + b;
		cols[n].nlen = i - b;
		cols[n].field = TL_DCGMI_UNUSED;
		for (size_t k = 0; k < sizeof dcgmi_names / sizeof *dcgmi_names;
		     k++)
			if (word_is(line + b, i - b, dcgmi_names[k].name))
				cols[n].field = dcgmi_names[k].field;
		n++;
	}
}

/* What a reader of dcgmi logs keeps between lines. */
typedef struct dcgmi {
	tl_src *src;
	tl_dcgmi_col col[TL_DCGMI_MAX_COLS];
	int ncols;
	long sample;              /* the pass over the entities (-1: none) */
	bool new_pass;            /* a header came: the next row starts one */
	unsigned char seen[(65535 >> 3) + 1];  /* GPUs in this pass */
	unsigned short *listed;   /* nlisted of them, to clear seen */
	int nlisted;
} dcgmi;

/* The entity types DeviceMonitor.cpp prints (format_as). */
static bool dcgmi_entity(const char *p, size_t n)
{
	static const char *const types[] = {
		"GPU", "vGPU", "Switch", "GPU-I", "GPU-CI", "LINK", "CPU", "CX",
		"UNKNOWN"
	};
	for (size_t k = 0; k < sizeof types / sizeof *types; k++)
		if (word_is(p, n, types[k]))
			return true;
	return false;
}

/* A cell of the row for a message: at most 20 bytes. */
#define CELL(p, n) (int)((n) > 20 ? 20 : (n)), (p)

/* One GPU row: line[0..len), gpu its index, at the end of the entity. */
static int dcgmi_row(dcgmi *D, const char *line, size_t len, size_t at,
                     int gpu, bool cut)
{
	tl_src *src = D->src;
	tl_sample s;
	const char *cell[TL_DCGMI_MAX_COLS];
	size_t clen[TL_DCGMI_MAX_COLS];
	double mgmt = NAN;
	int ntok = 0, id;

	/* the values as words: as many as columns, in order, is the plain
	 * case (and a log whose spacing was changed); else each by where
	 * its column starts, as DeviceMonitor.cpp pads it, which leaves a
	 * value it lacks empty and a name with spaces in one cell */
	for (size_t i = at; i < len;) {
		size_t b;
		while (i < len && sp(line[i]))
			i++;
		if (i == len)
			break;
		for (b = i; i < len && !sp(line[i]); i++)
			;
		if (ntok < D->ncols) {
			cell[ntok] = line + b;
			clen[ntok] = i - b;
		}
		ntok++;
	}
	if (ntok != D->ncols) {
		if (cut || (ntok < D->ncols && at > D->col[0].start))
			return tm_fail(src->err, TM_EINPUT, "%s:%ld: expected %d "
			               "fields, found %d", src->file, src->line,
			               D->ncols, ntok);
		for (int c = 0; c < D->ncols; c++) {
			size_t b = D->col[c].start, e = c + 1 < D->ncols ?
			           D->col[c + 1].start : len;
			if (b > len)
				b = len;
			if (e > len)
				e = len;
			if (b > at && b > 0 && !sp(line[b - 1]) && b < e &&
			    !sp(line[b]))
				return tm_fail(src->err, TM_EINPUT, "%s:%ld: "
				               "expected %d fields, found %d, not in "
				               "the header's columns", src->file,
				               src->line, D->ncols, ntok);
			while (b < e && sp(line[b]))
				b++;
			while (e > b && sp(line[e - 1]))
				e--;
			cell[c] = line + b;
			clen[c] = e - b;
		}
	}
	tl_sample_clear(&s);
	for (int c = 0; c < D->ncols; c++) {
		const char *p = cell[c], *r;
		size_t n = clen[c];
		int f = D->col[c].field;
		double v;

		if (f == TL_DCGMI_UNUSED || n == 0)
			continue;
		if (word_is(p, n, "N/A")) {
			src->skipped[TL_SKIP_BLANK]++;
			continue;
		}
		r = tl_parse_num(p, p + n, &v);
		if (!r || r != p + n)
			return tm_fail(src->err, TM_EINPUT, "%s:%ld: field %d "
			               "(%.*s): expected a number or N/A, found "
			               "\"%.*s\"", src->file, src->line, c + 1,
			               CELL(D->col[c].name, D->col[c].nlen),
			               CELL(p, n));
		if (f == TL_DCGMI_REASONS) {
			if (!(v >= 0 && v < 9007199254740992.0 && v == floor(v)))
				return tm_fail(src->err, TM_EINPUT, "%s:%ld: field "
				               "%d (DVCCTR): expected a bitmask, an "
				               "integer from 0, found \"%.*s\"",
				               src->file, src->line, c + 1, CELL(p, n));
			tl_reasons(&s, (unsigned long long)v);
		} else if (f == TL_DCGMI_MGMT_LIMIT) {
			mgmt = v;
		} else {
			s.v[f] = v;
		}
	}
	/* the enforced limit counts; the management limit fills in */
	if (isnan(s.v[TL_POWER_LIMIT]))
		s.v[TL_POWER_LIMIT] = mgmt;
	/* a pass over the entities is one moment: the next begins after a
	 * header, or when a GPU of this pass comes again */
	if (D->sample < 0 || D->new_pass || (D->seen[gpu >> 3] >> (gpu & 7) & 1)) {
		for (int k = 0; k < D->nlisted; k++)
			D->seen[D->listed[k] >> 3] = 0;
		D->nlisted = 0;
		D->sample++;
		D->new_pass = false;
	}
	D->seen[gpu >> 3] |= (unsigned char)(1u << (gpu & 7));
	D->listed[D->nlisted++] = (unsigned short)gpu;
	s.t = (double)D->sample * tl_sink_interval(src->sink);
	id = tl_gpu(src, src->host, NULL, NULL, gpu);
	if (id < 0)
		return TM_EINPUT;
	return tl_push(src, id, &s);
}

int tl_read_dcgmi(tl_src *src, tl_lines *L)
{
	dcgmi *D = xcalloc(1, sizeof *D);
	const char *line;
	size_t len;
	int rc;
	bool header = false;

	src->format = "dcgmi dmon";
	D->src = src;
	D->sample = -1;
	D->listed = xmalloc(65536 * sizeof *D->listed);
	if (!src->host) {
		rc = no_host(src);
		goto out;
	}
	while ((rc = tl_lines_next(L, &line, &len)) == 1) {
		size_t i = 0, b, at;
		unsigned long gpu = 0;

		src->line = L->lineno;
		while (i < len && sp(line[i]))
			i++;
		if (i == len)
			continue;
		if (line[0] == '#') {
			int n = tl_dcgmi_header(line, len, D->col,
			                        TL_DCGMI_MAX_COLS);
			bool any = false;
			if (n < 0) {
				rc = tm_fail(src->err, TM_EINPUT, "%s:%ld: expected "
				             "a \"#Entity ...\" header of at most %d "
				             "fields", src->file, src->line,
				             TL_DCGMI_MAX_COLS);
				goto out;
			}
			for (int c = 0; c < n; c++)
				any |= D->col[c].field != TL_DCGMI_UNUSED;
			if (!any) {
				rc = tm_fail(src->err, TM_EINPUT, "%s:%ld: dcgmi "
				             "dmon header without a field thermap "
				             "reads; log them with dcgmi dmon -e "
				             "150,155,160,100,110,112,203", src->file,
				             src->line);
				goto out;
			}
			/* a header again, or another one (runs appended): the
			 * columns it names from here on */
			D->ncols = n;
			D->new_pass = true;
			header = true;
			continue;
		}
		for (b = i; i < len && !sp(line[i]); i++)
			;
		if (word_is(line + b, i - b, "ID") ||
		    word_is(line + b, i - b, "Id"))
			continue;   /* the units line */
		if (len - b >= 16 && !memcmp(line + b, "dmon was stopped", 16))
			continue;   /* Ctrl-C */
		if (!dcgmi_entity(line + b, i - b)) {
			rc = tm_fail(src->err, TM_EINPUT, "%s:%ld: expected a "
			             "dcgmi dmon row such as \"GPU 0 ...\", found "
			             "\"%.*s\"", src->file, src->line,
			             CELL(line + b, len - b));
			goto out;
		}
		if (!header) {
			rc = tm_fail(src->err, TM_EINPUT, "%s:%ld: dcgmi dmon row "
			             "before the \"#Entity ...\" header",
			             src->file, src->line);
			goto out;
		}
		src->rows++;
		if (!word_is(line + b, i - b, "GPU")) {
			/* a vGPU, MIG instance, NVSwitch, CPU...: not a GPU
			 * thermap places work on */
			src->skipped[TL_SKIP_ENTITY]++;
			continue;
		}
		while (i < len && sp(line[i]))
			i++;
		for (b = i; i < len && !sp(line[i]); i++)
			;
		for (size_t k = b; k < i && gpu <= 65535; k++)
			gpu = line[k] >= '0' && line[k] <= '9' ?
			      gpu * 10 + (unsigned long)(line[k] - '0') : 65536;
		if (i == b || gpu > 65535) {
			rc = tm_fail(src->err, TM_EINPUT, "%s:%ld: gpu: expected "
			             "an index from 0 to 65535, found \"%.*s\"",
			             src->file, src->line, CELL(line + b, i - b));
			goto out;
		}
		at = i;
		if ((rc = dcgmi_row(D, line, len, at, (int)gpu,
		                    L->unterminated)))
			goto out;
	}
	if (rc == 0 && !header)
		rc = tm_fail(src->err, TM_EINPUT, "%s: no dcgmi dmon header",
		             src->file);
out:
	free(D->listed);
	free(D);
	return rc;
}
