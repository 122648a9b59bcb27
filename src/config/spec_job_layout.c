/*
 * spec_job_layout.c - a job's layout rules (job_layout_check): the
 * parallel degrees against the system's GPUs, the model's dimensions,
 * the batch and the pipeline schedule, as Megatron-Core and the serving
 * engines assert them, each broken rule reported at the job key the user
 * changed. The job schema that runs them is spec_job.c; the inference
 * and serving rules are spec_job_layout_infer.c.
 */
#include "spec_job.h"
#include "spec_job_layout_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cnode.h"
#include "pp_layout.h"
#include "base/diag.h"

/* Infer dp when absent; check tp*pp*cp*dp against the GPUs. -1 when dp
 * cannot be inferred (nothing else can be checked then). */
static int infer_dp(struct parallel_spec *p, int64_t gpus,
		    struct layout_sink *s)
{
	int64_t tpc = p->tp * p->pp * p->cp;

	if (p->dp == 0) {
		if (gpus % tpc != 0) {
			layout_error(s, JR_WORLD, "tp*pp*cp = %lld does not "
				     "divide the %lld GPUs of the system",
				     (long long)tpc, (long long)gpus);
			return -1;
		}
		p->dp = gpus / tpc;
	} else if (tpc * p->dp != gpus) {
		layout_error(s, JR_WORLD, "tp*pp*cp*dp = %lld*%lld*%lld*%lld = %lld but the "
			     "system has %lld GPUs", (long long)p->tp,
			     (long long)p->pp, (long long)p->cp, (long long)p->dp,
			     (long long)(tpc * p->dp), (long long)gpus);
		return layout_want(s, JR_WORLD) ? -1 : 0;
	}
	return 0;
}

/* Degrees against the model's dimensions (Megatron's own asserts). */
static void check_tp(const struct job_spec *j, struct layout_sink *s)
{
	const struct parallel_spec *p = &j->parallelism;
	const struct model_spec *m = j->model;

	if (layout_want(s, JR_TP_HEADS) && m->num_attention_heads % p->tp != 0)
		layout_error(s, JR_TP_HEADS, "tp %lld does not "
			     "divide num_attention_heads %lld", (long long)p->tp,
			     (long long)m->num_attention_heads);
	if (layout_want(s, JR_TP_KV_HEADS) && m->num_key_value_heads % p->tp != 0 &&
	    p->tp % m->num_key_value_heads != 0)
		layout_error(s, JR_TP_KV_HEADS, "tp %lld and "
			     "num_key_value_heads %lld: one must divide the other "
			     "(each TP rank holds whole KV heads, replicated when "
			     "tp exceeds them)", (long long)p->tp,
			     (long long)m->num_key_value_heads);
	/* Megatron-Core MambaMixer asserts nheads % tp == 0 and ngroups %
	 * tp == 0 (ssm/mamba_mixer.py @ d98e8a64) */
	if (layout_want(s, JR_TP_HEADS) && m->mamba_num_heads > 0 &&
	    (m->mamba_num_heads % p->tp != 0 || m->n_groups % p->tp != 0))
		layout_error(s, JR_TP_HEADS, "tp %lld does not divide the "
			     "Mamba-2 layers' mamba_num_heads %lld and n_groups "
			     "%lld (each TP rank holds whole heads and groups)",
			     (long long)p->tp, (long long)m->mamba_num_heads,
			     (long long)m->n_groups);
	if (layout_want(s, JR_TP_FFN) && m->intermediate_size % p->tp != 0)
		layout_error(s, JR_TP_FFN, "tp %lld does not "
			     "divide intermediate_size %lld", (long long)p->tp,
			     (long long)m->intermediate_size);
	/* Gated DeltaNet: Megatron-Core splits the conv channels and the
	 * heads over TP (gated_delta_net.py: conv_dim // tp_size,
	 * num_value_heads // tp_size), vLLM's qwen3_next the key heads
	 * too: tp divides H_k (H_v is a multiple of it) */
	if (layout_want(s, JR_TP_LINEAR_HEADS) && model_is_gdn(m) &&
	    m->linear_num_key_heads % p->tp != 0)
		layout_error(s, JR_TP_LINEAR_HEADS, "tp %lld does not divide "
			     "linear_num_key_heads %lld (the Gated DeltaNet "
			     "layers shard their heads over TP)",
			     (long long)p->tp,
			     (long long)m->linear_num_key_heads);
	if (p->tp_comm_overlap && (p->tp < 2 || !p->sequence_parallel))
		layout_error(s, JR_TP_OVERLAP, "tp_comm_overlap "
			     "needs tp >= 2 and sequence_parallel: true (got tp "
			     "%lld, sequence_parallel %s)", (long long)p->tp,
			     p->sequence_parallel ? "true" : "false");
	/* each TP GEMM in as many pieces as chunks (models/layer_ops.c) */
	if (p->tp_comm_overlap && p->sequence_parallel && p->tp >= 2 &&
	    j->framework) {
		int64_t c = j->framework->tp_comm_overlap_chunks > 0 ?
			    j->framework->tp_comm_overlap_chunks : p->tp;

		if (c > JOB_TP_OVERLAP_CHUNKS_MAX)
			layout_error(s, JR_TP_OVERLAP, "tp_comm_overlap splits "
				     "each TP GEMM and its collective into %lld "
				     "pieces (%s), more than the %d a layer's "
				     "op list holds in llmsim; set "
				     "framework.tp_comm_overlap_chunks <= %d "
				     "or tp_comm_overlap: false", (long long)c,
				     j->framework->tp_comm_overlap_chunks > 0 ?
				     "framework.tp_comm_overlap_chunks" :
				     "one a TP rank",
				     JOB_TP_OVERLAP_CHUNKS_MAX,
				     JOB_TP_OVERLAP_CHUNKS_MAX);
	}
}

