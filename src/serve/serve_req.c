/*
 * serve_req.c - the requests of a serving run: drawn, or read from a
 * trace file.
 *
 * Drawn (GSL's MT19937 seeded with serving.seed; the draws for request i
 * are its arrival gap, then its input length, then its output length):
 *
 *   arrivals   arrival_rate = inf: all at t = 0 (offline, as
 *              `vllm bench throughput`, `trtllm-bench` and MLPerf Offline
 *              queue them); else a Poisson process of that rate,
 *              exponential gaps of mean 1/rate from t = 0 (the first
 *              request arrives after one gap)
 *   lengths    fixed: round(mean); normal(mean, stddev); lognormal with
 *              that mean and stddev (sigma^2 = ln(1 + s^2/m^2),
 *              mu = ln m - sigma^2/2); uniform integers in [min, max];
 *              exponential of that mean; rounded to the nearest integer
 *              and clamped to [min, max] (max 0: no bound)
 *
 * Prefix cache: a request's first floor(hit_rate x input / page) pages
 * of its prompt are found cached (a hit never covers the whole prompt:
 * the last token is always computed, as vLLM and SGLang keep one token to
 * compute the first output's logits).
 *
 * Trace file (serving.trace, relative to the job file): CSV, one request
 * a row, `arrival_s,input_len,output_len`; an optional header row of
 * those names (the first row that is not blank or a comment); blank
 * lines and lines starting with '#' ignored. Numbers are base 10 (no hex,
 * as the YAML loader reads them). Arrival in seconds (>= 0); lengths
 * integers >= 1, input + output within serving.max_model_len, else the
 * model's context (max_position_embeddings: vLLM and TensorRT-LLM reject
 * a longer request; serve_setup.c's context_fit checks drawn ones). Rows are
 * sorted by arrival (stable; a note at the first row out of order,
 * read_trace). A bad row is reported as FILE:LINE:COL: error: ... for
 * every bad field, and the run stops (exit 2).
 */
#include "serve_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"

/* The latest arrival a request may have, drawn or a trace row's: far
 * inside the engine's 2^62 ns (about 146 years), about 32 years. */
#define ARRIVAL_MAX_S 1e9

int64_t serve_context_len(const struct job_spec *j)
{
	if (j->serving.max_model_len > 0)
		return j->serving.max_model_len;
	return j->model ? j->model->max_position_embeddings : 0;
}

const char *serve_context_name(const struct job_spec *j)
{
	return j->serving.max_model_len > 0 ? "'serving.max_model_len'" :
	       "the model's context";
}

const char *serve_context_note(const struct job_spec *j)
{
	return j->serving.max_model_len > 0 ? "" :
	       " (max_position_embeddings)";
}

/* ---- drawn ---- */

static double draw_len(const struct len_spec *l, gsl_rng *r)
{
	double m = l->mean, s = l->stddev, v, s2;

	switch (l->dist) {
	case LEN_NORMAL:
		v = m + gsl_ran_gaussian(r, s);
		break;
	case LEN_LOGNORMAL:
		s2 = log(1 + s * s / (m * m));
		v = gsl_ran_lognormal(r, log(m) - s2 / 2, sqrt(s2));
		break;
	case LEN_UNIFORM:
		v = (double)l->min + (double)gsl_rng_uniform_int(r,
			(unsigned long)(l->max - l->min + 1));
		break;
	case LEN_EXPONENTIAL:
		v = gsl_ran_exponential(r, m);
		break;
	default:
		v = m;
		break;
	}
	v = round(v);
	if (v < (double)l->min)
		v = (double)l->min;
	if (l->max > 0 && v > (double)l->max)
		v = (double)l->max;
	return fmax(v, 1);
}

static int64_t prefix_hit(const struct job_spec *j, int64_t input)
{
	const struct serving_spec *s = &j->serving;
	int64_t page = s->engine->block_size, hit;

	if (!s->engine->prefix_caching || s->prefix_cache_hit_rate <= 0)
		return 0;
	hit = (int64_t)floor(s->prefix_cache_hit_rate * (double)input /
			     (double)page) * page;
	return hit >= input ? ((input - 1) / page) * page : hit;
}

