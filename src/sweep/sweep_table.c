/*
 * sweep_table.c - the sweep's record in the database (its row, axes and
 * view) and the summary table printed after a run (sweep_impl.h).
 *
 * The table has a column per axis holding the value as the sweep file
 * writes it ("400 Gbit/s", "roce-800g", "-" where a case leaves the axis
 * at the base's value), then what happened and the stored results, read
 * back from v_sweep_points so the table shows what the database holds.
 * A sweep with `plan: true` has a column more after the outcome: the
 * winning layout of each point's plan.
 */
#include "sweep_impl.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "base/utf8.h"
#include "config/cnode.h"
#include "store/store.h"

const char *const sweep_outcome_names[SWEEP_OUTCOMES] = {
	"ran", "invalid", "failed", "resumed", "duplicate",
};

static const char *const dim_kinds[] = { "cases", "grid", "zip" };

int sweep_store_begin(struct sweep_ctx *c, struct diag *d)
{
	const struct sweep *sw = c->sw;
	const char **keys = mem_calloc(sw->naxes + 1, sizeof(*keys));
	const char **cols = mem_calloc(sw->naxes + 1, sizeof(*cols));
	const char **kinds = mem_calloc(sw->naxes + 1, sizeof(*kinds));
	struct store_sweep ss = { sw->name, sw->file,
				  sw->base->kind == CNODE_SCALAR ?
				  sw->base->text : "(inline)", sw->npoints,
				  c->o->version, sw->naxes, keys, cols, kinds };
	int64_t id = -1;
	size_t k;

	if (!keys || !cols || !kinds) {
		diag_oom(d);
		goto out;
	}
	for (k = 0; k < sw->naxes; k++) {
		keys[k] = sw->axes[k].key;
		cols[k] = sw->axes[k].column;
		kinds[k] = dim_kinds[sw->dims[sw->axes[k].dim].kind];
	}
	id = store_sweep_begin(c->st, &ss, d);
	if (id > 0)
		c->sweep_id = id;
out:
	mem_free(keys);
	mem_free(cols);
	mem_free(kinds);
	return id > 0 ? 0 : id == -2 ? -2 : -1;
}

/* ---- the summary table ---------------------------------------------- */

#define FIXED 6		/* outcome, step time, tokens/s/GPU, MFU, memory, reason */
#define NFOUND 6	/* the stored results: FIXED - 1, and the layout */

struct table {
	struct arena *a;
	size_t ncols;
	const char **cell;		/* [rows * ncols] */
	size_t rows, cap;
	int *width;			/* [ncols] */
	uint64_t nother;		/* rows another llmsim computed */
	const char *other;		/* the first one's llmsim */
	int others;			/* and some have yet another */
};

/* The stored results of one point, as text. */
struct found {
	struct arena *a;
	const char *text[NFOUND];	/* step, tok/s/GPU, MFU, memory,
					 * reason; the plan's layout */
	const char *version;		/* this llmsim's */
	const char *other;		/* the stored run's llmsim, when
					 * another than version */
	int oom;
};

const char *sweep_cut_text(struct arena *a, const char *s, size_t len,
			   size_t max)
{
	if (max < 4 || utf8_chars(s, len) <= max)
		return arena_strndup(a, s, len);
	/* the bytes of the first max - 3 characters, then "..." */
	return arena_printf(a, "%.*s...", (int)utf8_prefix(s, len, max - 3),
			    s);
}

/* "1.234 s" or "12.34 ms". */
static const char *step_text(struct arena *a, double s)
{
	if (s >= 1)
		return arena_printf(a, "%.4g s", s);
	return arena_printf(a, "%.4g ms", s * 1e3);
}

static int read_result(void *ctx, int n, const char *const *names,
		       const struct store_val *v)
{
	struct found *f = ctx;
	const char *reason;
	size_t len, k;

	(void)names;
	if (n < 9)
		return 1;
	if (v[8].text && f->version && strcmp(v[8].text, f->version) != 0) {
		f->other = arena_strdup(f->a, v[8].text);
		f->oom |= !f->other;
	}
	if (v[0].type != STORE_REAL && v[0].type != STORE_INT) {
		reason = v[5].text ? v[5].text : "";
		len = strcspn(reason, "\n");
		/* past 160 characters, cut and say so (v_sweep_points has
		 * it whole) */
		f->text[4] = sweep_cut_text(f->a, reason, len, 160);
		f->oom |= !f->text[4];
		return 1;
	}
	f->text[0] = step_text(f->a, v[0].num);
	f->text[1] = arena_printf(f->a, "%.0f", v[1].num);
	f->text[2] = arena_printf(f->a, "%.1f %%", 100 * v[2].num);
	f->text[3] = arena_printf(f->a, "%.4g GB%s", v[3].num / 1e9,
				  v[4].num != 0 ? "" : " (does not fit)");
	if (v[7].text) {
		f->text[5] = arena_strdup(f->a, v[7].text);
		f->oom |= !f->text[5];
	}
	for (k = 0; k < FIXED - 1; k++)
		f->oom |= !f->text[k];
	return 1;
}

static int add_row(struct table *t, const char *const *cells)
{
	size_t k;

	if (arena_grow(t->a, (void **)&t->cell, &t->cap,
		       (t->rows + 1) * t->ncols, sizeof(*t->cell)) != 0)
		return -1;
	for (k = 0; k < t->ncols; k++) {
		const char *s = cells[k] ? cells[k] : "";
		int w = (int)utf8_chars(s, strlen(s));

		t->cell[t->rows * t->ncols + k] = s;
		if (w > t->width[k])
			t->width[k] = w;
	}
	t->rows++;
	return 0;
}

