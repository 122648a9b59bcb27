/*
 * calib_fit.c - the least-squares fit of calib.h: residuals, the GSL
 * trust-region solver, covariance and intervals, k-fold
 * cross-validation, and the choice of parameters when none are named.
 *
 * Each evaluation loads the system afresh with the parameters as --set
 * overrides (in a scratch arena, freed after) and predicts the points
 * through valid_predict_point(), exactly as `llmsim validate` does, so
 * what is fitted is what is validated.
 */
#include "calib.h"

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/schema.h"
#include "store/store.h"
#include "valid.h"

#define JAC_STEP 1e-2		/* in u: about 1% of the parameter */
#define JAC_MIN_TIME 1e-8	/* s: a time parameter's step at least this,
				   10 engine nanoseconds */

/* ---- the transform p(u) --------------------------------------------- */

/* Strictly inside the bounds (a schema minimum is often exclusive), as
 * far as doubles go: e^u and 1 / (1 + e^-u) round to the bounds at
 * |u| > 700 and > 36. */
static double p_of_u(const struct calib_param *p, double u)
{
	double s;

	if (isinf(p->hi))
		return p->lo + fmax(exp(u), 1e-300);
	s = 1 / (1 + exp(-u));
	s = fmin(fmax(s, 1e-12), 1 - 1e-12);
	return p->lo + (p->hi - p->lo) * s;
}

static double dp_du(const struct calib_param *p, double u)
{
	double s;

	if (isinf(p->hi))
		return exp(u);
	s = 1 / (1 + exp(-u));
	return (p->hi - p->lo) * s * (1 - s);
}

/* u of value v; a value on a bound starts 1e-6 of the range (or 1e-9
 * of the unit) inside it, where the fit can move it. */
static double u_of_p(const struct calib_param *p, double v)
{
	double s;

	if (isinf(p->hi)) {
		if (v - p->lo <= 0)
			v = p->lo + (p->lo > 0 ? 1e-6 * p->lo : 1e-9);
		return log(v - p->lo);
	}
	s = (v - p->lo) / (p->hi - p->lo);
	if (s < 1e-6)
		s = 1e-6;
	if (s > 1 - 1e-6)
		s = 1 - 1e-6;
	return log(s / (1 - s));
}

/* ---- predictions ---------------------------------------------------- */

/* Predicted times of points idx[0..n) with parameter values v (NULL:
 * the starts). 0, or -1 after reporting. */
static int predict_idx(const struct calib_problem *pb, const double *v,
		       const size_t *idx, size_t n, double *t, struct diag *d)
{
	char (*text)[160] = mem_alloc(pb->npar * sizeof(*text) + 1);
	const char **sets = NULL;
	size_t i = 0, j, k, most = 0;
	int rc = 0;

	/* Every set of a run and every parameter: none dropped (a fixed 96
	 * dropped the parameters of a run with many sets). */
	for (k = 0; k < n; k++)
		if ((size_t)pb->pts[idx[k]].nsets > most)
			most = (size_t)pb->pts[idx[k]].nsets;
	if (!text || !(sets = mem_alloc((most + pb->npar + 1) *
					sizeof(*sets)))) {
		mem_free(text);
		diag_oom(d);
		return -1;
	}
	while (i < n && rc == 0) {
		const struct calib_point *first = &pb->pts[idx[i]];
		struct config_ctx cx = *pb->cx;
		struct valid_pred pr;
		struct arena a;
		int ns = 0;

		/* A run's points share its sets: one load for them all. */
		for (k = 0; k < (size_t)first->nsets; k++)
			sets[ns++] = first->sets[k];
		for (k = 0; k < pb->npar; k++) {
			calib_set_text(&pb->par[k], v ? v[k] : pb->par[k].start,
				       "", text[k], sizeof(text[k]));
			sets[ns++] = text[k];
		}
		arena_init(&a);
		cx.arena = &a;
		if (valid_pred_open(&pr, &cx, pb->system, sets, (size_t)ns)) {
			arena_release(&a);
			rc = -1;
			break;
		}
		for (j = i; j < n && pb->pts[idx[j]].sets == first->sets &&
		     rc == 0; j++) {
			char note[64];

			rc = valid_predict_point(&pr, pb->pts[idx[j]].row, &t[j],
						 note, sizeof(note), d);
		}
		valid_pred_close(&pr);
		arena_release(&a);
		i = j;
	}
	mem_free(sets);
	mem_free(text);
	return rc;
}

