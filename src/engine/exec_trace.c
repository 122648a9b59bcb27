/*
 * exec_trace.c - an executed program as Chrome trace-event JSON.
 *
 * The format is the "JSON Object Format" of the Trace Event Format
 * (Chrome's chrome://tracing and Perfetto read it):
 *
 *   {"traceEvents":[
 *   {"ph":"M","pid":0,"name":"process_name","args":{"name":"rank 0"}},
 *   {"ph":"M","pid":0,"tid":1,"name":"thread_name","args":{"name":"comm"}},
 *   {"ph":"X","pid":0,"tid":0,"ts":12.000,"dur":3.500,"name":"forward mb 0",
 *    "cat":"pass","args":{"microbatch":0}},
 *   {"ph":"X","pid":0,"tid":0,"ts":12.000,"dur":1.250,"name":"layer 3",
 *    "cat":"layer","args":{"layer":3,"microbatch":0}},
 *   {"ph":"X","pid":0,"tid":0,"ts":12.345,"dur":0.500,"name":"qkv_fwd",
 *    "cat":"compute","args":{"category":"compute","layer":3,
 *    "microbatch":0,"critical":1}},
 *   ...
 *   {"ph":"s","id":1,"pid":0,"tid":0,"ts":12.595,"name":"dependency",
 *    "cat":"dependency"},
 *   {"ph":"f","bp":"e","id":1,"pid":0,"tid":1,"ts":13.000,...},
 *   {"ph":"C","pid":0,"ts":0.000,"name":"memory per GPU (GB)",
 *    "args":{"activations":0,"weights, gradients, optimizer, workspace":9.1}},
 *   ...],"displayTimeUnit":"ns"}
 *
 * pid = simulated rank, tid = stream; ts and dur are microseconds written
 * from integer ns with three decimals, so no time is rounded. Collectives
 * add "op", "bytes" (coll.h size convention) and "group" (GPUs) to args,
 * and "sm_wait_us" when, ready, it waited for a persistent GEMM to free
 * the SMs (launch order, exec.h; its ts is when it started).
 *
 * Enclosing slices. On each stream, a run of consecutive compute tasks of
 * one microbatch and pass (forward or backward, task_info.phase) becomes a
 * slice "forward mb M" / "backward mb M" around them, and within it a run
 * of one layer a slice "layer L". A slice spans its first task's start to
 * its last task's end, so slices nest (tasks of a stream run one at a
 * time, in order) and a parent is written before its children, which
 * begin at the same time.
 *
 * Flows. An arrow (a flow "s"/"f" pair, category "dependency") for every
 * dependency between tasks on different streams or ranks (a stream's own
 * order needs none), and one (category "critical_path") where the
 * critical path moves from one stream or rank to another (along a stream
 * the path is its tasks marked "critical":1). Each end sits at the middle of its task
 * ("bp":"e": bound to the slice enclosing that point, the task itself).
 *
 * Counters. Series the caller supplies (exec_counters: memory per rank
 * over time) as "C" events.
 *
 * Events go out as: metadata, slices (rank, stream, task order), flows,
 * counters: identical programs give identical bytes.
 */
#include "exec_impl.h"

#include "base/diag.h"

#include <inttypes.h>
#include <string.h>

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
		if (p->sm_wait && p->sm_wait[k] > 0) {
			fputs(",\"sm_wait_us\":", out);
			put_us(out, p->sm_wait[k]);
		}
	}
	if (p->critical[t / 64] >> (t % 64) & 1)
		fputs(",\"critical\":1", out);
	fputs("}}", out);
}

/* ---- enclosing slices ----------------------------------------------- */

static struct task_info info_of(const struct prog *p, task_id t)
{
	struct task_info in;

	exec_task_info(p, t, &in);
	return in;
}

/* 1 when task u continues t's pass slice: both compute, same microbatch
 * and pass, a pass at all. */
static int same_pass(const struct prog *p, task_id t, task_id u)
{
	struct task_info a = info_of(p, t), b = info_of(p, u);

	return a.cat == TASK_COMPUTE && b.cat == TASK_COMPUTE &&
	       a.phase != TASK_PHASE_NONE && a.phase == b.phase &&
	       a.microbatch == b.microbatch;
}

static int same_layer(const struct prog *p, task_id t, task_id u)
{
	return same_pass(p, t, u) && info_of(p, t).layer >= 0 &&
	       info_of(p, t).layer == info_of(p, u).layer;
}

/* The last task of the run that starts at t (by pred), t itself when
 * the run is t alone. */
static task_id run_end(const struct prog *p, task_id t,
		       int (*pred)(const struct prog *, task_id, task_id))
{
	while (p->task[t].next != TASK_NONE && pred(p, t, p->task[t].next))
		t = p->task[t].next;
	return t;
}

static void put_slice(const struct prog *p, FILE *out, int *nev, task_id a,
		      task_id b, const char *name, const char *cat, int layer)
{
	struct task_info in = info_of(p, a);
	units_ns_t s = task_start_ns(p, a);

	next_event(out, nev);
	fprintf(out, "\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":",
		task_rank(p, a), p->task[a].lane % p->nstreams);
	put_us(out, s);
	fputs(",\"dur\":", out);
	put_us(out, task_end_ns(p, b) - s);
	fputs(",\"name\":", out);
	put_str(out, name);
	fprintf(out, ",\"cat\":\"%s\",\"args\":{", cat);
	if (layer)
		fprintf(out, "\"layer\":%d,", in.layer);
	fprintf(out, "\"microbatch\":%d}}", in.microbatch);
}

