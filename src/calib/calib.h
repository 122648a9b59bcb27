/*
 * calib.h - fitting named model parameters to measurements (`llmsim
 * calibrate`) and carrying the fit's uncertainty into predictions.
 *
 * Parameters are fields of a system config flagged SF_FIT in the schema
 * (`llmsim config help` says "fittable"), named by their dotted key
 * under the system ("scale_up.link.sustained",
 * "collectives.algorithms.ring.hop_scale_up.simple",
 * "gpu.gemm_efficiency"); the schema's min/max bound them.
 *
 * The fit (calib_fit.c): minimise sum_i r_i^2 with r_i = ln(predicted
 * time_i / measured time_i) over the points (relative errors, so a 1 KiB
 * latency and a 1 GiB bandwidth count alike) with GSL's trust-region
 * Levenberg-Marquardt (gsl_multifit_nlinear). A parameter p in (lo, hi)
 * is fitted as u with p = lo + (hi - lo) / (1 + e^-u) (p = lo + e^u when
 * unbounded above), so bounds hold and u behaves like ln p for small p.
 * The Jacobian is forward differences in u (step 1e-3: predictions are
 * piecewise smooth where the library switches algorithm or chunking).
 * Covariance: s^2 (J^T J)^-1 in u with s^2 = RSS / (n - k), carried to
 * p through dp/du; the 95% interval is u +- t(0.975, n - k) sigma_u
 * mapped to p (it stays within the bounds). Cross-validation: k folds,
 * point i in fold i mod k (every fold spans the sizes), each fitted from
 * the preset's values on the other folds and scored on its own.
 *
 * Calibration files (calib_file.c, configs/calibrated/SYSTEM.yaml) hold
 * the fitted values as an `overlay:` a system applies by reference
 * (`calibration: FILE`, config.h), the parameters with their standard
 * errors and intervals, their correlation, the fit's errors and what it
 * was fitted on (`fitted_on: [measure run N, ...]`).
 */
#ifndef LLMSIM_CALIB_CALIB_H
#define LLMSIM_CALIB_CALIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct arena;
struct config_ctx;
struct diag;
struct store_meas_row;
struct system_spec;

struct calib_param {
	const char *key;		/* dotted, under the system */
	int type;			/* enum schema_type of the field */
	double lo, hi;			/* bounds (hi = INFINITY: none) */
	double start;			/* the preset's value */
	double value;			/* fitted */
	double stderr_;			/* delta-method standard error */
	double ci_lo, ci_hi;		/* 95% interval */
	double u_sigma;			/* standard error in u */
};

/* key's field in the system schema (it must be SF_FIT) into p, with
 * the value sys holds as start. 0, or -1 with the reason in why. */
int calib_param_find(const struct system_spec *sys, const char *key,
		     struct calib_param *p, char *why, size_t len);

/* p->key's type and bounds from the schema alone (a file read back). */
int calib_param_kind(struct calib_param *p, char *why, size_t len);

/* Every SF_FIT field sys reaches, as parameters (arena); count or -1. */
long calib_param_all(const struct system_spec *sys, struct arena *a,
		     struct calib_param **out);

/* "prefix" "key=VALUE UNIT" for a --set, into buf. */
void calib_set_text(const struct calib_param *p, double v, const char *prefix,
		    char *buf, size_t len);

/* v as YAML text with its unit, 6 digits for a table ("3.2 us",
 * "0.81"). */
void calib_value_text(const struct calib_param *p, double v, char *buf,
		      size_t len);

/* v as YAML text with its unit in the fewest digits that read back
 * (units_parse, strtod) as the identical double: what a calibration file
 * holds ("13.411031718699088 us", "0.1234567891234"). len >= 48. */
void calib_value_exact(const struct calib_param *p, double v, char *buf,
		       size_t len);

/* One measured point to fit: its time and the --set list that lays the
 * system out as the run was (valid_run_sets). */
struct calib_point {
	const struct store_meas_row *row;	/* owned by the caller */
	double meas_s;				/* s, median or fastest */
	const char *const *sets;		/* the run's sets */
	int nsets;
};

struct calib_problem {
	struct config_ctx *cx;
	const char *system;			/* preset or file */
	const struct calib_point *pts;
	size_t npts;
	struct calib_param *par;
	size_t npar;
	int max_iter;				/* default 60 */
};

/* The fit's report. Errors are over all points (ln ratio rms, and the
 * median of |predicted / measured - 1|). */
