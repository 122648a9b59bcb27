/*
 * spec_model_gdn.c - the Gated DeltaNet (linear attention) keys of the
 * hybrid Qwen models: Qwen3-Next (model_type qwen3_next) and Qwen3.5 /
 * 3.6 (qwen3_5_text, qwen3_5_moe_text under a text_config).
 *
 * Which layers are linear (transformers Qwen3NextConfig.__post_init__,
 * huggingface/transformers@008e5743 models/qwen3_next/
 * configuration_qwen3_next.py): layer_types when given (Qwen3.5 writes
 * it: "linear_attention" / "full_attention"), else layer i is linear
 * when (i + 1) % full_attention_interval != 0, the interval 4 when not
 * given. A linear layer's mixer is the Gated DeltaNet of
 * src/models/gdn.c; a full layer's is softmax attention, with Qwen's
 * output gate (attn_output_gate: q_proj writes 2 a d, the second half
 * gating the core's output through a sigmoid; transformers
 * Qwen3NextAttention builds it always, Qwen3.5 writes the key true).
 *
 * Checks (each an exit 2 naming the key):
 *   - the four linear_* sizes come together (one alone is a broken file)
 *   - linear_num_value_heads is a multiple of linear_num_key_heads: the
 *     mixer repeats each q/k head over v/k value heads (Megatron-Core
 *     gated_delta_net.py repeat_interleave; vLLM qwen3_next the same)
 *   - layer_types naming linear_attention, or full_attention_interval
 *     given, need the linear_* sizes
 *   - full_attention_interval <= num_hidden_layers is not required
 *     (transformers accepts a model with no full layer)
 * Defaults: linear_conv_kernel_dim 4 (transformers' default),
 * attn_output_gate on for model_type qwen3_next and qwen3_5*.
 */
#include "spec_model.h"

#include <string.h>

#include "cnode.h"
#include "base/diag.h"

int model_is_gdn(const struct model_spec *m)
{
	return m->linear_num_value_heads > 0;
}

int model_layer_linear(const struct model_spec *m, int64_t i)
{
	if (!model_is_gdn(m))
		return 0;
	if (m->layer_types.n > 0)
		return (size_t)i < m->layer_types.n &&
		       m->layer_types.v[i] == LTYPE_LINEAR;
	return m->full_attention_interval > 0 &&
	       (i + 1) % m->full_attention_interval != 0;
}

int64_t model_full_attn_layers(const struct model_spec *m)
{
	int64_t i, n = 0;

	for (i = 0; i < m->num_hidden_layers; i++)
		n += !model_layer_linear(m, i);
	return n;
}

/* The state (Megatron-Core / vLLM / SGLang keep the delta-rule state
 * [v_heads, d_k, d_v] in fp32: vLLM MambaStateDtypeCalculator
 * gated_delta_net_state_dtype takes mamba_ssm_dtype, float32 in every
 * Qwen3.5 config.json; SGLang's hybrid linear-attention pool the same)
 * and the conv state [(kernel - 1), 2 k d_k + v d_v] in the model dtype
 * (vLLM MambaStateShapeCalculator.gated_delta_net_state_shape). */
double model_gdn_state_B(const struct model_spec *m, double conv_B)
{
	double hk = (double)m->linear_num_key_heads;
	double hv = (double)m->linear_num_value_heads;
	double dk = (double)m->linear_key_head_dim;
	double dv = (double)m->linear_value_head_dim;
	double w = (double)m->linear_conv_kernel_dim;

	if (!model_is_gdn(m))
		return 0;
	return hv * dk * dv * 4 + (w - 1) * (2 * hk * dk + hv * dv) * conv_B;
}

static const struct cnode *key_at(const struct cnode *node, const char *k)
{
	const struct cnode *at = node ? cnode_get(node, k) : NULL;

	return at ? at : node;
}

static int any_linear_type(const struct model_spec *m)
{
	size_t i;

	for (i = 0; i < m->layer_types.n; i++)
		if (m->layer_types.v[i] == LTYPE_LINEAR)
			return 1;
	return 0;
}

static int gated_type(const char *t)
{
	return t && (strcmp(t, "qwen3_next") == 0 ||
		     strncmp(t, "qwen3_5", 7) == 0);
}

int model_check_gdn(struct model_spec *m, const struct cnode *node,
		    struct diag *d)
{
	int64_t sizes[4] = { m->linear_num_key_heads,
			     m->linear_num_value_heads,
			     m->linear_key_head_dim,
			     m->linear_value_head_dim };
	static const char *const names[4] = {
		"linear_num_key_heads", "linear_num_value_heads",
		"linear_key_head_dim", "linear_value_head_dim" };
	int i, given = 0;

	if (m->attn_output_gate < 0 && gated_type(m->model_type))
		m->attn_output_gate = 1;
	for (i = 0; i < 4; i++)
		given += sizes[i] > 0;
	if (given == 0) {
		if (any_linear_type(m) || m->full_attention_interval > 0) {
			cnode_error(d, key_at(node, any_linear_type(m) ?
				    "layer_types" : "full_attention_interval"),
				    "%s", "Gated DeltaNet (linear_attention) "
				    "layers need 'linear_num_key_heads', "
				    "'linear_num_value_heads', "
				    "'linear_key_head_dim' and "
				    "'linear_value_head_dim'");
			return -1;
		}
		return 0;
	}
	for (i = 0; i < 4; i++)
		if (sizes[i] == 0) {
			cnode_error(d, node, "the Gated DeltaNet keys come "
				    "together: '%s' is missing", names[i]);
			return -1;
		}
	if (m->linear_num_value_heads % m->linear_num_key_heads != 0) {
		cnode_error(d, key_at(node, "linear_num_value_heads"),
			    "'linear_num_value_heads' %lld must be a multiple "
			    "of 'linear_num_key_heads' %lld (each q/k head "
			    "serves v/k value heads)",
			    (long long)m->linear_num_value_heads,
			    (long long)m->linear_num_key_heads);
		return -1;
	}
	if (m->linear_conv_kernel_dim == 0)
		m->linear_conv_kernel_dim = 4;
	if (m->layer_types.n == 0 && m->full_attention_interval == 0)
		m->full_attention_interval = 4;
	return 0;
}
