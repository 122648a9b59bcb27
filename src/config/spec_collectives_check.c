/*
 * spec_collectives_check.c - the collective library's algorithm and
 * protocol names, and the schema's cross-key checks (coll_lib_check):
 * what one key cannot say alone, such as a key set under an algorithm
 * that never reads it, checked once the library (and a system's overlay
 * on it) is loaded. The keys themselves are in spec_collectives.c.
 */
#include "spec_collectives.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

const char *const coll_algo_names[ALGO_COUNT + 1] = {
	"ring", "tree", "direct", "rhd", "hierarchical", "nvls", "pairwise",
	"p2p", "nvls_tree", NULL,
};

const char *const coll_proto_names[PROTO_COUNT + 1] = {
	"ll", "ll128", "simple", NULL,
};

/* Cross-key errors point at the value the user wrote: the key path under
 * the library's mapping (schema_check_error finds it, or the mapping when
 * it is absent), with the system's "collectives." prefix when the library
 * is a system's overlay. */
#define KEY_MAX 160

/* "algorithms.A[.mid][.P][.leaf]" into k (KEY_MAX); p < 0, mid or leaf
 * NULL: left out. */
static const char *akey(char *k, int a, const char *mid, int p,
			const char *leaf)
{
	snprintf(k, KEY_MAX, "algorithms.%s%s%s%s%s%s%s", coll_algo_names[a],
		 mid ? "." : "", mid ? mid : "", p >= 0 ? "." : "",
		 p >= 0 ? coll_proto_names[p] : "", leaf ? "." : "",
		 leaf ? leaf : "");
	return k;
}

/* A key only one algorithm reads (pipe.c, algo.c), set under another:
 * it would be ignored without a word. 0, or -1 after an error at it. */
static int pipe_owner(const struct coll_pipe_spec *ps, int a, int p,
		      const struct schema_at *at, struct diag *d)
{
	static const struct {
		const char *key;
		size_t off;
		int owner;
		const char *what;
	} only[] = {
		{ "peer_part_min", offsetof(struct coll_pipe_spec,
					    peer_part_min_B), ALGO_P2P,
		  "a send's channels" },
		{ "peer_part_max", offsetof(struct coll_pipe_spec,
					    peer_part_max_B), ALGO_P2P,
		  "a send's channels" },
		{ "chunk_4nodes", offsetof(struct coll_pipe_spec,
					   chunk_4nodes_B), ALGO_NVLS_TREE,
		  "NVLSTree's chunk cap" },
		{ "chain_chunk", offsetof(struct coll_pipe_spec,
					  chain_chunk_B), ALGO_RING,
		  "a ring's broadcast and reduce chains" },
		{ "chain_channel_bandwidth", offsetof(struct coll_pipe_spec,
						      chain_channel_Bps),
		  ALGO_RING, "a ring channel's forwarding rate" },
	};
	char k[KEY_MAX], k2[2][KEY_MAX];
	const char *const pair[2] = { k2[0], k2[1] };
	size_t i;

	for (i = 0; i < sizeof(only) / sizeof(only[0]); i++) {
		double v;

		memcpy(&v, (const char *)ps + only[i].off, sizeof(v));
		if (!(v > 0) || a == only[i].owner)
			continue;
		schema_check_error(d, at, akey(k, a, "pipeline", p,
						only[i].key), "expected it under "
				   "'algorithms.%s' only (%s), got it under %s",
				   coll_algo_names[only[i].owner], only[i].what,
				   coll_algo_names[a]);
		return -1;
	}
	if (ps->peer_part_max_B > 0 && !(ps->peer_part_min_B > 0)) {
		/* at whichever of the two the user changed */
		akey(k2[0], a, "pipeline", p, "peer_part_max");
		akey(k2[1], a, "pipeline", p, "peer_part_min");
		schema_check_error(d, at, pair[schema_check_blame(at, pair, 2)],
				   "expected peer_part_min above 0 where "
				   "peer_part_max is set (a send's least part "
				   "a channel), got none");
		return -1;
	}
	return 0;
}

