/*
 * report_plan.c - the plans section: the latest `llmsim plan` of each
 * distinct job configuration and objective (runs with command 'plan',
 * at most REPORT_MAX_PLANS, oldest first), each as a heading (job, model,
 * system, objective, how many layouts were ranked and simulated), a
 * table of its best REPORT_PLAN_ROWS layouts (v_plans) and the step
 * breakdown of those of them simulated in full. A sweep's planned points
 * are not here: their winners are the sweep's points (the sweeps
 * section).
 */
#include "report_impl.h"

#include <string.h>

#include "base/arena.h"
#include "base/diag.h"

/* One plan: its run and what its heading says. */
struct plan_head {
	int64_t run_id;
	const char *job, *model, *system, *objective;
	int64_t ranked, simulated;
};

struct plan_heads {
	struct rep *R;
	struct plan_head *v;
	size_t n, cap;
	int oom;
};

static int add_head(void *ctx, int n, const char *const *names,
		    const struct store_val *v)
{
	struct plan_heads *h = ctx;
	struct plan_head *p;

	(void)names;
	if (n < 7 || arena_grow(h->R->a, (void **)&h->v, &h->cap, h->n + 1,
				sizeof(*h->v)) != 0) {
		h->oom = 1;
		return 1;
	}
	p = &h->v[h->n++];
	p->run_id = v[0].i;
	p->job = rep_text(h->R, &v[1], &h->oom);
	p->model = rep_text(h->R, &v[2], &h->oom);
	p->system = rep_text(h->R, &v[3], &h->oom);
	p->objective = rep_text(h->R, &v[4], &h->oom);
	p->ranked = v[5].type == STORE_INT ? v[5].i : 0;
	p->simulated = v[6].type == STORE_INT ? v[6].i : 0;
	return h->oom;
}

/* The best layouts of one plan: the table is written as rows come, the
 * simulated ones kept for the breakdown plot. */
struct plan_rows {
	struct rep *R;
	struct rep_run run[REPORT_PLAN_ROWS];
	size_t nrun, nrow;
	int oom;
};

static double num(const struct store_val *v)
{
	return v->type == STORE_INT || v->type == STORE_REAL ? v->num : 0;
}

/* The columns add_row reads, in its order. */
static const char ROW_COLS[] =
	"rank, gpus, tp, pp, vpp, cp, ep, dp, micro_batch_size, zero_stage, "
	"recompute, schedule, step_time_s, tokens_per_s, mfu, "
	"peak_bytes_per_gpu, fits, simulated, bound, compute_s, "
	"exposed_comm_s, bubble_s, optimizer_s, other_s, sequence_parallel";

static int add_row(void *ctx, int n, const char *const *names,
		   const struct store_val *v)
{
	struct plan_rows *t = ctx;
	FILE *out = t->R->out;
	char step[32], mem[32];
	const char *layout;
	double gpus, step_s;
	int k, sim;

	(void)names;
	if (n < 25)
		return 1;
	gpus = num(&v[1]);
	step_s = num(&v[12]);
	sim = num(&v[17]) != 0;
	layout = arena_printf(t->R->a, "tp %.0f pp %.0f vpp %.0f cp %.0f "
			      "ep %.0f dp %.0f mbs %.0f%s", num(&v[2]),
			      num(&v[3]), num(&v[4]), num(&v[5]), num(&v[6]),
			      num(&v[7]), num(&v[8]),
			      num(&v[24]) != 0 ? " sp" : "");
	if (!layout) {
		t->oom = 1;
		return 1;
	}
	fprintf(out, "<tr><td>%.0f</td><td>%.0f</td><td>", num(&v[0]), gpus);
	svg_escape(out, layout);
	fprintf(out, "</td><td>%.0f</td><td>", num(&v[9]));
	svg_escape(out, v[10].type == STORE_TEXT ? v[10].text : "");
	fprintf(out, "</td><td>");
	svg_escape(out, v[11].type == STORE_TEXT ? v[11].text : "");
	fprintf(out, "</td><td>%s</td><td>%.0f</td><td>%.1f</td><td>%s</td>"
		"<td>%s</td><td>%s</td><td>", rep_time(step_s, step,
		sizeof(step)), gpus > 0 ? num(&v[13]) / gpus : 0,
		100 * num(&v[14]), rep_bytes(num(&v[15]), mem, sizeof(mem)),
		num(&v[16]) != 0 ? "yes" : "<b>no</b>",
		sim ? "full" : "estimate");
	svg_escape(out, v[18].type == STORE_TEXT ? v[18].text : "");
	fprintf(out, "</td></tr>\n");
	t->nrow++;
	if (sim && step_s > 0 && t->nrun < REPORT_PLAN_ROWS) {
		struct rep_run *r = &t->run[t->nrun];

		memset(r, 0, sizeof(*r));
		r->label = arena_printf(t->R->a, "#%.0f %s", num(&v[0]), layout);
		if (!r->label) {
			t->oom = 1;
			return 1;
		}
		r->step_s = step_s;
		for (k = 0; k < REP_PARTS; k++)
			r->part_s[k] = num(&v[19 + k]);
		t->nrun++;
	}
	return 0;
}