/* The explicit layer split: pp*vpp entries summing to the layer count. */
static void check_pp_layers(const struct job_spec *j, struct layout_sink *s)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t sum = 0;
	size_t i;

	if (p->pp_layers.n == 0 || !layout_want(s, JR_PP_SPLIT))
		return;
	if ((int64_t)p->pp_layers.n != p->pp * p->vpp) {
		layout_error(s, JR_PP_SPLIT, "pp_layers has %zu "
			     "entries; it needs pp*vpp = %lld (one per virtual "
			     "stage)", p->pp_layers.n, (long long)(p->pp * p->vpp));
		return;
	}
	for (i = 0; i < p->pp_layers.n; i++) {
		sum += p->pp_layers.v[i];
		if (p->pp_layers.v[i] == 0 && i != 0 && i != p->pp_layers.n - 1) {
			layout_error(s, JR_PP_SPLIT, "pp_layers[%zu] "
				     "is 0: only the first and last virtual stages "
				     "(which hold the embedding and the LM head) may "
				     "have no layers", i);
			return;
		}
	}
	if (sum != j->model->num_hidden_layers)
		layout_error(s, JR_PP_SPLIT, "pp_layers sums to "
			     "%lld layers but the model has %lld", (long long)sum,
			     (long long)j->model->num_hidden_layers);
}

/* The layout string: a layout of pp*vpp stages with every layer of the
 * model once, the embedding first, the loss last, and the MTP modules
 * where Megatron-Core allows them
 * (PipelineParallelLayerLayout.validate_layer_layout): after every
 * decoder layer, all in one virtual stage, that stage the last chunk of
 * its rank. A stage holding only m (Megatron-Bridge's "...|m|L", MTP
 * standalone) is costed where it is (models/train_impl.c). */
static void check_pp_layout(const struct job_spec *j, struct layout_sink *s)
{
	const struct parallel_spec *p = &j->parallelism;
	struct pp_layout l;
	char why[160];
	int rc;

	if (!p->pp_layout || !layout_want(s, JR_PP_SPLIT))
		return;
	if (p->pp_layers.n > 0) {
		layout_error(s, JR_PP_SPLIT, "pp_layers and "
			     "pp_layout both split the layers: give one");
		return;
	}
	rc = pp_layout_parse(p->pp_layout, &l, NULL, 0, why, sizeof(why));
	if (rc == -2) {
		if (s->d)
			diag_oom(s->d);
		s->broken |= JR_BIT(JR_PP_SPLIT);
		return;
	}
	if (rc != 0)
		layout_error(s, JR_PP_SPLIT, "pp_layout: %s", why);
	else if (l.stages != p->pp * p->vpp)
		layout_error(s, JR_PP_SPLIT, "pp_layout has %lld "
			     "stages; it needs pp*vpp = %lld%s", (long long)l.stages,
			     (long long)(p->pp * p->vpp),
			     l.stages % p->pp == 0 ? " (set vpp to stages / pp, "
			     "as Megatron infers it)" : "");
	else if (l.embeddings != 1 || !l.embedding_first)
		layout_error(s, JR_PP_SPLIT, "pp_layout: the "
			     "embedding E comes once, first (got %lld); Megatron's "
			     "rule: the first layer must be embedding, specified "
			     "exactly once",
			     (long long)l.embeddings);
	else if (l.losses != 1 || !l.loss_last)
		layout_error(s, JR_PP_SPLIT, "pp_layout: the loss "
			     "L comes once, last (got %lld); Megatron's rule: the "
			     "last layer must be loss, specified exactly once", (long long)l.losses);
	else if (l.layers != j->model->num_hidden_layers)
		layout_error(s, JR_PP_SPLIT, "pp_layout has %lld "
			     "decoder layers t but the model has %lld",
			     (long long)l.layers,
			     (long long)j->model->num_hidden_layers);
	else if (l.mtp != j->moe.mtp_layers)
		layout_error(s, JR_PP_SPLIT, "pp_layout has %lld "
			     "MTP modules m but moe.mtp_layers is %lld; Megatron's "
			     "rule: the number of mtp layers in the layout must "
			     "match mtp_num_layers (--mtp-num-layers)",
			     (long long)l.mtp, (long long)j->moe.mtp_layers);
	else if (l.mtp > 0 && !l.mtp_after_layers)
		layout_error(s, JR_PP_SPLIT, "pp_layout: a decoder "
			     "layer t comes after an MTP module m; Megatron's "
			     "rule: decoder layers must be placed before MTP "
			     "layers");
	else if (l.mtp > 0 && !l.mtp_one_stage)
		layout_error(s, JR_PP_SPLIT, "pp_layout: the MTP "
			     "modules m are in more than one stage (the first in "
			     "stage %lld); Megatron's rule: all of the MTP layers "
			     "must be in the same one virtual pipeline stage",
			     (long long)l.mtp_stage);
	else if (l.mtp > 0 && l.mtp_stage / p->pp != p->vpp - 1)
		layout_error(s, JR_PP_SPLIT, "pp_layout: the MTP "
			     "modules m are in stage %lld, chunk %lld of %lld of "
			     "rank %lld; Megatron's rule: the MTP is always in "
			     "the last virtual pipeline stage of its rank (a "
			     "stage from %lld on)", (long long)l.mtp_stage,
			     (long long)(l.mtp_stage / p->pp),
			     (long long)p->vpp, (long long)(l.mtp_stage % p->pp),
			     (long long)((p->vpp - 1) * p->pp));
	else if (l.bare_stage >= 0)
		layout_error(s, JR_PP_SPLIT, "pp_layout: stage %lld "
			     "holds nothing (no E, t, m or L); Megatron runs it "
			     "as a copy of the activation, which llmsim does not "
			     "model: give the stage a layer",
			     (long long)l.bare_stage);
}

