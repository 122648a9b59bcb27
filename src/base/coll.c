/*
 * coll.c - names of collective operations; a cheap hash of an uneven
 * all-to-all's matrix.
 */
#include "coll.h"

#include <stddef.h>
#include <string.h>

const char *const coll_op_names[COLL_OP_COUNT + 1] = {
	"allreduce", "allgather", "reducescatter", "alltoall",
	"broadcast", "reduce", "sendrecv", NULL,
};

uint64_t coll_matrix_hash(const double *m, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, b;
	size_t len = (size_t)n * n, step = len / COLL_MATRIX_SAMPLES + 1, i;

	for (i = 0; i < len; i += step) {
		memcpy(&b, &m[i], sizeof(b));
		h ^= b;
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	if (len) {
		memcpy(&b, &m[len - 1], sizeof(b));
		h ^= b;
	}
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}