static void init_req(struct serve_req *r, double t, int64_t in, int64_t out)
{
	memset(r, 0, sizeof(*r));
	r->arrival_s = t;
	r->input = in;
	r->prompt = in;
	r->output = out;
	r->instance = -1;
	r->adp_rank = r->adp_inst = -1;
	r->first_scheduled_s = r->first_token_s = r->done_s = -1;
}

/* The requests' draws: 0, -1 out of memory (unreported), -2 an arrival
 * past ARRIVAL_MAX_S (a rate too low for the count: reported). */
static int draw(const struct job_spec *j, struct serve_req *v, int64_t n,
		struct diag *d)
{
	const struct serving_spec *s = &j->serving;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	double t = 0;
	int64_t i;

	if (!r)
		return -1;
	gsl_rng_set(r, (unsigned long)s->seed);
	for (i = 0; i < n; i++) {
		double in, out;

		if (isfinite(s->arrival_rate))
			t += gsl_ran_exponential(r, 1 / s->arrival_rate);
		if (t > ARRIVAL_MAX_S) {
			diag_error(d, NULL, 0, 0, "serving.arrival_rate %g "
				   "requests/s: request %lld of %lld would "
				   "arrive at %.6g s, past the %.0e s (about 32 "
				   "years) llmsim simulates; raise arrival_rate "
				   "or lower serving.requests (%lld requests "
				   "take about %.3g s at this rate)",
				   s->arrival_rate, (long long)i + 1,
				   (long long)n, t, ARRIVAL_MAX_S, (long long)n,
				   (double)n / s->arrival_rate);
			gsl_rng_free(r);
			return -2;
		}
		in = draw_len(&s->input_len, r);
		out = draw_len(&s->output_len, r);
		init_req(&v[i], t, (int64_t)in, (int64_t)out);
		v[i].cached = prefix_hit(j, v[i].input);
	}
	gsl_rng_free(r);
	return 0;
}

/* ---- trace files ---- */

struct row_parser {
	const char *path;
	int line;
	struct diag *d;
	int bad;
	int64_t max_ctx;	/* serve_context_len; 0 = no bound */
	const char *ctx_name;	/* serve_context_name */
	const char *ctx_note;	/* serve_context_note */
};

/* The trace path: relative to the file that named it (not "--set"). */
static char *trace_path(const struct serving_spec *s)
{
	const char *from = s->trace_from, *slash;
	size_t dir;
	char *p;

	if (s->trace[0] == '/' || !from || !strchr(from, '/') ||
	    strcmp(from, "--set") == 0)
		return mem_strdup(s->trace);
	slash = strrchr(from, '/');
	dir = (size_t)(slash - from) + 1;
	p = mem_alloc(dir + strlen(s->trace) + 1);
	if (!p)
		return NULL;
	memcpy(p, from, dir);
	strcpy(p + dir, s->trace);
	return p;
}

static void row_error(struct row_parser *rp, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void row_error(struct row_parser *rp, int col, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_error(rp->d, rp->path, rp->line, col, "%s", msg);
	rp->bad = 1;
}

/* Field `name` at col: a number (integer when want_int), >= lo. */
static double field(struct row_parser *rp, const char *text, int col,
		    const char *name, int want_int, double lo)
{
	char *end;
	double v;

	/* base 10 only, as the YAML loader reads numbers: strtod alone
	 * would take 0x10 (16), inf and nan */
	errno = 0;
	v = strtod(text, &end);
	if (end == text || *end != '\0' || errno || !isfinite(v) ||
	    text[strspn(text, "0123456789.eE+-")] != '\0') {
		row_error(rp, col, "'%s': expected a number, got '%s'%s", name,
			  text, end != text && *end == '\0' ?
			  " (base 10 only)" : "");
		return 0;
	}
	if (want_int && v != floor(v)) {
		row_error(rp, col, "'%s': expected a whole number of tokens, "
			  "got '%s'", name, text);
		return 0;
	}
	if (v < lo || v > ARRIVAL_MAX_S) {
		if (lo > 0)
			row_error(rp, col, "'%s': expected at least 1 token "
				  "(and at most 1e9), got '%s'", name, text);
		else
			row_error(rp, col, "'%s': expected 0 s or later (and "
				  "at most 1e9 s), got '%s'", name, text);
		return 0;
	}
	return v;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
			 e[-1] == '\n'))
		*--e = '\0';
	return s;
}

static const char *const columns[] = {"arrival_s", "input_len",
				      "output_len"};

