/*
 * tracecheck.c - check a file against the Chrome Trace Event Format
 * ("JSON Object Format", the form `llmsim run --trace` writes and
 * Perfetto and chrome://tracing load), strictly:
 *
 *   tracecheck FILE...   exit 0 if every file passes, 1 otherwise
 *
 * Top level: an object with a "traceEvents" array; "displayTimeUnit", if
 * present, "ms" or "ns".
 * Every event: an object; "ph" one of the format's phases; "name" a
 * string; "pid" an integer; "tid" an integer for thread-scoped phases
 * (X B E s t f, i/I of thread scope, thread metadata); "ts" a number >= 0
 * except on metadata; "cat" a string and "args" an object when present.
 *   X   "dur" a number >= 0
 *   M   name one of process_name, process_labels, process_sort_index,
 *       thread_name, thread_sort_index; args.name a string (names) or
 *       args.sort_index an integer (sort indexes)
 *   C   args a non-empty object of numbers
 *   s t f  "id" a number or string and "cat" a string; "bp", if present,
 *       "e"; each (cat, id) has one "s", then any "t", then one "f", in
 *       time order; each end lies inside a complete slice of its thread
 *       (the slice it binds to)
 * Per thread: complete slices nest (sorted by start, longer first, a
 * slice either ends before the next starts or contains it) and B/E pair
 * up. Every process with events has a process_name and every thread a
 * thread_name. Times are compared in integer nanoseconds (ts * 1000,
 * rounded: the format's microseconds with three decimals).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPORTED 20

struct slice {
	int64_t pid, tid, start, end;
	size_t idx;			/* event index: ties keep file order */
};

struct flow {
	char key[160];			/* cat \x1f id */
	char ph;
	int64_t pid, tid, ts;
	size_t idx;
};

struct thread {
	int64_t pid, tid;
	int named;			/* has thread_name */
	int used;			/* has events */
};

struct check {
	const char *file;
	unsigned errors;
	struct slice *sl;
	size_t nsl, capsl;
	struct flow *fl;
	size_t nfl, capfl;
	struct thread *th;
	size_t nth, capth;
	int64_t *pnamed;		/* pids with process_name */
	size_t npn, cappn;
	int64_t *pused;
	size_t npu, cappu;
	size_t counters;
};

static void err(struct check *c, size_t idx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void err(struct check *c, size_t idx, const char *fmt, ...)
{
	va_list ap;

	if (c->errors++ >= MAX_REPORTED)
		return;
	fprintf(stderr, "tracecheck: %s: event %zu: ", c->file, idx);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	*cap = *cap ? *cap * 2 : 1024;
	if (*cap < need)
		*cap = need;
	p = realloc(p, *cap * elem);
	if (!p) {
		fputs("tracecheck: out of memory\n", stderr);
		exit(2);
	}
	return p;
}

static int is_int(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
	       fabs(v->valuedouble) < 9e15;
}

static int64_t ns(double us)
{
	return (int64_t)llround(us * 1000.0);
}

static struct thread *thread(struct check *c, int64_t pid, int64_t tid)
{
	size_t i;

	for (i = 0; i < c->nth; i++)
		if (c->th[i].pid == pid && c->th[i].tid == tid)
			return &c->th[i];
	c->th = grow(c->th, &c->capth, c->nth + 1, sizeof(*c->th));
	c->th[c->nth] = (struct thread){ pid, tid, 0, 0 };
	return &c->th[c->nth++];
}

static void add_pid(int64_t **v, size_t *n, size_t *cap, int64_t pid)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if ((*v)[i] == pid)
			return;
	*v = grow(*v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = pid;
}

/* ---- one event ------------------------------------------------------ */

static int thread_scoped(const char *ph, const cJSON *e)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "s");

	if (strchr("XBEstf", ph[0]))
		return 1;
	if (ph[0] == 'i' || ph[0] == 'I')
		return !cJSON_IsString(s) || strcmp(s->valuestring, "t") == 0;
	return 0;
}

