/*
 * spec_job.c - the job schema (the framework schema it refers to is
 * spec_framework.c; the layout checks it runs, spec_job_layout.c).
 */
#include "spec_job.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cnode.h"
#include "base/diag.h"

const char *const recompute_module_names[] = {
	"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
	"shared_experts", "ops", NULL,
};
const char *const optimizer_names[] = {"adam", "sgd", NULL};
const char *const fp8_scaling_names[] = {"delayed", "current", "block", NULL};
const char *const pp_schedule_names[] = {"gpipe", "1f1b", "interleaved", NULL};
const char *const attention_names[] = {"flash", "unfused", NULL};

#define TOFF(m) offsetof(struct training_spec, m)

static const struct schema_field training_fields[] = {
	{ .key = "seq_len", .type = ST_INT, .offset = TOFF(seq_len),
	  .min = 1, .max = 1e8, .flags = SF_OPTIONAL,
	  .help = "tokens per sequence (required for phase training)" },
	{ .key = "global_batch_size", .type = ST_INT,
	  .offset = TOFF(global_batch_size), .min = 1, .max = 1e9,
	  .flags = SF_OPTIONAL,
	  .help = "sequences per step over all replicas (required for phase training)" },
	{ .key = "micro_batch_size", .type = ST_INT, .offset = TOFF(micro_batch_size),
	  .def = "1", .min = 1, .max = 1e6,
	  .help = "sequences per microbatch on one replica" },
	{ .key = "local_batch_size", .type = ST_INT,
	  .offset = TOFF(local_batch_size), .def = "0", .min = 0, .max = 1e9,
	  .help = "sequences one replica runs per pipeline schedule: the "
		  "schedule fills and drains global_batch_size / (dp x "
		  "local_batch_size) times a step (NeMo AutoModel's "
		  "step_scheduler.local_batch_size: its recipes call "
		  "schedule.step once per local batch); 0: one schedule over "
		  "the whole step (Megatron)" },
	{ .key = "dtype", .type = ST_ENUM, .offset = TOFF(dtype),
	  .values = dtype_names, .value_aliases = dtype_aliases,
	  .def = "bf16",
	  .help = "compute dtype of the matrix multiplies" },
	{ .key = "fp8_scaling", .type = ST_ENUM, .offset = TOFF(fp8_scaling),
	  .values = fp8_scaling_names, .def = "delayed",
	  .help = "dtype fp8: how scales are chosen (Transformer Engine "
		  "recipes): delayed (amax history), current (each tensor's "
		  "own amax, a pass of its own), block (1x128 / 128x128 "
		  "blocks)" },
	{ .key = "recompute", .type = ST_ENUM, .offset = TOFF(recompute),
	  .values = recompute_names, .def = "none",
	  .help = "activation recomputation: none, selective (the "
		  "recompute_modules; attention core by default), full" },
	{ .key = "recompute_modules", .type = ST_INT_LIST,
	  .offset = TOFF(recompute_modules), .values = recompute_module_names,
	  .flags = SF_OPTIONAL,
	  .help = "what recompute: selective re-runs in the backward: "
		  "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
		  "shared_experts (Megatron-Core recompute_modules; default "
		  "[core_attn], [] recomputes nothing), or ops alone: every "
		  "op of a dense layer but the attention core, the TP "
		  "reduce-scatters and every other 16-bit mm (torchtitan's "
		  "op-level selective checkpointing)" },
	{ .key = "zero_stage", .type = ST_INT, .offset = TOFF(zero_stage),
	  .def = "0", .min = 0, .max = 3,
	  .help = "ZeRO stage: 1 optimizer, 2 +gradients, 3 +parameters (FSDP)" },
	{ .key = "optimizer", .type = ST_ENUM, .offset = TOFF(optimizer),
	  .values = optimizer_names, .def = "adam", .help = "optimizer" },
	{ .key = "attention", .type = ST_ENUM, .offset = TOFF(attention),
	  .values = attention_names, .def = "flash",
	  .help = "flash (fused) or unfused attention (materialized scores)" },
	{ .key = "dropout", .type = ST_BOOL, .offset = TOFF(dropout),
	  .def = "false", .help = "dropout layers present (masks and their elementwise cost)" },
	{ .key = "fp8_attention", .type = ST_BOOL, .offset = TOFF(fp8_attention),
	  .def = "false",
	  .help = "the fused attention runs in FP8 (Transformer Engine "
		  "fp8_dot_product_attention; at the GPU's attention.fp8_* "
		  "(MXFP8 recipe: mxfp8_*) efficiencies, else the bf16 "
		  "rates, with its attention.fp8_bwd_skips_window)" },
	{ .key = "fp8_output_proj", .type = ST_BOOL,
	  .offset = TOFF(fp8_output_proj), .def = "false",
	  .help = "the LM head's output projection (and the MTP heads', "
		  "which share it) runs its three GEMMs in MXFP8 "
		  "(Megatron-Core fp8_output_proj: Transformer Engine's "
		  "ColumnParallelLinear under the MXFP8 recipe; no effect "
		  "on another dtype)" },
	{ .key = "cpu_offload_layers", .type = ST_INT,
	  .offset = TOFF(cpu_offload_layers), .def = "0", .min = 0,
	  .max = 1e6,
	  .help = "activation offloading: the saved activations of the "
		  "first this many layers go to host memory during the "
		  "forward and come back for the backward, on a copy stream "
		  "at the system's host_link rates, at most (layers - this) "
		  "layers' sets on the GPU (Megatron-Core "
		  "cpu_offloading_num_layers, Transformer Engine's default "
		  "offload schedule; pp 1, no recompute, no CUDA graphs); "
		  "0: none" },
	{ .key = "comm_hw_queues", .type = ST_INT,
	  .offset = TOFF(comm_hw_queues), .def = "0", .min = 0, .max = 1024,
	  .help = "hardware queues the collective library's streams are "
		  "multiplexed onto (HIP GPU_MAX_HW_QUEUES, per priority: "
		  "under TORCH_NCCL_HIGH_PRIORITY=1 the communicators share "
		  "that pool only among themselves); collectives of streams "
		  "on one queue run in issue order. 0: a queue each" },
	{ .key = "gradient_accumulation_fusion", .type = ST_BOOL,
	  .offset = TOFF(gradient_accumulation_fusion), .def = "true",
	  .help = "Megatron --gradient-accumulation-fusion: each wgrad GEMM "
		  "adds into the fp32 main_grad in its epilogue; false: the "
		  "GEMM writes dW and a separate kernel per weight adds it "
		  "(main_grad.add_)" },
	{ .key = "cuda_graphs", .type = ST_INT_LIST, .offset = TOFF(cuda_graphs),
	  .values = graph_scope_names, .flags = SF_OPTIONAL,
	  .help = "parts of a layer captured in CUDA graphs and replayed with "
		  "one host call: attn, mlp, moe, moe_router, moe_preprocess, "
		  "mamba (a hybrid's Mamba-2 layers; Megatron "
		  "cuda_graph_scope)" },
};

