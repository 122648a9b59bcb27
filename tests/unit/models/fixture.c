/*
 * fixture.c - hand-built jobs for the models tests.
 */
#include "fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "engine/exec.h"
#include "engine/exec_impl.h"
#include "engine/prog.h"
#include "models/train.h"
#include "run/infer_run.h"

void fixture_gpt(struct fixture *f, int64_t layers, int64_t h, int64_t a,
		 int64_t V, int64_t s, int64_t b, int64_t gbs, int64_t nodes,
		 int64_t tp, int64_t pp)
{
	memset(f, 0, sizeof(*f));
	/* An H100-like GPU (numbers of configs/gpus/h100.yaml's sources). */
	f->gpu.name = "test-gpu";
	f->gpu.vendor = GPU_NVIDIA;
	f->gpu.compute_units = 132;
	f->gpu.max_clock_hz = 1.98e9;
	f->gpu.matrix_clock_hz = 1.83e9;
	f->gpu.sustained_matrix_clock_hz = 1.83e9;
	f->gpu.matrix_peak_flops[DTYPE_FP32] = 66.9e12;
	f->gpu.matrix_peak_flops[DTYPE_TF32] = 494.7e12;
	f->gpu.matrix_peak_flops[DTYPE_BF16] = 989.4e12;
	f->gpu.matrix_peak_flops[DTYPE_FP16] = 989.4e12;
	f->gpu.matrix_peak_flops[DTYPE_FP8] = 1978.9e12;
	f->gpu.vector_fp32_flops = 66.9e12;
	f->gpu.gemm_efficiency = 0.8;
	for (int dt = 0; dt < DTYPE_COUNT; dt++)
		f->gpu.gemm_efficiency_dtype[dt] = 0.8;
	f->gpu.attention.fwd_efficiency = 0.55;
	f->gpu.attention.bwd_efficiency = 0.45;
	f->gpu.hbm.capacity_B = 80e9;
	f->gpu.hbm.bandwidth_Bps = 3.35e12;
	f->gpu.hbm.efficiency = 0.88;
	f->gpu.hbm_usable_B = 79e9;
	f->gpu.l2.capacity_B = 50e6;
	f->gpu.l2.bandwidth_Bps = 10e12;
	f->gpu.l2.efficiency = 0.8;
	f->gpu.lds_per_cu_B = 228 * 1024;
	f->gpu.kernel_launch_s = 4e-6;
	f->sys.gpu = &f->gpu;
	f->sys.nodes = nodes;
	f->sys.gpus_per_node = 8;
	f->sys.scale_up = &f->up;
	f->sys.scale_out = &f->out;
	f->model.name = "test-gpt";
	f->model.hidden_size = h;
	f->model.num_hidden_layers = layers;
	f->model.num_attention_heads = a;
	f->model.num_key_value_heads = a;
	f->model.head_dim = h / a;
	f->model.intermediate_size = 4 * h;
	f->model.vocab_size = V;
	f->model.hidden_act = ACT_GELU;
	f->model.gated_mlp = 0;
	f->model.norm = NORM_LAYER;
	f->model.norm_bias = 1;
	f->model.position_embedding = POS_LEARNED;
	f->model.max_position_embeddings = s;
	f->fw.name = "test-framework";
	f->fw.grad_dtype = DTYPE_FP32;
	f->fw.master_weights = 1;
	f->fw.optimizer_state_dtype = DTYPE_FP32;
	f->fw.bucket_params = 40000000;
	f->fw.vocab_multiple = 1;
	f->fw.workspace_B = 1073741824.0;
	f->fw.overlap_grad_reduce = 1;
	f->fw.overlap_param_gather = 1;
	f->fw.average_in_collective = 1;	/* the schema default */
	f->fw.fsdp_prefetch_units = 2;
	f->fw.fsdp_reshard_after_forward = 1;	/* the schema default */
	f->fw.moe_chunk_sort = 1;		/* the schema default */
	f->fw.sp_backward_regather = 1;	/* the schema default */
	f->fw.linear_attn_chunk = 64;		/* the schema default */
	f->fw.fsdp_expert_reduce_dtype = -1;	/* absent: grad_dtype */
	f->job.name = "test-job";
	f->job.model = &f->model;
	f->job.system = &f->sys;
	f->job.framework = &f->fw;
	f->job.training.seq_len = s;
	f->job.training.global_batch_size = gbs;
	f->job.training.micro_batch_size = b;
	f->job.training.dtype = DTYPE_BF16;
	f->job.training.recompute = RECOMPUTE_NONE;
	f->job.training.optimizer = OPT_ADAM;
	f->job.training.attention = ATTN_FLASH;
	f->job.training.gradient_accumulation_fusion = 1;
	f->job.parallelism.tp = tp;
	f->job.parallelism.pp = pp;
	f->job.parallelism.cp = 1;
	f->job.parallelism.ep = 1;
	f->job.parallelism.vpp = 1;
	f->job.parallelism.dp = nodes * 8 / (tp * pp);
	f->job.parallelism.schedule = SCHED_1F1B;
}

