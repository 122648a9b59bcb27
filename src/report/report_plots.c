/*
 * report_plots.c - what the report's sections share (report_impl.h):
 * reading v_runs rows, queries, units for axes and labels, figure ids,
 * and the two plots of runs (stacked step breakdown, memory against
 * capacity) that the jobs section and each sweep draw.
 */
#include "report_impl.h"

#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "base/utf8.h"

const char *const rep_part_cols[REP_PARTS] = {
	"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "other_s",
};
const char *const rep_part_names[REP_PARTS] = {
	"compute", "exposed communication", "pipeline bubble", "optimizer",
	"other",
};
const char *const rep_mem_cols[REP_MEM_COLS] = {
	"weights_bytes", "gradients_bytes", "optimizer_bytes",
	"activations_bytes", "workspace_bytes",
};
const char *const rep_mem_names[REP_MEM] = {
	"weights", "gradients", "optimizer states", "activations", "workspace",
	"KV cache (the rest of the peak)",
};

const char REP_RUN_COLS[] =
	"run_id, job, gpus, gpu, tp, pp, dp, step_time_s, compute_s, "
	"exposed_comm_s, bubble_s, optimizer_s, other_s, "
	"tokens_per_s_per_gpu, weights_bytes, gradients_bytes, "
	"optimizer_bytes, activations_bytes, workspace_bytes, "
	"peak_bytes_per_gpu, usable_bytes_per_gpu, fits, "
	"(SELECT json_extract(config_json, '$.phase') FROM runs "
	"WHERE runs.id = run_id) AS phase";

static double num(const struct store_val *v)
{
	return v->type == STORE_INT || v->type == STORE_REAL ? v->num : 0;
}

int rep_run_read(struct rep *R, int n, const struct store_val *v,
		 struct rep_run *r)
{
	const char *phase, *what = "";
	double sum = 0;
	int i;

	if (n < 23)
		return -1;
	memset(r, 0, sizeof(*r));
	/* an inference job's step is one engine step, a serving run's the
	 * mean of its engine steps: said beside the job's name */
	phase = v[22].text ? v[22].text : "training";
	if (strcmp(phase, "serving") == 0)
		what = " (serving, mean step)";
	else if (strcmp(phase, "training") != 0)
		what = strcmp(phase, "prefill") == 0 ? " (prefill step)"
						     : " (decode step)";
	r->run_id = v[0].i;
	r->label = arena_printf(R->a, "%s%s: %.0f x %s, tp %.0f pp %.0f dp %.0f",
				v[1].text ? v[1].text : "job", what, num(&v[2]),
				v[3].text ? v[3].text : "gpu", num(&v[4]),
				num(&v[5]), num(&v[6]));
	r->step_s = num(&v[7]);
	for (i = 0; i < REP_PARTS; i++)
		r->part_s[i] = num(&v[8 + i]);
	r->tokens_per_s_per_gpu = num(&v[13]);
	for (i = 0; i < REP_MEM_COLS; i++)
		sum += r->mem_B[i] = num(&v[14 + i]);
	r->peak_B = num(&v[19]);
	r->usable_B = num(&v[20]);
	r->fits = num(&v[21]) != 0;
	/* the rest of the peak, past rounding (a training step's parts
	 * are its peak: 0 there) */
	r->mem_B[REP_MEM_COLS] = r->peak_B - sum > 1e-9 * r->peak_B ?
				 r->peak_B - sum : 0;
	return r->label ? 0 : -1;
}

int rep_select(struct rep *R, const char *sql, const char *const *params,
	       int nparams, store_row_fn fn, void *ctx)
{
	return store_select(R->st, sql, params, nparams, fn, ctx, R->d);
}

static int found(void *ctx, int n, const char *const *names,
		 const struct store_val *v)
{
	(void)n;
	(void)names;
	(void)v;
	*(int *)ctx = 1;
	return 1;
}

