/*
 * spec_model_mamba.c - Mamba-2 hybrid models (Nemotron-H, Nemotron 3):
 * which layer is what, and the Mamba-2 mixer's keys.
 *
 * A Nemotron-H / Nemotron 3 config.json (model_type nemotron_h) lists its
 * layers in hybrid_override_pattern, one character each (transformers
 * configuration_nemotron_h.py; Megatron-Core ssm/
 * mamba_hybrid_layer_allocation.py Symbols, NVIDIA/Megatron-LM@d98e8a64):
 *
 *   M   a Mamba-2 mixer (norm, mixer, residual add)
 *   *   self-attention alone (norm, attention, residual add)
 *   -   a dense MLP alone (norm, MLP, residual add)
 *   E   a routed-expert MLP alone, shared expert included
 *
 * so a "layer" is a mixer or an FFN, never an attention + MLP pair, and
 * num_hidden_layers counts the characters. Any other character, or a
 * length other than num_hidden_layers, is an error (exit 2).
 *
 * The Mamba-2 mixer (Megatron-Core ssm/mamba_mixer.py MambaMixer):
 * d_inner = mamba_num_heads x mamba_head_dim (expand x hidden_size when
 * the heads are not given), the in-projection to [z, x, B, C, dt] of
 * 2 d_inner + 2 n_groups ssm_state_size + mamba_num_heads outputs, the
 * causal conv1d of conv_kernel taps over [x, B, C], the SSD chunked scan
 * of chunk_size, the gated RMSNorm over d_inner and the out-projection
 * d_inner -> hidden_size. Megatron-Core asserts nheads % n_groups == 0
 * (and, per job, nheads and n_groups divisible by tp: spec_job_layout).
 *
 * Serving keeps, per sequence and Mamba layer, the SSM state H P N in
 * mamba_ssm_cache_dtype and the conv state (d_inner + 2 G N) (K - 1) in
 * the model dtype (vLLM mamba_utils.py MambaStateShapeCalculator
 * mamba2_state_shape: conv (K - 1, d_inner/t + 2 G/t N), temporal
 * (H/t, P, N)), in place of the KV cache those layers do not have.
 */
#include "spec_model.h"

#include <string.h>

#include "cnode.h"
#include "base/diag.h"

static int block_of(char c)
{
	switch (c) {
	case 'M': return BLOCK_MAMBA;
	case '*': return BLOCK_ATTN;
	case '-': return BLOCK_MLP;
	case 'E': return BLOCK_MOE;
	default: return -1;
	}
}

int model_mtp_blocks(const struct model_spec *m, int *blocks)
{
	const char *p = m->mtp_hybrid_override_pattern;
	int n = 0;

	for (; p && *p && n < MODEL_MTP_BLOCKS; p++)
		blocks[n++] = block_of(*p);
	return n;
}

/* The MTP module's pattern: a hybrid's, known characters, at most
 * MODEL_MTP_BLOCKS, MoE blocks only with routed experts. */
static int check_mtp_pattern(const struct model_spec *m,
			     const struct cnode *node, struct diag *d)
{
	const char *p = m->mtp_hybrid_override_pattern;
	const struct cnode *at = node ? cnode_get(node,
					"mtp_hybrid_override_pattern") : NULL;
	size_t n = p ? strlen(p) : 0, i;

	if (!p)
		return 0;
	if (!at)
		at = node;
	if (!m->hybrid_override_pattern || n == 0 || n > MODEL_MTP_BLOCKS) {
		cnode_error(d, at, "'mtp_hybrid_override_pattern' '%s': %s",
			    p, !m->hybrid_override_pattern ? "a hybrid's MTP "
			    "module (the model has no "
			    "'hybrid_override_pattern')" :
			    "expected 1 to 4 blocks (M, *, - or E)");
		return -1;
	}
	for (i = 0; i < n; i++)
		if (block_of(p[i]) < 0 ||
		    (p[i] == 'E' && m->n_routed_experts == 0)) {
			cnode_error(d, at, "'mtp_hybrid_override_pattern' block "
				    "%zu is '%c': expected M (Mamba-2), * "
				    "(attention), - (MLP) or E (MoE, with "
				    "'n_routed_experts')", i, p[i]);
			return -1;
		}
	return 0;
}

int model_layer_block(const struct model_spec *m, int64_t i)
{
	if (!m->hybrid_override_pattern || i < 0 || i >= QUANT_LAYERS_MAX)
		return BLOCK_PAIR;
	return m->block[i];
}

int64_t model_attn_layers(const struct model_spec *m)
{
	int64_t i, n = 0;

	if (!m->hybrid_override_pattern)
		return m->num_hidden_layers;
	for (i = 0; i < m->num_hidden_layers; i++)
		n += model_layer_block(m, i) == BLOCK_ATTN;
	return n;
}

static int64_t mamba_layers(const struct model_spec *m)
{
	int64_t i, n = 0;

	for (i = 0; m->hybrid_override_pattern && i < m->num_hidden_layers; i++)
		n += model_layer_block(m, i) == BLOCK_MAMBA;
	return n;
}

int64_t model_mamba_inner(const struct model_spec *m)
{
	return m->mamba_num_heads * m->mamba_head_dim;
}