static int one_plan(struct rep *R, const struct plan_head *h)
{
	static char sql[512];
	char id[24], title[256];
	const char *p[] = { id };
	struct plan_rows t;

	memset(&t, 0, sizeof(t));
	t.R = R;
	snprintf(id, sizeof(id), "%lld", (long long)h->run_id);
	fprintf(R->out, "<h3>");
	svg_escape(R->out, h->job);
	fprintf(R->out, "</h3>\n<p>Model ");
	svg_escape(R->out, h->model);
	fprintf(R->out, " on ");
	svg_escape(R->out, h->system);
	fprintf(R->out, ", objective ");
	svg_escape(R->out, h->objective);
	fprintf(R->out, ": %lld layouts ranked, %lld simulated in full "
		"(run %lld; v_plans has them all).</p>\n", (long long)h->ranked,
		(long long)h->simulated, (long long)h->run_id);
	if (h->ranked == 0) {
		fprintf(R->out, "<p class=\"empty\">No layout of this job "
			"fits.</p>\n");
		return 0;
	}
	fprintf(R->out, "<table><tr><th>rank</th><th>GPUs</th><th>layout</th>"
		"<th>ZeRO</th><th>recompute</th><th>schedule</th><th>step</th>"
		"<th>tokens/s per GPU</th><th>MFU (%%)</th><th>peak memory "
		"per GPU</th><th>fits</th><th>step from</th><th>bound</th>"
		"</tr>\n");
	snprintf(sql, sizeof(sql), "SELECT %s FROM v_plans WHERE run_id = ?1 "
		 "ORDER BY rank LIMIT %d", ROW_COLS, REPORT_PLAN_ROWS);
	if (rep_select(R, sql, p, 1, add_row, &t) != 0)
		return -1;
	fprintf(R->out, "</table>\n");
	if (t.oom) {
		diag_oom(R->d);
		return -1;
	}
	if (h->ranked > (int64_t)t.nrow)
		fprintf(R->out, "<p class=\"note\">%lld more in v_plans.</p>\n",
			(long long)(h->ranked - (int64_t)t.nrow));
	snprintf(title, sizeof(title), "%s: step time breakdown of the best "
		 "layouts simulated in full", h->job);
	rep_breakdown_plot(R, t.run, t.nrun, title);
	return 0;
}

int rep_plans(struct rep *R)
{
	static char sql[1024];
	struct plan_heads h = { R, NULL, 0, 0, 0 };
	size_t i;

	snprintf(sql, sizeof(sql),
		 "SELECT r.id, json_extract(r.config_json, '$.name'), "
		 "json_extract(r.config_json, '$.model.name'), "
		 "json_extract(r.config_json, '$.system.name'), "
		 "json_extract(r.result_json, '$.objective'), "
		 "(SELECT count(*) FROM v_plans v WHERE v.run_id = r.id), "
		 "(SELECT count(*) FROM v_plans v WHERE v.run_id = r.id AND "
		 "v.simulated = 1) FROM runs r WHERE r.id IN (SELECT max(id) "
		 "FROM runs WHERE command = 'plan' GROUP BY config_hash, "
		 "json_extract(result_json, '$.objective')) "
		 "ORDER BY r.id DESC LIMIT %d", REPORT_MAX_PLANS);
	rep_heading(R, "Plans", "The latest `llmsim plan` of each distinct "
		    "job configuration and objective: its best layouts, and "
		    "the step breakdown of those simulated in full.");
	if (rep_select(R, sql, NULL, 0, add_head, &h) != 0)
		return -1;
	if (h.oom) {
		diag_oom(R->d);
		return -1;
	}
	if (h.n == 0) {
		fprintf(R->out, "<p class=\"empty\">No `llmsim plan` results in "
			"this database.</p>\n");
		return 0;
	}
	for (i = h.n; i-- > 0;)	/* oldest first, as the jobs */
		if (one_plan(R, &h.v[i]) != 0)
			return -1;
	return 0;
}
