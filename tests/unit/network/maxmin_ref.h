/*
 * maxmin_ref.h - the reference max-min solver (maxmin_ref.c): the same
 * interface as src/network/maxmin.h, prefixed mmref_.
 */
#ifndef LLMSIM_TEST_MAXMIN_REF_H
#define LLMSIM_TEST_MAXMIN_REF_H

#include <stdint.h>

#include "network/maxmin.h"

struct mmref;

struct mmref *mmref_new(void);
void mmref_free(struct mmref *m);
mm_id mmref_cons_add(struct mmref *m, double cap_Bps);
mm_id mmref_var_add(struct mmref *m, const mm_id *cons, const double *coef,
		    uint32_t n, double bound_Bps, void *data);
void mmref_var_remove(struct mmref *m, mm_id var);
long mmref_solve(struct mmref *m, mm_change_fn fn, void *arg);
void mmref_touch_all(struct mmref *m);
double mmref_rate(const struct mmref *m, mm_id var);
uint32_t mmref_vars(const struct mmref *m);

#endif
