/*
 * spec_job_layout_infer.c - the layout rules of inference and serving
 * jobs (prefill, decode, serving): an instance's GPUs against the MoE
 * layers' expert parallelism, MTP speculative decoding, max_model_len,
 * and the disaggregated prefill and decode pools; each broken rule
 * reported at the job key the user changed, as spec_job_layout.c does
 * for the rest (its sink, layout_error and job_layout_key:
 * spec_job_layout_impl.h).
 */
#include "spec_job.h"
#include "spec_job_layout_impl.h"

#include <stdio.h>
#include <string.h>

#include "cnode.h"

/* The experts of an inference instance span its GPUs of a stage: tp, or
 * tp x dp with attention_dp (vLLM flattens TP across DP for the MoE
 * layers, SGLang's and TensorRT-LLM's MoE groups take every GPU of the
 * engine): ep of them hold different experts, etp = GPUs / ep shard each
 * expert (ep 1: every expert split over all of them). */
static void check_inference_experts(struct job_spec *j, struct layout_sink *s)
{
	struct parallel_spec *p = &j->parallelism;
	int64_t g = p->tp * (p->attention_dp ? p->dp : 1);

	if (g % p->ep != 0) {
		char what[160] = "";

		/* one message: check_ep says no more */
		if (job_expert_slots(j) % p->ep != 0)
			layout_expert_slots(j, what, sizeof(what));
		layout_error(s, JR_INF_EP, "ep %lld does not "
			     "divide the %lld GPUs an instance's MoE layers "
			     "span (tp%s)%s%s", (long long)p->ep, (long long)g,
			     p->attention_dp ? " x dp, attention_dp" : "",
			     *what ? " nor " : "", what);
		return;
	}
	if (p->etp == 0)
		p->etp = g / p->ep;
	else if (p->etp * p->ep != g)
		layout_error(s, JR_INF_EP, "etp x ep = %lld x %lld "
			     "must be the %lld GPUs an instance's MoE layers "
			     "span", (long long)p->etp, (long long)p->ep,
			     (long long)g);
}

/* Speculative decoding by MTP drafts with the model's own multi-token
 * prediction modules (num_nextn_predict_layers; DeepSeek-V3: 1), one a
 * draft step at most draft_layers of them: vLLM's DeepSeekMTP runs
 * module spec_step_idx % num_mtp_layers a step, SGLang's NextN its one
 * module. A model without them has nothing to draft with. */
static void check_spec_mtp(const struct job_spec *j, struct layout_sink *s)
{
	const struct speculative_spec *sp = &j->serving.speculative;
	const struct model_spec *m = j->model;
	const struct cnode *at = s->node ? cnode_get(s->node, "serving") : NULL;
	const struct cnode *spn = at ? cnode_get(at, "speculative") : NULL;
	const struct cnode *v;

	if (sp->method != SPEC_MTP)
		return;
	if (spn)
		at = spn;
	v = spn ? cnode_get(spn, "method") : NULL;
	if (m->num_nextn_predict_layers <= 0)
		layout_key_error(s, JR_SPEC_MTP, v ? v : at ? at : s->node,
				 "speculative method 'mtp' drafts with the model's "
				 "multi-token prediction layers, and model '%s' has "
				 "none (num_nextn_predict_layers 0): use method "
				 "'eagle' or 'draft' with a draft_model",
				 m->name ? m->name : "(unnamed)");
	else if (sp->draft_layers > m->num_nextn_predict_layers) {
		v = spn ? cnode_get(spn, "draft_layers") : NULL;
		layout_key_error(s, JR_SPEC_MTP, v ? v : at ? at : s->node,
				 "speculative draft_layers %lld: model '%s' has %lld "
				 "MTP layer(s) (num_nextn_predict_layers)",
				 (long long)sp->draft_layers,
				 m->name ? m->name : "(unnamed)",
				 (long long)m->num_nextn_predict_layers);
	}
}

/* serving.max_model_len past the model's context: vLLM's ModelConfig
 * refuses a max_model_len above the one it derives from the model's
 * config (max_position_embeddings, no rope scaling: "User-specified
 * max_model_len ... is greater than the derived max_model_len", unless
 * VLLM_ALLOW_LONG_MAX_MODEL_LEN) [D]; llmsim models no context extension
 * either, so every engine is held to it. */
static void check_max_model_len(const struct job_spec *j,
				struct layout_sink *s)
{
	int64_t mml = j->serving.max_model_len;
	int64_t ctx = j->model->max_position_embeddings;
	const struct cnode *v = job_layout_key(s->node, "serving.max_model_len");