static const struct schema training_schema = {
	.kind = "job.training",
	.help = "training settings",
	.size = sizeof(struct training_spec),
	.fields = training_fields,
	.nfields = SCHEMA_COUNT(training_fields),
};

#define POFF(m) offsetof(struct parallel_spec, m)
#define DEG(k, d, h) { .key = #k, .type = ST_INT, .offset = POFF(k), \
	.def = d, .min = 1, .max = 1e6, .help = h }

static const struct schema_field parallel_fields[] = {
	DEG(tp, "1", "tensor-parallel degree"),
	DEG(pp, "1", "pipeline-parallel stages"),
	DEG(cp, "1", "context-parallel degree"),
	DEG(ep, "1", "expert-parallel degree"),
	{ .key = "etp", .type = ST_INT, .offset = POFF(etp), .min = 1, .max = 1e6,
	  .flags = SF_OPTIONAL,
	  .help = "expert tensor-parallel degree (default: tp, as Megatron)" },
	{ .key = "dp", .type = ST_INT, .offset = POFF(dp), .min = 1, .max = 1e7,
	  .flags = SF_OPTIONAL,
	  .help = "data-parallel degree (default: GPUs / (tp * pp * cp))" },
	DEG(vpp, "1", "virtual pipeline stages per rank (interleaved schedule)"),
	{ .key = "sequence_parallel", .type = ST_BOOL,
	  .offset = POFF(sequence_parallel), .def = "false",
	  .help = "sequence parallelism with TP (reduce-scatter/all-gather; "
		  "cp x tp must divide training.seq_len)" },
	{ .key = "schedule", .type = ST_ENUM, .offset = POFF(schedule),
	  .values = pp_schedule_names, .flags = SF_OPTIONAL,
	  .help = "pipeline schedule (default: interleaved when vpp > 1, else 1f1b)" },
	{ .key = "pp_layers", .type = ST_INT_LIST, .offset = POFF(pp_layers),
	  .min = 0, .max = 1e5, .flags = SF_OPTIONAL,
	  .help = "layers of each virtual stage, pp*vpp numbers in order chunk*pp+rank "
		  "(default: the framework's split, framework.pp_split)" },
	{ .key = "pp_layout", .type = ST_STRING, .offset = POFF(pp_layout),
	  .flags = SF_OPTIONAL,
	  .help = "Megatron-Core's pipeline_model_parallel_layout, e.g. "
		  "\"Et*4|(t*4|)*14tmL\": E embedding, t decoder layer, m MTP "
		  "module, L loss, '|' between the pp*vpp virtual stages "
		  "(instead of pp_layers; the MTP modules in one stage, the "
		  "last chunk of its rank, as Megatron: \"...|m|L\" gives them "
		  "a stage of their own)" },
	{ .key = "tp_comm_overlap", .type = ST_BOOL, .offset = POFF(tp_comm_overlap),
	  .def = "false",
	  .help = "split GEMMs into pieces pipelined with their TP collectives (needs sequence_parallel)" },
	{ .key = "defer_embedding_wgrad_compute", .type = ST_BOOL,
	  .offset = POFF(defer_embedding_wgrad), .def = "false",
	  .help = "training: the last pipeline stage's output-layer weight "
		  "gradients run after its last backward, in the pipeline "
		  "flush (Megatron-Core's defer_embedding_wgrad_compute; needs "
		  "pp >= 2, zero_stage <= 2, no MTP modules)" },
	{ .key = "wgrad_deferral_limit", .type = ST_INT,
	  .offset = POFF(wgrad_deferral_limit), .def = "0", .min = 0,
	  .max = 1e9,
	  .help = "with defer_embedding_wgrad_compute: the first this many "
		  "microbatches are deferred, the rest computed in their "
		  "backward (0 = all, Megatron-Core's)" },
	{ .key = "attention_dp", .type = ST_BOOL, .offset = POFF(attention_dp),
	  .def = "false",
	  .help = "inference: attention data-parallel over the dp ranks of one "
		  "engine, MoE layers expert-parallel over all of its GPUs" },
	{ .key = "cp_comm_type", .type = ST_ENUM, .offset = POFF(cp_comm_type),
	  .values = cp_comm_names, .def = "p2p",
	  .help = "context parallelism: p2p (ring attention), all_gather (of "
		  "K/V), a2a (Ulysses), a2a+p2p (a2a in groups of cp_a2a, ring "
		  "across them)" },
	{ .key = "cp_a2a", .type = ST_INT, .offset = POFF(cp_a2a), .min = 1,
	  .max = 1e6, .flags = SF_OPTIONAL,
	  .help = "a2a+p2p: size of the inner all-to-all groups (default: the "
		  "CP ranks of one node)" },
	{ .key = "rank_order", .type = ST_ENUM, .offset = POFF(rank_order),
	  .values = rank_order_names, .def = "tp-cp-ep-dp-pp",
	  .help = "how global ranks map to the parallel dimensions, fastest "
		  "first (Megatron-Core's order): tp-cp-ep-dp-pp, the "
		  "default, pipeline stages outermost; tp-cp-ep-pp-dp "
		  "(Megatron's use_tp_pp_dp_mapping), the stages of one "
		  "tp x cp block neighbours, data parallel outermost" },
	{ .key = "cp_load_balance", .type = ST_BOOL,
	  .offset = POFF(cp_load_balance), .def = "true",
	  .help = "each sequence in 2 cp chunks, rank r holding chunks r and "
		  "2cp-1-r, so causal attention work is even" },
};

