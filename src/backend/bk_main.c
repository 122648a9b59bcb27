/*
 * bk_main.c - what every measurement backend shares: the command line,
 * the size sweep, the statistics and the JSON-lines protocol
 * (docs/measure.md). A driver (struct bk_driver) does the measuring.
 *
 *   llmsim-backend-X --op OP [--min SIZE] [--max SIZE] [--step-factor F]
 *                    [--dtype T] [--iters N] [--warmup N] [--check 0|1]
 *                    [--budget SECONDS] [--gpus N] [--root R]
 *                    [--m M --n N --k K] [--lib PATH] [--blas PATH]
 *
 * Sizes are the testers': bytes or K/M/G (2^10, 2^20, 2^30), rounded down
 * to whole elements and, for all-gather, reduce-scatter and the
 * all-to-alls, to what the library's own test suite runs per rank
 * (bk_param_count: nccl-tests for cuda, rccl-tests for hip and mpi); the
 * point's count is that suite's (per rank for those ops). Per point: --warmup untimed
 * iterations, then up to --iters timed ones (fewer, but at least 3, when
 * one iteration takes more than --budget / --iters), then one checked
 * iteration. The printed time is the median over iterations of the
 * slowest rank's time; min and max are printed too.
 *
 * Only the root process prints. Built with the backend's own compiler:
 * plain C11, no dependency but libc and libm.
 */
#include "bk.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 2: a split op's count is per rank (nccl-tests' paramcount) and an
 * all-to-all-v's size is what each rank sends, as the testers print
 * them; protocol 1 printed the whole buffer's elements and an
 * all-to-all-v of size / ranks (measure_proto.c reads both). */
#define BK_PROTOCOL 2
#define MAX_POINTS 256

const char *const bk_op_names[BK_OP_COUNT + 1] = {
	"allreduce", "allgather", "reducescatter", "alltoall", "alltoallv",
	"broadcast", "reduce", "sendrecv", "gemm", "copy", NULL,
};

const char *const bk_dtype_names[BK_DTYPE_COUNT + 1] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
	"float", "double", "bfloat16", NULL,
};

const size_t bk_dtype_size[BK_DTYPE_COUNT] = {
	1, 1, 4, 4, 8, 8, 2, 4, 8, 2,
};

int bk_fail(char *err, size_t errlen, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return status;
}

double bk_fill_value(int rank, size_t i)
{
	return (double)(((size_t)rank + i) % 3);
}

int bk_iters_for(const struct bk_case *c, double first_s)
{
	double fit = first_s > 0 ? c->budget_s / first_s : c->iters;
	int n = fit >= c->iters ? c->iters : fit < 3 ? 3 : (int)fit;

	return n > c->iters ? c->iters : n;
}

double bk_busbw_factor(enum bk_op op, int p)
{
	double q = p;

	switch (op) {
	case BK_ALLREDUCE:
		return p > 1 ? 2 * (q - 1) / q : 1;
	case BK_ALLGATHER:
	case BK_REDUCESCATTER:
	case BK_ALLTOALL:
	case BK_ALLTOALLV:
		return p > 1 ? (q - 1) / q : 1;
	default:
		return 1;
	}
}

/* IEEE half and bfloat16 from a small integer-valued double (exact). */
static uint16_t to_half(double x)
{
	float f = (float)x;
	uint32_t u;
	int e;

	memcpy(&u, &f, sizeof(u));
	if (f == 0)
		return 0;
	e = (int)((u >> 23) & 0xff) - 127 + 15;
	return (uint16_t)(((u >> 16) & 0x8000) | ((uint32_t)e << 10) |
			  ((u >> 13) & 0x3ff));
}

static double from_half(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	double m = h & 0x3ff, v;

	if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(1024 + m, e - 25);
	return h & 0x8000 ? -v : v;
}