/* Parse one data row into r; errors to rp. */
static void parse_row(struct row_parser *rp, char *line, struct serve_req *r)
{
	double v[3] = {0, 0, 0};
	char *p = line, *next;
	int k, col[3] = {1, 1, 1}, was_bad = rp->bad;

	rp->bad = 0;
	for (k = 0; k < 3; k++) {
		col[k] = (int)(p - line + (ptrdiff_t)strspn(p, " \t")) + 1;

		next = strchr(p, ',');
		if (next)
			*next = '\0';
		else if (k < 2) {
			row_error(rp, (int)strlen(line) + 1, "expected 3 "
				  "fields (%s,...), the row ends after '%s'",
				  "arrival_s,input_len,output_len", columns[k]);
			rp->bad = 1;
			break;
		}
		v[k] = field(rp, trim(p), col[k], columns[k], k > 0, k ? 1 : 0);
		if (!next)
			break;
		p = next + 1;
	}
	if (k == 3 && next)
		row_error(rp, (int)(p - line) + 1, "expected 3 fields, got "
			  "more: '%s'", trim(p));
	if (!rp->bad && rp->max_ctx > 0 && v[1] + v[2] > (double)rp->max_ctx)
		row_error(rp, col[1], "a request of %.0f prompt + %.0f output "
			  "tokens exceeds %s of %lld tokens%s: vLLM "
			  "(max_model_len) and TensorRT-LLM (max_seq_len) "
			  "reject it", v[1], v[2], rp->ctx_name,
			  (long long)rp->max_ctx, rp->ctx_note);
	rp->bad |= was_bad;
	init_req(r, v[0], (int64_t)v[1], (int64_t)v[2]);
}

static int is_header(const char *line)
{
	return strncmp(line, "arrival_s", 9) == 0;
}

static int by_arrival(const void *a, const void *b)
{
	const struct serve_req *x = a, *y = b;

	if (x->arrival_s != y->arrival_s)
		return x->arrival_s < y->arrival_s ? -1 : 1;
	return x->instance < y->instance ? -1 : x->instance > y->instance;
}

/*
 * Rows out of arrival order are replayed in arrival order (a stable sort:
 * equal arrivals keep file order), with a note at the first such row:
 * arrival_s is an absolute time, so the file's order carries no meaning
 * of its own (a trace merged from several clients' logs interleaves),
 * and a replay tool that sends each request at its timestamp does the
 * same. The note says so, as the order was not the file's.
 */
