/*
 * link.c - the framing arithmetic that turns a link's signalling rate
 * into payload rate (a link as configured: config/spec_fabric.h).
 *
 * Framing model (two levels, either may be absent):
 *
 *   a transfer of M bytes is cut into packets of at most P payload bytes,
 *   each carrying O bytes of headers, trailers and inter-packet gap:
 *       packets = ceil(M / P),   W = M + packets * O
 *   a flit-framed link then packs those W bytes into flits of F bytes of
 *   which Fo are flit header / CRC / FEC:
 *       flits = ceil(W / (F - Fo)),   wire = flits * F
 *   payload efficiency = M / wire.
 *
 *   For a long transfer (every packet and flit full):
 *       eff = P / (P + O) * (F - Fo) / F
 *
 * Worked values (the presets' sources):
 *   RoCEv2, 4096 B payload, 82 B per packet  -> 4096/4178 = 0.980
 *   RoCEv2, 1024 B payload                    -> 1024/1106 = 0.926
 *   PCIe Gen6 flit 256 B with 20 B DLP/CRC/FEC -> 236/256 = 0.922
 *   NVLink, 16 B header flit per 256 B data   -> 256/272 = 0.941
 */
#include "link.h"

#include <math.h>

double link_data_rate_Bps(const struct link_spec *l)
{
	return l->lane_rate_Bps * (double)l->lanes * l->line_code;
}

static double packet_efficiency(const struct link_spec *l, double msg_B,
				double *wire_B)
{
	double P = l->packet_payload_B, O = l->packet_overhead_B;
	double packets;

	if (P <= 0) {
		*wire_B = msg_B;
		return 1.0;
	}
	if (msg_B <= 0) {
		*wire_B = 0;
		return P / (P + O);
	}
	packets = ceil(msg_B / P);
	*wire_B = msg_B + packets * O;
	return msg_B / *wire_B;
}

double link_framing_efficiency(const struct link_spec *l, double msg_B)
{
	double F = l->flit_B, Fo = l->flit_overhead_B;
	double wire_B, eff = packet_efficiency(l, msg_B, &wire_B);

	if (F <= 0 || Fo >= F)
		return eff;
	if (msg_B <= 0)
		return eff * (F - Fo) / F;
	return msg_B / (ceil(wire_B / (F - Fo)) * F);
}

double link_payload_rate_Bps(const struct link_spec *l)
{
	return link_data_rate_Bps(l) * link_framing_efficiency(l, 0);
}