static size_t *all_idx(size_t n)
{
	size_t *idx = mem_alloc((n + 1) * sizeof(*idx)), i;

	for (i = 0; idx && i < n; i++)
		idx[i] = i;
	return idx;
}

int calib_predict(const struct calib_problem *pb, const double *values,
		  double *time_s, struct diag *d)
{
	size_t *idx = all_idx(pb->npts);
	int rc;

	if (!idx) {
		diag_oom(d);
		return -1;
	}
	rc = predict_idx(pb, values, idx, pb->npts, time_s, d);
	mem_free(idx);
	return rc;
}

/* ---- the GSL problem ------------------------------------------------ */

struct fitctx {
	const struct calib_problem *pb;
	const size_t *idx;		/* the points fitted */
	size_t n;
	double *v, *t;			/* scratch: values, times */
	struct diag *d;
	int failed;
};

static int residuals(const gsl_vector *u, void *arg, gsl_vector *f)
{
	struct fitctx *c = arg;
	size_t i;

	if (c->failed)
		return GSL_EBADFUNC;	/* reported once */
	for (i = 0; i < c->pb->npar; i++)
		c->v[i] = p_of_u(&c->pb->par[i], gsl_vector_get(u, i));
	if (predict_idx(c->pb, c->v, c->idx, c->n, c->t, c->d) != 0) {
		c->failed = 1;
		return GSL_EBADFUNC;
	}
	for (i = 0; i < c->n; i++)
		gsl_vector_set(f, i, log(c->t[i] / c->pb->pts[c->idx[i]].meas_s));
	return GSL_SUCCESS;
}

static int jacobian(const gsl_vector *u, void *arg, gsl_matrix *J)
{
	struct fitctx *c = arg;
	gsl_vector *f0 = gsl_vector_alloc(c->n), *f1 = gsl_vector_alloc(c->n);
	gsl_vector *uu = gsl_vector_alloc(u->size);
	size_t i, j;
	int rc = GSL_ENOMEM;

	if (!f0 || !f1 || !uu)
		goto out;
	if ((rc = residuals(u, c, f0)) != GSL_SUCCESS)
		goto out;
	for (j = 0; j < u->size && rc == GSL_SUCCESS; j++) {
		const struct calib_param *p = &c->pb->par[j];
		double h = JAC_STEP, uj = gsl_vector_get(u, j);

		/* Engine time is whole nanoseconds: a step must show. */
		if (p->type == ST_TIME && dp_du(p, uj) * h < JAC_MIN_TIME)
			h = JAC_MIN_TIME / dp_du(p, uj);
		gsl_vector_memcpy(uu, u);
		gsl_vector_set(uu, j, uj + h);
		rc = residuals(uu, c, f1);
		for (i = 0; i < c->n && rc == GSL_SUCCESS; i++)
			gsl_matrix_set(J, i, j, (gsl_vector_get(f1, i) -
						 gsl_vector_get(f0, i)) / h);
	}
out:
	gsl_vector_free(f0);
	gsl_vector_free(f1);
	gsl_vector_free(uu);
	return rc;
}

static double rms(const gsl_vector *f)
{
	double s = 0;

	gsl_blas_ddot(f, f, &s);
	return sqrt(s / (double)f->size);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of |e^r - 1| over r. */
static double med_rel(const double *r, size_t n)
{
	double *a = mem_alloc((n + 1) * sizeof(*a)), m;
	size_t i;

	if (!a || n == 0) {
		mem_free(a);
		return NAN;
	}
	for (i = 0; i < n; i++)
		a[i] = fabs(exp(r[i]) - 1);
	qsort(a, n, sizeof(*a), cmp_double);
	m = n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2;
	mem_free(a);
	return m;
}

/* Fit pb's parameters (par[].value) on points idx; the converged
 * workspace in *wout (caller frees), or NULL with status. */
static int solve(const struct calib_problem *pb, const size_t *idx, size_t n,
		 gsl_multifit_nlinear_workspace **wout, struct fitctx *c,
		 struct diag *d)
{
	gsl_multifit_nlinear_parameters fp =
		gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_fdf fdf;
	gsl_multifit_nlinear_workspace *w;
	gsl_vector *u0 = gsl_vector_alloc(pb->npar);
	size_t i;
	int info = 0, st;

	*c = (struct fitctx){ pb, idx, n, mem_alloc(pb->npar * sizeof(double)),
			      mem_alloc(n * sizeof(double)), d, 0 };
	w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, n,
				       pb->npar);
	if (!u0 || !w || !c->v || !c->t) {
		gsl_vector_free(u0);
		if (w)
			gsl_multifit_nlinear_free(w);
		diag_oom(d);
		return GSL_ENOMEM;
	}
	for (i = 0; i < pb->npar; i++)
		gsl_vector_set(u0, i, u_of_p(&pb->par[i], pb->par[i].start));
	fdf = (gsl_multifit_nlinear_fdf){ residuals, jacobian, NULL, n,
					  pb->npar, c, 0, 0, 0 };
	st = gsl_multifit_nlinear_init(u0, &fdf, w);
	if (st == GSL_SUCCESS)
		st = gsl_multifit_nlinear_driver((size_t)pb->max_iter, 1e-8, 1e-10,
						 0, NULL, NULL, &info, w);
	gsl_vector_free(u0);
	*wout = w;
	return st;
}

