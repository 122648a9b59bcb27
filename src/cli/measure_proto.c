/*
 * measure_proto.c - the backends' JSON-lines protocol (docs/measure.md),
 * read into the results store's rows: one object per line, by "type":
 *
 *   hello  backend, host, device, library, library_version, library_path,
 *          runtime, ranks, nodes, devices_per_node
 *   point  op, dtype, bytes, count, ranks, iters, time_us, time_min_us,
 *          time_max_us, check; algbw_GBps and busbw_GBps (collectives),
 *          m, n, k and tflops (gemm), GBps (copy), root (broadcast,
 *          reduce)
 *   error  status, reason, message
 *   end    points
 *
 * A stream may hold several backend runs (measure_stream_line: each
 * hello opens one, and so does an error, point or end line after a run's
 * end or error). Units are converted to the store's SI: us -> s, GB/s ->
 * B/s, TFLOP/s -> FLOP/s. Unknown keys are ignored (a newer backend may say more);
 * a missing required key is an error naming it.
 */
#include "measure.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

void measure_init(struct measure_log *m)
{
	memset(m, 0, sizeof(*m));
	m->end_points = NAN;
	m->protocol = MEASURE_PROTOCOL;
	m->points = cJSON_CreateArray();
}

static void free_info(struct store_meas_info *i)
{
	mem_free((char *)i->backend);
	mem_free((char *)i->host);
	mem_free((char *)i->device);
	mem_free((char *)i->library);
	mem_free((char *)i->library_version);
	mem_free((char *)i->library_path);
	mem_free((char *)i->runtime);
}

void measure_release(struct measure_log *m)
{
	uint32_t i;

	free_info(&m->info);
	for (i = 0; i < m->npts; i++) {
		mem_free((char *)m->pts[i].op);
		mem_free((char *)m->pts[i].type);
		mem_free((char *)m->pts[i].check);
	}
	mem_free(m->pts);
	mem_free(m->err_msg);
	mem_free(m->err_reason);
	cJSON_Delete(m->points);
	memset(m, 0, sizeof(*m));
}

/* A string member, or "" when absent; owned copy (NULL when OOM). */
static char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return mem_strdup(cJSON_IsString(v) ? v->valuestring : "");
}

/* A number member, or NAN. */
static double num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Whether v is a whole number in [lo, hi]. */
static int whole_in(double v, double lo, double hi)
{
	return v >= lo && v <= hi && v == floor(v);
}

static int hello(struct measure_log *m, const cJSON *o, const char *where,
		 struct diag *d)
{
	struct store_meas_info *i = &m->info;
	double ranks = num_of(o, "ranks"), nodes = num_of(o, "nodes");
	double per = num_of(o, "devices_per_node");
	double proto = num_of(o, "protocol");

	if (proto != 1 && proto != MEASURE_PROTOCOL) {
		/* another program's JSON lines (a hello and points of its
		 * own): one error, not one a line */
		char got[32];

		snprintf(got, sizeof(got), isnan(proto) ? "no 'protocol'" :
			 "protocol %g", proto);
		diag_error(d, where, (int)m->lines, 0, "hello: %s; this llmsim "
			   "reads protocols 1 and %d (docs/measure.md): not the "
			   "stream of an llmsim backend", got, MEASURE_PROTOCOL);
		m->foreign = 1;
		return -1;
	}
	m->protocol = (int)proto;
	free_info(i);
	i->backend = str_of(o, "backend");
	i->host = str_of(o, "host");
	i->device = str_of(o, "device");
	i->library = str_of(o, "library");
	i->library_version = str_of(o, "library_version");
	i->library_path = str_of(o, "library_path");
	i->runtime = str_of(o, "runtime");
	if (!i->backend || !i->host || !i->device || !i->library ||
	    !i->library_version || !i->library_path || !i->runtime) {
		diag_oom(d);
		return -1;
	}
	if (!whole_in(ranks, 1, INT_MAX) || !whole_in(nodes, 1, INT_MAX) ||
	    !whole_in(per, 1, INT_MAX) || !i->backend[0]) {
		diag_error(d, where, (int)m->lines, 0, "hello: expected "
			   "backend, ranks, nodes and devices_per_node (whole "
			   "numbers from 1 to 2147483647)");
		return -1;
	}
	i->ranks = (int)ranks;
	i->nodes = (int)nodes;
	i->devices_per_node = (int)per;
	i->cpus = whole_in(num_of(o, "cpus"), 1, INT_MAX) ?
		  (int)num_of(o, "cpus") : 0;
	m->have_hello = 1;
	return 0;
}