int rep_has(struct rep *R, const char *name)
{
	const char *p[] = { name };
	int yes = 0;

	(void)rep_select(R, "SELECT 1 FROM sqlite_master WHERE name = ?1 AND "
			 "type IN ('table', 'view')", p, 1, found, &yes);
	return yes;
}

const char *rep_text(struct rep *R, const struct store_val *v, int *oom)
{
	const char *s;

	if (v->type == STORE_TEXT)
		s = arena_strdup(R->a, v->text);
	else if (v->type == STORE_INT)
		s = arena_printf(R->a, "%lld", (long long)v->i);
	else
		s = arena_strdup(R->a, "");
	if (!s)
		*oom = 1;
	return s ? s : "";
}

const char *rep_time_unit(double max_s, double *per_s)
{
	if (max_s >= 1) {
		*per_s = 1;
		return "s";
	}
	if (max_s >= 1e-3) {
		*per_s = 1e3;
		return "ms";
	}
	*per_s = 1e6;
	return "us";
}

const char *rep_time(double s, char *buf, size_t len)
{
	double per;
	const char *u = rep_time_unit(s, &per);

	snprintf(buf, len, "%.4g %s", s * per, u);
	return buf;
}

const char *rep_bytes(double b, char *buf, size_t len)
{
	static const char *const u[] = { "B", "kB", "MB", "GB", "TB" };
	int i = 0;

	while (b >= 999.95 && i < 4) {
		b /= 1e3;
		i++;
	}
	snprintf(buf, len, "%.4g %s", b, u[i]);
	return buf;
}

const char *rep_fig_id(struct rep *R, const char *what)
{
	const char *id = arena_printf(R->a, "fig-%zu-%s", ++R->nid, what);

	return id ? id : "fig";
}

void rep_heading(struct rep *R, const char *h, const char *para)
{
	fprintf(R->out, "<h2>");
	svg_escape(R->out, h);
	fprintf(R->out, "</h2>\n");
	if (para) {
		fprintf(R->out, "<p>");
		svg_escape(R->out, para);
		fprintf(R->out, "</p>\n");
	}
}

/* ---- plots of runs -------------------------------------------------- */

/* Row labels fit the left margin (330 px at about 6 px a character):
 * longer ones keep their start and end with "...". */
#define ROW_LABEL_MAX 52

static const char *const *row_labels(struct rep *R, const struct rep_run *runs,
				     size_t n)
{
	const char **l = arena_alloc(R->a, (n + 1) * sizeof(*l));
	size_t i;

	for (i = 0; l && i < n; i++) {
		const char *t = runs[i].label;
		size_t len = strlen(t);

		/* characters, cut between them (a cut by bytes could end
		 * inside one: the SVG was not UTF-8) */
		if (utf8_chars(t, len) <= ROW_LABEL_MAX)
			l[i] = t;
		else
			l[i] = arena_printf(R->a, "%.*s...", (int)utf8_prefix(t,
					    len, ROW_LABEL_MAX - 3), t);
		if (!l[i])
			return NULL;
	}
	return l;
}

/* Margins for a plot whose rows are labelled with runs' labels. */
static void row_plot(struct svg_plot *p, FILE *out, size_t n)
{
	svg_plot_init(p, out, 980, 70 + 24 * (int)n);
	p->ml = 330;
	p->mt = 12;
	p->mb = 44;
}