void fixture_assert_close(double got, double want)
{
	cr_assert(fabs(got - want) <= 1e-9 * fabs(want), "got %.6g, want %.6g",
		  got, want);
}

const struct layer_op *fixture_op(const struct layer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return &o->op[i];
	return NULL;
}

void fixture_assert_grad_add(const struct layer_ops *o, int at,
			     const char *name, double n)
{
	const struct layer_op *a;

	cr_assert(at >= 0 && at < o->n, "op %d of %d", at, o->n);
	a = &o->op[at];
	cr_assert_str_eq(a->name, name, "op %d: %s, want %s", at, a->name,
			 name);
	cr_assert_eq(a->pass, PASS_BWD);
	cr_assert_leq(a->k.launches, 1, "%s: %g launches", name,
		      a->k.launches);	/* 0: the one launch */
	cr_assert_float_eq(a->k.read_B, 6 * n, 1e-6, "%s: read %g B, want %g",
			   name, a->k.read_B, 6 * n);
	cr_assert_float_eq(a->k.write_B, 4 * n, 1e-6, "%s: write %g B, "
			   "want %g", name, a->k.write_B, 4 * n);
	cr_assert_float_eq(a->k.vec_flops, n, 1e-6);
}

int fixture_small_grad_adds(const struct layer_ops *o)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++) {
		const char *s = o->op[i].name;
		size_t l = strlen(s);

		if (l > 9 && strcmp(s + l - 9, "_grad_add") == 0 &&
		    strcmp(s, "main_grad_add") != 0 &&
		    strcmp(s, "norm_grad_add") != 0)
			n++;
	}
	return n;
}

void fixture_infer_moe_ops(const char *path, const char *const *sets,
			   size_t n, double tokens, struct infer_dims *d,
			   struct infer_ops *o)
{
	struct arena a, ra;
	struct job_spec *j;
	struct infer_batch b;
	struct infer_route r;
	struct infer_kind k = {1, 0, 0, 0, 0, 0, 0, 0};
	struct diag dg;

	arena_init(&a);
	arena_init(&ra);
	diag_init(&dg, stderr);
	j = fixture_load_job(&a, path, sets, n);
	infer_dims_from_job(j, j->system->gpu, d);
	infer_job_batch(j, &b);
	if (tokens < 0)
		tokens = infer_batch_tokens(&b);
	cr_assert_eq(infer_moe_route(j, d, tokens, &ra, &r, &dg), 0);
	infer_layer_ops(d, &b, &k, &r, o);
	arena_release(&ra);
	arena_release(&a);
}

