/*
 * report.c - the report page: head (styles, the self-check script),
 * the jobs section (breakdown and memory plots from v_runs), then the
 * plans, sweeps, collectives and validation sections (report_plan.c,
 * report_sweep.c, report_coll.c), and the footer. What the sections share is in
 * report_plots.c.
 */
#include "report_impl.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"

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
	if (jobs_section(&R) != 0 || rep_plans(&R) != 0 ||
	    rep_sweeps(&R) != 0 || rep_collectives(&R) != 0 ||
	    rep_validation(&R) != 0)
		goto out;
	foot(&R, version);
	rc = 0;
out:
	arena_release(&a);
	return rc;
}