/* The largest GEMM size taken: 2^53, doubles still whole. */
#define POINT_MAX_SIZE 9007199254740992.0

/* A point's numbers, as the backend writes them (bk_main.c
 * print_point): bytes, count >= 0; the times > 0; ranks and iters whole,
 * from 1 to INT_MAX; a root, where given, one of the ranks; a GEMM's m,
 * n, k whole from 1 to 2^53 and its tflops, a copy's GBps, another op's
 * algbw_GBps and busbw_GBps, finite and >= 0. *missing names the first
 * bad one. */
static int point_numbers(const cJSON *o, struct store_meas_row *r,
			 const char **missing)
{
	const struct { const char *key; double *to; double scale, lo; } f[] = {
		{ "bytes", &r->size_B, 1, 0 },
		{ "count", &r->count, 1, 0 },
		{ "time_us", &r->time_s, 1e-6, 1e-15 },
		{ "time_min_us", &r->time_min_s, 1e-6, 1e-15 },
		{ "time_max_us", &r->time_max_s, 1e-6, 1e-15 },
	};
	static const char *const mnk[] = {"m", "n", "k"};
	static const char *const bw[] = {"algbw_GBps", "busbw_GBps"};
	double ranks = num_of(o, "ranks"), iters = num_of(o, "iters");
	double root = num_of(o, "root"), v;
	int gemm = strcmp(r->op, "gemm") == 0;
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		v = num_of(o, f[i].key);
		if (!(v >= f[i].lo) || !isfinite(v)) {
			*missing = f[i].key;
			return -1;
		}
		*f[i].to = v * f[i].scale;
	}
	*missing = !whole_in(ranks, 1, INT_MAX) ? "ranks" :
		   !whole_in(iters, 1, INT_MAX) ? "iters" :
		   !isnan(root) && !whole_in(root, 0, ranks - 1) ? "root" :
		   NULL;
	for (i = 0; gemm && !*missing && i < 3; i++)
		if (!whole_in(num_of(o, mnk[i]), 1, POINT_MAX_SIZE))
			*missing = mnk[i];
	if (!*missing && gemm)
		*missing = num_of(o, "tflops") >= 0 &&
			   isfinite(num_of(o, "tflops")) ? NULL : "tflops";
	else if (!*missing && strcmp(r->op, "copy") == 0)
		*missing = num_of(o, "GBps") >= 0 &&
			   isfinite(num_of(o, "GBps")) ? NULL : "GBps";
	for (i = 0; !gemm && strcmp(r->op, "copy") && !*missing && i < 2; i++)
		if (!(num_of(o, bw[i]) >= 0) || !isfinite(num_of(o, bw[i])))
			*missing = bw[i];
	if (*missing)
		return -1;
	r->ranks = (uint32_t)ranks;
	r->iters = (int)iters;
	return 0;
}

/* What point_numbers wants of key (with its leading ": "), or "". */
static const char *need(const char *key)
{
	if (!key)
		return "";
	if (!strcmp(key, "bytes") || !strcmp(key, "count"))
		return ": expected a number >= 0";
	if (!strncmp(key, "time", 4))
		return ": expected a time > 0 (us)";
	if (!strcmp(key, "ranks") || !strcmp(key, "iters"))
		return ": expected a whole number from 1 to 2147483647";
	if (!strcmp(key, "root"))
		return ": expected one of the ranks, 0 to ranks - 1";
	if (strlen(key) == 1)	/* m, n, k */
		return ": expected a whole number from 1 to 2^53";
	return ": expected a number >= 0 (GEMM: tflops; copy: GBps; "
	       "collectives: algbw_GBps and busbw_GBps)";
}

/* Number key of o set to v (the line --json prints). 0, or -1 OOM. */
static int set_num(cJSON *o, const char *key, double v)
{
	cJSON *n = cJSON_CreateNumber(v);

	if (!n)
		return -1;
	if (cJSON_GetObjectItemCaseSensitive(o, key))
		return cJSON_ReplaceItemInObjectCaseSensitive(o, key, n) ? 0 :
		       (cJSON_Delete(n), -1);
	return cJSON_AddItemToObject(o, key, n) ? 0 : (cJSON_Delete(n), -1);
}

/* A protocol 1 point in protocol 2's terms (bk_main.c BK_PROTOCOL;
 * store_meas_from_v1: a split op's count per rank, an all-to-all-v's
 * size what each rank sends), the line --json prints changed with it.
 * 0, or -1 out of memory. */
