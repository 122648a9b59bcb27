/*
 * fixture.h - hand-built jobs for the models tests (no config loader), so
 * every number in a test is visible in the test.
 */
#ifndef LLMSIM_TEST_MODELS_FIXTURE_H
#define LLMSIM_TEST_MODELS_FIXTURE_H

#include "base/arena.h"
#include "config/spec_gpu.h"
#include "config/spec_job.h"
#include "config/spec_model.h"
#include "config/spec_moe.h"
#include "config/spec_system.h"
#include "models/infer.h"
#include "models/layer.h"
#include "models/route.h"

struct fixture {
	struct gpu_spec gpu;
	struct fabric_spec up, out;
	struct system_spec sys;
	struct model_spec model;
	struct framework_spec fw;
	struct job_spec job;
};

/*
 * An H100-like GPU; a GPT-style model (MHA, ungated MLP with f = 4h, LayerNorm, learned
 * positions, no biases) of `layers` layers, width h, a heads, vocab V;
 * a job of seq s, micro-batch b, global batch gbs on nodes x 8 GPUs with
 * tp, pp, dp = GPUs / (tp pp); 16-bit, no recompute, 1F1B, no SP,
 * framework: fp32 grads, master weights, fp32 optimizer states, 1 GiB
 * workspace, vocab padded to a multiple of 1, two FSDP units gathered at
 * once.
 */
void fixture_gpt(struct fixture *f, int64_t layers, int64_t h, int64_t a,
		 int64_t V, int64_t s, int64_t b, int64_t gbs, int64_t nodes,
		 int64_t tp, int64_t pp);

/* fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1) (h 1024, 16
 * heads, s 2048, b 2: T = 4096 tokens) with every layer MoE: E routed
 * experts of width fe, top-k, ungated (as the fixture's MLP), ep on 8
 * GPUs of one node; uniform routing in closed form (64 draws, seed 1 if
 * a test switches to draws), a bf16 router, dispatch in the activations'
 * dtype. */
void fixture_moe(struct fixture *f, int64_t E, int64_t k, int64_t fe,
		 int64_t ep);

/* Asserts got equals want to 1e-9 relative. */
void fixture_assert_close(double got, double want);

/* The first op named name in o, or NULL. */
const struct layer_op *fixture_op(const struct layer_ops *o, const char *name);

/* The inference ops named name in o. */
int fixture_infer_count(const struct infer_ops *o, const char *name);

/* The index in o of the first op named name, or -1. */
int fixture_op_index(const struct layer_ops *o, const char *name);

/* The ops named name in o, of pass `pass` (any pass when pass < 0). */
int fixture_op_count(const struct layer_ops *o, int pass, const char *name);

/* Asserts o->op[at] is a DDP hook add (layer_ops.c lop_param_grad_add)
 * named name of n elements, a bf16 plain gradient (2 B) into an fp32
 * main_grad (4 B): one launch reading 6 n B, writing 4 n B, n adds. */
void fixture_assert_grad_add(const struct layer_ops *o, int at,
			     const char *name, double n);

/* The hook adds in o other than the weights' (main_grad_add) and the
 * norms' (norm_grad_add): the ops named *_grad_add (biases, conv1d,
 * SSM parameters). */
int fixture_small_grad_adds(const struct layer_ops *o);

/* Model FLOPs of the GEMM kernels of pass `pass` in o. */
double fixture_gemm_flops(const struct layer_ops *o, enum layer_pass pass);

/* The index in o of the first inference op named name, or -1. */
int fixture_infer_op_index(const struct infer_ops *o, const char *name);

/* The inference dimensions (infer_dims_from_job on its GPU) of the job
 * at path with base[0..nb) then extra[0..ne) as fixture_load_job2 takes
 * them; the job is released: d's scalar fields only. */
void fixture_infer_dims(const char *path, const char *const *base,
			size_t nb, const char *const *extra, size_t ne,
			struct infer_dims *d);

/* The first inference op named name in o, or NULL. */
const struct infer_op *fixture_infer_op(const struct infer_ops *o,
					const char *name);

/* The MoE layer's ops (into o) and dimensions (d) of job `path` with the
 * overrides sets[0..n), routing `tokens` tokens a rank (under attention
 * DP every rank's are gathered: N = tokens x dp); tokens < 0: the job's
 * own batch's (infer_job_batch, infer_batch_tokens). */
void fixture_infer_moe_ops(const char *path, const char *const *sets,
			   size_t n, double tokens, struct infer_dims *d,
			   struct infer_ops *o);

/* The time infer_cost gives the op named name of o on g, one eager
 * decode-kind unit; fails the test when o has no such op. */
double fixture_infer_op_time_s(const struct infer_ops *o,
			       const struct infer_dims *d,
			       const struct gpu_spec *g, const char *name);

/* The job's layer dimensions and routing (route_plan), asserting it
 * succeeds; r's arrays in a. */
void fixture_dims(struct fixture *f, struct arena *a, struct layer_dims *d,
		  struct route_result *r);

/* Whether got is within rel (a fraction) of want. */
int fixture_near(double got, double want, double rel);

/* A GPU-initiated forwarding dispatcher named name (DeepEP normal mode,
 * Hybrid-EP), deduplicating per node, every other field zero. */
void fixture_ep_forward(struct ep_comm_spec *e, const char *name);

/* A library all-to-all dispatcher named name (Megatron-Core's alltoall),
 * no deduplication, every other field zero. */
void fixture_ep_library(struct ep_comm_spec *e, const char *name);

/* train_estimate of job j against the program train_build makes of it
 * (full: every replica simulated): the tasks, the collective calls
 * (runs of tasks of one collective id) and the ranks, exactly; what
 * names the case in a failure. */
void fixture_assert_estimate(const struct job_spec *j, int full,
			     const char *what);

/* The job at path (a YAML job, relative to the repository root) with
 * --set style overrides, asserting it loads; allocated in a. */
struct arena;
struct job_spec *fixture_load_job(struct arena *a, const char *path,
				  const char *const *sets, size_t n);

/* fixture_load_job with two override lists, base[0..nb) then
 * extra[0..ne) (a test's fixed step, then one case's changes: a later
 * key wins), at most FIXTURE_MAX_SETS in all (asserted). */
#define FIXTURE_MAX_SETS 32
struct job_spec *fixture_load_job2(struct arena *a, const char *path,
				   const char *const *base, size_t nb,
				   const char *const *extra, size_t ne);

/* Run the inference step of the job at path with base then extra (as
 * fixture_load_job2) into *r, asserting it runs. */
struct infer_result;
void fixture_infer_run(const char *path, const char *const *base, size_t nb,
		       const char *const *extra, size_t ne,
		       struct infer_result *r);

/* One MoE layer's inference ops under test: the job loaded from path
 * with n overrides, its dimensions and batch, the routing of a step of
 * `tokens` tokens (its arrays in ra) and the layer's ops. */
struct fixture_infer_moe {
	struct arena a, ra;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_route r;
	struct infer_ops o;
};

/* Loads and builds c (asserting the job loads and routes); release with
 * fixture_infer_moe_release. */
void fixture_infer_moe(struct fixture_infer_moe *c, const char *path,
		       const char *const *sets, size_t n, double tokens);
void fixture_infer_moe_release(struct fixture_infer_moe *c);

/* The serving stepper's latency (infer_run.h infer_stepper_cost) of job
 * j's own batch (infer_job_batch), asserting it runs. */
double fixture_step_latency(const struct job_spec *j);

#endif
