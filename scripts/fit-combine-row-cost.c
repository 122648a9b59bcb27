/* scripts/fit-combine-row-cost.c - least-squares fit of configs/ep
 * combine_row_cost on the kernel-only combine rows where the SMs bind
 * (results/reference/ep), with leave-one-out errors.
 * cc -O2 scripts/fit-combine-row-cost.c -lgsl -lgslcblas -lm && ./a.out */
/* combine_row_cost: SM time per row beyond B / sm_rate, from kernel rows
 * where the SMs bind: w_i = n B / (R_i f_i) - B / r; least squares of the
 * constant w (gsl_fit_mul on x = 1), leave-one-out. */
#include <stdio.h>
#include <gsl/gsl_fit.h>
struct row { const char *id; double n, R, f; };
static void fit(const char *name, double B, double r, const struct row *x, int k)
{
	double w[16], one[16], c, cov, ss;
	int i, j;
	for (i = 0; i < k; i++) {
		w[i] = x[i].n * B / (x[i].R * 1e9 * x[i].f) - B / r;
		one[i] = 1;
		printf("%s %s per-row extra %.1f ns\n", name, x[i].id, w[i] * 1e9);
	}
	gsl_fit_mul(one, 1, w, 1, (size_t)k, &c, &cov, &ss);
	printf("%s fit %.1f ns (sd %.1f)\n", name, c * 1e9, sqrt(cov) * 1e9);
	for (i = 0; i < k; i++) {
		double xo[16], wo[16], cl, cv, s2, t_meas, t_pred;
		int m = 0;
		for (j = 0; j < k; j++)
			if (j != i) { xo[m] = 1; wo[m++] = w[j]; }
		gsl_fit_mul(xo, 1, wo, 1, (size_t)m, &cl, &cv, &s2);
		t_meas = w[i] + B / r; t_pred = cl + B / r;
		printf("  LOO %s: w %.1f ns, rate err %+.1f %%; in-sample %+.1f %%\n", x[i].id, cl * 1e9,
		       (t_meas / t_pred - 1) * 100, (t_meas / (c + B / r) - 1) * 100);
	}
}
#include <math.h>
int main(void)
{
	struct row d[] = {
		{"B200-SM16", 16, 302, 0.875}, {"B200-SM24", 24, 420, 0.875}, {"B200-SM32", 32, 524, 0.875},
		{"GB200-SM16", 16, 310.2, 0.875}, {"GB200-SM24", 24, 425.9, 0.875}, {"GB200-SM32", 32, 519.6, 0.875},
	};
	struct row h[] = {
		{"B200-EP8", 16, 673.8, 7./8}, {"GB200-EP8", 16, 684.3, 7./8}, {"GB200-EP16", 16, 600.8, 15./16},
		{"GB200-EP24", 16, 565.5, 23./24}, {"GB200-EP32", 16, 547.2, 31./32}, {"GB200-EP36", 16, 543.3, 35./36},
	};
	fit("deepep(B200 16/24)", 14336, 18.5e9, d, 2);
	fit("deepep(B200 16/24/32)", 14336, 18.5e9, d, 3);
	fit("deepep(B200+GB200 16/24/32)", 14336, 18.5e9, d, 6);
	fit("hybridep(SM16)", 14336, 40.9e9, h, 6);
	return 0;
}
