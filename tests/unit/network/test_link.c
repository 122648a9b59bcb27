/*
 * test_link.c - payload efficiency derived from framing (network/link.c),
 * against the arithmetic of hardware-specs 3.3 and 3.7.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "network/link.h"

#define REL 1e-9

static struct link_spec packet_link(double lane_Bps, int64_t lanes,
				    double code, double payload, double ovh)
{
	struct link_spec l;

	memset(&l, 0, sizeof(l));
	l.lane_rate_Bps = lane_Bps;
	l.lanes = lanes;
	l.line_code = code;
	l.packet_payload_B = payload;
	l.packet_overhead_B = ovh;
	l.sustained = 1;
	return l;
}

Test(net_link, roce_at_4096_and_1024_byte_mtu)
{
	/* RoCEv2 WRITE middle, IPv4: 14 + 20 + 8 + 12 + 4 + 4 = 62 B of
	 * headers and trailers, + 20 B preamble/IFG = 82 B per packet.
	 * 4096 B MTU: 4096 / 4178 = 0.98037; a 1024 B message is one packet:
	 * 1024 / 1106 = 0.92586. */
	struct link_spec l = packet_link(106.25e9 / 8, 4, 256.0 / 257 * 514 / 544,
					 4096, 82);

	cr_assert_float_eq(link_framing_efficiency(&l, 0), 4096.0 / 4178, REL);
	cr_assert_float_eq(link_framing_efficiency(&l, 1024), 1024.0 / 1106, REL);
	/* 5000 B needs two packets: 5000 / (5000 + 2 * 82) = 0.96824. */
	cr_assert_float_eq(link_framing_efficiency(&l, 5000), 5000.0 / 5164, REL);
	/* 4 lanes * 106.25 Gb/s * (256/257)(514/544) = 400 Gb/s = 50 GB/s of
	 * data; payload 50e9 * 4096/4178 = 49.019 GB/s. */
	cr_assert_float_eq(link_data_rate_Bps(&l), 50e9, 50e9 * REL);
	cr_assert_float_eq(link_payload_rate_Bps(&l), 50e9 * 4096 / 4178,
			   50e9 * REL);
}

Test(net_link, infiniband_headers)
{
	/* IB: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B per 4096 B packet:
	 * 4096 / 4122 = 0.99369. */
	struct link_spec l = packet_link(106.25e9 / 8, 4, 1, 4096, 26);

	cr_assert_float_eq(link_framing_efficiency(&l, 0), 4096.0 / 4122, REL);
}

Test(net_link, pcie_gen5_tlps)
{
	/* Gen5 x16: 16 * 32 Gb/s * 128/130 = 63.015 GB/s; 256 B TLPs with
	 * 28 B each (STP 4 + header 16 + LCRC 4 + DLLPs 4): 256/284 = 0.90141
	 * -> 56.80 GB/s. */
	struct link_spec l = packet_link(32e9 / 8, 16, 128.0 / 130, 256, 28);

	cr_assert_float_eq(link_data_rate_Bps(&l), 64e9 * 128 / 130, REL * 64e9);
	cr_assert_float_eq(link_payload_rate_Bps(&l),
			   64e9 * 128 / 130 * 256 / 284, REL * 64e9);
}

Test(net_link, pcie_gen6_flits)
{
	/* Gen6 FLIT: 256 B flit = 236 B TLP bytes + 20 B (DLP 6, CRC 8,
	 * FEC 6): 236/256 = 0.92188; TLP headers 16 B per 256 B: 256/272.
	 * Long transfer: 0.94118 * 0.92188 = 0.86765. */
	struct link_spec l = packet_link(64e9 / 8, 16, 1, 256, 16);

	l.flit_B = 256;
	l.flit_overhead_B = 20;
	cr_assert_float_eq(link_framing_efficiency(&l, 0),
			   256.0 / 272 * 236 / 256, REL);
	/* One 256 B TLP = 272 B of TLP bytes -> ceil(272/236) = 2 flits of
	 * 256 B: 256 / 512 = 0.5. */
	cr_assert_float_eq(link_framing_efficiency(&l, 256), 0.5, REL);
}

Test(net_link, ualink_flits_give_the_93_percent_claim)
{
	/* 16 B request header per 256 B (256/272) and 8 B per 640 B DL flit
	 * (632/640): 0.94118 * 0.9875 = 0.92941 -- the consortium's "93%". */
	struct link_spec l = packet_link(212.5e9 / 8, 4, 256.0 / 257 * 514 / 544,
					 256, 16);

	l.flit_B = 640;
	l.flit_overhead_B = 8;
	cr_assert_float_eq(link_framing_efficiency(&l, 0),
			   256.0 / 272 * 632 / 640, REL);
	/* x4 port: 4 * 200 Gb/s = 100 GB/s data -> 92.94 GB/s payload. */
	cr_assert_float_eq(link_payload_rate_Bps(&l), 100e9 * 256 / 272 * 632 / 640,
			   100e9 * REL);
}

Test(net_link, nvlink_header_flit_is_the_16_over_17_ratio)
{
	/* NVLink 4: 2 lanes * 106.25 Gb/s = 26.5625 GB/s raw; one 16 B header
	 * flit per 256 B of data: 26.5625 * 256/272 = 25.0 GB/s exactly. */
	struct link_spec l = packet_link(106.25e9 / 8, 2, 1, 256, 16);

	cr_assert_float_eq(link_payload_rate_Bps(&l), 25e9, 25e9 * REL);
}

Test(net_link, no_framing_is_the_data_rate)
{
	/* xGMI: 16 lanes * 32 Gb/s = 64 GB/s, no framing data: efficiency 1. */
	struct link_spec l = packet_link(32e9 / 8, 16, 1, 0, 0);

	cr_assert_float_eq(link_framing_efficiency(&l, 1000), 1.0, REL);
	cr_assert_float_eq(link_payload_rate_Bps(&l), 64e9, 64e9 * REL);
}
