/*
 * report.h - `llmsim report`: the results database as one self-contained
 * HTML page of plots.
 *
 * The page reads only the documented views (docs/results-store.md), so
 * what it shows is what any dashboard could show:
 *
 *   - step-time breakdown per job, stacked (v_runs; the latest run of
 *     each distinct configuration of `llmsim run`)
 *   - memory per GPU against the usable capacity, stacked (v_runs)
 *   - per plan (the latest `llmsim plan` of each distinct configuration):
 *     its best layouts as a table and the step breakdown of those
 *     simulated in full (runs, v_plans)
 *   - per sweep: step time and throughput per GPU along the swept axes
 *     (curves), a heat map over the two axes with most values, the
 *     breakdown of each point, and the invalid points with their reason
 *     (v_sweep_points, sweep_axes)
 *   - per collective (system, op, ranks, type): bus bandwidth against
 *     message size, predicted, and measured where the database holds
 *     measurements (v_collectives, v_measurements)
 *   - predicted against measured time, log-log, with the y = x line and
 *     the tolerance band (v_validation)
 *
 * Plots are inline SVG (svg.h) and the page loads nothing: no scripts,
 * fonts or styles from the network (a Content-Security-Policy says so to
 * the browser). A small inline script checks, in the browser, that every
 * plot holds data marks and that no script error happened, and writes
 * its verdict into the page (#selfcheck), which the browser test reads.
 * The page is a function of the database's content: the same database
 * gives the same bytes.
 *
 * Depends on store.h, svg.h, cJSON.
 */
#ifndef LLMSIM_REPORT_REPORT_H
#define LLMSIM_REPORT_REPORT_H

#include <stdio.h>

struct diag;
struct store;

/* Most bars in one breakdown plot (the latest configurations). */
#define REPORT_MAX_BARS 40
/* Most series in one sweep curve; most collective plots. */
#define REPORT_MAX_SERIES 8
#define REPORT_MAX_COLL_PLOTS 16
/* Most plans (the latest configurations) and layouts shown of each. */
#define REPORT_MAX_PLANS 8
#define REPORT_PLAN_ROWS 10

/*
 * Write the report of database st (whose path, shown in the page, is
 * db_path) to out. version is llmsim's, shown in the footer. Returns 0,
 * or -1 after reporting to d (a query failed, out of memory). The
 * caller checks out for write errors.
 */
int report_write(struct store *st, const char *db_path, const char *version,
		 FILE *out, struct diag *d);

#endif
