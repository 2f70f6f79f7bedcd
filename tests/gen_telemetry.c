/*
 * gen_telemetry — makes a large nvidia-smi --query-gpu log for `make bench`
 * by replaying a real recording over and over, each replay shifted in time
 * so that timestamps keep going forward.
 *
 * usage: gen_telemetry RECORDING BYTES > big.csv
 *
 * The recording's header is written once; its rows are copied byte for
 * byte except the leading "YYYY/MM/DD HH:MM:SS.mmm" timestamp; a last line
 * without a newline (a cut row) is left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era;
	unsigned yoe, doy, doe;
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

static void civil_from_days(long long z, int *y, int *m, int *d)
{
	long long era, doe, yoe, doy, mp;
	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

int main(int argc, char **argv)
{
	FILE *f;
	char *buf, *p, *end, *hdr_end;
	long size, target, written = 0;
	long long first_ms = -1, last_ms = 0, shift = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: gen_telemetry RECORDING BYTES\n");
		return 2;
	}
	target = atol(argv[2]);
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET)) {
		perror(argv[1]);
		return 1;
	}
	buf = malloc((size_t)size + 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		perror(argv[1]);
		return 1;
	}
	fclose(f);
	buf[size] = '\0';
	end = buf + size;
	while (end > buf && end[-1] != '\n')
		end--;                      /* drop a cut last line */
	hdr_end = memchr(buf, '\n', (size_t)(end - buf));
	if (!hdr_end) {
		fprintf(stderr, "%s: no rows\n", argv[1]);
		return 1;
	}
	hdr_end++;
	fwrite(buf, 1, (size_t)(hdr_end - buf), stdout);
	written = hdr_end - buf;
	while (written < target) {
		for (p = hdr_end; p < end && written < target;) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			int Y, M, D, h, mi, s, ms, y2, m2, d2;
			long long t;
			if (sscanf(p, "%d/%d/%d %d:%d:%d.%d", &Y, &M, &D, &h, &mi,
			           &s, &ms) != 7) {
				fprintf(stderr, "%s: row without a timestamp\n",
				        argv[1]);
				return 1;
			}
			t = ((days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 +
			      h * 3600 + mi * 60 + s) * 1000) + ms;
			if (first_ms < 0)
				first_ms = t;
			if (t > last_ms)
				last_ms = t;
			t += shift;
			civil_from_days(t / 86400000, &y2, &m2, &d2);
			printf("%04d/%02d/%02d %02lld:%02lld:%02lld.%03lld", y2, m2,
			       d2, t / 3600000 % 24, t / 60000 % 60, t / 1000 % 60,
			       t % 1000);
			fwrite(p + 23, 1, (size_t)(nl + 1 - (p + 23)), stdout);
			written += nl + 1 - p;
			p = nl + 1;
		}
		shift += last_ms - first_ms + 500;
	}
	free(buf);
	return 0;
}
