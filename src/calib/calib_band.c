/*
 * calib_band.c - error bars from a calibration: a prediction f made on a
 * system whose fitted parameters p have covariance Sigma (the
 * calibration file: standard errors and correlation) has variance
 *   var f = g^T Sigma g,   g_i = df/dp_i,
 * to first order. g is measured, not derived: each parameter is moved
 * one standard error up (a --set after the calibration's overlay; down
 * where up would pass the key's bound) and the prediction made again,
 * g_i = (f(p + s_i e_i) - f(p)) / s_i: one extra prediction per
 * parameter. The 95% band is f e^(+-1.96 sd / f) (calib_interval)
 * (the fit is of ln f);
 * a prediction interval for a new measurement adds the fit's residual
 * scatter s (ln ratio) as s f in quadrature.
 */
#include "calib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/config.h"

/* Whether one of fixed replaces q (said once on stderr). */
static int set_fixes(const struct calib_param *q, const char *prefix,
		     const char *const *fixed, size_t nfixed,
		     const char *calib_path)
{
	struct calib_file one = { .par = (struct calib_param *)q, .npar = 1 };
	size_t i;

	for (i = 0; i < nfixed; i++)
		if (calib_file_set_names(&one, prefix, fixed[i])) {
			fprintf(stderr, "llmsim: --set %s replaces %s of the "
				"calibration %s (%.6g): known, left out of "
				"the interval\n", fixed[i], q->key,
				calib_path, q->value);
			return 1;
		}
	return 0;
}

int calib_band(struct config_ctx *cx, const char *calib_path,
	       const char *prefix, int scatter, calib_eval_fn fn, void *ctx,
	       const char *const *fixed, size_t nfixed,
	       const double *base, size_t m, double *sigma)
{
	struct calib_file f;
	double *out = mem_alloc((m + 1) * sizeof(double)), *g;
	char set[256];
	const char *sets[1] = { set };
	size_t i, j;
	int rc = -1;

	g = NULL;
	if (!out || calib_file_load(cx, calib_path, &f) != 0)
		goto done;
	if (!(g = mem_calloc(f.npar * m + 1, sizeof(double))))
		goto done;
	for (i = 0; i < f.npar; i++) {
		const struct calib_param *q = &f.par[i];
		double h = q->stderr_;

		if (!(h > 0))
			continue;	/* known exactly, or not determined */
		/* A set of the caller's own replaced the fitted value: the
		 * step from it (f(fitted + h) - f(set)) / h was no slope and
		 * its variance not this prediction's (run --set
		 * system.scale_up.link.sustained=0.5 on a fit of 0.79 +-
		 * 0.005 gave a stderr of 0.18 s, 110 x the fit's). */
		if (set_fixes(q, prefix, fixed, nfixed, calib_path))
			continue;
		/* One standard error up would pass the key's upper bound
		 * (sustained <= 1 fitted at 0.95 +- 0.1), which the config
		 * refuses: step down instead, at most half-way to the lower
		 * bound; the secant from below estimates the same slope. */
		if (q->value + h > q->hi)
			h = -fmin(h, (q->value - q->lo) / 2);
		if (!(h != 0))
			continue;	/* at both bounds: no room to step */
		calib_set_text(q, q->value + h, prefix, set, sizeof(set));
		if (fn(ctx, sets, 1, out) != 0)
			goto done;
		for (j = 0; j < m; j++)
			g[j * f.npar + i] = (out[j] - base[j]) / h;
	}
	for (j = 0; j < m; j++) {
		double sp = calib_sigma(&f, g + j * f.npar);
		double sr = scatter ? f.residual_ln * base[j] : 0;
		double lo, hi;

		sigma[j] = sqrt(sp * sp + sr * sr);
		/* Standard errors so wide that the band is not a number
		 * (g^T Sigma g or e^(1.96 sd / f) overflows) are no error
		 * bars: said, not printed as [0, null]. */
		if (calib_interval(base[j], sigma[j], &lo, &hi) != 0) {
			diag_error(cx->diag, calib_path, 0, 0, "its standard "
				   "errors give prediction %zu (%g) a 95%% "
				   "band without bound (sd %g): refit, or fit "
				   "fewer parameters", j + 1, base[j], sigma[j]);
			goto done;
		}
	}
	rc = 0;
done:
	if (rc && !out)
		diag_oom(cx->diag);
	mem_free(out);
	mem_free(g);
	return rc;
}

int calib_interval(double f, double sd, double *lo, double *hi)
{
	double z = CALIB_Z95 * sd / f;

	*lo = f * exp(-z);
	*hi = f * exp(z);
	return isfinite(*hi) && isfinite(*lo) ? 0 : -1;
}