static int read_trace(const struct job_spec *j, struct serve_req **out,
		      int64_t *n, struct diag *d)
{
	struct row_parser rp = {NULL, 0, d, 0, serve_context_len(j),
				serve_context_name(j), serve_context_note(j)};
	struct serve_req *v = NULL, *grown;
	int64_t cap = 0, k = 0;
	char *buf = NULL, *line;
	size_t bufcap = 0;
	ssize_t got;
	FILE *f;
	int rc = -2, seen_row = 0, unsorted_line = 0;
	double latest = 0, unsorted_at = 0;

	rp.path = trace_path(&j->serving);
	if (!rp.path) {
		diag_oom(d);
		return -1;
	}
	f = fopen(rp.path, "r");
	if (!f) {
		diag_error(d, j->serving.file, j->serving.line, j->serving.col,
			   "'serving.trace': cannot read '%s': %s", rp.path,
			   strerror(errno));
		goto out;
	}
	/* getline: a row of any length is one row (a 4 KiB fgets cut a
	 * long one in two and numbered every later line one too many) */
	while ((errno = 0, got = getline(&buf, &bufcap, f)) > 0) {
		rp.line++;
		if (strlen(buf) != (size_t)got) {
			diag_error(d, rp.path, rp.line, (int)strlen(buf) + 1,
				   "a NUL byte in the row (the trace is CSV "
				   "text)");
			rp.bad = 1;
			continue;
		}
		/* a UTF-8 byte-order mark, as spreadsheets save CSV: not part
		 * of the first field ("expected a number, got '<BOM>0'") */
		if (rp.line == 1 && strncmp(buf, "\xEF\xBB\xBF", 3) == 0)
			memmove(buf, buf + 3, strlen(buf + 3) + 1);
		line = trim(buf);
		if (!*line || *line == '#')
			continue;
		if (!seen_row++ && is_header(line))
			continue;	/* the first row may name the columns */
		if (k == cap) {
			cap = cap ? 2 * cap : 1024;
			grown = mem_realloc(v, (size_t)cap * sizeof(*v));
			if (!grown) {
				diag_oom(d);
				rc = -1;
				goto close;
			}
			v = grown;
		}
		parse_row(&rp, line, &v[k]);
		v[k].instance = (int)(k & INT_MAX);	/* file order, for the sort */
		v[k].cached = prefix_hit(j, v[k].input);
		if (!rp.bad && !unsorted_line && v[k].arrival_s < latest) {
			unsorted_line = rp.line;
			unsorted_at = v[k].arrival_s;
		}
		latest = fmax(latest, v[k].arrival_s);
		k++;
	}
	if (ferror(f) || (got < 0 && errno == ENOMEM)) {
		if (errno == ENOMEM) {
			diag_oom(d);
			rc = -1;
		} else {
			diag_error(d, j->serving.file, j->serving.line,
				   j->serving.col, "'serving.trace': cannot "
				   "read '%s': %s", rp.path, strerror(errno));
		}
		goto close;
	}
	if (!rp.bad && k == 0) {
		diag_error(d, rp.path, rp.line ? rp.line : 1, 1, "the trace "
			   "has no request rows (arrival_s,input_len,output_len)");
		goto close;
	}
	if (rp.bad)
		goto close;
	if (unsorted_line)
		diag_note(d, rp.path, unsorted_line, 1, "arrival %g s comes "
			  "after %g s on an earlier row: the requests are "
			  "replayed in arrival order (sorted, ties in file "
			  "order), not in the file's", unsorted_at, latest);
	qsort(v, (size_t)k, sizeof(*v), by_arrival);
	for (cap = 0; cap < k; cap++)
		v[cap].instance = -1;
	*out = v;
	*n = k;
	v = NULL;
	rc = 0;
close:
	free(buf);	/* getline's, from malloc */
	fclose(f);
out:
	mem_free(v);
	mem_free((char *)rp.path);
	return rc;
}

/* Lines of the trace file (its rows, header and comments included). */
static int64_t trace_lines(const struct job_spec *j)
{
	char *path = trace_path(&j->serving), buf[65536];
	int64_t lines = 0;
	size_t got, i;
	char last = '\n';
	FILE *f = path ? fopen(path, "r") : NULL;

	mem_free(path);
	if (!f)
		return 0;
	while ((got = fread(buf, 1, sizeof(buf), f)) > 0) {
		for (i = 0; i < got; i++)
			lines += buf[i] == '\n';
		last = buf[got - 1];
	}
	fclose(f);
	return lines + (last != '\n');
}

double serve_memory_B(const struct job_spec *j, int64_t *n)
{
	double per = (double)(sizeof(struct serve_req) + 4 * sizeof(double) +
			      2 * sizeof(int64_t));

	if (j->serving.trace) {
		*n = trace_lines(j);
		per += (double)sizeof(struct serve_req);
	} else {
		*n = j->serving.requests;
	}
	return per * (double)*n;
}

int serve_requests(const struct job_spec *j, struct serve_req **out,
		   int64_t *n, struct diag *d)
{
	int64_t count = j->serving.requests;
	int rc;

	*out = NULL;
	*n = 0;
	if (j->serving.trace)
		return read_trace(j, out, n, d);
	*out = mem_calloc((size_t)count, sizeof(**out));
	rc = *out ? draw(j, *out, count, d) : -1;
	if (rc != 0) {
		mem_free(*out);
		*out = NULL;
		if (rc == -1)
			diag_oom(d);
		return rc;
	}
	*n = count;
	return 0;
}

/* Mean tokens a decode (verify) step keeps: 1, or under speculative
 * decoding (1 - p^(k+1)) / (1 - p) (serve_sim.c's acceptance). */
static double verify_tokens(const struct speculative_spec *sp)
{
	double p = sp->acceptance_rate, k = (double)sp->tokens;

	if (sp->method == SPEC_NONE)
		return 1;
	return p >= 1 ? k + 1 : (1 - pow(p, k + 1)) / (1 - p);
}

/* Steps of n requests of `steps` steps in all (the longest `longest`,
 * the shortest `shortest`) over `inst` instances when every step is
 * full: the batch's bounds (tokens / max_tokens, steps / max_seqs), and
 * one request's steps on each instance that has one (round-robin: one
 * each while there are requests), which follow each other. */