static void free_ctx(struct fitctx *c)
{
	mem_free(c->v);
	mem_free(c->t);
}

/* Values, standard errors, intervals and correlation from w. */
static int uncertainty(struct calib_problem *pb,
		       gsl_multifit_nlinear_workspace *w, size_t n,
		       struct calib_result *res)
{
	size_t k = pb->npar, i, j;
	gsl_matrix *cov = gsl_matrix_alloc(k, k);
	gsl_vector *u = gsl_multifit_nlinear_position(w);
	double s2 = pow(rms(gsl_multifit_nlinear_residual(w)), 2) * (double)n /
		    (double)(n - k);
	double tq = gsl_cdf_tdist_Pinv(0.975, (double)(n - k));

	if (!cov || !(res->corr = mem_calloc(k * k, sizeof(double)))) {
		gsl_matrix_free(cov);
		return -1;
	}
	gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
	gsl_matrix_scale(cov, s2);
	for (i = 0; i < k; i++) {
		struct calib_param *p = &pb->par[i];
		double ui = gsl_vector_get(u, i);
		double su = sqrt(gsl_matrix_get(cov, i, i));

		p->value = p_of_u(p, ui);
		p->u_sigma = su;
		p->stderr_ = dp_du(p, ui) * su;
		p->ci_lo = p_of_u(p, ui - tq * su);
		p->ci_hi = p_of_u(p, ui + tq * su);
		for (j = 0; j < k; j++)
			res->corr[i * k + j] = gsl_matrix_get(cov, i, j) /
				sqrt(gsl_matrix_get(cov, i, i) *
				     gsl_matrix_get(cov, j, j));
	}
	gsl_matrix_free(cov);
	return 0;
}

static const char *why_not(int st)
{
	return st == GSL_EMAXITER ? "the iteration limit (--max-iter) reached" :
	       st == GSL_ENOPROG ? "no further progress" : gsl_strerror(st);
}

static int column(struct calib_problem *pb, struct calib_param *c,
		  const double *t0, double *col, double *tmp, struct diag *d);

/* Every parameter must move some prediction, or it cannot be fitted:
 * 0, or -1 after naming the first that does not. */
static int effects(struct calib_problem *pb, const double *t0,
		   struct diag *d)
{
	size_t n = pb->npts, i, j;
	double *col = mem_alloc((n + 1) * sizeof(double));
	double *tmp = mem_alloc((n + 1) * sizeof(double)), big;
	int rc = 0;

	if (!col || !tmp) {
		diag_oom(d);
		rc = -1;
	}
	for (i = 0; rc == 0 && i < pb->npar; i++) {
		if (column(pb, &pb->par[i], t0, col, tmp, d) != 0) {
			rc = -1;
			break;
		}
		for (j = 0, big = 0; j < n; j++)
			big = fmax(big, fabs(col[j]));
		if (big < 1e-4) {
			diag_error(d, NULL, 0, 0, "'%s' does not move the "
				   "prediction of any measured point: nothing "
				   "to fit it to", pb->par[i].key);
			rc = -1;
		}
	}
	mem_free(col);
	mem_free(tmp);
	return rc;
}

int calib_fit(struct calib_problem *pb, struct calib_result *res,
	      struct diag *d)
{
	size_t n = pb->npts, *idx = all_idx(n), i;
	gsl_multifit_nlinear_workspace *w = NULL;
	double *r0 = mem_alloc((n + 1) * sizeof(double));
	struct fitctx c;
	int st, rc = -1;