double fixture_infer_op_time_s(const struct infer_ops *o,
			       const struct infer_dims *d,
			       const struct gpu_spec *g, const char *name)
{
	static struct infer_unit u;
	struct infer_kind k = {1, 0, 0, 0, 0, 0, 0, 0};
	struct infer_batch b;
	int i;

	memset(&b, 0, sizeof(b));
	infer_cost(o, d, &b, &k, g, IGRAPH_NONE, &u);
	for (i = 0; i < u.n; i++)
		if (strcmp(u.op[i].name, name) == 0)
			return u.op[i].time_s;
	cr_assert_fail("no op %s", name);
	return 0;
}

int fixture_infer_op_index(const struct infer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return i;
	return -1;
}

void fixture_infer_dims(const char *path, const char *const *base,
			size_t nb, const char *const *extra, size_t ne,
			struct infer_dims *d)
{
	struct arena a;
	struct job_spec *j;

	arena_init(&a);
	j = fixture_load_job2(&a, path, base, nb, extra, ne);
	infer_dims_from_job(j, j->system->gpu, d);
	arena_release(&a);
}

int fixture_infer_count(const struct infer_ops *o, const char *name)
{
	int i, k = 0;

	for (i = 0; i < o->n; i++)
		k += strcmp(o->op[i].name, name) == 0;
	return k;
}

int fixture_op_index(const struct layer_ops *o, const char *name)
{
	const struct layer_op *op = fixture_op(o, name);

	return op ? (int)(op - o->op) : -1;
}

int fixture_op_count(const struct layer_ops *o, int pass, const char *name)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0 &&
		    (pass < 0 || (int)o->op[i].pass == pass))
			n++;
	return n;
}

double fixture_gemm_flops(const struct layer_ops *o, enum layer_pass pass)
{
	double sum = 0;
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].pass == pass && o->op[i].kind == LOP_KERNEL &&
		    o->op[i].k.kind == KERN_GEMM)
			sum += layer_kern_model_flops(&o->op[i].k);
	return sum;
}

const struct infer_op *fixture_infer_op(const struct infer_ops *o,
					const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return &o->op[i];
	return NULL;
}

void fixture_moe(struct fixture *f, int64_t E, int64_t k, int64_t fe,
		 int64_t ep)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f->model.n_routed_experts = E;
	f->model.num_experts_per_tok = k;
	f->model.moe_intermediate_size = fe;
	f->model.decoder_sparse_step = 1;
	f->model.moe_layer_freq = 1;
	f->job.parallelism.ep = ep;
	f->job.moe.routing.balance = ROUTE_UNIFORM;
	f->job.moe.routing.method = ROUTE_CLOSED_FORM;
	f->job.moe.routing.draws = 64;
	f->job.moe.routing.seed = 1;
	f->job.moe.router_dtype = DTYPE_BF16;
	f->job.moe.dispatch_dtype = -1;
}

void fixture_dims(struct fixture *f, struct arena *a, struct layer_dims *d,
		  struct route_result *r)
{
	struct diag dg;

	diag_init(&dg, stderr);
	layer_dims_from_job(&f->job, d);
	cr_assert_eq(route_plan(&f->job, d, a, r, &dg), 0);
}

int fixture_near(double got, double want, double rel)
{
	return fabs(got - want) <= rel * fabs(want);
}

void fixture_ep_forward(struct ep_comm_spec *e, const char *name)
{
	memset(e, 0, sizeof(*e));
	e->name = name;
	e->mode = EP_FORWARD;
	e->dedup = DEDUP_NODE;
}

void fixture_ep_library(struct ep_comm_spec *e, const char *name)
{
	memset(e, 0, sizeof(*e));
	e->name = name;
	e->mode = EP_LIBRARY;
	e->dedup = DEDUP_NONE;
}

struct job_spec *fixture_load_job(struct arena *a, const char *path,
				  const char *const *sets, size_t n)
{
	struct diag d;
	struct config_ctx cx = {a, &d, "."};
	struct job_spec *j = arena_alloc(a, sizeof(*j));

	diag_init(&d, stderr);
	cr_assert_not_null(j);
	memset(j, 0, sizeof(*j));
	cr_assert_eq(config_load(&cx, &job_schema, path, sets, n, j), 0,
		     "loading %s", path);
	return j;
}