void rep_breakdown_plot(struct rep *R, const struct rep_run *runs, size_t n,
			const char *title)
{
	static const char *colors[REP_PARTS];
	struct svg_plot p;
	char tip[256], a[32], b[32], xl[64];
	double per, max = 0, x;
	const char *unit;
	size_t i, k;

	if (n == 0)
		return;
	for (k = 0; k < REP_PARTS; k++)
		colors[k] = svg_color(k);
	for (i = 0; i < n; i++)
		max = fmax(max, runs[i].step_s);
	unit = rep_time_unit(max, &per);
	snprintf(xl, sizeof(xl), "time of one step (%s)", unit);
	row_plot(&p, R->out, n);
	p.x.label = xl;
	p.y.scale = SVG_CATEGORY;
	p.y.cats = row_labels(R, runs, n);
	p.y.ncats = p.y.cats ? n : 0;
	p.y.label = "";
	svg_axis_fit(&p.x, 0, max * per, 1);
	svg_axis_fit(&p.y, 0, 0, 0);
	svg_open(&p, rep_fig_id(R, "breakdown"), title);
	svg_frame(&p);
	for (i = 0; i < n; i++) {
		x = 0;
		for (k = 0; k < REP_PARTS; k++) {
			double w = runs[i].part_s[k] * per;

			snprintf(tip, sizeof(tip), "%s\n%s: %s of %s (%.1f %%)",
				 runs[i].label, rep_part_names[k],
				 rep_time(runs[i].part_s[k], a, sizeof(a)),
				 rep_time(runs[i].step_s, b, sizeof(b)),
				 runs[i].step_s > 0 ? 100 * runs[i].part_s[k] /
				 runs[i].step_s : 0);
			if (w > 0 || k == 0)
				svg_hbar(&p, i, x, x + w, colors[k], tip);
			x += w;
		}
	}
	svg_legend(&p, rep_part_names, colors, REP_PARTS);
	svg_close(&p, "The critical path of one step split into its parts "
		  "(a prefill or decode job: one engine step; a serving run: "
		  "its mean engine step); hover a segment for its time.");
	R->plots++;
}

void rep_memory_plot(struct rep *R, const struct rep_run *runs, size_t n,
		     const char *title)
{
	static const char *colors[REP_MEM];
	struct svg_plot p;
	char tip[256], a[32], b[32], c[32];
	double max = 0, x;
	size_t i, k;

	if (n == 0)
		return;
	for (k = 0; k < REP_MEM; k++)
		colors[k] = svg_color(k);
	for (i = 0; i < n; i++)
		max = fmax(max, fmax(runs[i].peak_B, runs[i].usable_B));
	row_plot(&p, R->out, n);
	p.x.label = "memory per GPU (GB, 10^9 B)";
	p.y.scale = SVG_CATEGORY;
	p.y.cats = row_labels(R, runs, n);
	p.y.ncats = p.y.cats ? n : 0;
	p.y.label = "";
	svg_axis_fit(&p.x, 0, max / 1e9, 1);
	svg_axis_fit(&p.y, 0, 0, 0);
	svg_open(&p, rep_fig_id(R, "memory"), title);
	svg_frame(&p);
	for (i = 0; i < n; i++) {
		x = 0;
		for (k = 0; k < REP_MEM; k++) {
			double w = runs[i].mem_B[k] / 1e9;

			snprintf(tip, sizeof(tip), "%s\n%s: %s (peak %s of %s "
				 "usable)", runs[i].label, rep_mem_names[k],
				 rep_bytes(runs[i].mem_B[k], a, sizeof(a)),
				 rep_bytes(runs[i].peak_B, b, sizeof(b)),
				 rep_bytes(runs[i].usable_B, c, sizeof(c)));
			if (w > 0 || k == 0)
				svg_hbar(&p, i, x, x + w, colors[k], tip);
			x += w;
		}
		svg_row_marker(&p, i, runs[i].usable_B / 1e9,
			       runs[i].fits ? "#444444" : "#d00000",
			       runs[i].fits ? NULL : "does not fit");
	}
	svg_legend(&p, rep_mem_names, colors, REP_MEM);
	svg_close(&p, "Peak memory of the worst pipeline stage, stacked (an "
		  "inference or serving run's KV cache pool is the rest of "
		  "its peak); the vertical tick is the GPU's usable "
		  "capacity.");
	R->plots++;
}