	gsl_set_error_handler_off();
	memset(&c, 0, sizeof(c));
	if (n <= pb->npar) {
		/* n residuals, npar unknowns: error bars need n > npar. */
		diag_error(d, NULL, 0, 0, "%zu point%s cannot fit %zu "
			   "parameter%s with error bars (that takes at least "
			   "%zu points): measure more sizes or fit fewer "
			   "(--params)",
			   n, n == 1 ? "" : "s", pb->npar,
			   pb->npar == 1 ? "" : "s", pb->npar + 1);
		mem_free(idx);
		mem_free(r0);
		return -2;
	}
	if (!idx || !r0 || calib_predict(pb, NULL, r0, d) != 0)
		goto out;
	if (effects(pb, r0, d) != 0) {
		rc = d->oom ? -1 : -2;
		goto out;
	}
	for (i = 0; i < n; i++)
		r0[i] = log(r0[i] / pb->pts[i].meas_s);
	res->med_before = med_rel(r0, n);
	res->rms_before = 0;
	for (i = 0; i < n; i++)
		res->rms_before += r0[i] * r0[i] / (double)n;
	res->rms_before = sqrt(res->rms_before);
	st = solve(pb, idx, n, &w, &c, d);
	if (c.failed || st == GSL_ENOMEM)
		goto out;
	if (st != GSL_SUCCESS) {
		diag_error(d, NULL, 0, 0, "the fit did not converge after %zu "
			   "iteration%s (%s): fit fewer parameters or measure "
			   "more points", gsl_multifit_nlinear_niter(w),
			   gsl_multifit_nlinear_niter(w) == 1 ? "" : "s",
			   why_not(st));
		rc = 1;
		goto out;
	}
	res->iters = (int)gsl_multifit_nlinear_niter(w);
	res->dof = n - pb->npar;
	res->rms_after = rms(gsl_multifit_nlinear_residual(w));
	for (i = 0; i < n; i++)
		r0[i] = gsl_vector_get(gsl_multifit_nlinear_residual(w), i);
	res->med_after = med_rel(r0, n);
	rc = uncertainty(pb, w, n, res) == 0 ? 0 : -1;
	if (rc)
		diag_oom(d);
out:
	if (w)
		gsl_multifit_nlinear_free(w);
	free_ctx(&c);
	mem_free(idx);
	mem_free(r0);
	return rc;
}

/* ---- cross-validation ----------------------------------------------- */

int calib_cross_validate(struct calib_problem *pb, int folds,
			 struct calib_result *res, struct diag *d)
{
	size_t n = pb->npts, i, nt, nh, nall = 0;
	size_t *train = mem_alloc((n + 1) * sizeof(*train));
	size_t *held = mem_alloc((n + 1) * sizeof(*held));
	double *rf = mem_alloc((n + 1) * sizeof(double));
	double *rb = mem_alloc((n + 1) * sizeof(double));
	double *t = mem_alloc((n + 1) * sizeof(double)), *val;
	int f, rc = -1;

	val = mem_alloc((pb->npar + 1) * sizeof(double));
	if (!train || !held || !rf || !rb || !t || !val) {
		diag_oom(d);
		goto out;
	}
	res->folds = folds;
	for (f = 0; f < folds; f++) {
		gsl_multifit_nlinear_workspace *w = NULL;
		struct fitctx c;
		int st;

		for (i = nt = nh = 0; i < n; i++) {
			if ((int)(i % (size_t)folds) == f)
				held[nh++] = i;
			else
				train[nt++] = i;
		}
		if (nt <= pb->npar || nh == 0)
			continue;
		st = solve(pb, train, nt, &w, &c, d);
		for (i = 0; st == GSL_SUCCESS && i < pb->npar; i++)
			val[i] = p_of_u(&pb->par[i], gsl_vector_get(
				gsl_multifit_nlinear_position(w), i));
		if (w)
			gsl_multifit_nlinear_free(w);
		free_ctx(&c);
		if (st != GSL_SUCCESS) {
			diag_error(d, NULL, 0, 0, "cross-validation: the fit of "
				   "fold %d did not converge (%s)", f + 1,
				   why_not(st));
			rc = 1;
			goto out;
		}
		if (predict_idx(pb, val, held, nh, t, d) != 0)
			goto out;
		for (i = 0; i < nh; i++)
			rf[nall + i] = log(t[i] / pb->pts[held[i]].meas_s);
		if (predict_idx(pb, NULL, held, nh, t, d) != 0)
			goto out;
		for (i = 0; i < nh; i++)
			rb[nall + i] = log(t[i] / pb->pts[held[i]].meas_s);
		nall += nh;
	}
	res->cv_med = med_rel(rf, nall);
	res->cv_med_before = med_rel(rb, nall);
	res->cv_rms = res->cv_rms_before = 0;
	for (i = 0; i < nall; i++) {
		res->cv_rms += rf[i] * rf[i] / (double)nall;
		res->cv_rms_before += rb[i] * rb[i] / (double)nall;
	}
	res->cv_rms = sqrt(res->cv_rms);
	res->cv_rms_before = sqrt(res->cv_rms_before);
	rc = 0;
out:
	mem_free(train);
	mem_free(held);
	mem_free(rf);
	mem_free(rb);
	mem_free(t);
	mem_free(val);
	return rc;
}

