/*
 * measure_print.c - `llmsim measure`'s tables: rccl-tests' columns for
 * collectives (size, count, type, time, algbw, busbw: those of `llmsim
 * collective`), then the fastest and slowest iteration and the check;
 * a GEMM's shape and TFLOP/s; a copy's GB/s of traffic (read + write).
 */
#include "measure.h"

#include <math.h>
#include <string.h>

static int is_gemm(const char *op)
{
	return strcmp(op, "gemm") == 0;
}

static int is_copy(const char *op)
{
	return strcmp(op, "copy") == 0;
}

void measure_print_header(FILE *out, const struct measure_log *m,
			  const char *op)
{
	const struct store_meas_info *i = &m->info;
	const char *what = op ? op : m->npts ? m->pts[0].op : "?";
	const char *lib = i->library ? i->library : "";
	const char *ver = i->library_version ? i->library_version : "";
	/* "NCCL 2.28.9", "Open MPI v4.1.4" (its version names it), "cuBLAS"
	 * (no version given), "no library" (the copy kernel) */
	int named = !*lib || strncmp(ver, lib, strlen(lib)) == 0;

	fprintf(out, "# llmsim measure: %s, %d rank%s (%d node%s x %d), %s "
		"backend\n# %s%s%s, %s; %s on %s\n#\n", what, i->ranks,
		i->ranks == 1 ? "" : "s", i->nodes, i->nodes == 1 ? "" : "s",
		i->devices_per_node, i->backend ? i->backend : "?",
		named ? "" : lib, !named && *ver ? " " : "",
		*ver ? ver : *lib ? "" : "no library",
		i->runtime ? i->runtime : "",
		i->device ? i->device : "", i->host ? i->host : "");
	if (is_gemm(what)) {
		fprintf(out, "#%8s %8s %8s %9s %11s %11s %11s %11s  %s\n", "m",
			"n", "k", "type", "time", "rate", "time_min",
			"time_max", "check");
		fprintf(out, "#%8s %8s %8s %9s %11s %11s %11s %11s\n", "", "",
			"", "", "(us)", "(TFLOP/s)", "(us)", "(us)");
		return;
	}
	fprintf(out, "#%11s %13s %9s %11s %11s %11s %11s %11s  %s\n", "size",
		"count", "type", "time", is_copy(what) ? "copy" : "algbw",
		is_copy(what) ? "traffic" : "busbw", "time_min", "time_max",
		"check");
	fprintf(out, "#%11s %13s %9s %11s %11s %11s %11s %11s\n", "(B)",
		"(elements)", "", "(us)", "(GB/s)", "(GB/s)", "(us)", "(us)");
}

void measure_print_point(FILE *out, const struct store_meas_row *p)
{
	if (is_gemm(p->op)) {
		fprintf(out, " %8lld %8lld %8lld %9s %11.2f %11.2f %11.2f "
			"%11.2f  %s\n", (long long)p->m, (long long)p->n,
			(long long)p->k, p->type, p->time_s * 1e6,
			p->rate / 1e12, p->time_min_s * 1e6,
			p->time_max_s * 1e6, p->check);
		return;
	}
	fprintf(out, "%12.0f %13.0f %9s %11.2f %11.2f %11.2f %11.2f %11.2f  "
		"%s\n", p->size_B, p->count, p->type, p->time_s * 1e6,
		is_copy(p->op) ? p->size_B / p->time_s / 1e9 : p->algbw_Bps / 1e9,
		is_copy(p->op) ? p->rate / 1e9 : p->busbw_Bps / 1e9,
		p->time_min_s * 1e6, p->time_max_s * 1e6, p->check);
}

/* rccl-tests' summary: the average rate over the run's points of its
 * first op (a backend run measures one; a hand-made stream with several
 * says how many it left out), in its unit, and the failed checks. */
void measure_print_footer(FILE *out, const struct measure_log *m)
{
	const char *op = m->npts ? m->pts[0].op : "";
	double sum = 0;
	uint32_t i, n = 0, other = 0, wrong = 0;

	for (i = 0; i < m->npts; i++) {
		const struct store_meas_row *p = &m->pts[i];

		wrong += strcmp(p->check, "wrong") == 0;
		if (strcmp(p->op, op) != 0) {
			other++;
			continue;
		}
		sum += is_gemm(p->op) ? p->rate / 1e12 : is_copy(p->op) ?
		       p->rate / 1e9 : p->busbw_Bps / 1e9;
		n++;
	}
	if (n && is_gemm(op))
		fprintf(out, "# Avg rate             : %g TFLOP/s\n", sum / n);
	else if (n && is_copy(op))
		fprintf(out, "# Avg traffic          : %g GB/s\n", sum / n);
	else if (n)
		fprintf(out, "# Avg bus bandwidth    : %g GB/s\n", sum / n);
	if (other)
		fprintf(out, "# (%u point%s of other ops than %s not averaged)\n",
			other, other == 1 ? "" : "s", op);
	fprintf(out, "# Out of bounds values : %u %s\n", wrong,
		wrong ? "WRONG" : "OK");
}

void measure_print_csv(FILE *out, const struct measure_log *m, int header)
{
	uint32_t i;

	if (header)
		fputs("op,size_B,count,type,m,n,k,time_us,time_min_us,time_max_us,"
		      "algbw_GBps,busbw_GBps,rate,check\n", out);
	for (i = 0; i < m->npts; i++) {
		const struct store_meas_row *p = &m->pts[i];

		fprintf(out, "%s,%.0f,%.0f,%s,%lld,%lld,%lld,%.3f,%.3f,%.3f,",
			p->op, p->size_B, p->count, p->type, (long long)p->m,
			(long long)p->n, (long long)p->k, p->time_s * 1e6,
			p->time_min_s * 1e6, p->time_max_s * 1e6);
		if (isnan(p->busbw_Bps))
			fprintf(out, ",,");
		else
			fprintf(out, "%.4f,%.4f,", p->algbw_Bps / 1e9,
				p->busbw_Bps / 1e9);
		if (!isnan(p->rate))
			fprintf(out, "%.6g", p->rate);
		fprintf(out, ",%s\n", p->check);
	}
}
