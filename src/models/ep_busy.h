/*
 * ep_busy.h - comm-side interference of expert-parallel dispatch/combine
 * kernels with the compute beside them (ep_busy.c).
 *
 * Depends on base/coll.h and config/spec_moe.h.
 */
#ifndef LLMSIM_MODELS_EP_BUSY_H
#define LLMSIM_MODELS_EP_BUSY_H

#include "base/coll.h"
#include "config/spec_moe.h"

/* Set c's busy_rate from the dispatcher e (its busy_rate, when below 1)
 * and scale its compute share by it: while compute runs beside it the
 * call's kernels keep that share of their SMs' time, so the compute
 * loses busy_rate x sm_share and the call progresses at busy_rate. No
 * dispatcher, or busy_rate 1: c unchanged. */
void ep_busy(const struct ep_comm_spec *e, struct coll_desc *c);

#endif