/* ---- choosing parameters -------------------------------------------- */

struct cand {
	size_t i;			/* index into cand[] */
	double norm;			/* largest elasticity over the points */
	double *col;			/* d ln t / d ln p per point */
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return (x->norm < y->norm) - (x->norm > y->norm);
}

/* Elasticities of every point to candidate c (1% up, or 1/1000 of its
 * range off its lower bound). */
static int column(struct calib_problem *pb, struct calib_param *c,
		  const double *t0, double *col, double *tmp, struct diag *d)
{
	struct calib_param *save = pb->par;
	size_t npar = pb->npar, i;
	double v = c->start * 1.01, dl;

	if (!(c->start > c->lo))
		v = c->lo + (isinf(c->hi) ? 1e-9 : 1e-3 * (c->hi - c->lo));
	if (v > c->hi)
		v = c->start * 0.99;
	dl = c->start > 0 ? log(v / c->start) : 1;
	pb->par = c;
	pb->npar = 1;
	i = calib_predict(pb, &v, tmp, d) != 0;
	pb->par = save;
	pb->npar = npar;
	if (i)
		return -1;
	for (i = 0; i < pb->npts; i++)
		col[i] = log(tmp[i] / t0[i]) / dl;
	return 0;
}

long calib_choose(struct calib_problem *pb, struct calib_param *cand,
		  size_t ncand, size_t max, struct calib_param **out,
		  struct diag *d)
{
	size_t n = pb->npts, i, j, k, taken = 0;
	struct cand *cs = mem_calloc(ncand + 1, sizeof(*cs));
	double *t0 = mem_alloc((n + 1) * sizeof(double));
	double *tmp = mem_alloc((n + 1) * sizeof(double));
	double *basis = mem_alloc((max * n + 1) * sizeof(double));
	long rc = -1;

	*out = arena_alloc(pb->cx->arena, (max + 1) * sizeof(**out));
	if (!cs || !t0 || !tmp || !basis || !*out) {
		diag_oom(d);
		goto out;
	}
	pb->npar = 0;
	if (calib_predict(pb, NULL, t0, d) != 0)
		goto out;
	for (i = 0; i < ncand; i++) {
		cs[i].i = i;
		if (!(cs[i].col = mem_alloc((n + 1) * sizeof(double))) ||
		    column(pb, &cand[i], t0, cs[i].col, tmp, d) != 0)
			goto out;
		for (j = 0; j < n; j++)
			cs[i].norm = fmax(cs[i].norm, fabs(cs[i].col[j]));
	}
	qsort(cs, ncand, sizeof(*cs), cmp_cand);
	for (i = 0; i < ncand && taken < max && cs[i].norm >= 0.1; i++) {
		double *r = basis + taken * n, len0 = 0, len = 0, dot;

		memcpy(r, cs[i].col, n * sizeof(double));
		for (j = 0; j < n; j++)
			len0 += r[j] * r[j];
		for (k = 0; k < taken; k++) {	/* Gram-Schmidt */
			dot = 0;
			for (j = 0; j < n; j++)
				dot += r[j] * basis[k * n + j];
			for (j = 0; j < n; j++)
				r[j] -= dot * basis[k * n + j];
		}
		for (j = 0; j < n; j++)
			len += r[j] * r[j];
		if (sqrt(len) < 0.05 * sqrt(len0))
			continue;
		for (j = 0; j < n; j++)
			r[j] /= sqrt(len);
		(*out)[taken++] = cand[cs[i].i];
	}
	rc = (long)taken;
out:
	for (i = 0; cs && i < ncand; i++)
		mem_free(cs[i].col);
	mem_free(cs);
	mem_free(t0);
	mem_free(tmp);
	mem_free(basis);
	return rc;
}