double model_mamba_state_bytes(const struct model_spec *m, double ssm_B,
			       double conv_B)
{
	double H = (double)m->mamba_num_heads, P = (double)m->mamba_head_dim;
	double N = (double)m->ssm_state_size, G = (double)m->n_groups;
	double K = (double)m->conv_kernel;
	double ssm = H * P * N * ssm_B;
	double conv = (H * P + 2 * G * N) * (K - 1) * conv_B;

	return (double)mamba_layers(m) * (ssm + conv);
}

double model_mamba_ssm_B(const struct model_spec *m, double act_B)
{
	const char *t = m->mamba_ssm_cache_dtype;

	if (!t || strcmp(t, "auto") == 0)
		return act_B;
	if (strcmp(t, "float32") == 0)
		return 4;
	return 2;	/* bfloat16, float16 (checked) */
}

/* The pattern: known characters, one a layer. */
static int check_pattern(struct model_spec *m, const struct cnode *node,
			 struct diag *d)
{
	const char *p = m->hybrid_override_pattern;
	const struct cnode *at = node ? cnode_get(node,
					"hybrid_override_pattern") : NULL;
	size_t n = strlen(p), i;

	if (!at)
		at = node;
	if (n != (size_t)m->num_hidden_layers) {
		cnode_error(d, at, "'hybrid_override_pattern' has %zu layers "
			    "for 'num_hidden_layers' %lld: one character (M "
			    "Mamba-2, * attention, - MLP, E MoE) a layer", n,
			    (long long)m->num_hidden_layers);
		return -1;
	}
	if (n > QUANT_LAYERS_MAX) {
		cnode_error(d, at, "'hybrid_override_pattern' has %zu layers; "
			    "llmsim models at most %d", n, QUANT_LAYERS_MAX);
		return -1;
	}
	for (i = 0; i < n; i++) {
		int b = block_of(p[i]);

		if (b < 0) {
			cnode_error(d, at, "'hybrid_override_pattern' layer %zu "
				    "is '%c': expected M (Mamba-2), * "
				    "(attention), - (MLP) or E (MoE)", i, p[i]);
			return -1;
		}
		m->block[i] = (unsigned char)b;
	}
	return 0;
}

/* A key the Mamba layers need: given and > 0. */
static int need(const struct cnode *node, struct diag *d, const char *key,
		int64_t v)
{
	if (v > 0)
		return 0;
	cnode_error(d, node, "a model with Mamba-2 layers ('M' in "
		    "'hybrid_override_pattern') needs '%s'", key);
	return -1;
}

int model_check_hybrid(struct model_spec *m, const struct cnode *node,
		       struct diag *d)
{
	int64_t i, moe = 0, mamba;
	int rc = 0;

	if (check_mtp_pattern(m, node, d) != 0)
		return -1;
	if (!m->hybrid_override_pattern)
		return 0;
	if (check_pattern(m, node, d) != 0)
		return -1;
	for (i = 0; i < m->num_hidden_layers; i++)
		moe += m->block[i] == BLOCK_MOE;
	if (moe > 0 && m->n_routed_experts == 0) {
		cnode_error(d, node, "'hybrid_override_pattern' has %lld MoE "
			    "layers ('E') but the model has no "
			    "'n_routed_experts'", (long long)moe);
		return -1;
	}
	mamba = mamba_layers(m);
	if (mamba == 0)
		return 0;
	if (m->chunk_size == 0)		/* MambaMixer's default */
		m->chunk_size = 128;
	if (m->conv_kernel == 0)	/* transformers NemotronHConfig */
		m->conv_kernel = 4;
	if (m->n_groups == 0)
		m->n_groups = 1;
	if (m->mamba_num_heads == 0 && m->mamba_head_dim > 0 && m->expand > 0)
		m->mamba_num_heads = m->expand * m->hidden_size /
				     m->mamba_head_dim;
	if (need(node, d, "mamba_num_heads", m->mamba_num_heads) != 0 ||
	    need(node, d, "mamba_head_dim", m->mamba_head_dim) != 0 ||
	    need(node, d, "ssm_state_size", m->ssm_state_size) != 0)
		return -1;
	if (m->mamba_num_heads % m->n_groups != 0) {
		const struct cnode *at = cnode_get(node, "n_groups");

		cnode_error(d, at ? at : node, "'mamba_num_heads' %lld is not "
			    "a multiple of 'n_groups' %lld (Megatron-Core "
			    "MambaMixer: nheads %% ngroups == 0)",
			    (long long)m->mamba_num_heads,
			    (long long)m->n_groups);
		rc = -1;
	}
	if (m->mamba_ssm_cache_dtype &&
	    strcmp(m->mamba_ssm_cache_dtype, "float32") != 0 &&
	    strcmp(m->mamba_ssm_cache_dtype, "bfloat16") != 0 &&
	    strcmp(m->mamba_ssm_cache_dtype, "float16") != 0 &&
	    strcmp(m->mamba_ssm_cache_dtype, "auto") != 0) {
		const struct cnode *at = cnode_get(node,
						   "mamba_ssm_cache_dtype");

		cnode_error(d, at ? at : node, "'mamba_ssm_cache_dtype' '%s': "
			    "expected float32, bfloat16, float16 or auto",
			    m->mamba_ssm_cache_dtype);
		rc = -1;
	}
	return rc;
}
