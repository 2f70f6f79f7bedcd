/*
 * fake_prom.c — a scripted HTTP server for the answers a real Prometheus
 * will not give on demand (tests/profile/prometheus.sh): transient
 * failures to retry, an answer too large to hold, malformed or hostile
 * JSON. It listens on a free loopback port, writes the port to PORTFILE,
 * and answers each request (one per connection) with the first unused
 * line of SCRIPT whose text occurs in the request (its line, headers or
 * form body, as sent: a query is URL-encoded there):
 *
 *	TEXT STATUS BODY
 *
 * BODY is a file sent as it is, or @N: N bytes of spaces. A request that
 * no line matches gets 404. It runs until it is killed.
 *
 * usage: fakeprom PORTFILE SCRIPT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXLINES 64

static struct line {
	char text[256], body[1024];
	int status, used;
} lines[MAXLINES];
static int nlines;

static void send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void answer(int fd, int status, const char *body)
{
	char head[256], buf[65536];
	size_t len = 0;
	FILE *f = NULL;

	if (body[0] == '@') {
		len = strtoul(body + 1, NULL, 10);
	} else if ((f = fopen(body, "rb"))) {
		fseek(f, 0, SEEK_END);
		len = (size_t)ftell(f);
		rewind(f);
	}
	snprintf(head, sizeof head, "HTTP/1.1 %d X\r\nContent-Type: "
	         "application/json\r\nContent-Length: %zu\r\nConnection: "
	         "close\r\n\r\n", status, len);
	send_all(fd, head, strlen(head));
	if (f) {
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, f)) > 0)
			send_all(fd, buf, n);
		fclose(f);
	} else {
		memset(buf, ' ', sizeof buf);
		while (len > 0) {
			size_t n = len < sizeof buf ? len : sizeof buf;
			send_all(fd, buf, n);
			len -= n;
		}
	}
}

/* Reads one request, with its Content-Length body, into rl. */
static int request(int fd, char *rl, size_t cap)
{
	static char buf[1 << 20];
	size_t n = 0;
	char *end, *cl;
	long want = 0;

	for (;;) {
		ssize_t r;
		if (n + 1 >= sizeof buf)
			return -1;
		r = read(fd, buf + n, sizeof buf - 1 - n);
		if (r <= 0)
			return -1;
		n += (size_t)r;
		buf[n] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")))
			break;
	}
	if ((cl = strstr(buf, "Content-Length: ")))
		want = atol(cl + 16);
	while ((long)(n - (size_t)(end + 4 - buf)) < want) {
		ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	snprintf(rl, cap, "%s", buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { 0 };
	socklen_t al = sizeof a;
	FILE *f;
	int s, one = 1;
	static char rl[1 << 20];

	if (argc != 3) {
		fprintf(stderr, "usage: fakeprom PORTFILE SCRIPT\n");
		return 2;
	}
	if (!(f = fopen(argv[2], "r"))) {
		perror(argv[2]);
		return 1;
	}
	while (nlines < MAXLINES &&
	       fscanf(f, "%255s %d %1023s", lines[nlines].text,
	              &lines[nlines].status, lines[nlines].body) == 3)
		nlines++;
	fclose(f);
	s = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) ||
	    listen(s, 16) || getsockname(s, (struct sockaddr *)&a, &al)) {
		perror("fakeprom");
		return 1;
	}
	if (!(f = fopen(argv[1], "w"))) {
		perror(argv[1]);
		return 1;
	}
	fprintf(f, "%d\n", ntohs(a.sin_port));
	fclose(f);
	for (;;) {
		int c = accept(s, NULL, NULL), i;
		if (c < 0)
			continue;
		if (request(c, rl, sizeof rl) == 0) {
			for (i = 0; i < nlines; i++)
				if (!lines[i].used && strstr(rl, lines[i].text))
					break;
			if (i < nlines) {
				lines[i].used = 1;
				answer(c, lines[i].status, lines[i].body);
			} else {
				answer(c, 404, "@0");
			}
		}
		close(c);
	}
}