struct calib_result {
	double rms_before, rms_after;
	double med_before, med_after;
	double *corr;				/* npar x npar (mem_alloc) */
	int iters;
	size_t dof;
	/* k-fold cross-validation: held-out errors with the fold's fit and
	 * with the preset's values */
	int folds;
	double cv_med, cv_med_before, cv_rms, cv_rms_before;
};

/* Fit par (start -> value, stderr, ci) to pts. 0; 1 after reporting a
 * fit that did not converge; -2 after reporting bad input (a parameter
 * no point depends on, fewer points than parameters); -1 after
 * reporting another error. */
int calib_fit(struct calib_problem *pb, struct calib_result *res,
	      struct diag *d);

/* k-fold cross-validation of the same problem (pb's values untouched);
 * fills res->folds and the cv_ fields. 0 or -1. */
int calib_cross_validate(struct calib_problem *pb, int folds,
			 struct calib_result *res, struct diag *d);

/* Pick parameters when none are named: every fittable one the points'
 * predictions move by >= 0.1% for a 1% change, largest effect first,
 * skipping one whose effect is (nearly) a combination of those taken
 * (its column's residual after projection < 5% of its norm), at most
 * max. Count (into out, arena), or -1. */
long calib_choose(struct calib_problem *pb, struct calib_param *cand,
		  size_t ncand, size_t max, struct calib_param **out,
		  struct diag *d);

/* Predicted times of every point at the given values (NULL: starts). */
int calib_predict(const struct calib_problem *pb, const double *values,
		  double *time_s, struct diag *d);

/* A calibration file as read back (calib_file.c). */
struct calib_file {
	const char *path;
	const char *system;
	struct calib_param *par;		/* arena */
	size_t npar;
	double *corr;				/* npar x npar, arena */
	double residual_ln;			/* the points' scatter about the
						   fit, sigma of ln ratio */
	const char **fitted_on;			/* "measure run N in DB" (arena) */
	size_t nfitted;
};

/* Write the fit to path: fitted on runs[0..nruns) ("measure run N in
 * DB", fitted_on; each a YAML string whatever its characters) of the
 * database db (as given, in the header comment). 0 or -1 after
 * reporting. */
int calib_file_write(const char *path, const struct calib_problem *pb,
		     const struct calib_result *res, const char *db,
		     const char *const *runs, size_t nruns,
		     const char *version, struct diag *d);

int calib_file_load(struct config_ctx *cx, const char *path,
		    struct calib_file *f);

/* The parameter of f whose value a --set "KEY=VALUE" replaces: KEY
 * (after prefix, "system." for a job's sets; "" for a system's) is the
 * parameter's key, a mapping holding it ("scale_up.link" holds
 * "scale_up.link.sustained") or a key inside it; NULL when none. */
const struct calib_param *calib_file_set_names(const struct calib_file *f,
					       const char *prefix,
					       const char *set);

/* Standard deviation of a prediction f whose gradient over the file's
 * parameters is g (df/dp_i): sqrt(g^T Sigma g), Sigma from stderr and
 * correlation. */
double calib_sigma(const struct calib_file *f, const double *g);

/* The two-sided 95% quantile of the normal distribution. */
#define CALIB_Z95 1.96

/* The 95% band [*lo, *hi] of a prediction f (> 0) with standard
 * deviation sd: f e^(-+1.96 sd / f), a band in ln f (the fit is of ln
 * time). 0, or -1 when it is not finite (its bounds are still set). */
int calib_interval(double f, double sd, double *lo, double *hi);

/* Predictions of m values with extra --set overrides (calib_band). */
typedef int (*calib_eval_fn)(void *ctx, const char *const *extra,
			     size_t nextra, double *out);

/* Standard deviations (sigma[0..m)) of m predictions whose values at
 * the fit are base, from the calibration file at calib_path: each
 * parameter moved one standard error (a --set "prefix key=value"), fn
 * predicting again (calib_band.c). With scatter, the fit's residual
 * scatter is added (a prediction interval for one more measurement of
 * the kind fitted, not only the model's confidence band). 0, or -1
 * after reporting. A parameter one of the caller's own sets (fixed,
 * e.g. `run --set system.KEY=V`) replaces is not the fit's any more:
 * known, left out of the band (said on stderr). */
int calib_band(struct config_ctx *cx, const char *calib_path,
	       const char *prefix, int scatter, calib_eval_fn fn, void *ctx,
	       const char *const *fixed, size_t nfixed,
	       const double *base, size_t m, double *sigma);

#endif