/* " (vpp N, FILE:LINE, picks it: vpp 1 runs pp 1)" into buf when the
 * schedule is vpp's default, the place vpp is written known: a sweep
 * point of pp 1 on a base with vpp 5 was refused at the grid's pp with
 * nothing of vpp, which came from the base. "" otherwise. */
static void vpp_picked(const struct layout_sink *s, int64_t vpp, int implied,
		       char *buf, size_t n)
{
	const struct cnode *v = s->node ? job_layout_key(s->node,
							  "parallelism.vpp") :
				NULL;

	buf[0] = '\0';
	if (!implied || !s->d)
		return;
	if (v && v->kind == CNODE_SCALAR && v->file)
		snprintf(buf, n, " (vpp %lld, %s:%d, picks it: vpp 1 runs pp 1)",
			 (long long)vpp, v->file, v->line);
	else
		snprintf(buf, n, " (vpp %lld picks it: vpp 1 runs pp 1)",
			 (long long)vpp);
}

/* Pipeline schedule against vpp, pp and the microbatch count. */
static void check_schedule(struct job_spec *j, struct layout_sink *s)
{
	struct parallel_spec *p = &j->parallelism;
	const struct training_spec *t = &j->training;
	int64_t per_step = t->micro_batch_size * p->dp;
	int implied = p->schedule < 0;
	char why[320];

	if (p->schedule < 0)
		p->schedule = p->vpp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B;
	if (p->schedule == SCHED_INTERLEAVED && p->vpp < 2)
		layout_error(s, JR_SCHED_VPP, "the interleaved "
			     "schedule needs vpp >= 2, got vpp %lld",
			     (long long)p->vpp);
	if (p->vpp > 1 && p->schedule != SCHED_INTERLEAVED)
		layout_error(s, JR_SCHED_VPP, "vpp %lld needs "
			     "schedule 'interleaved'", (long long)p->vpp);
	if (p->schedule == SCHED_INTERLEAVED && p->pp < 2) {
		vpp_picked(s, p->vpp, implied, why, sizeof(why));
		layout_error(s, JR_SCHED_PP, "the interleaved "
			     "schedule needs pp >= 2, got pp %lld%s",
			     (long long)p->pp, why);
	}
	if (t->global_batch_size % per_step != 0) {
		layout_error(s, JR_BATCH, "global_batch_size %lld is "
			     "not divisible by micro_batch_size * dp = %lld * %lld",
			     (long long)t->global_batch_size,
			     (long long)t->micro_batch_size, (long long)p->dp);
		return;
	}
	if (t->local_batch_size > 0 &&
	    (t->local_batch_size % t->micro_batch_size != 0 ||
	     (t->global_batch_size / p->dp) % t->local_batch_size != 0)) {
		layout_error(s, JR_BATCH, "local_batch_size %lld must be a "
			     "multiple of micro_batch_size %lld and divide the "
			     "%lld sequences a replica runs a step "
			     "(global_batch_size / dp)",
			     (long long)t->local_batch_size,
			     (long long)t->micro_batch_size,
			     (long long)(t->global_batch_size / p->dp));
		return;
	}
	if (t->local_batch_size > 0 && p->schedule == SCHED_INTERLEAVED &&
	    (t->local_batch_size / t->micro_batch_size) % p->pp != 0)
		layout_error(s, JR_SCHED_MICRO, "the interleaved "
			     "schedule needs the microbatches of a local batch, "
			     "local_batch_size / micro_batch_size = %lld, to be "
			     "a multiple of pp %lld",
			     (long long)(t->local_batch_size /
					 t->micro_batch_size),
			     (long long)p->pp);
	else if (p->schedule == SCHED_INTERLEAVED &&
	    (t->global_batch_size / per_step) % p->pp != 0)
		layout_error(s, JR_SCHED_MICRO, "the interleaved "
			     "schedule needs the microbatch count "
			     "global_batch_size / (micro_batch_size * dp) = %lld "
			     "to be a multiple of pp %lld",
			     (long long)(t->global_batch_size / per_step),
			     (long long)p->pp);
}

