/*
 * coll.h - what a collective is, as the configs, the step program, the
 * engine and the fabric model all see it: its operation, its names and
 * its descriptor. A vocabulary with no behaviour, so it sits in base and
 * the config layer can name operations without depending on the engine.
 *
 * The step program (src/models) describes a collective by its operation,
 * its size and the global GPU ids of its members; the fabric model
 * (src/network) turns that into flows on links and calls back when the
 * last byte has arrived. Neither side knows the other: the executor
 * passes descriptors through a struct comm_ops (engine/comm.h).
 *
 * Size convention (nccl-tests / rccl-tests "size" column):
 *   all-reduce, broadcast, reduce   bytes of the buffer on each rank
 *   all-gather                      bytes of the gathered output (total)
 *   reduce-scatter                  bytes of the input (total)
 *   all-to-all                      bytes each rank sends in all
 *   send/recv                       bytes of the message (gpus[0] sends
 *                                   to gpus[1])
 *
 * Global GPU id = node * gpus_per_node + local index.
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_BASE_COLL_H
#define LLMSIM_BASE_COLL_H

#include <stdint.h>

enum coll_op {
	COLL_ALLREDUCE,
	COLL_ALLGATHER,
	COLL_REDUCESCATTER,
	COLL_ALLTOALL,
	COLL_BROADCAST,
	COLL_REDUCE,
	COLL_SENDRECV,
	COLL_OP_COUNT
};

/* "allreduce", "allgather", ... (CLI spelling); NULL-terminated table. */
extern const char *const coll_op_names[COLL_OP_COUNT + 1];

/* A path other than the collective library's (coll_desc.path): expert
 * dispatch/combine kernels that move tokens themselves, GPU-initiated
 * (NVSHMEM/IBGDA-style: no host launch, no proxy thread). All-to-all
 * only; the fabric model builds its flows (network/algo_path.c). */
enum coll_path_mode {
	COLL_PATH_FORWARD,	/* to the same-rail GPU of each destination node
				 * once over scale-out, then forwarded over
				 * scale-up (DeepEP normal, Hybrid-EP) */
	COLL_PATH_DIRECT	/* every GPU writes to every destination GPU
				 * (DeepEP low-latency) */
};

struct coll_path {
	int mode;		/* enum coll_path_mode */
	double setup_s;		/* s before data moves (launch, notify) */
	double hop_scale_up_s;	/* s, latency of a scale-up transfer */
	double hop_scale_out_s;	/* s, latency of a scale-out transfer */
	double gpu_Bps;		/* B/s a GPU's kernels copy at most (its SMs
				 * times their rate); 0 = no bound */
	double eff_scale_up;	/* share of a scale-up link's rate its kernels
				 * reach; 0 = 1 */
	double eff_scale_out;	/* the same for scale-out links */
	double node_share;	/* forward: scale-out bytes to a node per byte
				 * of rank-level sends to its GPUs (node
				 * deduplication), in (0, 1] */
	double rounds;		/* forward, chunked in-order kernels across
				 * nodes: chunk rounds each block makes
				 * (its chunks of one source rank), so 1 /
				 * rounds of the scale-up stage cannot
				 * overlap the scale-out one; 0 = streamed */
	int combine;		/* with rounds: a combine (the scale-up
				 * gather before the first scale-out send,
				 * the final reduce after the last) */
	const char *name;	/* for tables ("deepep", ...) */
};

struct coll_desc {
	enum coll_op op;
	double bytes;		/* B, per the size convention above */
	const uint32_t *gpus;	/* global GPU ids of all members, in rank order */
	uint32_t ngpus;		/* group size */
	const double *a2a_B;	/* uneven all-to-all: ngpus*ngpus bytes from
				 * i to j (row-major); NULL = even */
	int algo;		/* algorithm override (network's enum); -1 = auto */
	int proto;		/* protocol override (network's enum); -1 = auto */
	uint32_t replicas;	/* identical groups running concurrently that
				 * the program does not simulate (symmetry);
				 * 0 or 1 = none */
	double sm_share;	/* fraction of each member GPU's compute units
				 * the collective's kernels occupy while it
				 * runs (0 = none, e.g. copy engines); the
				 * executor slows compute on member ranks by
				 * it (exec.h) */
	const struct coll_path *path;	/* NULL: the collective library */
	double busy_rate;	/* rate at which the collective's kernels
				 * progress while compute runs on a member
				 * rank, in (0, 1); 0 or 1 = unaffected (the
				 * executor stretches the collective by the
				 * work it lost, exec.h) */
	int sm_margin;		/* the compute beside it was launched on the
				 * other units (Transformer Engine's
				 * userbuffers overlap, set_sm_margin: its
				 * GEMMs' SM count target excludes the comm
				 * kernel's): no persistent CTA waits for a
				 * unit it holds (exec.h) */
	uint32_t group;		/* broadcast, reduce: a library group of
				 * `group` such operations launched as one
				 * (ncclGroupStart/End), bytes / group each,
				 * rooted at ranks 0 .. group-1 in turn;
				 * bytes is their sum. 0 or 1 = one
				 * operation rooted at rank 0 */
};

/* Entries of a matrix coll_matrix_hash reads at most (plus the last). */
#define COLL_MATRIX_SAMPLES 64

/* A hash of the n x n matrix m from n and at most COLL_MATRIX_SAMPLES + 1
 * of its entries (evenly spaced): equal matrices hash alike, in time
 * independent of n; whoever keys on a matrix compares the whole of it
 * too (a table's chains stay short as long as matrices that differ
 * differ somewhere among the samples). */
uint64_t coll_matrix_hash(const double *m, uint32_t n);

#endif