static void print_table(FILE *out, const struct table *t)
{
	size_t r, k;

	for (r = 0; r < t->rows; r++) {
		for (k = 0; k < t->ncols; k++) {
			const char *s = t->cell[r * t->ncols + k];

			if (k + 1 == t->ncols)
				fprintf(out, "%s\n", s);
			else	/* padded to the column's characters, not
				 * bytes ("µs", "é" in a value) */
				fprintf(out, "%s%*s  ", s, t->width[k] -
					(int)utf8_chars(s, strlen(s)), "");
		}
	}
}

/* One point's row. 0, -1 OOM, -2 query failed (reported). */
static int point_row(struct sweep_ctx *c, struct table *t, const char **cells,
		     const struct cnode **vals, uint64_t idx, int outcome,
		     const char *hash, struct diag *d)
{
	char id[32];
	const char *p[] = { id, hash };
	struct found f = { t->a, { "-", "-", "-", "-", "", "-" },
			   c->o->version, NULL, 0 };
	size_t k, at = 0;

	snprintf(id, sizeof(id), "%lld", (long long)c->sweep_id);
	cells[at++] = arena_printf(t->a, "%llu", (unsigned long long)idx);
	sweep_point_values(c->sw, idx, vals);
	for (k = 0; k < c->sw->naxes; k++)
		cells[at++] = sweep_value_text(t->a, vals[k]);
	cells[at++] = outcome < SWEEP_OUTCOMES ? sweep_outcome_names[outcome]
					       : "not run";
	at += c->sw->plan ? 1 : 0;	/* the layout's cell, filled below */
	/* The point by its key, its step by run id: two lookups. */
	if (hash[0] && store_select(c->st, "SELECT s.step_time_s, "
				    "s.tokens_per_s / json_extract(r.result_json,"
				    " '$.gpus'), s.mfu, s.peak_bytes_per_gpu, "
				    "s.fits, p.reason, p.status, "
				    "json_extract(r.result_json, '$.layout'), "
				    "r.llmsim_version FROM sweep_points "
				    "p LEFT JOIN runs r ON r.id = p.run_id LEFT "
				    "JOIN step_results s ON s.run_id = p.run_id "
				    "WHERE p.sweep_id = ?1 AND p.point_hash = ?2",
				    p, 2, read_result, &f, d) != 0)
		return -2;
	if (c->sw->plan)
		cells[at - 1] = f.text[5];
	for (k = 0; k < FIXED - 1; k++)
		cells[at++] = f.text[k];
	for (k = 0; k < 1 + c->sw->naxes; k++)
		if (!cells[k])
			return -1;
	if (f.oom)
		return -1;
	if (f.other && t->nother++ == 0)
		t->other = f.other;
	else if (f.other && strcmp(f.other, t->other) != 0)
		t->others = 1;
	return add_row(t, cells);
}

int sweep_summary(struct sweep_ctx *c, const uint64_t *idx,
		  const unsigned char *outcome, char (*hash)[65],
		  uint64_t count, struct diag *d)
{
	static const char *const fixed[FIXED] = {
		"outcome", "step time", "tokens/s/GPU", "MFU", "memory/GPU",
		"reason",
	};
	struct arena a;
	struct table t;
	const char **cells;
	const struct cnode **vals;
	uint64_t i;
	size_t k;
	int rc = -1;

	arena_init(&a);
	memset(&t, 0, sizeof(t));
	t.a = &a;
	t.ncols = 1 + c->sw->naxes + FIXED + (size_t)c->sw->plan;
	t.width = arena_alloc(&a, t.ncols * sizeof(*t.width));
	cells = arena_alloc(&a, t.ncols * sizeof(*cells));
	vals = arena_alloc(&a, (c->sw->naxes + 1) * sizeof(*vals));
	c->st = store_open(c->o->db, d);
	if (!c->st)
		goto out;
	if (!t.width || !cells || !vals)
		goto oom;
	cells[0] = "point";
	for (k = 0; k < c->sw->naxes; k++)
		cells[1 + k] = c->sw->axes[k].key;
	k = 1 + c->sw->naxes;
	cells[k++] = fixed[0];
	if (c->sw->plan)
		cells[k++] = "layout (plan)";
	for (i = 1; i < FIXED; i++)
		cells[k++] = fixed[i];
	if (add_row(&t, cells) != 0)
		goto oom;
	for (i = 0; i < count; i++) {
		int r = point_row(c, &t, cells, vals, idx[i], outcome[i],
				  hash[i], d);

		if (r == -2)
			goto out;
		if (r != 0)
			goto oom;
	}
	print_table(c->o->out, &t);
	/* Resuming keys a point by its resolved job, not by the llmsim
	 * that simulated it: say when the table mixes builds. */
	if (t.nother)
		fprintf(stderr, "sweep %s: %llu of these points were simulated "
			"by another llmsim (%s%s; this is %s) and kept as "
			"stored: their numbers are that build's; rename the "
			"sweep or use another --db to simulate them again\n",
			c->sw->name, (unsigned long long)t.nother, t.other,
			t.others ? " and others" : "", c->o->version);
	rc = 0;
	goto out;
oom:
	diag_oom(d);
out:
	store_close(c->st);
	c->st = NULL;
	arena_release(&a);
	return rc;
}