/* Expert parallelism folded over a stage's tp * cp * dp GPUs
 * (Megatron-Core: world size divisible by etp * ep * pp). */
static void check_ep(struct job_spec *j, struct layout_sink *s)
{
	struct parallel_spec *p = &j->parallelism;
	const struct model_spec *m = j->model;
	int64_t stage = p->tp * p->cp * p->dp, per_domain;
	int64_t slots = model_is_moe(m) ? job_expert_slots(j) : 0;
	/* inference: check_inference_experts reported an ep that does not
	 * span the instance, with the experts it does not divide */
	int inf_ep_said = job_is_inference(j) &&
			  (s->broken & JR_BIT(JR_INF_EP)) != 0 &&
			  p->tp * (p->attention_dp ? p->dp : 1) % p->ep != 0;

	if (p->etp == 0)
		p->etp = p->tp;
	p->edp = 0;
	if (!model_is_moe(m)) {
		if (p->ep != 1)
			layout_error(s, JR_EP_DENSE, "ep %lld on a dense "
				     "model: expert parallelism needs "
				     "'n_routed_experts' in at least one "
				     "layer", (long long)p->ep);
		p->edp = p->dp * p->cp;
		/* train_cost.c costs MTP modules for MoE models only: on a dense
		 * one they were dropped without a word */
		if (j->moe.mtp_layers > 0)
			layout_error(s, JR_MTP, "mtp_layers %lld on a dense "
				     "model: llmsim costs multi-token "
				     "prediction for MoE models only "
				     "(DeepSeek-V3's); set it to 0",
				     (long long)j->moe.mtp_layers);
		return;
	}
	if (j->moe.redundant_experts > 0 && !job_is_inference(j))
		layout_error(s, JR_EP_EXPERTS, "moe.redundant_experts %lld "
			     "on a training job: expert replicas (EPLB) are an "
			     "inference setting; set it to 0",
			     (long long)j->moe.redundant_experts);
	else if (slots % p->ep != 0 && inf_ep_said)
		s->broken |= layout_want(s, JR_EP_EXPERTS) ? JR_BIT(JR_EP_EXPERTS) : 0;
	else if (slots % p->ep != 0) {
		char what[160];

		layout_expert_slots(j, what, sizeof(what));
		layout_error(s, JR_EP_EXPERTS, "ep %lld does not divide %s",
			     (long long)p->ep, what);
	} else if (slots / p->ep > JOB_LOCAL_EXPERTS_MAX)
		layout_error(s, JR_EP_EXPERTS, "ep %lld leaves %lld routed "
			     "experts on a GPU; llmsim costs at most %d local "
			     "experts: raise ep", (long long)p->ep,
			     (long long)(slots / p->ep),
			     JOB_LOCAL_EXPERTS_MAX);
	if (stage % (p->etp * p->ep) != 0 && job_is_inference(j))
		p->edp = 0;	/* check_inference_experts' rule said it */
	else if (stage % (p->etp * p->ep) != 0)
		layout_error(s, JR_EP_FOLD, "etp*ep = %lld*%lld does not "
			     "divide the tp*cp*dp = %lld GPUs of a pipeline stage "
			     "the experts fold over", (long long)p->etp,
			     (long long)p->ep, (long long)stage);
	else
		p->edp = stage / (p->etp * p->ep);
	if (m->moe_intermediate_size % p->etp != 0)
		layout_error(s, JR_ETP_FFN, "etp %lld does not divide "
			     "moe_intermediate_size %lld", (long long)p->etp,
			     (long long)m->moe_intermediate_size);
	if (model_shared_ffn(m) % p->tp != 0)
		layout_error(s, JR_TP_SHARED, "tp %lld does not divide the "
			     "shared experts' hidden size %lld", (long long)p->tp,
			     (long long)model_shared_ffn(m));
	if (p->tp > 1 && !p->sequence_parallel && !job_is_inference(j))
		layout_error(s, JR_MOE_SP, "an MoE model with tp %lld "
			     "needs sequence_parallel: true (Megatron-Core's MoE "
			     "layer takes the sequence-parallel shard)",
			     (long long)p->tp);
	if (j->moe.dispatcher && j->moe.dispatcher->vendor != EP_VENDOR_ANY &&
	    (j->moe.dispatcher->vendor == EP_VENDOR_NVIDIA) !=
	    (j->system->gpu->vendor == GPU_NVIDIA))
		layout_error(s, JR_EP_VENDOR, "dispatcher '%s' runs on %s GPUs "
			     "only, the system's %s is not one (alltoall or "
			     "hierarchical run on any; %s)",
			     j->moe.dispatcher->name ? j->moe.dispatcher->name : "",
			     ep_vendor_names[j->moe.dispatcher->vendor],
			     j->system->gpu->name ? j->system->gpu->name : "GPU",
			     j->system->gpu->vendor == GPU_NVIDIA ?
			     "deepep, deepep-ll or hybridep on NVIDIA" :
			     "mori on AMD");
	/* EP ranks stride by etp: a domain of g GPUs holds g / etp of them. */
	per_domain = j->system->gpus_per_node / (p->etp > 0 ? p->etp : 1);
	if (j->moe.dispatcher && p->ep > 1 &&
	    !ep_comm_spans_domain(j->moe.dispatcher, p->ep, per_domain))
		layout_error(s, JR_EP_VENDOR, "dispatcher '%s' spans at most "
			     "%lld GPUs of one NVLink domain (its "
			     "scale_up_max_ranks), ep %lld puts %lld in one of "
			     "the system's %lld-GPU domains (hybridep and "
			     "deepep-ll span any)",
			     j->moe.dispatcher->name ? j->moe.dispatcher->name : "",
			     (long long)j->moe.dispatcher->scale_up_max_ranks,
			     (long long)p->ep,
			     (long long)ep_comm_domain_ranks(p->ep, per_domain),
			     (long long)j->system->gpus_per_node);
	if (j->moe.a2a_overlap && p->ep > 1 && p->pp > 1 && p->vpp < 2)
		layout_error(s, JR_A2A_VPP,
			     "a2a_overlap with pp %lld needs "
			     "virtual pipeline stages (vpp > 1): Megatron-Core "
			     "runs the combined 1F1B all-to-all overlap only in the "
			     "interleaved schedule (transformer_config.py: "
			     "overlap_moe_expert_parallel_comm asserts "
			     "virtual_pipeline_model_parallel_size when "
			     "pipeline_model_parallel_size > 1)", (long long)p->pp);
	/* NVIDIA/Megatron-LM @ d98e8a6 megatron/core/transformer/
	 * transformer_config.py, __post_init__ under
	 * overlap_moe_expert_parallel_comm: assert recompute_granularity
	 * != 'full' */
	if (j->moe.a2a_overlap && p->ep > 1 &&
	    j->training.recompute == RECOMPUTE_FULL)
		layout_error(s, JR_A2A_RECOMPUTE,
			     "recompute 'full' "
			     "with moe.a2a_overlap: Megatron-Core refuses full "
			     "recomputation with the 1F1B all-to-all overlap "
			     "(transformer_config.py: 'disable full recomputation "
			     "when enabling overlap_moe_expert_parallel_comm'); "
			     "use recompute 'selective' or a2a_overlap false");
	if (j->moe.mtp_layers > 0 && job_mtp_modules(j) > m->num_nextn_predict_layers &&
	    m->num_nextn_predict_layers > 0)
		layout_error(s, JR_MTP, "mtp_layers %lld exceeds the model's "
			     "num_nextn_predict_layers %lld (passes of one "
			     "module: moe.mtp_repeated_layer)",
			     (long long)j->moe.mtp_layers,
			     (long long)m->num_nextn_predict_layers);
}