static double packed_steps(double steps, double tokens, double longest,
			   double shortest, double n, double inst,
			   double seqs, double toks)
{
	double busy = fmin(inst, n);

	if (n <= 0)
		return 0;
	return fmax(longest + (busy - 1) * shortest,
		    fmax(toks > 0 ? ceil(tokens / toks) : 0,
			 seqs > 0 ? ceil(steps / seqs) : 0));
}

void serve_trace_estimate_of(const struct job_spec *j,
			     const struct serve_req *v, int64_t n,
			     struct serve_trace_est *e)
{
	const struct serving_spec *sv = &j->serving;
	const struct engine_spec *eng = sv->engine;
	const struct disagg_spec *dg = &sv->disaggregated;
	double seqs, toks, tau = verify_tokens(&sv->speculative);
	/* [0] prompt steps, [1] decode steps, [2] both: sums, a request's
	 * most and fewest */
	double st[3] = {0, 0, 0}, tk[2] = {0, 0}, hi[3] = {0, 0, 0};
	double lo[3] = {INFINITY, INFINITY, INFINITY}, inst[2], last = 0;
	int chunked;
	int64_t i;
	int k;

	memset(e, 0, sizeof(*e));
	if (!eng)
		return;
	seqs = (double)(sv->max_num_seqs ? sv->max_num_seqs : eng->max_num_seqs);
	toks = (double)(sv->max_num_batched_tokens ? sv->max_num_batched_tokens :
			eng->max_num_batched_tokens);
	chunked = sv->chunked_prefill >= 0 ? sv->chunked_prefill :
		  eng->chunked_prefill;
	for (i = 0; i < n; i++) {
		double p = (double)(v[i].input - v[i].cached);
		double o = fmax((double)v[i].output - 1, 0);
		double one[3] = {chunked && toks > 0 ?
				 ceil(fmax(p, 1) / toks) : 1, ceil(o / tau), 0};

		one[2] = one[0] + one[1];
		for (k = 0; k < 3; k++) {
			st[k] += one[k];
			hi[k] = fmax(hi[k], one[k]);
			lo[k] = fmin(lo[k], one[k]);
		}
		tk[0] += p;
		tk[1] += o;
		last = fmax(last, v[i].arrival_s);
	}
	e->requests = n;
	e->steps_hi = st[2];
	if (dg->enabled) {	/* prompts and decodes on pools of their own */
		inst[0] = (double)dg->prefill.instances;
		inst[1] = (double)dg->decode.instances;
		for (k = 0; k < 2; k++)
			e->steps_lo += packed_steps(st[k], tk[k], hi[k], lo[k],
						    (double)n, inst[k], seqs,
						    toks);
	} else {
		inst[0] = j->parallelism.attention_dp ? 1 :
			  (double)j->parallelism.dp;
		/* one request's steps: its prompt's and its decodes' */
		e->steps_lo = packed_steps(st[2], tk[0] + tk[1], hi[2], lo[2],
					   (double)n, inst[0], seqs, toks);
	}
	e->steps_lo = fmin(e->steps_lo, e->steps_hi);
	/* a step's events at the middle of the run, a full batch */
	e->step_B = serve_trace_step_B(0, last / 2 + 1, 0.02,
				       fmin(seqs, (double)n),
				       fmin(toks, fmin(seqs, (double)n) * tau),
				       n);
	e->lo_B = e->steps_lo * e->step_B;
	e->hi_B = e->steps_hi * e->step_B;
}

int serve_reqs_new(const struct job_spec *j, struct serve_reqs **out,
		   struct diag *d)
{
	struct serve_reqs *r = mem_calloc(1, sizeof(*r));
	int rc;

	*out = NULL;
	if (!r) {
		diag_oom(d);
		return -1;
	}
	rc = serve_requests(j, &r->v, &r->n, d);
	if (rc != 0) {
		mem_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void serve_reqs_free(struct serve_reqs *r)
{
	if (!r)
		return;
	mem_free(r->v);
	mem_free(r);
}

void serve_trace_estimate(const struct job_spec *j, const struct serve_reqs *r,
			  struct serve_trace_est *e)
{
	memset(e, 0, sizeof(*e));
	if (j->serving.engine)
		serve_trace_estimate_of(j, r->v, r->n, e);
}