static uint16_t to_bf16(double x)
{
	float f = (float)x;
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

void bk_store(void *buf, enum bk_dtype dt, size_t i, double x)
{
	switch (dt) {
	case BK_INT8: ((int8_t *)buf)[i] = (int8_t)x; break;
	case BK_UINT8: ((uint8_t *)buf)[i] = (uint8_t)x; break;
	case BK_INT32: ((int32_t *)buf)[i] = (int32_t)x; break;
	case BK_UINT32: ((uint32_t *)buf)[i] = (uint32_t)x; break;
	case BK_INT64: ((int64_t *)buf)[i] = (int64_t)x; break;
	case BK_UINT64: ((uint64_t *)buf)[i] = (uint64_t)x; break;
	case BK_HALF: ((uint16_t *)buf)[i] = to_half(x); break;
	case BK_FLOAT: ((float *)buf)[i] = (float)x; break;
	case BK_DOUBLE: ((double *)buf)[i] = x; break;
	case BK_BFLOAT16: ((uint16_t *)buf)[i] = to_bf16(x); break;
	default: break;
	}
}

double bk_load(const void *buf, enum bk_dtype dt, size_t i)
{
	switch (dt) {
	case BK_INT8: return ((const int8_t *)buf)[i];
	case BK_UINT8: return ((const uint8_t *)buf)[i];
	case BK_INT32: return ((const int32_t *)buf)[i];
	case BK_UINT32: return ((const uint32_t *)buf)[i];
	case BK_INT64: return (double)((const int64_t *)buf)[i];
	case BK_UINT64: return (double)((const uint64_t *)buf)[i];
	case BK_HALF: return from_half(((const uint16_t *)buf)[i]);
	case BK_FLOAT: return ((const float *)buf)[i];
	case BK_DOUBLE: return ((const double *)buf)[i];
	case BK_BFLOAT16: return from_bf16(((const uint16_t *)buf)[i]);
	default: return NAN;
	}
}

int bk_split_op(enum bk_op op)
{
	return op == BK_ALLGATHER || op == BK_REDUCESCATTER ||
	       op == BK_ALLTOALL || op == BK_ALLTOALLV;
}

/* nccl-tests v2.19.6 (since v2.13.12, 29f4114): all_gather.cu,
 * reduce_scatter.cu, alltoall.cu and alltoallv.cu round count / nranks
 * down to 16 B (`& ~(16/eltSize - 1)`). rccl-tests @ ae3e635:
 * all_gather.cu and reduce_scatter.cu to ALIGN 4 elements
 * ((count / (ALIGN * nranks)) * ALIGN), alltoall.cu to one, and
 * alltoallv.cu runs count 0 below nranks^2 / 2 elements. Other ops take
 * count itself. */
size_t bk_param_count(enum bk_tester t, enum bk_op op, enum bk_dtype dt,
		      size_t n, int p)
{
	size_t per = p > 0 ? n / (size_t)p : 0, es = bk_dtype_size[dt];

	if (!bk_split_op(op))
		return n;
	if (t == BK_NCCL_TESTS)
		return es <= 16 ? per & ~(16 / es - 1) : per;
	if (op == BK_ALLGATHER || op == BK_REDUCESCATTER)
		return per / 4 * 4;
	if (op == BK_ALLTOALLV && n < (size_t)p * (size_t)p / 2)
		return 0;
	return per;
}

size_t bk_a2av_count(size_t n, int p, int src, int dst)
{
	size_t w = (size_t)((src + dst) % p) + 1, W = (size_t)p * (size_t)(p + 1) / 2;
	size_t share = n * w / W, sum = 0;
	int j;

	if ((src + dst) % p != p - 1)
		return share;
	/* The largest weight takes what flooring left over, so every rank
	 * sends and receives exactly n. */
	for (j = 0; j < p; j++)
		sum += n * ((size_t)((src + j) % p) + 1) / W;
	return share + (n - sum);
}

/* ------------------------------------------------------------------ */
/* Command line                                                        */

static int name_index(const char *const *names, const char *s)
{
	int i;

	for (i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

/* rccl-tests sizes: bytes or K/M/G of 2^10/2^20/2^30. */
static int parse_size(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v >= 0))
		return -1;
	switch (*end) {
	case '\0': break;
	case 'K': case 'k': v *= 1024.0; end++; break;
	case 'M': case 'm': v *= 1048576.0; end++; break;
	case 'G': case 'g': v *= 1073741824.0; end++; break;
	default: return -1;
	}
	if (*end != '\0' || v > 1e15)
		return -1;
	*out = floor(v);
	return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void usage(const char *name)
{
	fprintf(stderr, "usage: llmsim-backend-%s --op OP [--min SIZE] "
		"[--max SIZE] [--step-factor F] [--dtype T]\n"
		"       [--iters N] [--warmup N] [--check 0|1] [--budget S] "
		"[--gpus N] [--root R]\n"
		"       [--m M --n N --k K] [--lib PATH] [--blas PATH]\n", name);
}

/* One option with its value; 0 ok, -1 bad (reported). */
static int option(struct bk_opts *o, const char *opt, const char *v)
{
	long x = 0;
	int i, bad = 0;

	if (strcmp(opt, "--op") == 0) {
		bad = (i = name_index(bk_op_names, v)) < 0;
		o->op = (enum bk_op)(bad ? 0 : i);
	} else if (strcmp(opt, "--dtype") == 0) {
		bad = (i = name_index(bk_dtype_names, v)) < 0;
		o->dtype = (enum bk_dtype)(bad ? 0 : i);
	} else if (strcmp(opt, "--min") == 0) {
		bad = parse_size(v, &o->min_B) != 0;
	} else if (strcmp(opt, "--max") == 0) {
		bad = parse_size(v, &o->max_B) != 0;
	} else if (strcmp(opt, "--step-factor") == 0) {
		o->factor = strtod(v, NULL);
		bad = !(o->factor >= 1);
	} else if (strcmp(opt, "--budget") == 0) {
		o->budget_s = strtod(v, NULL);
		bad = !(o->budget_s > 0);
	} else if (strcmp(opt, "--lib") == 0) {
		o->lib_path = v;
	} else if (strcmp(opt, "--blas") == 0) {
		o->blas_path = v;
	} else {
		static const char *const ints[] = {"--iters", "--warmup",
			"--check", "--gpus", "--root", "--m", "--n", "--k", NULL};
		static const long lo[] = {1, 0, 0, 0, 0, 1, 1, 1};

		if ((i = name_index(ints, opt)) < 0) {
			fprintf(stderr, "backend: unknown option '%s'\n", opt);
			return -1;
		}
		bad = parse_long(v, lo[i], 1L << 30, &x) != 0;
		switch (i) {
		case 0: o->iters = (int)x; break;
		case 1: o->warmup = (int)x; break;
		case 2: o->check = x != 0; break;
		case 3: o->gpus = (int)x; break;
		case 4: o->root = (int)x; break;
		case 5: o->m = x; break;
		case 6: o->n = x; break;
		default: o->k = x; break;
		}
	}
	if (bad)
		fprintf(stderr, "backend: %s: bad value '%s'\n", opt, v);
	return bad ? -1 : 0;
}

static int parse(struct bk_opts *o, int argc, char **argv)
{
	int i, have_op = 0;

	for (i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--", 2) != 0 || i + 1 == argc) {
			fprintf(stderr, "backend: expected --option VALUE, got "
				"'%s'\n", argv[i]);
			return -1;
		}
		have_op |= strcmp(argv[i], "--op") == 0;
		if (option(o, argv[i], argv[i + 1]) != 0)
			return -1;
		i++;
	}
	if (!have_op) {
		fprintf(stderr, "backend: --op is required (one of allreduce, "
			"allgather, reducescatter, alltoall, alltoallv, "
			"broadcast, reduce, sendrecv, gemm, copy)\n");
		return -1;
	}
	if (o->min_B > o->max_B) {
		fprintf(stderr, "backend: --min is larger than --max\n");
		return -1;
	}
	if (o->factor <= 1 && o->min_B != o->max_B) {
		fprintf(stderr, "backend: --step-factor must be above 1 to go "
			"from --min to --max\n");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Protocol                                                            */

/* s as a JSON string body (quotes and controls escaped). */
static void json_str(const char *key, const char *s)
{
	printf("\"%s\":\"", key);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_hello(const struct bk_driver *drv, const struct bk_opts *o,
			const struct bk_info *in)
{
	printf("{\"type\":\"hello\",\"protocol\":%d,", BK_PROTOCOL);
	json_str("backend", drv->name);
	putchar(',');
	json_str("host", in->host);
	putchar(',');
	json_str("device", in->device);
	putchar(',');
	json_str("library", in->library);
	putchar(',');
	json_str("library_version", in->library_version);
	putchar(',');
	json_str("library_path", in->library_path);
	putchar(',');
	json_str("runtime", in->runtime);
	printf(",\"ranks\":%d,\"nodes\":%d,\"devices_per_node\":%d,"
	       "\"cpus\":%d,\"iters\":%d,\"warmup\":%d}\n", in->ranks,
	       in->nodes, in->devices, in->cpus, o->iters, o->warmup);
	fflush(stdout);
}

static void print_error(int status, const char *reason, const char *msg)
{
	printf("{\"type\":\"error\",\"status\":%d,", status);
	json_str("reason", reason);
	putchar(',');
	json_str("message", msg);
	printf("}\n");
	fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_point(const struct bk_case *c, const struct bk_result *r,
			int ranks)
{
	double *t = r->time_s, med;
	int n = r->iters;

	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	/* the count the testers print: the call's, per rank for a split
	 * op (c->count is the buffer's, what the drivers allocate) */
	printf("{\"type\":\"point\",\"op\":\"%s\",\"dtype\":\"%s\","
	       "\"bytes\":%zu,\"count\":%zu,\"ranks\":%d,", bk_op_names[c->op],
	       bk_dtype_names[c->dtype], c->bytes, bk_split_op(c->op) ?
	       c->count / (size_t)ranks : c->count, ranks);
	if (c->op == BK_GEMM)
		printf("\"m\":%ld,\"n\":%ld,\"k\":%ld,\"tflops\":%.6g,", c->m,
		       c->n, c->k, 2.0 * (double)c->m * (double)c->n *
		       (double)c->k / med / 1e12);
	if (c->op == BK_BROADCAST || c->op == BK_REDUCE)
		printf("\"root\":%d,", c->root);
	printf("\"iters\":%d,\"time_us\":%.6g,\"time_min_us\":%.6g,"
	       "\"time_max_us\":%.6g,", n, med * 1e6, t[0] * 1e6,
	       t[n - 1] * 1e6);
	if (c->op == BK_COPY) {
		/* Read and written: 2 bytes of traffic per byte copied. */
		printf("\"GBps\":%.6g,", 2.0 * (double)c->bytes / med / 1e9);
	} else if (c->op != BK_GEMM) {
		double algbw = (double)c->bytes / med / 1e9;

		printf("\"algbw_GBps\":%.6g,\"busbw_GBps\":%.6g,", algbw,
		       algbw * bk_busbw_factor(c->op, ranks));
	}
	printf("\"check\":\"%s\",\"wrong\":%ld}\n",
	       !r->checked ? "skipped" : r->wrong ? "wrong" : "ok", r->wrong);
	fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* The sweep                                                           */

static struct bk_case make_case(const struct bk_driver *drv,
				const struct bk_opts *o, double size,
				int ranks)
{
	struct bk_case c;
	size_t es = bk_dtype_size[o->dtype], n;

	memset(&c, 0, sizeof(c));
	c.op = o->op;
	c.dtype = o->dtype;
	c.root = o->root;
	c.warmup = o->warmup;
	c.iters = o->iters;
	c.budget_s = o->budget_s;
	c.check = o->check;
	if (o->op == BK_GEMM) {
		long d = (long)size;

		c.m = o->m ? o->m : d;
		c.n = o->n ? o->n : d;
		c.k = o->k ? o->k : d;
		c.bytes = (size_t)(c.m * c.k + c.k * c.n + c.m * c.n) *
			  bk_dtype_size[o->dtype];
		c.count = (size_t)(c.m * c.n);
		return c;
	}
	n = bk_param_count(drv->tester, o->op, o->dtype, (size_t)(size / (double)es),
			   ranks);
	c.count = bk_split_op(o->op) ? n * (size_t)ranks : n;
	c.bytes = c.count * es;
	return c;
}

/* One point; BK_* status. */
static int run_point(const struct bk_driver *drv, const struct bk_case *c,
		     const struct bk_info *in, char *err, size_t errlen)
{
	struct bk_result r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.time_s = calloc((size_t)c->iters, sizeof(double));
	if (!r.time_s)
		return bk_fail(err, errlen, BK_FAIL, "out of memory");
	rc = drv->run(c, &r, err, errlen);
	if (rc == BK_OK && in->is_root)
		print_point(c, &r, in->ranks);
	if (rc == BK_OK && r.checked && r.wrong)
		rc = bk_fail(err, errlen, BK_FAIL, "%s of %zu B: %ld elements "
			     "wrong", bk_op_names[c->op], c->bytes, r.wrong);
	free(r.time_s);
	return rc;
}

static int sweep(const struct bk_driver *drv, const struct bk_opts *o,
		 const struct bk_info *in, char *err, size_t errlen)
{
	double s;
	int npoints = 0, rc = BK_OK;

	for (s = o->min_B; s <= o->max_B * (1 + 1e-12) && rc == BK_OK;
	     s *= o->factor) {
		struct bk_case c = make_case(drv, o, s, in->ranks);

		if (++npoints > MAX_POINTS)
			return bk_fail(err, errlen, BK_USAGE, "more than %d "
				       "sizes; raise --step-factor", MAX_POINTS);
		rc = run_point(drv, &c, in, err, errlen);
		rc = drv->agree(rc);
		if (o->factor <= 1 || (o->op == BK_GEMM && o->m && o->n && o->k))
			break;
	}
	if (rc == BK_OK && in->is_root)
		printf("{\"type\":\"end\",\"points\":%d}\n", npoints);
	return rc;
}

static const char *reason(int status)
{
	switch (status) {
	case BK_NO_DEVICE: return "no_device";
	case BK_NO_LIBRARY: return "no_library";
	case BK_USAGE: return "bad_input";
	default: return "failed";
	}
}

/* The reason on stderr too, unless `llmsim measure` runs us (it says
 * it from the error line: $LLMSIM_MEASURE is set). */
static void say(const struct bk_driver *drv, const char *err)
{
	if (!getenv("LLMSIM_MEASURE"))
		fprintf(stderr, "llmsim-backend-%s: %s\n", drv->name, err);
}

int bk_main(const struct bk_driver *drv, int argc, char **argv)
{
	struct bk_opts o = { .op = BK_ALLREDUCE, .dtype = BK_FLOAT,
			     .min_B = 32 << 20, .max_B = 32 << 20,
			     .factor = 2, .warmup = 5, .iters = 20,
			     .check = 1, .budget_s = 2 };
	struct bk_info in;
	char err[512] = "";
	int rc;

	if (parse(&o, argc, argv) != 0) {
		usage(drv->name);
		return BK_USAGE;
	}
	memset(&in, 0, sizeof(in));
	in.is_root = 1;
	in.cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (!drv->supports(o.op, o.dtype, err, sizeof(err))) {
		print_error(BK_USAGE, reason(BK_USAGE), err);
		say(drv, err);
		return BK_USAGE;
	}
	rc = drv->init(&argc, &argv, &o, &in, err, sizeof(err));
	if (rc == BK_OK) {
		if (in.is_root)
			print_hello(drv, &o, &in);
		rc = sweep(drv, &o, &in, err, sizeof(err));
	}
	if (rc != BK_OK && in.is_root) {
		print_error(rc, reason(rc), err);
		say(drv, err);
	}
	drv->finalize();
	return rc;
}