/* The largest divisor of n that is at most cap (at least 1). */
static int64_t divisor_at_most(int64_t n, int64_t cap)
{
	int64_t k;

	for (k = cap < n ? cap : n; k > 1; k--)
		if (n % k == 0)
			return k;
	return 1;
}

/* Context parallelism against the sequence and the heads. */
static void check_cp(struct job_spec *j, struct layout_sink *s)
{
	struct parallel_spec *p = &j->parallelism;
	const struct model_spec *m = j->model;
	/* Balancing halves each cp chunk only when there is a cp group
	 * (Megatron's get_batch_on_this_cp_rank runs for cp > 1): at cp 1
	 * the sequence is whole, whatever its length. */
	int lb = p->cp > 1 && p->cp_load_balance;
	int64_t seq = j->training.seq_len, chunks = lb ? 2 * p->cp : p->cp;
	int64_t heads = m->num_attention_heads / p->tp, inner;
	int64_t kv = m->num_key_value_heads >= p->tp ?
		     m->num_key_value_heads / p->tp : 1;

	/* Megatron-Core's Mamba context parallelism (NVIDIA/Megatron-LM@
	 * 00caa53a megatron/core/ssm/mamba_context_parallel.py, modelled in
	 * mamba.c: all-to-alls of the heads around the conv and the scan)
	 * asserts "nheads must be evenly divisible by tp_size * cp_size" and
	 * that cp and the TP rank's groups divide one another */
	if (layout_want(s, JR_CP_HEADS) && p->cp > 1 &&
	    m->hybrid_override_pattern && m->mamba_num_heads > 0 &&
	    m->mamba_num_heads % p->tp == 0 && m->n_groups % p->tp == 0) {
		int64_t mh = m->mamba_num_heads / p->tp, g = m->n_groups / p->tp;

		if (mh % p->cp != 0 || (g < p->cp ? p->cp % g : g % p->cp) != 0)
			layout_error(s, JR_CP_HEADS, "cp %lld with Mamba-2 "
				     "layers: Megatron-Core's Mamba context "
				     "parallelism needs mamba_num_heads / tp "
				     "(%lld) divisible by cp and n_groups / tp "
				     "(%lld) a divisor or multiple of it",
				     (long long)p->cp, (long long)mh,
				     (long long)g);
	}
	if (seq % chunks != 0)
		layout_error(s, JR_CP_SEQ, "cp %lld does not divide "
			     "seq_len %lld into %lld chunks%s", (long long)p->cp,
			     (long long)seq, (long long)chunks, lb ?
			     " (2 cp with cp_load_balance)" : "");
	if (p->cp_comm_type == CP_A2A_P2P && p->cp_a2a == 0)
		p->cp_a2a = divisor_at_most(p->cp, j->system->gpus_per_node /
					    (p->tp < j->system->gpus_per_node ?
					     p->tp : j->system->gpus_per_node));
	if (p->cp > 1 && j->framework && j->framework->cp_torch_sdpa &&
	    (p->cp_comm_type == CP_A2A || p->cp_comm_type == CP_A2A_P2P))
		layout_error(s, JR_CP_TORCH, "cp_comm_type %s: framework "
			     "cp_torch_sdpa (PyTorch's context_parallel) rotates "
			     "K/V by all_gather or p2p only, no all-to-all over "
			     "heads", cp_comm_names[p->cp_comm_type]);
	if (p->cp_comm_type == CP_A2A)
		p->cp_a2a = p->cp;
	if (p->cp_comm_type != CP_A2A && p->cp_comm_type != CP_A2A_P2P)
		return;
	inner = p->cp_a2a;
	if (p->cp % inner != 0)
		layout_error(s, JR_CP_A2A,
			     "cp_a2a %lld does not divide "
			     "cp %lld", (long long)inner, (long long)p->cp);
	if (heads % inner != 0 || (kv % inner != 0 && inner % kv != 0))
		layout_error(s, JR_CP_HEADS,
			     "%s over %lld ranks needs the "
			     "%lld query heads and %lld KV heads of a TP rank "
			     "divisible by it (KV heads may also divide it)",
			     cp_comm_names[p->cp_comm_type], (long long)inner,
			     (long long)heads, (long long)kv);
}

