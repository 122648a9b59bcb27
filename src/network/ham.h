/*
 * ham.h - rings on a full mesh: arc-disjoint directed Hamiltonian cycles
 * of the complete digraph on m vertices.
 *
 * A ring collective on a full mesh (8 MI300X over xGMI) reaches every
 * link only if its channels run over rings that together use each
 * directed link once: m-1 arc-disjoint Hamiltonian cycles, which exist
 * for every m except 4 and 6 (Tillson, 1980). ham_get() finds them
 * by backtracking (about 1,000 steps for m = 8, 120,000 for m = 16); past
 * its step budget, or for m = 4 and 6, it returns as many disjoint cycles
 * as a greedy search finds.
 *
 * Depends on mem.h.
 */
#ifndef LLMSIM_NETWORK_HAM_H
#define LLMSIM_NETWORK_HAM_H

#include <stdint.h>

/* A per-m cache of decompositions (m < HAM_CACHE). */
#define HAM_CACHE 65

struct ham_cache {
	uint32_t *cyc[HAM_CACHE];	/* NULL until computed */
	int n[HAM_CACHE];		/* cycles found */
};

/* The decomposition for m (cached): *n (1 .. m-1 for m >= 2) rows of m
 * vertices, row-major, arc-disjoint Hamiltonian cycles of the complete
 * digraph on 0..m-1, each starting at vertex 0. NULL when out of memory
 * or m too large for the cache. */
const uint32_t *ham_get(struct ham_cache *hc, uint32_t m, int *n);
void ham_cache_release(struct ham_cache *hc);

#endif