static const struct schema parallel_schema = {
	.kind = "job.parallelism",
	.help = "parallel layout",
	.size = sizeof(struct parallel_spec),
	.fields = parallel_fields,
	.nfields = SCHEMA_COUNT(parallel_fields),
};

#define GOFF(m) offsetof(struct straggler_spec, m)

static const struct schema_field straggler_fields[] = {
	{ .key = "gpu", .type = ST_INT, .offset = GOFF(gpu), .def = "-1",
	  .min = -1, .max = 1e8,
	  .help = "global id of the slow GPU (node * gpus_per_node + local); "
		  "-1 for none" },
	{ .key = "compute_scale", .type = ST_NUM, .offset = GOFF(compute_scale),
	  .def = "1", .min = 1, .max = 1000,
	  .help = "how many times longer its kernels take" },
};

static const struct schema straggler_schema = {
	.kind = "job.straggler",
	.help = "a slow GPU",
	.size = sizeof(struct straggler_spec),
	.fields = straggler_fields,
	.nfields = SCHEMA_COUNT(straggler_fields),
};

#define OFF(m) offsetof(struct job_spec, m)

static const struct schema_field job_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "job name" },
	{ .key = "model", .type = ST_REF, .offset = OFF(model), .sub = &model_schema,
	  .flags = SF_REQUIRED, .help = "model preset, path (YAML or config.json), or mapping" },
	{ .key = "system", .type = ST_REF, .offset = OFF(system),
	  .sub = &system_schema, .flags = SF_REQUIRED,
	  .help = "system preset, path, or mapping" },
	{ .key = "framework", .type = ST_REF, .offset = OFF(framework),
	  .sub = &framework_schema, .def = "megatron-core",
	  .help = "training framework preset, path, or mapping" },
	{ .key = "phase", .type = ST_ENUM, .offset = OFF(phase),
	  .values = job_phase_names, .def = "training",
	  .help = "what to simulate: a training step, an inference step "
		  "(prefill, decode) or a serving run" },
	{ .key = "training", .type = ST_SECTION, .offset = OFF(training),
	  .sub = &training_schema, .help = "training settings (phase training)" },
	{ .key = "parallelism", .type = ST_SECTION, .offset = OFF(parallelism),
	  .sub = &parallel_schema, .help = "parallel layout" },
	{ .key = "serving", .type = ST_SECTION, .offset = OFF(serving),
	  .sub = &serving_schema,
	  .help = "inference and serving settings (phases prefill, decode, serving)" },
	{ .key = "moe", .type = ST_SECTION, .offset = OFF(moe),
	  .sub = &moe_job_schema, .flags = SF_OPTIONAL,
	  .help = "MoE dispatch path, routing balance and overlaps" },
	{ .key = "full_fidelity", .type = ST_BOOL, .offset = OFF(full_fidelity),
	  .def = "false",
	  .help = "simulate every GPU instead of one per group of identical TP/DP peers" },
	{ .key = "straggler", .type = ST_SECTION, .offset = OFF(straggler),
	  .sub = &straggler_schema,
	  .help = "one GPU whose kernels run slower (needs full fidelity)" },
};

