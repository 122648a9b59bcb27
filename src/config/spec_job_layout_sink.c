/*
 * spec_job_layout_sink.c - where the job layout rules' breaches go
 * (struct layout_sink): a bit per broken rule and, with diagnostics, the
 * message at the job key the user changed (rule_at, schema_check_blame).
 * The names the rules' messages use are here too. A leaf of the rules:
 * spec_job_layout.c and spec_job_layout_infer.c call it, it calls
 * neither (tests/layers.sh refuses a file cycle).
 */
#include "spec_job.h"
#include "spec_job_layout_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cnode.h"
#include "base/diag.h"

/* Here rather than in spec_job.c, whose schema reads them too, so that
 * the rules' messages do not call back into the schema's file. */
const char *const job_phase_names[] = {"training", "prefill", "decode",
				       "serving", NULL};
const char *const cp_comm_names[] = {"p2p", "all_gather", "a2a", "a2a+p2p",
				     NULL};
const char *const rank_order_names[] = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp",
					NULL};

const char *const job_rule_names[JR_COUNT + 1] = {
	"world", "tp_heads", "tp_kv_heads", "tp_ffn", "tp_comm_overlap",
	"cp_seq", "ep_dense", "pp_layers", "pp_split", "batch",
	"schedule_vpp", "schedule_pp", "schedule_microbatches", "ep_experts",
	"ep_fold", "etp_ffn", "tp_shared", "moe_sp", "mtp", "ep_vendor",
	"a2a_overlap_vpp", "a2a_overlap_recompute", "cp_a2a",
	"cp_heads", "cp_torch", "training_keys", "inference_cp",
	"inference_vpp",
	"inference_attention_dp", "inference_ep", "serving_engine",
	"train_chunked", "sp_seq", "spec_mtp", "max_model_len",
	"pool_ep", "pool_tp", "defer_wgrad", "tp_linear_heads", "linear_cp",
	"train_dsa_cp", "rank_order", "cpu_offload", "learned_positions",
	NULL,
};

const struct cnode *job_layout_key(const struct cnode *job, const char *key)
{
	const struct cnode *sec;
	const char *dot = strchr(key, '.');
	char head[32];

	if (!job || !dot || (size_t)(dot - key) >= sizeof(head))
		return job ? cnode_get(job, key) : NULL;
	memcpy(head, key, (size_t)(dot - key));
	head[dot - key] = '\0';
	sec = cnode_get(job, head);
	if (sec && cnode_get(sec, dot + 1))
		return cnode_get(sec, dot + 1);
	return sec;
}

/* Where a broken rule is reported: of the job keys it reads (`keys`,
 * dotted, separated by blanks, the likeliest culprit first), the one the
 * user changed (schema_check_blame: a --set, a file overriding the
 * preset), else the first one written, else the first key's section,
 * else the job's mapping. */
static const struct cnode *rule_at(const struct cnode *job, const char *keys)
{
	char buf[256], *names[8], *save = NULL, *k;
	struct schema_at at = { job, NULL };
	const struct cnode *v;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", keys);
	for (k = strtok_r(buf, " ", &save); k && n < 8;
	     k = strtok_r(NULL, " ", &save))
		names[n++] = k;
	if (n == 0)
		return job;
	v = job_layout_key(job, names[schema_check_blame(&at,
			(const char *const *)names, n)]);
	return v ? v : job;
}

/* The keys that split the world: dp x tp x pp x cp GPUs. */
#define WORLD_KEYS \
	"parallelism.dp parallelism.tp parallelism.pp parallelism.cp"

/* The job keys each rule reads, the likeliest culprit first (rule_at
 * blames the one the user changed). */
