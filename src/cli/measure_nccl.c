/*
 * measure_nccl.c - nccl-tests / rccl-tests text output as the lines of
 * `llmsim measure`'s protocol (docs/measure.md), so that `llmsim measure
 * --import` stores what all_gather_perf & co. printed on a cluster and
 * `llmsim calibrate` fits to it ("calibrate my cluster from my
 * nccl-tests output").
 *
 * What a run prints (NVIDIA/nccl-tests src/common.cu; rccl-tests the
 * same): a header "# nThread T nGpus G minBytes ... warmup iters: W
 * iters: N ...", one "#  Rank  r Group g Pid p on HOST device d [BUS]
 * NAME" line a rank, newer releases a "# Collective test starting:
 * all_gather_perf" line, then one row a size:
 *
 *   size count type [redop root] | time algbw busbw #wrong | time algbw busbw #wrong
 *
 * out-of-place, then in-place (older releases print no redop / root for
 * all-gather and the like: the row is read from its end). size is
 * nccl-tests' whole buffer, count its per-rank count; time the mean
 * over the iterations (us), taken as the point's median, fastest and
 * slowest alike; #wrong "N/A" when run with -c 0 (check "skipped").
 * Ranks: the Rank lines (nodes: their distinct hosts), else nThread x
 * nGpus of one process. The op: the "test starting" line, else
 * --op. Each "# nThread" header opens a run (several binaries' output
 * concatenated). Lines of anything else (NCCL INFO logs, mpirun's
 * notices, the bandwidth summary) are skipped.
 */
#include "measure.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "base/utf8.h"

#define MAX_TOK 24
#define MAX_HOSTS 4096

/* nccl-tests binary names and the protocol's op names. */
static const struct {
	const char *bin, *op;
} op_names[] = {
	{"all_reduce", "allreduce"}, {"all_gather", "allgather"},
	{"reduce_scatter", "reducescatter"}, {"alltoall", "alltoall"},
	{"broadcast", "broadcast"}, {"reduce", "reduce"},
	{"sendrecv", "sendrecv"},
};

struct point {
	char dtype[24];
	const char *check;
	long size, count, wrong;
	double t, alg, bus;
	unsigned line;		/* its row's line in the file */
};

/* The converted stream's lines' lines in the file (the reader's
 * messages cite the file, not the stream: measure.h src_line). */
struct line_map {
	unsigned *v;
	size_t n, cap;
};

static int map_add(struct line_map *m, unsigned line, struct diag *d)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		unsigned *v = mem_realloc(m->v, cap * sizeof(*v));

		if (!v) {
			diag_oom(d);
			return -1;
		}
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = line;
	return 0;
}

struct run {
	char op[32], device[128], version[64], lib[16], tests[48];
	char *hosts[MAX_HOSTS];
	int nhosts, ranks, threads, gpus, iters, open;
	int hosts_over;		/* a host past MAX_HOSTS: not counted */
	unsigned header_line;
	struct point *pts;	/* the run's rows, until its end */
	size_t npts, cap;
};

/* s into a JSON string's body: a quote, a backslash or a control
 * character (a host or device name is the file's text) becomes '_'. */
static void json_safe(char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			*s = '_';
}

static int split(char *s, char **tok)
{
	int n = 0;
	char *save = NULL, *t;

	for (t = strtok_r(s, " \t\r\n", &save); t && n < MAX_TOK;
	     t = strtok_r(NULL, " \t\r\n", &save))
		tok[n++] = t;
	return n;
}

/* The largest size or count taken: 2^53, a double (the store's) still
 * whole. */
#define ROW_MAX 9007199254740992L

/* s a whole number: 1, 0 not one (digits first), -1 digits beyond
 * ROW_MAX (strtol saturated 10^24 to LONG_MAX, stored as the size). */
static int whole(const char *s, long *v)
{
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return 0;
	errno = 0;
	*v = strtol(s, &end, 10);
	if (*end != '\0')
		return 0;
	return errno == ERANGE || *v > ROW_MAX ? -1 : 1;
}