/* The keys of schema s, for "did you mean" (at most cap). */
static size_t section_keys(const struct schema *s, const char **out,
			   size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i < s->nfields && n < cap; i++)
		out[n++] = s->fields[i].key;
	return n;
}

/* A section the job's phase does not read: the training section on an
 * inference phase (prefill, decode, serving read none of its keys), the
 * serving section on a training job. Each key written there is a
 * warning at that key (not an error: a job file shared between phases
 * is valid), with the other section's key of a near name. */
static void phase_section_check(const struct job_spec *j, struct diag *d,
				const struct cnode *node)
{
	int inference = job_is_inference(j);
	const char *sec = inference ? "training" : "serving";
	const char *other = inference ? "serving" : "training";
	const struct schema *os = inference ? &serving_schema : &training_schema;
	const char *phases = inference ? "phase training" :
				 "phases prefill, decode and serving";
	const struct cnode *m = node ? cnode_get(node, sec) : NULL;
	const char *keys[128], *near;
	size_t i, n;

	if (!m || m->kind != CNODE_MAP || !d)
		return;
	n = section_keys(os, keys, 128);
	for (i = 0; i < m->npairs; i++) {
		const struct cnode *k = m->pairs[i].key;

		near = schema_closest(k->text, keys, n);
		if (near)
			diag_warn(d, k->file, k->line, k->col, "'%s.%s': key "
				  "not read by a %s job and ignored (the %s "
				  "section is for %s); did you mean '%s.%s'?",
				  sec, k->text, job_phase_names[j->phase], sec,
				  phases, other, near);
		else
			diag_warn(d, k->file, k->line, k->col, "'%s.%s': key "
				  "not read by a %s job and ignored (the %s "
				  "section is for %s)", sec, k->text,
				  job_phase_names[j->phase], sec, phases);
	}
}

/* framework.attention_kernel (and attention_mla_bwd_kernel) against the
 * system's GPU: ck_tile is Composable Kernel's (ROCm/composable_kernel,
 * include/ck_tile/ops/fmha), built for AMD GPUs only; on an NVIDIA GPU it
 * would run at the vendor rates (the ck_tile_* efficiencies default to the
 * vendor's) without a word. Reported at the key, else at the framework
 * that sets it (a preset's name), else at the job. -1 after an error. */