static const char *const rule_keys[JR_COUNT] = {
	[JR_WORLD] = WORLD_KEYS,
	[JR_TP_HEADS] = "parallelism.tp",
	[JR_TP_KV_HEADS] = "parallelism.tp",
	[JR_TP_FFN] = "parallelism.tp",
	[JR_TP_OVERLAP] = "parallelism.tp_comm_overlap parallelism.tp "
			  "parallelism.sequence_parallel",
	[JR_CP_SEQ] = "parallelism.cp training.seq_len "
		      "parallelism.cp_load_balance",
	[JR_EP_DENSE] = "parallelism.ep",
	[JR_PP_LAYERS] = "parallelism.pp parallelism.vpp",
	[JR_PP_SPLIT] = "parallelism.pp_layout parallelism.pp_layers "
			"parallelism.pp parallelism.vpp",
	[JR_BATCH] = "training.global_batch_size training.micro_batch_size "
		     "training.local_batch_size " WORLD_KEYS,
	[JR_SCHED_VPP] = "parallelism.vpp parallelism.schedule",
	[JR_SCHED_PP] = "parallelism.schedule parallelism.pp",
	[JR_SCHED_MICRO] = "parallelism.schedule training.global_batch_size "
			   "training.micro_batch_size parallelism.pp "
			   "parallelism.dp",
	[JR_EP_EXPERTS] = "parallelism.ep moe.redundant_experts",
	[JR_EP_FOLD] = "parallelism.ep parallelism.etp parallelism.tp "
		       "parallelism.cp parallelism.dp",
	[JR_ETP_FFN] = "parallelism.etp parallelism.tp",
	[JR_TP_SHARED] = "parallelism.tp",
	[JR_MOE_SP] = "parallelism.sequence_parallel parallelism.tp",
	[JR_MTP] = "moe.mtp_layers",
	[JR_EP_VENDOR] = "moe.dispatcher",
	[JR_A2A_VPP] = "moe.a2a_overlap parallelism.pp parallelism.vpp "
		       "parallelism.ep",
	[JR_A2A_RECOMPUTE] = "training.recompute moe.a2a_overlap "
			     "parallelism.ep",
	[JR_CP_A2A] = "parallelism.cp_a2a parallelism.cp",
	[JR_CP_HEADS] = "parallelism.cp_a2a parallelism.cp_comm_type "
			"parallelism.cp parallelism.tp",
	[JR_CP_TORCH] = "parallelism.cp_comm_type framework.cp_torch_sdpa",
	[JR_INF_CP] = "parallelism.cp",
	[JR_INF_VPP] = "parallelism.vpp",
	[JR_INF_ATTN_DP] = "parallelism.attention_dp",
	[JR_INF_EP] = "parallelism.ep parallelism.etp parallelism.tp "
		      "parallelism.dp parallelism.attention_dp",
	[JR_TRAIN_CHUNKED] = "parallelism.cp training.seq_len",
	[JR_SP_SEQ] = "training.seq_len parallelism.sequence_parallel "
		      "parallelism.tp parallelism.cp",
	[JR_DEFER_WGRAD] = "parallelism.defer_embedding_wgrad_compute "
			   "parallelism.pp training.zero_stage moe.mtp_layers",
	[JR_TP_LINEAR_HEADS] = "parallelism.tp",
	[JR_LINEAR_CP] = "parallelism.cp",
	[JR_TRAIN_DSA_CP] = "parallelism.cp",
	[JR_RANK_ORDER] = "parallelism.rank_order parallelism.ep "
			  "parallelism.etp parallelism.tp parallelism.cp",
	[JR_CPU_OFFLOAD] = "training.cpu_offload_layers parallelism.pp "
			   "training.recompute training.cuda_graphs",
	[JR_LEARNED_POS] = "training.seq_len",
};

/* Whether the sink takes a breach of rule: marks it broken when wanted;
 * true when there is a diagnostics list to write the message to. */
static int sink_take(struct layout_sink *s, enum job_rule rule)
{
	if (!layout_want(s, rule))
		return 0;
	s->broken |= JR_BIT(rule);
	return s->d != NULL;
}

void layout_expert_slots(const struct job_spec *j, char *buf, size_t n)
{
	long long e = (long long)j->model->n_routed_experts;
	long long slots = (long long)job_expert_slots(j);

	if (slots == e)
		snprintf(buf, n, "the model's %lld routed experts", e);
	else
		snprintf(buf, n, "the %lld expert slots (the model's %lld "
			 "routed experts + moe.redundant_experts %lld)", slots,
			 e, slots - e);
}

void layout_error(struct layout_sink *s, enum job_rule rule,
		  const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!sink_take(s, rule))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cnode_error(s->d, rule_at(s->node, rule_keys[rule] ? rule_keys[rule] :
				  "parallelism"), "layout: %s", msg);
}

void layout_key_error(struct layout_sink *s, enum job_rule rule,
		      const struct cnode *at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!sink_take(s, rule))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cnode_error(s->d, at, "%s", msg);
}