static void check_meta(struct check *c, size_t i, const cJSON *e,
		       const char *name, int64_t pid)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
	const cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
	int is_name = !strcmp(name, "process_name") ||
		      !strcmp(name, "thread_name");
	int is_sort = !strcmp(name, "process_sort_index") ||
		      !strcmp(name, "thread_sort_index");

	if (!is_name && !is_sort && strcmp(name, "process_labels")) {
		err(c, i, "metadata '%s' is not one the format defines", name);
		return;
	}
	if (is_name && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args,
								       "name")))
		err(c, i, "metadata '%s' needs args.name, a string", name);
	if (is_sort && !is_int(cJSON_GetObjectItemCaseSensitive(args,
							       "sort_index")))
		err(c, i, "metadata '%s' needs args.sort_index, an integer",
		    name);
	if (!strncmp(name, "thread_", 7)) {
		if (!is_int(tid)) {
			err(c, i, "metadata '%s' needs an integer tid", name);
			return;
		}
		if (!strcmp(name, "thread_name"))
			thread(c, pid, (int64_t)tid->valuedouble)->named = 1;
	} else if (!strcmp(name, "process_name")) {
		add_pid(&c->pnamed, &c->npn, &c->cappn, pid);
	}
}

static void check_counter(struct check *c, size_t i, const cJSON *e)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args"), *a;
	int n = 0;

	cJSON_ArrayForEach(a, args) {
		n++;
		if (!cJSON_IsNumber(a))
			err(c, i, "counter value '%s' is not a number", a->string);
	}
	if (n == 0)
		err(c, i, "counter without values (args)");
	c->counters++;
}

static void check_flow(struct check *c, size_t i, const cJSON *e,
		       const char *ph, int64_t pid, int64_t tid, int64_t ts)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
	const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
	const cJSON *bp = cJSON_GetObjectItemCaseSensitive(e, "bp");
	struct flow *f;
	char idtext[64];

	if (!cJSON_IsString(cat)) {
		err(c, i, "flow event without a cat");
		return;
	}
	if (is_int(id))
		snprintf(idtext, sizeof(idtext), "%.0f", id->valuedouble);
	else if (cJSON_IsString(id))
		snprintf(idtext, sizeof(idtext), "s:%s", id->valuestring);
	else {
		err(c, i, "flow event without an id (a number or a string)");
		return;
	}
	if (bp && (!cJSON_IsString(bp) || strcmp(bp->valuestring, "e")))
		err(c, i, "flow \"bp\" must be \"e\"");
	c->fl = grow(c->fl, &c->capfl, c->nfl + 1, sizeof(*c->fl));
	f = &c->fl[c->nfl++];
	snprintf(f->key, sizeof(f->key), "%s\x1f%s", cat->valuestring, idtext);
	f->ph = ph[0];
	f->pid = pid;
	f->tid = tid;
	f->ts = ts;
	f->idx = i;
}

/* The fields every event has; 0 when it is too broken to go on with. */
static int check_common(struct check *c, size_t i, const cJSON *e,
			const char **ph, int64_t *pid, int64_t *tid,
			int64_t *ts)
{
	static const char phases[] = "BEXiICMstfPONDbne";
	const cJSON *v;

	if (!cJSON_IsObject(e)) {
		err(c, i, "not an object");
		return 0;
	}
	v = cJSON_GetObjectItemCaseSensitive(e, "ph");
	if (!cJSON_IsString(v) || strlen(v->valuestring) != 1 ||
	    !strchr(phases, v->valuestring[0])) {
		err(c, i, "\"ph\" missing or not a phase of the format");
		return 0;
	}
	*ph = v->valuestring;
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "name")) &&
	    **ph != 'E')
		err(c, i, "\"name\" missing or not a string");
	v = cJSON_GetObjectItemCaseSensitive(e, "pid");
	if (!is_int(v)) {
		err(c, i, "\"pid\" missing or not an integer");
		return 0;
	}
	*pid = (int64_t)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(e, "tid");
	*tid = is_int(v) ? (int64_t)v->valuedouble : -1;
	if (v && !is_int(v))
		err(c, i, "\"tid\" is not an integer");
	if (thread_scoped(*ph, e) && !is_int(v)) {
		err(c, i, "\"tid\" missing on a '%s' event", *ph);
		return 0;
	}
	v = cJSON_GetObjectItemCaseSensitive(e, "ts");
	*ts = 0;
	if (**ph != 'M') {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0) {
			err(c, i, "\"ts\" missing or negative");
			return 0;
		}
		*ts = ns(v->valuedouble);
	}
	v = cJSON_GetObjectItemCaseSensitive(e, "cat");
	if (v && !cJSON_IsString(v))
		err(c, i, "\"cat\" is not a string");
	v = cJSON_GetObjectItemCaseSensitive(e, "args");
	if (v && !cJSON_IsObject(v))
		err(c, i, "\"args\" is not an object");
	return 1;
}