static int number(const char *s, double *v)
{
	char *end;

	*v = strtod(s, &end);
	return end != s && *end == '\0' && isfinite(*v) && *v >= 0;
}

/* "all_gather_perf" (or a path to it) as an op; "" when unknown. */
static const char *op_of_binary(const char *bin)
{
	const char *b = strrchr(bin, '/');
	size_t i, len;

	b = b ? b + 1 : bin;
	len = strcspn(b, " \t\r\n");
	if (len > 5 && strncmp(b + len - 5, "_perf", 5) == 0)
		len -= 5;
	for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (strlen(op_names[i].bin) == len &&
		    strncmp(b, op_names[i].bin, len) == 0)
			return op_names[i].op;
	return "";
}

static int known_op(const char *op)
{
	size_t i;

	for (i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (strcmp(op_names[i].op, op) == 0)
			return 1;
	return 0;
}

static void run_reset(struct run *r)
{
	int i;

	for (i = 0; i < r->nhosts; i++)
		free(r->hosts[i]);
	free(r->pts);
	memset(r, 0, sizeof(*r));
}

/* The header: nThread, nGpus and the timed iterations ("iters: N", not
 * "warmup iters:" or "agg iters:"). */
static void header(struct run *r, char **tok, int n)
{
	int i;
	long v;

	for (i = 1; i + 1 < n; i++) {
		if (whole(tok[i + 1], &v) != 1 || v < 0 || v > 1L << 20)
			continue;
		if (strcmp(tok[i], "nThread") == 0)
			r->threads = (int)v;
		else if (strcmp(tok[i], "nGpus") == 0)
			r->gpus = (int)v;
		else if (strcmp(tok[i], "iters:") == 0 &&
			 strcmp(tok[i - 1], "warmup") != 0 &&
			 strcmp(tok[i - 1], "agg") != 0)
			r->iters = (int)v;
	}
}

/* "#  Rank  0 Group  0 Pid 123 on HOST device  0 [0x18] NVIDIA H100": a
 * rank, its host counted once, the first rank's device name. */
static void rank_line(struct run *r, const char *line)
{
	char buf[512], *tok[MAX_TOK];
	const char *name = strchr(line, ']');
	int n, i, h;

	/* a longer line is cut between characters (its host name cut
	 * inside one was stored, not UTF-8) */
	snprintf(buf, sizeof(buf), "%.*s", (int)utf8_fit(line, strlen(line),
							 sizeof(buf) - 1), line);
	n = split(buf, tok);
	for (i = 0; i + 1 < n; i++)
		if (strcmp(tok[i], "on") == 0)
			break;
	r->ranks++;
	if (i + 1 < n) {
		for (h = 0; h < r->nhosts; h++)
			if (strcmp(r->hosts[h], tok[i + 1]) == 0)
				break;
		if (h == r->nhosts && r->nhosts == MAX_HOSTS)
			r->hosts_over = 1;
		else if (h == r->nhosts &&
			 (r->hosts[r->nhosts] = strdup(tok[i + 1])))
			json_safe(r->hosts[r->nhosts++]);
	}
	if (!r->device[0] && name) {
		name++;
		while (*name == ' ')
			name++;
		/* cut to the buffer between characters (a byte cut could
		 * end inside one: the stored device was not UTF-8) */
		snprintf(r->device, sizeof(r->device), "%.*s",
			 (int)utf8_fit(name, strcspn(name, "\r\n"),
				       sizeof(r->device) - 1), name);
		json_safe(r->device);
	}
}

/* The library's version where the output says it: NCCL_DEBUG=INFO's
 * "NCCL version 2.21.5+cuda12.4", or nccl-tests' "nccl-library=22105". */
static void version_line(struct run *r, const char *line)
{
	const char *p = strstr(line, "NCCL version ");
	const char *q = strstr(line, "RCCL version ");
	long v;

	if (q && !p)
		p = q;
	if (p && !r->version[0]) {
		p += 13;
		snprintf(r->version, sizeof(r->version), "%.*s",
			 (int)utf8_fit(p, strcspn(p, " \t\r\n"),
				       sizeof(r->version) - 1), p);
		json_safe(r->version);
		snprintf(r->lib, sizeof(r->lib), "%s", q == p - 13 ? "RCCL" :
			 "NCCL");
	}
	if ((p = strstr(line, "-tests version ")) && !r->tests[0]) {
		/* "# nccl-tests version 2.17.1 nccl-headers=... " */
		const char *who = p >= line + 4 && !strncmp(p - 4, "rccl", 4) ?
				  "rccl" : "nccl";

		snprintf(r->tests, sizeof(r->tests), "%.4s-tests %.*s", who,
			 (int)utf8_fit(p + 15, strcspn(p + 15, " \t\r\n"),
				       sizeof(r->tests) - 12), p + 15);
		json_safe(r->tests);
	}
	if ((p = strstr(line, "nccl-library=")) && !r->version[0]) {
		v = strtol(p + 13, NULL, 10);
		if (v >= 20900)	/* NCCL_VERSION(2, 9, 0) on: 10000 x major */
			snprintf(r->version, sizeof(r->version), "%ld.%ld.%ld",
				 v / 10000, v / 100 % 100, v % 100);
	}
}

/* A row of sizes: its point line into r->pts. 1 taken, 0 not a row,
 * -1 a row that does not read (reported). */
static int row(struct run *r, const char *line, const char *where,
	       unsigned ln, struct diag *d)
{
	char buf[512], *tok[MAX_TOK];
	const char *check;
	double t, alg, bus;
	long size, count, wrong = 0;
	int n;

	snprintf(buf, sizeof(buf), "%s", line);
	n = split(buf, tok);
	/* 11 (no redop / root) or 13 columns; a longer line is not a row */
	if (n < 11 || n >= MAX_TOK || strlen(line) >= sizeof(buf) ||
	    !whole(tok[0], &size))
		return 0;
	/* a size, then no count, a size or count past 2^53, a type name
	 * longer than any nccl-tests prints: a row that does not read
	 * (skipped without a word, stored as LONG_MAX, cut) */
	if (whole(tok[0], &size) < 0 || whole(tok[1], &count) != 1 ||
	    strlen(tok[2]) >= sizeof(r->pts[0].dtype)) {
		diag_error(d, where, (int)ln, 0, "an nccl-tests row whose "
			   "size, count (whole numbers up to 2^53) and type "
			   "do not read: '%.*s'", (int)strcspn(line, "\r\n"),
			   line);
		return -1;
	}
	if (!number(tok[n - 8], &t) || !number(tok[n - 7], &alg) ||
	    !number(tok[n - 6], &bus) || t <= 0 ||
	    (strcmp(tok[n - 5], "N/A") != 0 && whole(tok[n - 5], &wrong) != 1)) {
		diag_error(d, where, (int)ln, 0, "an nccl-tests row whose "
			   "out-of-place time, algbw, busbw and #wrong do not "
			   "read as numbers: '%.*s'", (int)strcspn(line, "\r\n"),
			   line);
		return -1;
	}
	check = strcmp(tok[n - 5], "N/A") == 0 ? "skipped" :
		wrong ? "wrong" : "ok";
	if (r->npts == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct point *p = realloc(r->pts, cap * sizeof(*p));

		if (!p) {
			diag_oom(d);
			return -1;
		}
		r->pts = p;
		r->cap = cap;
	}
	r->pts[r->npts] = (struct point){ "", check, size, count, wrong, t,
					  alg, bus, ln };
	snprintf(r->pts[r->npts].dtype, sizeof(r->pts[0].dtype), "%s", tok[2]);
	json_safe(r->pts[r->npts].dtype);
	r->npts++;
	return 1;
}

/* The run so far as hello, points, end into out. 0 or -1 (reported). */
static int flush_run(struct run *r, FILE *out, struct line_map *map,
		     const char *where, const char *op_opt, struct diag *d)
{
	long long per = (long long)r->threads * r->gpus;
	int ranks = r->ranks ? r->ranks : per <= 1 << 20 ? (int)per : 0;
	int nodes = r->nhosts ? r->nhosts : 1;
	int iters = r->iters > 0 ? r->iters : 20;
	size_t i;

	if (!r->open)
		return 0;
	if (!r->npts) {
		run_reset(r);
		return 0;
	}
	if (!r->op[0] && op_opt && !known_op(op_opt)) {
		diag_error(d, where, (int)r->header_line, 0, "--op %s: nccl-tests "
			   "runs collectives (allreduce, allgather, reducescatter, "
			   "alltoall, broadcast, reduce, sendrecv)", op_opt);
		return -1;
	}
	if (!r->op[0] && !(op_opt && op_opt[0])) {
		diag_error(d, where, (int)r->header_line, 0, "this nccl-tests "
			   "output does not name its test (no \"Collective "
			   "test starting\" line): give it with --op");
		return -1;
	}
	if (ranks < 1) {
		diag_error(d, where, (int)r->header_line, 0, "this nccl-tests "
			   "output says neither its ranks (\"Rank\" lines) nor "
			   "nThread and nGpus");
		return -1;
	}
	/* Ranks that do not spread evenly over the hosts (8 over 3: 6, 1,
	 * 1) were stored as 3 nodes x 8, which validate lays out as all 8
	 * on the first node: a multi-node run predicted as one node, said
	 * nowhere. As many a node as the fullest could hold, ceil(ranks /
	 * nodes), spans every node (3, 3, 2), and the warning says it. */
	if (r->hosts_over) {
		diag_error(d, where, (int)r->header_line, 0, "this nccl-tests "
			   "run names more than %d hosts, the most llmsim "
			   "counts (its nodes were stored as %d)", MAX_HOSTS,
			   MAX_HOSTS);
		return -1;
	}
	if (ranks % nodes)
		diag_warn(d, where, (int)r->header_line, 0, "%d ranks over %d "
			  "hosts, not as many on each: stored as %d nodes x "
			  "%d (validate lays the ranks out %d a node, in "
			  "order)", ranks, nodes, nodes,
			  (ranks + nodes - 1) / nodes,
			  (ranks + nodes - 1) / nodes);
	/* protocol 2's terms are nccl-tests' own: its count column per
	 * rank, its alltoallv's size what each rank sends (protocol 1
	 * would have the reader divide both by the ranks) */
	fprintf(out, "{\"type\":\"hello\",\"protocol\":%d,\"backend\":"
		"\"nccl-tests\",\"host\":\"%s\",\"device\":\"%s\",\"library\":"
		"\"%s\",\"library_version\":\"%s\",\"library_path\":\"\","
		"\"runtime\":\"%s\",\"ranks\":%d,\"nodes\":%d,\"devices_per_node\":"
		"%d,\"cpus\":1,\"iters\":%d,\"warmup\":0}\n", MEASURE_PROTOCOL,
		r->nhosts ? r->hosts[0] : "", r->device, r->lib[0] ? r->lib :
		"NCCL", r->version, r->tests[0] ? r->tests : "nccl-tests",
		ranks, nodes,
		(ranks + nodes - 1) / nodes, iters);
	if (map_add(map, r->header_line, d) != 0)
		return -1;
	for (i = 0; i < r->npts; i++) {
		const struct point *p = &r->pts[i];

		if (map_add(map, p->line, d) != 0)
			return -1;
		fprintf(out, "{\"type\":\"point\",\"op\":\"%s\",\"dtype\":"
			"\"%s\",\"bytes\":%ld,\"count\":%ld,\"ranks\":%d,"
			"\"iters\":%d,\"time_us\":%.17g,\"time_min_us\":%.17g,"
			"\"time_max_us\":%.17g,\"algbw_GBps\":%.17g,"
			"\"busbw_GBps\":%.17g,\"check\":\"%s\",\"wrong\":%ld}\n",
			r->op[0] ? r->op : op_opt, p->dtype, p->size, p->count,
			ranks, iters, p->t, p->t, p->t, p->alg, p->bus,
			p->check, p->wrong);
	}
	fprintf(out, "{\"type\":\"end\",\"points\":%zu}\n", r->npts);
	if (map_add(map, r->pts[r->npts - 1].line, d) != 0)
		return -1;
	run_reset(r);
	return 0;
}

int measure_nccl_text(FILE *in, const char *where, const char *op_opt,
		      FILE **out, unsigned **src_line, size_t *nsrc,
		      struct diag *d)
{
	struct line_map map = { 0 };
	struct run r;
	char *line = NULL;
	size_t cap = 0;
	unsigned ln = 0;
	char pending[32] = "";
	int is_text = 0, rc = 0;
	FILE *raw = tmpfile(), *conv = tmpfile();

	*out = NULL;
	*src_line = NULL;
	*nsrc = 0;
	memset(&r, 0, sizeof(r));
	if (!raw || !conv) {
		diag_error(d, where, 0, 0, "cannot make a temporary file "
			   "(TMPDIR): %s", strerror(errno));
		rc = -1;
		goto out;
	}
	/* the input as it is (a pipe cannot be read twice), and whether it
	 * is nccl-tests text: a "# nThread" header and no protocol line */
	while (getline(&line, &cap, in) > 0) {
		const char *s = line + strspn(line, " \t");

		fputs(line, raw);
		if (strncmp(s, "# nThread", 9) == 0)
			is_text = 1;
		if (*s == '{') {
			is_text = 0;
			break;
		}
	}
	while (!is_text && getline(&line, &cap, in) > 0)
		fputs(line, raw);
	rewind(raw);
	if (!is_text) {
		*out = raw;
		raw = NULL;
		goto out;
	}
	while (getline(&line, &cap, raw) > 0 && rc == 0) {
		const char *s = line + strspn(line, " \t");
		char buf[512], *tok[MAX_TOK];
		int n;

		ln++;
		version_line(&r, line);
		if (strncmp(s, "# Collective test starting:", 27) == 0) {
			/* printed before its run's header (nccl-tests >= 2.13) */
			const char *bin = s + 27 + strspn(s + 27, " \t");
			const char *op = op_of_binary(bin);

			if (!op[0]) {
				diag_error(d, where, (int)ln, 0, "an nccl-tests "
					   "test llmsim does not predict: %.*s",
					   (int)strcspn(bin, "\r\n"), bin);
				rc = -1;
			}
			/* a run whose header came first takes it now; else
			 * the next header does */
			if (r.open && !r.npts)
				snprintf(r.op, sizeof(r.op), "%s", op);
			else
				snprintf(pending, sizeof(pending), "%s", op);
		} else if (strncmp(s, "# nThread", 9) == 0) {
			char ver[64], tests[48], lib[16];

			snprintf(ver, sizeof(ver), "%s", r.version);
			snprintf(tests, sizeof(tests), "%s", r.tests);
			snprintf(lib, sizeof(lib), "%s", r.lib);
			rc = flush_run(&r, conv, &map, where, op_opt, d);
			r.open = 1;
			r.header_line = ln;
			snprintf(r.version, sizeof(r.version), "%s", ver);
			snprintf(r.tests, sizeof(r.tests), "%s", tests);
			snprintf(r.lib, sizeof(r.lib), "%s", lib);
			snprintf(r.op, sizeof(r.op), "%s", pending);
			pending[0] = '\0';
			snprintf(buf, sizeof(buf), "%s", s);
			n = split(buf, tok);
			header(&r, tok, n);
		} else if (!r.open) {
			continue;
		} else if (*s == '#' && strstr(s, " Rank ") && strstr(s, " on ")) {
			rank_line(&r, s);
		} else if (*s != '#' && row(&r, s, where, ln, d) < 0) {
			rc = -1;
		}
	}
	if (rc == 0)
		rc = flush_run(&r, conv, &map, where, op_opt, d);
	if (rc == 0) {
		rewind(conv);
		*out = conv;
		conv = NULL;
		*src_line = map.v;
		*nsrc = map.n;
		map.v = NULL;
	}
out:
	mem_free(map.v);
	run_reset(&r);
	free(line);
	if (raw)
		fclose(raw);
	if (conv)
		fclose(conv);
	return rc;
}