	if (mml > 0 && ctx > 0 && mml > ctx)
		layout_key_error(s, JR_MAX_MODEL_LEN, v ? v : s->node,
				 "'serving.max_model_len' %lld exceeds the context of "
				 "model '%s', %lld tokens (max_position_embeddings): "
				 "vLLM refuses it, and llmsim models no context "
				 "extension", (long long)mml,
				 j->model->name ? j->model->name : "(unnamed)",
				 (long long)ctx);
	else if (j->phase == PHASE_DECODE || j->phase == PHASE_PREFILL) {
		/* a step's sequences within the context too: context_len
		 * cached + the step's tokens (1 decoding, the prompt
		 * prefilling), as serving's requests are (serve_req.c); a
		 * decode of 100M cached tokens a sequence ran */
		int64_t lim = mml > 0 ? mml : ctx;
		double q = j->phase == PHASE_PREFILL ?
			   j->serving.input_len.mean : 1;
		double seq = (double)j->serving.context_len + q;

		v = job_layout_key(s->node, j->phase == PHASE_PREFILL &&
			    j->serving.context_len == 0 ? "serving.input_len" :
			    "serving.context_len");
		if (lim > 0 && seq > (double)lim)
			layout_key_error(s, JR_MAX_MODEL_LEN, v ? v : s->node,
					 "a sequence of this step holds %.0f tokens "
					 "(serving.context_len %lld + %.0f %s), past %s "
					 "of %lld tokens: the engines refuse it",
					 seq, (long long)j->serving.context_len, q,
					 j->phase == PHASE_PREFILL ? "prompt tokens" :
					 "decoded", mml > 0 ? "'serving.max_model_len'"
					 : "the model's context (max_position_embeddings)",
					 (long long)lim);
	}
}

/* Names of the disaggregated pools, as serving.disaggregated spells them. */
static const char *const pool_names[] = {"prefill", "decode"};

/* Where an error about serving.disaggregated.<pool>.<key> points: the
 * key's node, else the nearest of its parents the file has. */
static const struct cnode *pool_key(const struct layout_sink *s, int pool,
				    const char *key)
{
	const struct cnode *at = s->node ? cnode_get(s->node, "serving") : NULL;
	const struct cnode *d = at ? cnode_get(at, "disaggregated") : NULL;
	const struct cnode *pn = d ? cnode_get(d, pool_names[pool]) : NULL;
	const struct cnode *v = pn ? cnode_get(pn, key) : NULL;

	return v ? v : pn ? pn : d ? d : s->node;
}

/* The expert parallelism of a disaggregated pool (serving_setup's
 * pool_job: its instances' tp GPUs, attention-DP ranks or not, are what
 * its MoE layers span): ep must divide them and the routed experts, and
 * needs an MoE model, as the job's own ep (check_inference_experts,
 * check_ep). Without this a bad pool ep surfaced only when the run built
 * the pool, with no location. */
static void check_pool_ep(const struct job_spec *j, struct layout_sink *s)
{
	const struct disagg_spec *dg = &j->serving.disaggregated;
	const struct pool_spec *pool[] = {&dg->prefill, &dg->decode};
	int64_t experts = job_expert_slots(j);
	int i;

	for (i = 0; dg->enabled && i < 2; i++) {
		const struct pool_spec *p = pool[i];
		const struct cnode *where = pool_key(s, i, "ep");

		if (p->attention_dp && !model_is_moe(j->model)) {
			layout_key_error(s, JR_POOL_EP, pool_key(s, i, "attention_dp"),
					 "'serving.disaggregated.%s.attention_dp' on a "
					 "dense "
					 "model: attention data parallelism shares MoE "
					 "layers across the ranks; use more instances",
					 pool_names[i]);
		}
		if (p->ep <= 1)
			continue;
		if (!model_is_moe(j->model))
			layout_key_error(s, JR_POOL_EP, where, "'serving.disaggregated."
					 "%s.ep' %lld: expert parallelism needs an MoE "
					 "model", pool_names[i], (long long)p->ep);
		else if (p->tp % p->ep != 0 || experts % p->ep != 0) {
			char what[160];

			layout_expert_slots(j, what, sizeof(what));
			layout_key_error(s, JR_POOL_EP, where, "'serving.disaggregated."
					 "%s.ep' %lld must divide the pool's %lld GPUs an "
					 "instance's MoE layers span (its tp) and %s",
					 pool_names[i], (long long)p->ep,
					 (long long)p->tp, what);
		}
	}
}