static int from_protocol1(struct store_meas_row *r, cJSON *o)
{
	if (!store_meas_from_v1(r))
		return 0;
	if (!strcmp(r->op, "alltoallv") &&
	    (set_num(o, "bytes", r->size_B) ||
	     set_num(o, "algbw_GBps", r->algbw_Bps / 1e9) ||
	     set_num(o, "busbw_GBps", r->busbw_Bps / 1e9)))
		return -1;
	return set_num(o, "count", r->count);
}

static int point(struct measure_log *m, cJSON *o, const char *where,
		 struct diag *d)
{
	struct store_meas_row *r;
	const char *missing = NULL;
	double root = num_of(o, "root");

	/* the first point past the most says so; the rest of the run's
	 * are refused quietly (each said it again, 65281 lines for an -i
	 * run of 65536 rows) */
	if (m->npts == MEASURE_MAX_POINTS) {
		if (!m->too_many)
			diag_error(d, where, (int)m->lines, 0, "more than %d "
				   "points in one run: this one and any after "
				   "it refused (split the run: nccl-tests over "
				   "part of the sizes, -b / -e)",
				   MEASURE_MAX_POINTS);
		m->too_many = 1;
		return -1;
	}
	if (m->npts == m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 64;
		struct store_meas_row *p = mem_realloc(m->pts,
						       cap * sizeof(*p));

		if (!p) {
			diag_oom(d);
			return -1;
		}
		m->pts = p;
		m->cap = cap;
	}
	r = &m->pts[m->npts];
	memset(r, 0, sizeof(*r));
	r->op = str_of(o, "op");
	r->type = str_of(o, "dtype");
	r->check = str_of(o, "check");
	if (!r->op || !r->type || !r->check) {
		diag_oom(d);
		goto drop;
	}
	if (!r->op[0] || !r->type[0] || point_numbers(o, r, &missing) != 0 ||
	    (strcmp(r->check, "ok") && strcmp(r->check, "wrong") &&
	     strcmp(r->check, "skipped"))) {
		diag_error(d, where, (int)m->lines, 0, "point: missing or bad "
			   "'%s'%s", missing ? missing : !r->op[0] ? "op" :
			   !r->type[0] ? "dtype" : "check", need(missing));
		goto drop;
	}
	/* the fastest, median and slowest iteration in order (9, 5, 1 was
	 * stored as measured) */
	if (!(r->time_min_s <= r->time_s && r->time_s <= r->time_max_s)) {
		diag_error(d, where, (int)m->lines, 0, "point: expected "
			   "time_min_us <= time_us <= time_max_us, got %g, %g, "
			   "%g", r->time_min_s * 1e6, r->time_s * 1e6,
			   r->time_max_s * 1e6);
		goto drop;
	}
	m->npts++;
	r->root = isnan(root) ? -1 : (int)root;
	if (strcmp(r->op, "gemm") == 0) {	/* checked: point_numbers */
		r->m = (int64_t)num_of(o, "m");
		r->n = (int64_t)num_of(o, "n");
		r->k = (int64_t)num_of(o, "k");
	}
	r->algbw_Bps = num_of(o, "algbw_GBps") * 1e9;
	r->busbw_Bps = num_of(o, "busbw_GBps") * 1e9;
	r->rate = strcmp(r->op, "gemm") == 0 ? num_of(o, "tflops") * 1e12 :
		  num_of(o, "GBps") * 1e9;
	if (m->protocol == 1 && from_protocol1(r, o) != 0) {
		diag_oom(d);	/* the point stays counted: freed with m */
		return -1;
	}
	return 1;
drop:
	/* not counted: a half-read point stored with zeros failed the
	 * store's checks, and every good point of the run with it */
	mem_free((char *)r->op);
	mem_free((char *)r->type);
	mem_free((char *)r->check);
	memset(r, 0, sizeof(*r));
	return -1;
}

static int error_line(struct measure_log *m, const cJSON *o)
{
	double st = num_of(o, "status");

	m->err_status = st >= 1 && st <= 4 ? (int)st : 1;
	m->err_line = m->lines;
	mem_free(m->err_msg);
	mem_free(m->err_reason);
	m->err_msg = str_of(o, "message");
	m->err_reason = str_of(o, "reason");
	return 0;
}

/* Whether a line of type ty belongs to the next run (see measure.h). */
static int opens_next(const struct measure_log *m, const char *ty)
{
	int done = m->ended || m->err_status;

	if (strcmp(ty, "hello") == 0)
		return m->have_hello || m->first_point_line || done;
	return done && (strcmp(ty, "error") == 0 || strcmp(ty, "point") == 0 ||
			strcmp(ty, "end") == 0);
}