/* Sequence parallelism splits each CP rank's seq_len / cp tokens over
 * the TP group: Megatron-Core's scatter and reduce-scatter along the
 * sequence assert it divides (tensor_parallel/mappings.py,
 * _split_along_first_dim, _reduce_scatter_along_first_dim: "First
 * dimension of the tensor should be divisible by tensor parallel
 * size"). With seq_len % cp == 0 (JR_CP_SEQ), that is cp*tp dividing
 * seq_len. */
static void check_sp(const struct job_spec *j, struct layout_sink *s)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t seq = j->training.seq_len, split = p->cp * p->tp;

	if (p->sequence_parallel && p->tp > 1 && seq % split != 0)
		layout_error(s, JR_SP_SEQ, "sequence_parallel "
			     "splits the seq_len %lld tokens over cp*tp = "
			     "%lld*%lld ranks, which does not divide them "
			     "(Megatron-Core asserts the sequence divisible by "
			     "the tensor-parallel size); use a seq_len that "
			     "is a multiple of %lld or sequence_parallel: false",
			     (long long)seq, (long long)p->cp, (long long)p->tp,
			     (long long)split);
}

/* A training key the training phase needs but the job does not give. */
static void training_missing(struct layout_sink *s, const char *key)
{
	const struct cnode *at = s->node ? cnode_get(s->node, "training") : NULL;

	layout_key_error(s, JR_TRAINING_KEYS, at ? at : s->node, "'training.%s': "
			 "expected an integer such as 8, got nothing (the key is "
			 "required)", key);
}

/* defer_embedding_wgrad_compute where Megatron-Core and NeMo run it:
 * ModelParallelConfig.__post_init__ refuses it without pipeline
 * parallelism (NVIDIA/Megatron-LM core_v0.12.0:megatron/core/
 * model_parallel_config.py), NeMo's performance scripts turn it off
 * under FSDP (NVIDIA/NeMo v2.3.1:scripts/performance/utils.py), and
 * llmsim does not cost the MTP modules' output-layer calls, which share
 * its buffers (models/train.c); the MXFP8 LM head (training.
 * fp8_output_proj under mxfp8) raises on it (TELinearCrossEntropyModule:
 * "does not support defer_embedding_wgrad_compute", NVIDIA/Megatron-LM
 * @ 620cf750 megatron/core/transformer/mxfp8_output_proj.py). */
static void check_defer(const struct job_spec *j, struct layout_sink *s)
{
	const struct parallel_spec *p = &j->parallelism;

	if (!p->defer_embedding_wgrad)
		return;
	if (p->pp < 2)
		layout_error(s, JR_DEFER_WGRAD, "parallelism."
			     "defer_embedding_wgrad_compute needs pp >= 2 (the "
			     "output layer's weight gradients move into the "
			     "pipeline flush), got pp %lld", (long long)p->pp);
	else if (j->training.zero_stage >= 3)
		layout_error(s, JR_DEFER_WGRAD, "parallelism."
			     "defer_embedding_wgrad_compute does not work with "
			     "FSDP (training.zero_stage %lld; NeMo turns it off)",
			     (long long)j->training.zero_stage);
	else if (model_is_moe(j->model) && j->moe.mtp_layers > 0)
		layout_error(s, JR_DEFER_WGRAD, "parallelism."
			     "defer_embedding_wgrad_compute with moe.mtp_layers "
			     "%lld is not modeled (the MTP heads' output-layer "
			     "calls share the deferral buffers)",
			     (long long)j->moe.mtp_layers);
	else if (j->training.fp8_output_proj &&
		 j->training.dtype == DTYPE_MXFP8)
		layout_error(s, JR_DEFER_WGRAD, "parallelism."
			     "defer_embedding_wgrad_compute does not work with "
			     "training.fp8_output_proj (Megatron-Core's MXFP8 "
			     "LM head refuses it)");
}

