/*
 * coll.c - names of collective operations.
 */
#include "coll.h"

#include <stddef.h>

const char *const coll_op_names[COLL_OP_COUNT + 1] = {
	"allreduce", "allgather", "reducescatter", "alltoall",
	"broadcast", "reduce", "sendrecv", NULL,
};