/* A pipeline's halving rules come in pairs; a p2p part's most is at
 * least its least. */
static int pipe_check(const struct coll_lib_spec *lib, int a, int p,
		      const struct schema_at *at, struct diag *d)
{
	const struct coll_pipe_spec *ps = &lib->algo[a].pipe[p];
	char k[2][KEY_MAX];
	const char *const keys[2] = { k[0], k[1] };

	if (pipe_owner(ps, a, p, at, d) != 0)
		return -1;
	if (ps->peer_part_max_B > 0 && ps->peer_part_max_B < ps->peer_part_min_B) {
		schema_check_error(d, at, akey(k[0], a, "pipeline", p,
						"peer_part_max"), "expected at least "
				   "peer_part_min (%.0f B), got %.0f B",
				   ps->peer_part_min_B, ps->peer_part_max_B);
		return -1;
	}
	if (ps->halve_below.n == ps->halvings.n)
		return 0;
	akey(k[0], a, "pipeline", p, "halvings");
	akey(k[1], a, "pipeline", p, "halve_below");
	/* At halvings when it is written, else at halve_below; the
	 * message names halvings either way. */
	schema_check_error(d, at, keys[schema_check_blame(at, keys, 2)],
			   "expected one 'halvings' entry per 'halve_below' "
			   "entry (%zu), got %zu", ps->halve_below.n,
			   ps->halvings.n);
	return -1;
}

/* A range is empty or [lo, hi] with 0 <= lo < hi. */
static int range_check(const struct coll_lib_spec *lib, int op, int p,
		       const struct schema_at *at, struct diag *d)
{
	const struct schema_int_list *r = &lib->ranges[op].proto[p];
	char k[KEY_MAX];

	if (r->n == 0 || (r->n == 2 && r->v[0] >= 0 && r->v[0] < r->v[1]))
		return 0;
	snprintf(k, sizeof(k), "protocol_ranges.%s.%s", coll_op_names[op],
		 coll_proto_names[p]);
	schema_check_error(d, at, k, "expected [lo, hi] bytes with 0 <= lo "
			   "< hi");
	return -1;
}

/* peer_max_bytes is p2p's (its sends to one peer), and a send over every
 * limit needs an offered protocol without one. */
static int peer_check(const struct coll_lib_spec *lib, int a,
		      const struct schema_at *at, struct diag *d)
{
	const struct coll_algo_spec *as = &lib->algo[a];
	int p, limited = 0, open = 0;
	char k[KEY_MAX];

	for (p = 0; p < PROTO_COUNT; p++) {
		if (as->peer_max_B.b[p] > 0 && a != ALGO_P2P) {
			schema_check_error(d, at, akey(k, a, "peer_max_bytes",
							p, NULL), "expected it under "
					   "'algorithms.p2p' only (a send's "
					   "bytes to one peer), got it under %s",
					   coll_algo_names[a]);
			return -1;
		}
		if (!as->protocols.on[p])
			continue;
		if (as->peer_max_B.b[p] > 0)
			limited = 1;
		else
			open = 1;
	}
	if (limited && !open) {
		schema_check_error(d, at, akey(k, a, "peer_max_bytes", -1,
						NULL), "expected an offered protocol "
				   "without a limit for larger sends, got a "
				   "limit on every one");
		return -1;
	}
	return 0;
}

