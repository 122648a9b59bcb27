/*
 * exec_trace.c - an executed program as Chrome trace-event JSON.
 *
 * The format is the "JSON Object Format" of the Trace Event Format
 * (Chrome's chrome://tracing and Perfetto read it):
 *
 *   {"traceEvents":[
 *   {"ph":"M","pid":0,"name":"process_name","args":{"name":"rank 0"}},
 *   {"ph":"M","pid":0,"tid":1,"name":"thread_name","args":{"name":"comm"}},
 *   {"ph":"X","pid":0,"tid":0,"ts":12.345,"dur":0.500,"name":"qkv_fwd",
 *    "cat":"compute","args":{"category":"compute","layer":3,
 *    "microbatch":0,"critical":1}},
 *   ...],"displayTimeUnit":"ns"}
 *
 * pid = simulated rank, tid = stream; ts and dur are microseconds written
 * from integer ns with three decimals, so no time is rounded. Collectives
 * add "op", "bytes" (coll.h size convention) and "group" (GPUs) to args.
 * Events go out in rank, stream, task order: identical programs give
 * identical bytes.
 */
#include "exec_impl.h"

#include "base/diag.h"

#include <inttypes.h>

/* Write s as a JSON string. */
static void put_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

/* Integer ns as microseconds with three decimals ("12.345"). */
static void put_us(FILE *out, units_ns_t ns)
{
	fprintf(out, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

/* Start the next event of the list: a separator after the first. */
static void next_event(FILE *out, int *nev)
{
	fputs(*nev ? ",\n{" : "{", out);
	++*nev;
}

static void put_meta(FILE *out, int *nev, uint32_t rank, const char *what,
		     int64_t tid, const char *name)
{
	next_event(out, nev);
	fprintf(out, "\"ph\":\"M\",\"pid\":%u,", rank);
	if (tid >= 0)
		fprintf(out, "\"tid\":%" PRId64 ",", tid);
	fprintf(out, "\"name\":\"%s\",\"args\":{\"name\":", what);
	put_str(out, name);
	fputs("}}", out);
}

static void put_rank_meta(const struct prog *p, FILE *out, int *nev,
			  uint32_t rank,
			  void (*rank_label)(uint32_t, char *, size_t, void *),
			  void *arg)
{
	char buf[128];
	uint32_t s;

	if (rank_label) {
		buf[0] = '\0';
		rank_label(rank, buf, sizeof(buf), arg);
	} else {
		snprintf(buf, sizeof(buf), "rank %u", rank);
	}
	put_meta(out, nev, rank, "process_name", -1, buf);
	for (s = 0; s < p->nstreams; s++) {
		if (p->lane_head[rank * p->nstreams + s] == TASK_NONE)
			continue;
		if (p->stream_name[s])
			snprintf(buf, sizeof(buf), "%s", p->stream_name[s]);
		else
			snprintf(buf, sizeof(buf), "stream %u", s);
		put_meta(out, nev, rank, "thread_name", s, buf);
	}
}

static void put_task(const struct prog *p, FILE *out, int *nev, task_id t)
{
	struct task_info in;
	units_ns_t start = task_start_ns(p, t);
	uint32_t k = task_coll(p, t);

	exec_task_info(p, t, &in);
	next_event(out, nev);
	fprintf(out, "\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":",
		task_rank(p, t), p->task[t].lane % p->nstreams);
	put_us(out, start);
	fputs(",\"dur\":", out);
	put_us(out, task_end_ns(p, t) - start);
	fputs(",\"name\":", out);
	put_str(out, in.name);
	fprintf(out, ",\"cat\":\"%s\",\"args\":{\"category\":\"%s\","
		"\"layer\":%d,\"microbatch\":%d", exec_cat_name(in.cat),
		exec_cat_name(in.cat), in.layer, in.microbatch);
	if (k != UINT32_MAX) {
		const struct coll_desc *c = coll_desc_of(p, k);

		fprintf(out, ",\"op\":\"%s\",\"bytes\":%.17g,\"group\":%u",
			coll_op_names[c->op], c->bytes, c->ngpus);
	}
	if (p->critical[t / 64] >> (t % 64) & 1)
		fputs(",\"critical\":1", out);
	fputs("}}", out);
}

int exec_write_trace(const struct prog *p, FILE *out,
		     void (*rank_label)(uint32_t rank, char *buf, size_t len,
					void *arg),
		     void *arg)
{
	uint32_t r, lane, nlanes = p->nranks * p->nstreams;
	int nev = 0;
	task_id t;

	if (!p->ran)
		BUG("exec_write_trace: the program has not run");
	fputs("{\"traceEvents\":[\n", out);
	for (r = 0; r < p->nranks; r++)
		put_rank_meta(p, out, &nev, r, rank_label, arg);
	for (lane = 0; lane < nlanes; lane++)
		for (t = p->lane_head[lane]; t != TASK_NONE;
		     t = p->task[t].next)
			put_task(p, out, &nev, t);
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", out);
	return fflush(out) != 0 || ferror(out) ? -1 : 0;
}