/* Why tp t cannot shard model m's attention or MLPs, by the job's own
 * tp rules (check_tp, check_ep's tp_shared), into msg: 0 when it can. */
static int pool_tp_breach(const struct model_spec *m, int64_t t, char *msg,
			  size_t n)
{
	const char *what = NULL;
	int64_t dim = 0;

	if (m->num_key_value_heads % t != 0 && t % m->num_key_value_heads != 0
	    && m->num_attention_heads % t == 0) {
		snprintf(msg, n, "%lld and the model's num_key_value_heads %lld: "
			 "one must divide the other (each GPU holds whole KV "
			 "heads, replicated when tp exceeds them)", (long long)t,
			 (long long)m->num_key_value_heads);
		return 1;
	}
	if (m->num_attention_heads % t != 0) {
		what = "num_attention_heads";
		dim = m->num_attention_heads;
	} else if (m->intermediate_size % t != 0) {
		what = "intermediate_size";
		dim = m->intermediate_size;
	} else if (model_is_moe(m) && model_shared_ffn(m) % t != 0) {
		what = "shared experts' hidden size";
		dim = model_shared_ffn(m);
	}
	if (!what)
		return 0;
	snprintf(msg, n, "%lld does not divide the model's %s %lld (each GPU "
		 "of an instance holds an equal share)", (long long)t, what,
		 (long long)dim);
	return 1;
}

/* The tensor parallelism of a disaggregated pool (serving_setup's
 * pool_job: attention TP over its tp GPUs, or 1 under attention_dp) held
 * to the job's tp rules: each rank takes whole attention heads, KV heads
 * divided or replicated, and a slice of every MLP (vLLM's
 * QKVParallelLinear and ColumnParallelLinear divide them; the job-level
 * check_tp refuses the same at parallelism.tp). Without this a pool of
 * tp 3 on Llama 3 70B (64 heads, 8 KV heads) ran. */
static void check_pool_tp(const struct job_spec *j, struct layout_sink *s)
{
	const struct disagg_spec *dg = &j->serving.disaggregated;
	const struct pool_spec *pool[] = {&dg->prefill, &dg->decode};
	char msg[256];
	int i;

	for (i = 0; dg->enabled && i < 2; i++) {
		const struct pool_spec *p = pool[i];
		const struct cnode *where = pool_key(s, i, "tp");

		if (pool_tp_breach(j->model, p->attention_dp ? 1 : p->tp, msg,
				   sizeof(msg)))
			layout_key_error(s, JR_POOL_TP, where, "'serving.disaggregated."
					 "%s.tp' %s", pool_names[i], msg);
	}
}

/* Inference layouts: an instance is tp x pp GPUs (x dp with
 * attention_dp); no context parallelism or pipeline interleaving. */
void layout_check_inference(struct job_spec *j, struct layout_sink *s)
{
	const struct parallel_spec *p = &j->parallelism;

	if (p->cp != 1)
		layout_error(s, JR_INF_CP, "cp %lld: inference "
			     "steps run without context parallelism (use cp 1)",
			     (long long)p->cp);
	if (p->vpp != 1)
		layout_error(s, JR_INF_VPP, "vpp %lld: inference "
			     "pipelines have one stage per rank (use vpp 1)",
			     (long long)p->vpp);
	if (p->attention_dp && !model_is_moe(j->model))
		layout_error(s, JR_INF_ATTN_DP, "attention_dp on "
			     "a dense model: use dp instances instead "
			     "(attention_dp shares MoE layers across the dp "
			     "ranks)");
	if (model_is_moe(j->model))
		check_inference_experts(j, s);
	check_spec_mtp(j, s);
	check_max_model_len(j, s);
	check_pool_ep(j, s);
	check_pool_tp(j, s);
	if (p->schedule < 0)
		j->parallelism.schedule = SCHED_1F1B;
	if (!j->serving.engine) {
		const struct cnode *at = s->node ? cnode_get(s->node, "serving") :
			NULL;

		layout_key_error(s, JR_SERVING_ENGINE, at ? at : s->node,
				 "'serving.engine': expected an engine preset name "
				 "such as 'vllm', 'sglang' or 'trtllm', a path or a "
				 "mapping, got nothing (phase %s needs one)",
				 job_phase_names[j->phase]);
	}
}