/* The graph-search view is NVLS's, its speeds fastest first. */
static int select_check(const struct coll_lib_spec *lib, int a,
			const struct schema_at *at, struct diag *d)
{
	static const char *const names[3] = {
		"select_link_bandwidth", "select_speeds", "select_heads_max" };
	const struct coll_algo_spec *as = &lib->algo[a];
	char k[3][KEY_MAX];
	const char *const keys[3] = { k[0], k[1], k[2] };
	size_t i;

	for (i = 0; i < 3; i++)
		akey(k[i], a, NULL, -1, names[i]);
	if (a != ALGO_NVLS && (as->select_link_Bps > 0 ||
			       as->select_speeds.n > 0 ||
			       as->select_heads_max > 0)) {
		schema_check_error(d, at, keys[schema_check_blame(at, keys, 3)],
				   "expected 'select_link_bandwidth', "
				   "'select_speeds' and 'select_heads_max' "
				   "under 'algorithms.nvls' only (its graph "
				   "search), got them under %s",
				   coll_algo_names[a]);
		return -1;
	}
	if (a != ALGO_NVLS_TREE && (as->head_busbw_Bps[SCALE_2NODES] > 0 ||
				    as->head_busbw_Bps[SCALE_4NODES] > 0)) {
		akey(k[0], a, NULL, -1, "head_busbw_2nodes");
		akey(k[1], a, NULL, -1, "head_busbw_4nodes");
		schema_check_error(d, at, keys[schema_check_blame(at, keys, 2)],
				   "expected 'head_busbw_2nodes' and "
				   "'head_busbw_4nodes' under "
				   "'algorithms.nvls_tree' only (NCCL's per-head "
				   "NVLSTree bandwidth), got them under %s",
				   coll_algo_names[a]);
		return -1;
	}
	for (i = 1; i < as->select_speeds.n; i++)
		if (as->select_speeds.v[i] >= as->select_speeds.v[i - 1]) {
			schema_check_error(d, at, k[1], "expected speeds "
					   "fastest first (each below the one "
					   "before), got %lld after %lld",
					   (long long)as->select_speeds.v[i],
					   (long long)as->select_speeds.v[i - 1]);
			return -1;
		}
	return 0;
}

/* How an algorithm-level key is stored, to tell whether it is set. */
enum own_kind {
	OWN_PROTO_BYTES,	/* struct coll_proto_bytes: any protocol > 0 */
	OWN_PROTO_FLAGS,	/* struct coll_proto_flags: any protocol on */
	OWN_INT,		/* int64_t > 0 */
	OWN_RATE,		/* double > 0 */
};

#define ABIT(a) (1u << (a))

/* The keys of an algorithm's own mapping that only some algorithms'
 * builders read (src/network); set under another, the key would be
 * ignored without a word. The reader of each: */
static const struct {
	const char *key;
	size_t off;
	enum own_kind kind;
	unsigned owners;	/* ABIT of the algorithms that read it */
	const char *what;
} algo_only[] = {
	/* algo_ring.c channels(): pipe.chan_min_B, for rings and trees */
	{ "channel_min_bytes", offsetof(struct coll_algo_spec, channel_min_B),
	  OWN_PROTO_BYTES, ABIT(ALGO_RING) | ABIT(ALGO_TREE),
	  "the channels a ring's or tree's kernel runs" },
	{ "channel_min_bytes_per_rank",
	  offsetof(struct coll_algo_spec, channel_min_rank_B),
	  OWN_PROTO_BYTES, ABIT(ALGO_RING) | ABIT(ALGO_TREE),
	  "the channels a ring's or tree's kernel runs" },
	/* algo_ring.c chain_latency(): a ring's broadcast / reduce chain */
	{ "select_chain_steps", offsetof(struct coll_algo_spec,
					 select_chain_steps),
	  OWN_INT, ABIT(ALGO_RING), "a ring chain's steps in the choice" },
	/* algo_ring.c algo_tree(): reduce, then broadcast */
	{ "up_then_down", offsetof(struct coll_algo_spec, up_then_down),
	  OWN_PROTO_FLAGS, ABIT(ALGO_TREE), "a tree all-reduce's two ways" },
	/* algo.c algo_direct(): the all-reduce's step between its shots
	 * (p2p shares the builder but never runs an all-reduce) */
	{ "reduce_bandwidth", offsetof(struct coll_algo_spec, reduce_Bps),
	  OWN_RATE, ABIT(ALGO_DIRECT), "the all-pairs all-reduce's local "
	  "reduction" },
};

/* The protocol at which key i is set under as (0 where the key has no
 * protocols), or -1 where it is not set. */