/* One lane's tasks with their pass and layer slices around them. */
static void put_lane(const struct prog *p, FILE *out, int *nev, uint32_t lane)
{
	task_id t, pass_end = TASK_NONE, layer_end = TASK_NONE;
	char name[64];

	for (t = p->lane_head[lane]; t != TASK_NONE; t = p->task[t].next) {
		struct task_info in = info_of(p, t);

		if (pass_end == TASK_NONE && in.cat == TASK_COMPUTE &&
		    in.phase != TASK_PHASE_NONE) {
			pass_end = run_end(p, t, same_pass);
			snprintf(name, sizeof(name), "%s mb %d",
				 in.phase == TASK_PHASE_FWD ? "forward" :
				 "backward", in.microbatch);
			put_slice(p, out, nev, t, pass_end, name, "pass", 0);
		}
		if (layer_end == TASK_NONE && pass_end != TASK_NONE &&
		    in.layer >= 0) {
			layer_end = run_end(p, t, same_layer);
			snprintf(name, sizeof(name), "layer %d", in.layer);
			put_slice(p, out, nev, t, layer_end, name, "layer", 1);
		}
		put_task(p, out, nev, t);
		if (t == layer_end)
			layer_end = TASK_NONE;
		if (t == pass_end)
			pass_end = layer_end = TASK_NONE;
	}
}

/* ---- flows ---------------------------------------------------------- */

/* The middle of task t (ns): where a flow binds to it. */
static units_ns_t mid_ns(const struct prog *p, task_id t)
{
	units_ns_t s = task_start_ns(p, t);

	return s + (task_end_ns(p, t) - s) / 2;
}

static void put_flow_end(const struct prog *p, FILE *out, int *nev,
			 task_id t, const char *ph, uint64_t id,
			 const char *cat)
{
	next_event(out, nev);
	fprintf(out, "\"ph\":\"%s\",%s\"id\":%" PRIu64 ",\"pid\":%u,"
		"\"tid\":%u,\"ts\":", ph, ph[0] == 'f' ? "\"bp\":\"e\"," : "",
		id, task_rank(p, t), p->task[t].lane % p->nstreams);
	put_us(out, mid_ns(p, t));
	fprintf(out, ",\"name\":\"%s\",\"cat\":\"%s\"}", cat, cat);
}

static void put_flow(const struct prog *p, FILE *out, int *nev, task_id a,
		     task_id b, uint64_t *id, const char *cat)
{
	++*id;
	put_flow_end(p, out, nev, a, "s", *id, cat);
	put_flow_end(p, out, nev, b, "f", *id, cat);
}

static void put_flows(const struct prog *p, FILE *out, int *nev)
{
	uint64_t id = 0;
	uint32_t e;
	task_id t, c;

	for (t = 0; t < p->ncsr && t < p->ntasks; t++) {
		uint32_t s1 = p->succ1[t], lo = 0, hi = 0;

		if (s1 != TASK_NONE && (s1 & KIND_COLL)) {
			lo = p->more_off[s1 & ~KIND_COLL];
			hi = p->more_off[(s1 & ~KIND_COLL) + 1];
			s1 = TASK_NONE;
		}
		if (s1 != TASK_NONE && p->task[s1].lane != p->task[t].lane)
			put_flow(p, out, nev, t, s1, &id, "dependency");
		for (e = lo; e < hi; e++)
			if (p->task[p->more[e]].lane != p->task[t].lane)
				put_flow(p, out, nev, t, p->more[e], &id,
					 "dependency");
	}
	for (t = 0; t < p->ntasks; t++) {
		if (!(p->critical[t / 64] >> (t % 64) & 1))
			continue;
		c = p->state[t].cause;
		if (c != TASK_NONE && p->task[c].lane != p->task[t].lane)
			put_flow(p, out, nev, c, t, &id, "critical_path");
	}
}

/* ---- counters ------------------------------------------------------- */

static void put_counters(FILE *out, int *nev, const struct exec_counters *cs)
{
	size_t i;
	int k;

	for (i = 0; cs && i < cs->n; i++) {
		const struct exec_counter *c = &cs->v[i];

		next_event(out, nev);
		fprintf(out, "\"ph\":\"C\",\"pid\":%u,\"ts\":", c->rank);
		put_us(out, units_s_to_ns(c->t_s));
		fputs(",\"name\":", out);
		put_str(out, cs->name);
		fputs(",\"args\":{", out);
		for (k = 0; k < EXEC_COUNTER_SERIES && cs->series[k]; k++) {
			fputs(k ? "," : "", out);
			put_str(out, cs->series[k]);
			fprintf(out, ":%.6g", c->value[k]);
		}
		fputs("}}", out);
	}
}

int exec_write_trace(const struct prog *p, FILE *out,
		     void (*rank_label)(uint32_t rank, char *buf, size_t len,
					void *arg),
		     void *arg, const struct exec_counters *counters)
{
	uint32_t r, lane, nlanes = p->nranks * p->nstreams;
	int nev = 0;

	if (!p->ran)
		BUG("exec_write_trace: the program has not run");
	fputs("{\"traceEvents\":[\n", out);
	for (r = 0; r < p->nranks; r++)
		put_rank_meta(p, out, &nev, r, rank_label, arg);
	for (lane = 0; lane < nlanes; lane++)
		put_lane(p, out, &nev, lane);
	put_flows(p, out, &nev);
	put_counters(out, &nev, counters);
	fputs("\n],\"displayTimeUnit\":\"ns\"}\n", out);
	return fflush(out) != 0 || ferror(out) ? -1 : 0;
}