static void check_event(struct check *c, size_t i, const cJSON *e)
{
	const char *ph;
	int64_t pid, tid, ts;
	const cJSON *dur;

	if (!check_common(c, i, e, &ph, &pid, &tid, &ts))
		return;
	if (*ph == 'M') {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");

		check_meta(c, i, e, cJSON_IsString(nm) ? nm->valuestring : "",
			   pid);
		return;
	}
	add_pid(&c->pused, &c->npu, &c->cappu, pid);
	if (tid >= 0 && thread_scoped(ph, e))
		thread(c, pid, tid)->used = 1;
	switch (*ph) {
	case 'X':
		dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
		if (!cJSON_IsNumber(dur) || dur->valuedouble < 0) {
			err(c, i, "complete event without a \"dur\" >= 0");
			return;
		}
		c->sl = grow(c->sl, &c->capsl, c->nsl + 1, sizeof(*c->sl));
		c->sl[c->nsl++] = (struct slice){ pid, tid, ts,
			ts + ns(dur->valuedouble), i };
		break;
	case 'C':
		check_counter(c, i, e);
		break;
	case 's': case 't': case 'f':
		check_flow(c, i, e, ph, pid, tid, ts);	/* binding: check_flows */
		break;
	case 'B': case 'E':
		err(c, i, "B/E events: llmsim writes complete events only");
		break;
	default:
		break;
	}
}

/* ---- whole-file checks ---------------------------------------------- */

static int by_thread_time(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;	/* longer first */
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void check_nesting(struct check *c)
{
	size_t *stack = malloc((c->nsl + 1) * sizeof(*stack)), top = 0, i;

	if (!stack)
		exit(2);
	qsort(c->sl, c->nsl, sizeof(*c->sl), by_thread_time);
	for (i = 0; i < c->nsl; i++) {
		const struct slice *s = &c->sl[i];

		if (i > 0 && (c->sl[i - 1].pid != s->pid ||
			      c->sl[i - 1].tid != s->tid))
			top = 0;
		while (top > 0 && c->sl[stack[top - 1]].end <= s->start)
			top--;
		if (top > 0 && s->end > c->sl[stack[top - 1]].end)
			err(c, s->idx, "slice on pid %lld tid %lld overlaps "
			    "event %zu without nesting in it", (long long)s->pid,
			    (long long)s->tid, c->sl[stack[top - 1]].idx);
		stack[top++] = i;
	}
	free(stack);
}

/* 1 when a slice of (pid, tid) contains ts. The slices are sorted by
 * thread and start: find the last that starts at or before ts, then walk
 * back (an enclosing slice starts earlier; the deepest is usually the
 * last). */
static int bound(const struct check *c, int64_t pid, int64_t tid, int64_t ts)
{
	size_t lo = 0, hi = c->nsl, i;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct slice *s = &c->sl[mid];

		if (s->pid < pid || (s->pid == pid && (s->tid < tid ||
		    (s->tid == tid && s->start <= ts))))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i-- > 0;) {
		const struct slice *s = &c->sl[i];

		if (s->pid != pid || s->tid != tid)
			return 0;
		if (s->end >= ts)
			return 1;
	}
	return 0;
}