static int algo_key_set(const struct coll_algo_spec *as, size_t i)
{
	const char *v = (const char *)as + algo_only[i].off;
	int p;

	switch (algo_only[i].kind) {
	case OWN_PROTO_BYTES:
		for (p = 0; p < PROTO_COUNT; p++)
			if (((const struct coll_proto_bytes *)(const void *)v)
				    ->b[p] > 0)
				return p;
		return -1;
	case OWN_PROTO_FLAGS:
		for (p = 0; p < PROTO_COUNT; p++)
			if (((const struct coll_proto_flags *)(const void *)v)
				    ->on[p])
				return p;
		return -1;
	case OWN_INT: {
		int64_t n;

		memcpy(&n, v, sizeof(n));
		return n > 0 ? 0 : -1;
	}
	case OWN_RATE: {
		double r;

		memcpy(&r, v, sizeof(r));
		return r > 0 ? 0 : -1;
	}
	}
	return -1;
}

/* "'algorithms.ring' or 'algorithms.tree'" into o (KEY_MAX). */
static const char *owner_names(char *o, unsigned owners)
{
	size_t n = 0;
	int a, left = 0;

	for (a = 0; a < ALGO_COUNT; a++)
		left += (int)((owners >> a) & 1u);
	o[0] = '\0';
	for (a = 0; a < ALGO_COUNT && n < KEY_MAX; a++) {
		if (!((owners >> a) & 1u))
			continue;
		left--;
		n += (size_t)snprintf(o + n, KEY_MAX - n, "'algorithms.%s'%s",
				      coll_algo_names[a], left > 1 ? ", " :
				      left == 1 ? " or " : "");
	}
	return o;
}

/* A key of algo_only set under an algorithm that does not read it: the
 * error at its value (the first protocol set). 0, or -1. */
static int algo_owner(const struct coll_lib_spec *lib, int a,
		      const struct schema_at *at, struct diag *d)
{
	char k[KEY_MAX], o[KEY_MAX];
	size_t i;

	for (i = 0; i < sizeof(algo_only) / sizeof(algo_only[0]); i++) {
		int p = algo_key_set(&lib->algo[a], i);
		int perp = algo_only[i].kind == OWN_PROTO_BYTES ||
			   algo_only[i].kind == OWN_PROTO_FLAGS;

		if (p < 0 || ((algo_only[i].owners >> a) & 1u))
			continue;
		schema_check_error(d, at, akey(k, a, algo_only[i].key,
					       perp ? p : -1, NULL),
				   "expected it under %s only (%s), got it "
				   "under %s", owner_names(o, algo_only[i].owners),
				   algo_only[i].what, coll_algo_names[a]);
		return -1;
	}
	return 0;
}

/* Every protocol an algorithm offers must have a bandwidth factor. */
int coll_lib_check(void *obj, const struct schema_at *at, struct diag *d)
{
	struct coll_lib_spec *lib = obj;
	char k[KEY_MAX];
	int a, p, rc = 0;

	for (a = 0; a < COLL_OP_COUNT; a++)
		for (p = 0; p < PROTO_COUNT; p++)
			if (range_check(lib, a, p, at, d) != 0)
				rc = -1;

	for (a = 0; a < ALGO_COUNT; a++)
		if (peer_check(lib, a, at, d) != 0 ||
		    select_check(lib, a, at, d) != 0 ||
		    algo_owner(lib, a, at, d) != 0)
			rc = -1;
	for (a = 0; a < ALGO_COUNT; a++)
		for (p = 0; p < PROTO_COUNT; p++) {
			if (pipe_check(lib, a, p, at, d) != 0)
				rc = -1;
			if (!lib->algo[a].protocols.on[p] ||
			    lib->proto[p].bandwidth_factor > 0)
				continue;
			schema_check_error(d, at, akey(k, a, "protocols", p,
						       NULL), "expected "
					   "'protocols.%s.bandwidth_factor' "
					   "such as 0.5, got none",
					   coll_proto_names[p]);
			rc = -1;
		}
	return rc;
}