struct job_spec *fixture_load_job2(struct arena *a, const char *path,
				   const char *const *base, size_t nb,
				   const char *const *extra, size_t ne)
{
	const char *sets[FIXTURE_MAX_SETS];
	size_t i;

	cr_assert_leq(nb + ne, (size_t)FIXTURE_MAX_SETS);
	for (i = 0; i < nb; i++)
		sets[i] = base[i];
	for (i = 0; i < ne; i++)
		sets[nb + i] = extra[i];
	return fixture_load_job(a, path, sets, nb + ne);
}

void fixture_assert_estimate(const struct job_spec *j, int full,
			     const char *what)
{
	struct train_estimate e;
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	uint32_t t, n, calls = 0, last = UINT32_MAX;

	diag_init(&d, stderr);
	cr_assert_eq(train_estimate(j, full, &e, &d), 0);
	p = train_build(j, full, &plan, &d);
	cr_assert_not_null(p);
	n = prog_tasks(p);
	for (t = 0; t < n; t++) {
		uint32_t id = exec_task_coll_id(p, t);

		calls += id != UINT32_MAX && id != last;
		last = id;
	}
	cr_assert_eq(e.tasks, n, "%s, full %d: %.0f tasks estimated, "
		     "%u built", what, full, e.tasks, n);
	cr_assert_eq(e.calls, calls, "%s, full %d: %.0f calls "
		     "estimated, %u built", what, full, e.calls, calls);
	cr_assert_eq(e.ranks, prog_ranks(p), "%s, full %d: ranks", what, full);
	/* train_build reserved exactly the estimate (train_count) and two
	 * edges a task: no array grew while building (a growth doubles, so
	 * any would leave cap > n). */
	cr_assert_eq(p->cap, n, "%s, full %d: %u task slots for %u tasks",
		     what, full, p->cap, n);
	cr_assert_eq(p->capcolls, calls, "%s, full %d: %u call slots for %u",
		     what, full, p->capcolls, calls);
	cr_assert_eq(p->capedges, 2 * n, "%s, full %d: %u edge slots",
		     what, full, p->capedges);
	cr_assert_leq(p->nedges, p->capedges);
	prog_free(p);
}

double fixture_step_latency(const struct job_spec *j)
{
	struct infer_stepper st;
	struct infer_step_cost c;
	struct infer_batch b;
	struct diag d;

	diag_init(&d, stderr);
	cr_assert_eq(infer_stepper_init(&st, j, &d), 0);
	infer_job_batch(j, &b);
	cr_assert_eq(infer_stepper_cost(&st, &b, &c, &d), 0);
	infer_stepper_release(&st);
	return c.latency_s;
}

void fixture_infer_moe(struct fixture_infer_moe *c, const char *path,
		       const char *const *sets, size_t n, double tokens)
{
	struct infer_kind k = {1, 0, 0, 0, 0, 0, 0, 0};	/* an MoE layer */
	struct diag dg;

	arena_init(&c->a);
	arena_init(&c->ra);
	diag_init(&dg, stderr);
	c->j = fixture_load_job(&c->a, path, sets, n);
	infer_dims_from_job(c->j, c->j->system->gpu, &c->d);
	infer_job_batch(c->j, &c->b);
	cr_assert_eq(infer_moe_route(c->j, &c->d, tokens, &c->ra, &c->r, &dg),
		     0);
	infer_layer_ops(&c->d, &c->b, &k, &c->r, &c->o);
}

void fixture_infer_moe_release(struct fixture_infer_moe *c)
{
	arena_release(&c->ra);
	arena_release(&c->a);
}

void fixture_infer_run(const char *path, const char *const *base, size_t nb,
		       const char *const *extra, size_t ne,
		       struct infer_result *r)
{
	struct arena a;
	struct job_spec *j;
	struct diag d;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job2(&a, path, base, nb, extra, ne);
	cr_assert_eq(infer_run(j, NULL, r, &d), 0);
	arena_release(&a);
}