/* Activation offloading where Megatron-Core runs it: TransformerConfig.
 * __post_init__ refuses cpu_offloading with pipeline parallelism, with
 * activation recomputation and with CUDA graphs, and wants
 * cpu_offloading_num_layers in [0, num_layers) (NVIDIA/Megatron-LM @
 * d98e8a64 megatron/core/transformer/transformer_config.py; Megatron-
 * Bridge docs/training/cpu-offloading.md, "Feature Interactions");
 * Transformer Engine's default schedule leaves at least one layer's set
 * on the GPU (get_cpu_offload_context: num_layers <= model_layers - 1).
 * llmsim builds the offload on the plain schedule only: the MoE
 * all-to-all overlap's paired actions are not offloaded (refused). */
static void check_offload(const struct job_spec *j, struct layout_sink *s)
{
	const struct training_spec *t = &j->training;
	int64_t n = t->cpu_offload_layers, layers = j->model->num_hidden_layers;

	if (n == 0)
		return;
	if (n >= layers)
		layout_error(s, JR_CPU_OFFLOAD, "training.cpu_offload_layers "
			     "%lld must be less than the model's %lld layers "
			     "(Transformer Engine keeps at least one layer's "
			     "activations on the GPU)", (long long)n,
			     (long long)layers);
	else if (j->parallelism.pp > 1)
		layout_error(s, JR_CPU_OFFLOAD, "training.cpu_offload_layers "
			     "needs pp 1 (Megatron-Core: no pipeline "
			     "parallelism with CPU offloading), got pp %lld",
			     (long long)j->parallelism.pp);
	else if (t->recompute != RECOMPUTE_NONE)
		layout_error(s, JR_CPU_OFFLOAD, "training.cpu_offload_layers "
			     "does not work with activation recomputation "
			     "(training.recompute must be none; Megatron-Core "
			     "refuses both)");
	else if (t->cuda_graphs.n > 0)
		layout_error(s, JR_CPU_OFFLOAD, "training.cpu_offload_layers "
			     "does not work with CUDA graphs (training."
			     "cuda_graphs must be empty; Megatron-Core refuses "
			     "both)");
	else if (model_is_moe(j->model) && j->moe.a2a_overlap &&
		 j->parallelism.ep > 1)
		layout_error(s, JR_CPU_OFFLOAD, "training.cpu_offload_layers "
			     "with moe.a2a_overlap is not modeled (the paired "
			     "forward and backward actions)");
}

static void check_training(struct job_spec *j, struct layout_sink *s)
{
	const struct training_spec *t = &j->training;

	if (t->seq_len == 0 || t->global_batch_size == 0) {
		if (t->seq_len == 0)
			training_missing(s, "seq_len");
		if (t->global_batch_size == 0)
			training_missing(s, "global_batch_size");
		return;	/* nothing else can be checked */
	}
	check_schedule(j, s);
	check_cp(j, s);
	check_sp(j, s);
	check_defer(j, s);
	check_offload(j, s);
	/* A learned position table has a row per position: a longer
	 * sequence has no embedding for its last tokens (Megatron-LM's
	 * arguments.py validate_args asserts max_position_embeddings >=
	 * seq_length, @ d98e8a64dd; torch's nn.Embedding raises on the
	 * index). Rotary and no-position models take any length. */
	if (j->model->position_embedding == POS_LEARNED &&
	    j->model->max_position_embeddings > 0 &&
	    t->seq_len > j->model->max_position_embeddings)
		layout_error(s, JR_LEARNED_POS, "training.seq_len %lld is "
			     "longer than the model's learned position table "
			     "(max_position_embeddings %lld): no position "
			     "embedding for the tokens past it; use a seq_len "
			     "of at most %lld",
			     (long long)t->seq_len,
			     (long long)j->model->max_position_embeddings,
			     (long long)j->model->max_position_embeddings);
	/* Chunked attention (Llama 4) is costed per chunk (attn.c); context
	 * parallelism over it is refused: no framework we know of runs it.
	 * In Transformer Engine's DotProductAttention (Megatron-Core's core)
	 * a chunked mask is an 'arbitrary' mask, which only the unfused
	 * backend takes, and get_attention_backend disables that backend
	 * under CP (transformer_engine/pytorch/attention/dot_product_attention/
	 * utils.py). Within one aligned chunk, chunked attention is causal
	 * attention and CP applies. */
	/* Megatron-Core's GatedDeltaNet context parallelism (NVIDIA/
	 * Megatron-LM@e8678351 megatron/core/ssm/gated_delta_net.py:
	 * tensor_a2a_cp2hp of q, k, v, z, beta, alpha; gdn.c) splits each
	 * TP rank's key and value heads over the CP ranks: both must divide */
	if (model_is_gdn(j->model) && j->parallelism.cp > 1 &&
	    j->parallelism.tp > 0) {
		const struct model_spec *m = j->model;
		int64_t cp = j->parallelism.cp, tp = j->parallelism.tp;
		int64_t kh = m->linear_num_key_heads / tp;
		int64_t vh = m->linear_num_value_heads / tp;

		if (kh % cp != 0 || vh % cp != 0)
			layout_error(s, JR_LINEAR_CP, "'parallelism.cp' %lld "
				     "with Gated DeltaNet (linear_attention) "
				     "layers: Megatron-Core's all-to-all "
				     "context parallelism splits the key and "
				     "value heads of a TP rank (%lld and %lld) "
				     "over cp, which must divide both",
				     (long long)cp, (long long)kh,
				     (long long)vh);
	}
	if (j->model->attention_chunk_size > 0 &&
	    t->seq_len > j->model->attention_chunk_size &&
	    j->parallelism.cp > 1)
		layout_error(s, JR_TRAIN_CHUNKED, "'parallelism"
			     ".cp' %lld with the model's 'attention_chunk_size' "
			     "%lld (chunked attention) shorter than "
			     "training.seq_len %lld: llmsim costs no context "
			     "parallelism over chunked layers (Transformer "
			     "Engine runs no chunked mask under CP); "
			     "use cp 1 or a seq_len within one chunk",
			     (long long)j->parallelism.cp,
			     (long long)j->model->attention_chunk_size,
			     (long long)t->seq_len);
	/* DeepSeek Sparse Attention (attn_mla.c attn_indexer_fwd): the indexer
	 * scores every causal key of a query and the sparse core gathers
	 * the top-k from the whole sequence; llmsim costs neither split
	 * over CP ranks (their key exchange is not the ring's blocks). */
	if (model_is_dsa(j->model) && j->parallelism.cp > 1)
		layout_error(s, JR_TRAIN_DSA_CP, "'parallelism.cp' %lld with "
			     "DeepSeek Sparse Attention (the model's "
			     "'index_topk' %lld): llmsim costs no context "
			     "parallelism over the lightning indexer and the "
			     "sparse core; use cp 1",
			     (long long)j->parallelism.cp,
			     (long long)j->model->index_topk);
}

