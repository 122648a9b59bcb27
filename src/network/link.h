/*
 * link.h - what a link carries: its data rate after line coding and the
 * share of it that framing (packets, TLPs, flits) leaves for payload.
 * The framing model is at the top of link.c.
 *
 * Depends on config/spec_fabric.h (struct link_spec).
 */
#ifndef LLMSIM_NETWORK_LINK_H
#define LLMSIM_NETWORK_LINK_H

#include "config/spec_fabric.h"

/* B/s per direction of one port after line coding, before framing:
 * lane_rate * lanes * line_code. */
double link_data_rate_Bps(const struct link_spec *l);

/* Fraction of the data rate that is payload, for a transfer of msg_B
 * bytes (msg_B <= 0: a long transfer, every packet full). */
double link_framing_efficiency(const struct link_spec *l, double msg_B);

/* B/s of payload one port carries per direction in a long transfer:
 * data rate * framing efficiency (sustained not applied). */
double link_payload_rate_Bps(const struct link_spec *l);

#endif