static int by_key_time(const void *a, const void *b)
{
	const struct flow *x = a, *y = b;
	int k = strcmp(x->key, y->key);

	if (k)
		return k;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void check_flows(struct check *c)
{
	size_t i, j;

	for (i = 0; i < c->nfl; i++) {
		if (!bound(c, c->fl[i].pid, c->fl[i].tid, c->fl[i].ts))
			err(c, c->fl[i].idx, "flow '%c' at %.3f us binds to no "
			    "slice of its thread", c->fl[i].ph,
			    (double)c->fl[i].ts / 1000.0);
	}
	qsort(c->fl, c->nfl, sizeof(*c->fl), by_key_time);
	for (i = 0; i < c->nfl; i = j) {
		int s = 0, f = 0, order = 1;

		for (j = i; j < c->nfl && !strcmp(c->fl[j].key, c->fl[i].key);
		     j++) {
			s += c->fl[j].ph == 's';
			f += c->fl[j].ph == 'f';
			if (j > i && c->fl[j].ts < c->fl[j - 1].ts)
				order = 0;
		}
		if (s != 1 || f != 1 || c->fl[i].ph != 's' ||
		    c->fl[j - 1].ph != 'f')
			err(c, c->fl[i].idx, "flow id %s: %d starts and %d "
			    "finishes, expected one 's' first and one 'f' last",
			    strchr(c->fl[i].key, '\x1f') + 1, s, f);
		else if (!order)
			err(c, c->fl[i].idx, "flow id %s goes back in time",
			    strchr(c->fl[i].key, '\x1f') + 1);
	}
}

static void check_names(struct check *c)
{
	size_t i, k;

	for (i = 0; i < c->npu; i++) {
		for (k = 0; k < c->npn && c->pnamed[k] != c->pused[i]; k++)
			;
		if (k == c->npn)
			err(c, 0, "process %lld has events but no process_name",
			    (long long)c->pused[i]);
	}
	for (i = 0; i < c->nth; i++)
		if (c->th[i].used && !c->th[i].named)
			err(c, 0, "thread %lld of process %lld has events but "
			    "no thread_name", (long long)c->th[i].tid,
			    (long long)c->th[i].pid);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = 1 << 20, k;
	char *buf = malloc(cap + 1);

	if (!f || !buf) {
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
		n += k;
		if (n == cap && !(buf = realloc(buf, (cap *= 2) + 1)))
			exit(2);
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static int check_file(const char *path)
{
	struct check c;
	char *text = slurp(path);
	cJSON *root = text ? cJSON_Parse(text) : NULL, *events, *unit, *ev;
	size_t n;

	memset(&c, 0, sizeof(c));
	c.file = path;
	if (!text) {
		fprintf(stderr, "tracecheck: %s: cannot read\n", path);
		return 1;
	}
	if (!cJSON_IsObject(root)) {
		fprintf(stderr, "tracecheck: %s: not a JSON object\n", path);
		free(text);
		cJSON_Delete(root);
		return 1;
	}
	events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	unit = cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit");
	if (!cJSON_IsArray(events))
		err(&c, 0, "no \"traceEvents\" array");
	if (unit && (!cJSON_IsString(unit) ||
		     (strcmp(unit->valuestring, "ms") &&
		      strcmp(unit->valuestring, "ns"))))
		err(&c, 0, "\"displayTimeUnit\" must be \"ms\" or \"ns\"");
	n = 0;
	if (cJSON_IsArray(events))
		cJSON_ArrayForEach(ev, events)	/* a list: never by index */
			check_event(&c, n++, ev);
	check_nesting(&c);
	check_flows(&c);
	check_names(&c);
	if (c.errors > MAX_REPORTED)
		fprintf(stderr, "tracecheck: %s: %u more errors\n", path,
			c.errors - MAX_REPORTED);
	if (c.errors == 0)
		printf("tracecheck: %s: %zu events, %zu slices, %zu flow events, "
		       "%zu counter points, %zu threads: ok\n", path, n, c.nsl,
		       c.nfl, c.counters, c.nth);
	free(c.sl);
	free(c.fl);
	free(c.th);
	free(c.pnamed);
	free(c.pused);
	cJSON_Delete(root);
	free(text);
	return c.errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	int i, rc = 0;

	if (argc < 2) {
		fputs("usage: tracecheck FILE...\n", stderr);
		return 2;
	}
	for (i = 1; i < argc; i++)
		rc |= check_file(argv[i]);
	return rc;
}