/* The most virtual stages a layout can have: one layer each, and the
 * first and the last may hold only the embedding and the loss where the
 * split says so: Megatron-Core's account_for_embedding_in_pipeline_split
 * and account_for_loss_in_pipeline_split count them as a layer each
 * (framework pp_split megatron, models/split.c: Llama 3.1 405B's 126
 * layers on pp 16 x vpp 8 = 128 stages, Megatron-Bridge's perf recipe
 * LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_MX_V2 @ v0.4.1), or a pp_layers /
 * pp_layout gives the end stages no layer (checked there). */
static int64_t stages_max(const struct job_spec *j)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t layers = j->model->num_hidden_layers;

	if (p->pp_layers.n > 0 || p->pp_layout ||
	    (!job_is_inference(j) && j->framework &&
	     j->framework->pp_split == PP_SPLIT_MEGATRON))
		return layers + 2;
	return layers;
}

/* Megatron's tp-cp-ep-pp-dp order (models/layout.h): a training layout
 * (an inference instance places its own GPUs), and with experts the
 * expert order etp-ep-pp-edp must give a GPU the expert coordinates of
 * its stage index, as llmsim folds them: etp ep = tp cp. */
static void check_order(const struct job_spec *j, struct layout_sink *s)
{
	const struct parallel_spec *p = &j->parallelism;

	if (p->rank_order != ORDER_TP_CP_EP_PP_DP)
		return;
	if (job_is_inference(j))
		layout_error(s, JR_RANK_ORDER, "parallelism.rank_order %s "
			     "is a training layout: a serving instance places "
			     "its own GPUs; leave it at %s",
			     rank_order_names[p->rank_order],
			     rank_order_names[ORDER_TP_CP_EP_DP_PP]);
	else if (model_is_moe(j->model) && p->pp > 1 &&
		 p->etp * p->ep != p->tp * p->cp)
		layout_error(s, JR_RANK_ORDER, "parallelism.rank_order %s "
			     "with experts needs etp*ep = tp*cp (got %lld*%lld "
			     "and %lld*%lld): llmsim folds the experts' "
			     "etp-ep-pp-edp order over the same GPUs only then",
			     rank_order_names[p->rank_order], (long long)p->etp,
			     (long long)p->ep, (long long)p->tp,
			     (long long)p->cp);
}

uint64_t job_layout_check(struct job_spec *j, uint64_t rules, struct diag *d,
			  const struct cnode *node)
{
	struct parallel_spec *p = &j->parallelism;
	const struct model_spec *m = j->model;
	struct layout_sink s = { d, node, rules, 0 };

	if (infer_dp(p, system_gpus(j->system), &s) != 0)
		return s.broken;
	if (job_is_inference(j))
		layout_check_inference(j, &s);
	else
		check_training(j, &s);
	check_tp(j, &s);
	check_ep(j, &s);
	check_order(j, &s);
	if (p->pp * p->vpp > stages_max(j))
		layout_error(&s, JR_PP_LAYERS, "pp*vpp = "
			     "%lld*%lld exceeds the model's %lld layers%s",
			     (long long)p->pp, (long long)p->vpp,
			     (long long)m->num_hidden_layers,
			     stages_max(j) > m->num_hidden_layers ?
			     " plus the embedding and the loss" : "");
	else {
		check_pp_layers(j, &s);
		check_pp_layout(j, &s);
	}
	return s.broken;
}