static int job_attention_kernel_check(const struct job_spec *j,
				      struct diag *d, const struct cnode *node)
{
	static const char *const keys[] = {"attention_kernel",
					   "attention_mla_bwd_kernel"};
	const struct gpu_spec *g = j->system ? j->system->gpu : NULL;
	const struct cnode *f = node ? cnode_get(node, "framework") : NULL;
	const struct cnode *v;
	const char *name;
	int i;

	if (!j->framework || !g || g->vendor == GPU_AMD)
		return 0;
	for (i = 0; i < 2; i++) {
		name = i == 0 ?
		       attn_kernel_names[j->framework->attention_kernel] :
		       attn_mla_bwd_kernel_names[
			       j->framework->attention_mla_bwd_kernel];
		if (strcmp(name, "ck_tile") != 0)
			continue;
		v = f && f->kind == CNODE_MAP ? cnode_get(f, keys[i]) : NULL;
		v = v ? v : f;
		cnode_error(d, v ? v : node, "'framework.%s': ck_tile is "
			    "Composable Kernel's, which runs on AMD GPUs only; "
			    "the system's %s is an NVIDIA GPU (use vendor, "
			    "flash2, sdpa_flash or flash_triton)", keys[i],
			    g->name ? g->name : "GPU");
		return -1;
	}
	return 0;
}

/* moe.paged_stash against training.dtype: Megatron-Core stashes only
 * the tensors Transformer Engine's fused grouped MLP marks
 * (mark_grouped_tensor, ops/fused/grouped_mlp.py @ e7c550c5), and that
 * op-fuser path runs MXFP8 or NVFP4 only (the cuDNN CuTe DSL grouped GEMM
 * kernels); experts.py @ 2a75ac12c stashes in _fused_forward alone. -1
 * after an error. */
static int job_paged_stash_check(const struct job_spec *j, struct diag *d,
				 const struct cnode *node)
{
	const struct cnode *m = node ? cnode_get(node, "moe") : NULL;
	enum dtype dt = (enum dtype)j->training.dtype;

	if (!j->moe.paged_stash || job_is_inference(j) ||
	    dt == DTYPE_MXFP8 || dt == DTYPE_NVFP4)
		return 0;
	m = m && m->kind == CNODE_MAP ? cnode_get(m, "paged_stash") : NULL;
	cnode_error(d, m ? m : node, "'moe.paged_stash' needs training.dtype "
		    "mxfp8 or nvfp4 (Megatron-Core stashes the tensors of "
		    "Transformer Engine's fused grouped MLP, which runs only "
		    "in those); the job trains in %s", dtype_names[dt]);
	return -1;
}

/* moe.routing.balance eplb on a training job: EPLB places expert
 * replicas from the served workload's statistics (route.c pace: the
 * slots equally loaded), an inference setting like redundant_experts;
 * without replicas it is multinomial over equally likely experts, which
 * is random. Refused rather than run as random without a word. -1
 * after an error. */
static int job_eplb_check(const struct job_spec *j, struct diag *d,
			  const struct cnode *node)
{
	const struct cnode *m = node ? cnode_get(node, "moe") : NULL;
	const struct cnode *r = m && m->kind == CNODE_MAP ?
				cnode_get(m, "routing") : NULL;
	const struct cnode *b = r && r->kind == CNODE_MAP ?
				cnode_get(r, "balance") : NULL;

	if (j->moe.routing.balance != ROUTE_EPLB || job_is_inference(j))
		return 0;
	cnode_error(d, b ? b : node, "'moe.routing.balance' eplb on a "
		    "training job: EPLB places expert replicas from served "
		    "traffic (an inference setting); for a training router "
		    "use random (multinomial, what eplb is without replicas), "
		    "forced or zipf");
	return -1;
}

/* serving.engine against the system's GPU: an engine built for one
 * vendor's GPUs (engine vendor: TensorRT-LLM's CUDA kernels; AMD's ROCm
 * fork of vLLM with its wvSplitK and custom paged attention) ran on the
 * other's at that GPU's rates without a word. Reported at
 * serving.engine, else at the job. -1 after an error. */
