/*
 * report.c - the report page: head (styles, the self-check script),
 * the jobs section (breakdown and memory plots from v_runs), then the
 * sweeps, collectives and validation sections (report_sweep.c,
 * report_coll.c), and the footer.
 */
#include "report_impl.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

const char *const rep_part_cols[REP_PARTS] = {
	"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "other_s",
};
const char *const rep_part_names[REP_PARTS] = {
	"compute", "exposed communication", "pipeline bubble", "optimizer",
	"other",
};
const char *const rep_mem_cols[REP_MEM] = {
	"weights_bytes", "gradients_bytes", "optimizer_bytes",
	"activations_bytes", "workspace_bytes",
};
const char *const rep_mem_names[REP_MEM] = {
	"weights", "gradients", "optimizer states", "activations", "workspace",
};

const char REP_RUN_COLS[] =
	"run_id, job, gpus, gpu, tp, pp, dp, step_time_s, compute_s, "
	"exposed_comm_s, bubble_s, optimizer_s, other_s, "
	"tokens_per_s_per_gpu, weights_bytes, gradients_bytes, "
	"optimizer_bytes, activations_bytes, workspace_bytes, "
	"peak_bytes_per_gpu, usable_bytes_per_gpu, fits";

static double num(const struct store_val *v)
{
	return v->type == STORE_INT || v->type == STORE_REAL ? v->num : 0;
}

int rep_run_read(struct rep *R, int n, const struct store_val *v,
		 struct rep_run *r)
{
	int i;

