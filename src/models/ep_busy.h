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

/* Set c's busy_rate from the dispatcher e (its busy_rate, when below 1:
 * the call progresses at that rate while compute runs on its GPUs) and
 * scale its compute share by e's busy_compute_share (what the compute
 * beside it still loses). No dispatcher, or busy_rate 1: c unchanged. */
void ep_busy(const struct ep_comm_spec *e, struct coll_desc *c);

#endif