static int job_engine_vendor_check(const struct job_spec *j, struct diag *d,
				   const struct cnode *node)
{
	const struct gpu_spec *g = j->system ? j->system->gpu : NULL;
	const struct engine_spec *e = j->serving.engine;
	const struct cnode *s = node ? cnode_get(node, "serving") : NULL;
	const struct cnode *v = s && s->kind == CNODE_MAP ?
				cnode_get(s, "engine") : NULL;
	int want;

	if (!job_is_inference(j) || !e || !g)
		return 0;
	if (e->vendor == ENGINE_VENDOR_ANY && g->vendor == GPU_AMD &&
	    e->rocm_preset) {
		/* upstream's defaults on a GPU its ROCm build serves */
		const struct cnode *at = node;	/* the job (v is the
						 * engine's own file) */

		diag_warn(d, at ? at->file : NULL, at ? at->line : 0,
			  at ? at->col : 0, "'serving.engine': engine '%s' "
			  "has the CUDA build's settings; on the system's %s "
			  "(AMD) the ROCm build runs: serving.engine=%s",
			  e->name ? e->name : "(unnamed)",
			  g->name ? g->name : "GPU", e->rocm_preset);
		return 0;
	}
	if (e->vendor == ENGINE_VENDOR_ANY)
		return 0;
	want = e->vendor == ENGINE_VENDOR_NVIDIA ? GPU_NVIDIA : GPU_AMD;
	if ((int)g->vendor == want)
		return 0;
	cnode_error(d, v ? v : node, "'serving.engine': engine '%s' runs on %s "
		    "GPUs only, the system's %s is not one", e->name ? e->name :
		    "(unnamed)", engine_vendor_names[e->vendor],
		    g->name ? g->name : "GPU");
	return -1;
}

static int job_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct job_spec *j = obj;
	int rc = job_layout_check(obj, JOB_RULES_ALL, d, node) == 0 ? 0 : -1;

	if (job_recompute_check(j, d, node) != 0)
		rc = -1;
	if (job_attention_kernel_check(j, d, node) != 0)
		rc = -1;
	if (job_paged_stash_check(j, d, node) != 0)
		rc = -1;
	if (job_eplb_check(j, d, node) != 0)
		rc = -1;
	if (job_engine_vendor_check(j, d, node) != 0)
		rc = -1;
	job_fp8_scaling_check(j, d, node);
	phase_section_check(j, d, node);

	if (j->straggler.gpu >= system_gpus(j->system)) {
		cnode_error(d, node ? cnode_get(node, "straggler") : NULL,
			    "straggler.gpu %lld: the system has %lld GPUs (ids "
			    "0 to %lld)", (long long)j->straggler.gpu,
			    (long long)system_gpus(j->system),
			    (long long)system_gpus(j->system) - 1);
		rc = -1;
	}
	return rc;
}

static const char *const job_dirs[] = {"workloads/jobs", NULL};

const struct schema job_schema = {
	.kind = "job",
	.help = "a job: model, system, phase, training settings, parallel layout",
	.preset_dirs = job_dirs,
	.size = sizeof(struct job_spec),
	.fields = job_fields,
	.nfields = SCHEMA_COUNT(job_fields),
	.check = job_check,
};

/* The planner's job check: job_check's warnings (a section the phase
 * does not read, fp8_scaling off fp8) and the errors no layout can
 * mend (an AMD-only attention kernel on an NVIDIA GPU, an engine on the
 * other vendor's GPU, paged_stash off MX dtypes, eplb on training), none
 * of the others. The layout
 * and what depends on it (recompute_modules against a2a_overlap, the
 * straggler's GPU) are the planner's to search: it checks every layout
 * it tries with job_layout_check, so a job that run refuses for its
 * written layout still plans, with the same exit status as before. */
static int job_plan_check(void *obj, const struct schema_at *at,
			  struct diag *d)
{
	const struct job_spec *j = obj;

	job_fp8_scaling_check(j, d, at->map);
	phase_section_check(j, d, at->map);
	if (job_paged_stash_check(j, d, at->map) != 0 ||
	    job_eplb_check(j, d, at->map) != 0 ||
	    job_engine_vendor_check(j, d, at->map) != 0)
		return -1;
	return job_attention_kernel_check(j, d, at->map);
}

/* The planner's job: the same keys, job_plan_check's warnings. */
const struct schema job_plan_schema = {
	.kind = "job",
	.help = "a job to plan: model, system, training settings; the layout "
		"is searched",
	.preset_dirs = job_dirs,
	.size = sizeof(struct job_spec),
	.fields = job_fields,
	.nfields = SCHEMA_COUNT(job_fields),
	.check = job_plan_check,
};