int measure_line(struct measure_log *m, const char *line, const char *where,
		 struct diag *d)
{
	cJSON *o;
	const cJSON *t;
	int rc = 0;

	m->lines++;
	if (line[strspn(line, " \t\r\n")] == '\0')
		return 0;
	o = cJSON_Parse(line);
	t = o ? cJSON_GetObjectItemCaseSensitive(o, "type") : NULL;
	if (!cJSON_IsString(t)) {
		size_t n = strcspn(line, "\r\n");

		diag_error(d, where, (int)m->lines, 0, "not a protocol line "
			   "(a JSON object with a \"type\"): '%.*s'",
			   (int)(n < 60 ? n : 60), line);
		cJSON_Delete(o);
		return -1;
	}
	if (opens_next(m, t->valuestring)) {
		m->lines--;
		cJSON_Delete(o);
		return MEASURE_NEXT;
	}
	if (strcmp(t->valuestring, "hello") == 0) {
		rc = hello(m, o, where, d);
		if (!m->hello_line)
			m->hello_line = m->lines;
	} else if (strcmp(t->valuestring, "point") == 0) {
		if (!m->first_point_line)
			m->first_point_line = m->lines;
		rc = point(m, o, where, d);
	}
	else if (strcmp(t->valuestring, "error") == 0)
		rc = error_line(m, o);
	else if (strcmp(t->valuestring, "end") == 0) {
		m->ended = 1;
		m->end_line = m->lines;
		m->end_points = num_of(o, "points");
	}
	if (rc == 1 && m->points && cJSON_AddItemToArray(m->points, o))
		return 1;
	cJSON_Delete(o);
	return rc;
}

/* ------------------------------------------------------------------ */
/* A stream of runs                                                    */

static int stream_add(struct measure_stream *s, struct diag *d)
{
	struct measure_log *m;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;
		struct measure_log **v = mem_realloc(s->runs,
						     cap * sizeof(*v));

		if (!v) {
			diag_oom(d);
			return -1;
		}
		s->runs = v;
		s->cap = cap;
	}
	if (!(m = mem_alloc(sizeof(*m)))) {
		diag_oom(d);
		return -1;
	}
	measure_init(m);
	if (!m->points) {
		mem_free(m);
		diag_oom(d);
		return -1;
	}
	m->lines = s->lines;
	m->first_line = s->lines + 1;
	s->runs[s->n++] = m;
	return 0;
}

int measure_stream_init(struct measure_stream *s, struct diag *d)
{
	memset(s, 0, sizeof(*s));
	return stream_add(s, d);
}

void measure_stream_release(struct measure_stream *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		measure_release(s->runs[i]);
		mem_free(s->runs[i]);
	}
	mem_free(s->runs);
	memset(s, 0, sizeof(*s));
}

/* The line number a run counts from before the stream's next line
 * (measure_line adds one): the file's line of a converted stream's. */
static unsigned line_before(const struct measure_stream *s)
{
	return s->src_line && s->lines < s->nsrc && s->src_line[s->lines] ?
	       s->src_line[s->lines] - 1 : s->lines;
}

int measure_stream_line(struct measure_stream *s, const char *line,
			const char *where, int *opened, struct diag *d)
{
	struct measure_log *m = s->runs[s->n - 1];
	int rc;

	*opened = 0;
	m->lines = line_before(s);
	rc = measure_line(m, line, where, d);
	if (rc == MEASURE_NEXT) {
		if (stream_add(s, d) != 0)
			return MEASURE_BAD;
		*opened = 1;
		m = s->runs[s->n - 1];
		m->lines = line_before(s);
		m->first_line = m->lines + 1;
		rc = measure_line(m, line, where, d);	/* a fresh run: no NEXT */
	}
	s->lines++;	/* measure_line took it: one line on */
	return rc;
}

uint32_t measure_stream_points(const struct measure_stream *s)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		n += s->runs[i]->npts;
	return n;
}

int measure_run_incomplete(const struct measure_log *m)
{
	return m->have_hello && !m->ended;
}

void measure_run_error(const struct measure_log *m, char *buf, size_t len)
{
	if (!m->err_status) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len, "status %d (%s): %s", m->err_status,
		 m->err_reason && m->err_reason[0] ? m->err_reason : "no reason",
		 m->err_msg ? m->err_msg : "");
}