	if (n < 22)
		return -1;
	memset(r, 0, sizeof(*r));
	r->run_id = v[0].i;
	r->label = arena_printf(R->a, "%s: %.0f x %s, tp %.0f pp %.0f dp %.0f",
				v[1].text ? v[1].text : "job", num(&v[2]),
				v[3].text ? v[3].text : "gpu", num(&v[4]),
				num(&v[5]), num(&v[6]));
	r->step_s = num(&v[7]);
	for (i = 0; i < REP_PARTS; i++)
		r->part_s[i] = num(&v[8 + i]);
	r->tokens_per_s_per_gpu = num(&v[13]);
	for (i = 0; i < REP_MEM; i++)
		r->mem_B[i] = num(&v[14 + i]);
	r->peak_B = num(&v[19]);
	r->usable_B = num(&v[20]);
	r->fits = num(&v[21]) != 0;
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

static const char *const *row_labels(struct rep *R, const struct rep_run *runs,
				     size_t n)
{
	const char **l = arena_alloc(R->a, (n + 1) * sizeof(*l));
	size_t i;

	for (i = 0; l && i < n; i++)
		l[i] = runs[i].label;
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
	svg_close(&p, "The critical path of one step split into its parts; "
		  "hover a segment for its time.");
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
	svg_close(&p, "Peak memory of the worst pipeline stage, stacked; the "
		  "vertical tick is the GPU's usable capacity.");
	R->plots++;
}

/* ---- the jobs section ----------------------------------------------- */

struct runs_acc {
	struct rep *R;
	struct rep_run *v;
	size_t n, cap;
	int oom;
};

static int add_run(void *ctx, int n, const char *const *names,
		   const struct store_val *v)
{
	struct runs_acc *acc = ctx;

	(void)names;
	if (arena_grow(acc->R->a, (void **)&acc->v, &acc->cap, acc->n + 1,
		       sizeof(*acc->v)) != 0 ||
	    rep_run_read(acc->R, n, v, &acc->v[acc->n]) != 0) {
		acc->oom = 1;
		return 1;
	}
	acc->n++;
	return 0;
}

/* The latest run of each distinct configuration of `llmsim run`, the
 * newest REPORT_MAX_BARS of them, oldest first. */
static int jobs_section(struct rep *R)
{
	static char sql[1024];
	struct runs_acc acc = { R, NULL, 0, 0, 0 };

	snprintf(sql, sizeof(sql),
		 "SELECT %s FROM (SELECT * FROM v_runs WHERE run_id IN "
		 "(SELECT max(run_id) FROM v_runs WHERE command = 'run' "
		 "GROUP BY config_hash) ORDER BY run_id DESC LIMIT %d) "
		 "ORDER BY run_id", REP_RUN_COLS, REPORT_MAX_BARS);
	rep_heading(R, "Jobs", "The latest result of each distinct job "
		    "configuration simulated with `llmsim run`.");
	if (rep_select(R, sql, NULL, 0, add_run, &acc) != 0)
		return -1;
	if (acc.oom) {
		diag_oom(R->d);
		return -1;
	}
	if (acc.n == 0) {
		fprintf(R->out, "<p class=\"empty\">No `llmsim run` results in "
			"this database.</p>\n");
		return 0;
	}
	rep_breakdown_plot(R, acc.v, acc.n, "Step time breakdown per job");
	rep_memory_plot(R, acc.v, acc.n, "Memory per GPU against capacity");
	return 0;
}

/* ---- the page ------------------------------------------------------- */

static const char STYLE[] =
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;"
	"margin:24px auto;max-width:1020px;color:#1b1b1b;padding:0 12px}\n"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 6px;"
	"border-bottom:1px solid #ddd;padding-bottom:3px}\n"
	"h3{font-size:15px;margin:18px 0 4px}\n"
	"figure.plot{margin:10px 0 18px}figcaption{font-weight:600;"
	"margin-bottom:2px}\n"
	"svg text{font:11px system-ui,sans-serif;fill:#222}"
	"svg text.label{font-size:12px}svg text.cell{fill:#fff;font-size:10px}"
	"svg text.cell.dark{fill:#111}svg text.note{fill:#d00000}\n"
	"svg .grid{stroke:#e6e6e6}svg .area{fill:none;stroke:#999}"
	"svg .line{fill:none;stroke-width:1.6}svg .cap{stroke-width:2}"
	"svg .ref{stroke:#666;stroke-dasharray:4 3;fill:none}\n"
	".legend span{margin-right:14px;white-space:nowrap;font-size:12px}"
	".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\n"
	"p.note{color:#555;font-size:12px;margin:2px 0}p.empty{color:#777}\n"
	"table{border-collapse:collapse;font-size:12px}td,th{border:1px solid "
	"#ddd;padding:2px 6px;text-align:left;vertical-align:top}\n"
	"#selfcheck{color:#555;font-size:12px}\n"
	"pre{white-space:pre-wrap;word-break:break-word;margin:0}\n";

/* Runs in the browser: every plot must hold at least one data mark with
 * a non-empty box, and no script error may have happened; the verdict
 * goes into #selfcheck (data-verdict="ok" or "fail"). */
static const char SCRIPT[] =
	"(function(){var errors=[];\n"
	"window.addEventListener('error',function(e){errors.push(String("
	"e.message));});\n"
	"function check(){var figs=document.querySelectorAll('figure.plot'),"
	"empty=[],marks=0,i,j;\n"
	"for(i=0;i<figs.length;i++){var pts=figs[i].querySelectorAll('.pt'),"
	"shown=0;\n"
	"for(j=0;j<pts.length;j++){var b=pts[j].getBoundingClientRect();"
	"if(b.width>0&&b.height>0)shown++;}\n"
	"marks+=shown;if(shown===0)empty.push(figs[i].id);}\n"
	"var s=document.getElementById('selfcheck'),ok=!empty.length&&"
	"!errors.length;\n"
	"s.setAttribute('data-verdict',ok?'ok':'fail');"
	"s.setAttribute('data-plots',String(figs.length));"
	"s.setAttribute('data-marks',String(marks));\n"
	"s.textContent='self-check: '+figs.length+' plots, '+marks+"
	"' data marks'+(empty.length?'; plots without data: '+empty.join(' ')"
	":'')+(errors.length?'; script errors: '+errors.join('; '):'')+"
	"(ok?' (ok)':' (FAILED)');}\n"
	"if(document.readyState==='loading')document.addEventListener("
	"'DOMContentLoaded',check);else check();})();\n";

static void head(struct rep *R, const char *db_path)
{
	fprintf(R->out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		"<meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\""
		"default-src 'none'; style-src 'unsafe-inline'; "
		"script-src 'unsafe-inline'; img-src data:\">\n"
		"<meta name=\"viewport\" content=\"width=device-width\">\n"
		"<title>llmsim report: ");
	svg_escape(R->out, db_path);
	fprintf(R->out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n"
		"<h1>llmsim report</h1>\n<p>Results database <code>", STYLE);
	svg_escape(R->out, db_path);
	fprintf(R->out, "</code>. Every plot reads a documented view "
		"(docs/results-store.md); hover a mark for its numbers.</p>\n");
}

static void foot(struct rep *R, const char *version)
{
	fprintf(R->out, "<hr>\n<p id=\"selfcheck\" data-verdict=\"pending\">"
		"self-check did not run (scripts disabled?)</p>\n"
		"<p class=\"note\">Written by llmsim ");
	svg_escape(R->out, version);
	fprintf(R->out, "; %zu plots.</p>\n<script>\n%s</script>\n"
		"</body>\n</html>\n", R->plots, SCRIPT);
}

int report_write(struct store *st, const char *db_path, const char *version,
		 FILE *out, struct diag *d)
{
	struct arena a;
	struct rep R = { st, &a, d, out, 0, 0 };
	int rc = -1;

	arena_init(&a);
	head(&R, db_path);
	if (jobs_section(&R) != 0 || rep_sweeps(&R) != 0 ||
	    rep_collectives(&R) != 0 || rep_validation(&R) != 0)
		goto out;
	foot(&R, version);
	rc = 0;
out:
	arena_release(&a);
	return rc;
}
