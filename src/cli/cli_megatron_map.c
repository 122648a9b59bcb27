/*
 * cli_megatron_map.c - the Megatron-LM arguments `llmsim config
 * import-megatron` maps, each to one job key (the table, printed by
 * --mapping and copied into docs/megatron.md), and those it ignores
 * because they do not change a step's time.
 */
#include "cli_megatron.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config/spec_job.h"

static const char *const norm_vals[] = {
	"LayerNorm", "layernorm", "RMSNorm", "rmsnorm", NULL };
static const char *const pos_vals[] = {
	"rope", "rope", "learned_absolute", "learned", "none", "none", NULL };
static const char *const recompute_vals[] = {
	"full", "full", "selective", "selective", NULL };
static const char *const opt_vals[] = { "adam", "adam", "sgd", "sgd", NULL };
static const char *const dispatcher_vals[] = {
	"allgather", "allgather", "alltoall", "alltoall", "flex", "flex", NULL };
static const char *const flex_vals[] = {
	"deepep", "deepep", "hybridep", "hybridep", NULL };
static const char *const router_dtype_vals[] = { "fp32", "fp32", NULL };
static const char *const fp8_vals[] = {
	"e4m3", "fp8", "hybrid", "fp8", NULL };

static const struct marg margs[] = {
	{ "--num-layers", M_INT, "model.num_hidden_layers", NULL, NULL, NULL },
	{ "--hidden-size", M_INT, "model.hidden_size", NULL, NULL, NULL },
	{ "--ffn-hidden-size", M_INT, "model.intermediate_size", NULL, NULL,
	  "default 4 x hidden size, with --swiglu int(8 x hidden size / 3 / "
	  "64) x 64, as Megatron" },
	{ "--num-attention-heads", M_INT, "model.num_attention_heads", NULL,
	  NULL, NULL },
	{ "--num-query-groups", M_INT, "model.num_key_value_heads", NULL, NULL,
	  "with --group-query-attention (ignored without, as Megatron); "
	  "default 1" },
	{ "--group-query-attention", M_IGNORED_FLAG, NULL, NULL, NULL,
	  "enables --num-query-groups" },
	{ "--kv-channels", M_INT, "model.head_dim", NULL, NULL, NULL },
	{ "--padded-vocab-size", M_INT, "model.vocab_size", NULL, NULL, NULL },
	{ "--vocab-size", M_INT, "model.vocab_size", NULL, NULL,
	  "padded as Megatron: (+ 1 with --tokenizer-type NullTokenizer) up "
	  "to a multiple of --make-vocab-size-divisible-by x tp; "
	  "--padded-vocab-size wins" },
	{ "--make-vocab-size-divisible-by", M_INT, "model.vocab_size", NULL,
	  NULL, "default 128" },
	{ "--max-position-embeddings", M_INT, "model.max_position_embeddings",
	  NULL, NULL, NULL },
	{ "--swiglu", M_FLAG, "model.hidden_act", "silu", NULL,
	  "gated SiLU MLP; without it Megatron's GeLU (gelu)" },
	{ "--squared-relu", M_FLAG, "model.hidden_act", "relu2", NULL, NULL },
	{ "--normalization", M_STR, "model.norm", NULL, norm_vals,
	  "LayerNorm (Megatron's default) or RMSNorm" },
	{ "--position-embedding-type", M_STR, "model.position_embedding", NULL,
	  pos_vals, "rope, learned_absolute (default), none" },
	{ "--use-rotary-position-embeddings", M_FLAG,
	  "model.position_embedding", "rope", NULL, "older Megatron" },
	{ "--untie-embeddings-and-output-weights", M_FLAG,
	  "model.tie_word_embeddings", "false", NULL,
	  "Megatron ties them by default" },
	{ "--add-qkv-bias", M_FLAG, "model.attention_bias", "true", NULL, NULL },
	{ "--qk-layernorm", M_FLAG, "model.qk_layernorm", "true", NULL, NULL },
	{ "--num-experts", M_INT, "model.n_routed_experts", NULL, NULL, NULL },
	{ "--moe-router-topk", M_INT, "model.num_experts_per_tok", NULL, NULL,
	  "default 2, as Megatron" },
	{ "--moe-ffn-hidden-size", M_INT, "model.moe_intermediate_size", NULL,
	  NULL, "default the --ffn-hidden-size, as Megatron" },
	{ "--moe-latent-size", M_INT, "model.moe_latent_size", NULL, NULL,
	  "latent MoE: experts, dispatch and combine in this width" },
	{ "--moe-shared-expert-intermediate-size", M_INT,
	  "model.shared_expert_intermediate_size", NULL, NULL, NULL },
	{ "--moe-permute-fusion", M_FLAG, "moe.permute_fusion", "true", NULL,
	  "Transformer Engine's fused permute; Megatron's default is off "
	  "(false)" },
	/* TransformerConfig use_transformer_engine_op_fuser (an argument of
	 * its own through the config's fields): TEGroupedMLP runs Transformer
	 * Engine's op-fuser grouped MLP (experts.py _with_fused_impl,
	 * NVIDIA/Megatron-LM @ 2a75ac12c), not Megatron-Core's torch.compile'd
	 * weighted_swiglu_back: the fused cuTe DSL MLP's FC2 dgrad writes the
	 * probabilities' gradient (Blackwell, TE @ d0067d0da
	 * ops/fused/grouped_mlp.py dprob_tensor), and the unfused ops'
	 * ScaledSwiGLU backward (tex.scaled_dswiglu) takes both gradients in
	 * one kernel, one block a row (common/activation/scaled_activation.cu
	 * scaled_gated_backward_kernel: TE #3132, 215e15e0e, 2026-07-14, in
	 * v2.18; older TE recomputed the GLU for a vecdot) */
	{ "--use-transformer-engine-op-fuser", M_FLAG,
	  "framework.elementwise.glu_probs_grad_kernel", "false", NULL,
	  "Transformer Engine's op-fuser grouped MLP (TE >= 2.18): the "
	  "routing probabilities' gradient inside the activation's backward "
	  "kernel" },
	/* arguments.py: store_false into bias_swiglu_fusion, which
	 * argument_utils.py passes as bias_activation_fusion with --swiglu;
	 * without it MLP.forward and TEGroupedMLP's bias_act_func run
	 * glu(x) = silu(x_glu) * x_linear on torch.chunk's halves, eager
	 * (mlp.py, experts.py @ 2a75ac12c) */
	{ "--no-bias-swiglu-fusion", M_FLAG,
	  "framework.elementwise.eager_activation", "true", NULL,
	  "with --swiglu: the gated activation as PyTorch ops on the two "
	  "halves; Megatron fuses it by default" },
	/* The MoE layer's arguments (TransformerConfig fields @
	 * NVIDIA/Megatron-LM 2a75ac12c, arguments through
	 * ArgumentGroupFactory): Megatron's defaults are set in
	 * finish_import (moe_defaults) */
	{ "--moe-layer-freq", M_MOE_FREQ, "model.moe_layers", NULL, NULL,
	  "a list pattern such as ([0]*3+[1]*58): its MoE layers (all 0: "
	  "a dense model); N: model.moe_layer_freq (layer i is MoE when "
	  "i % N == 0); either alone decides: a preset's "
	  "first_k_dense_replace, decoder_sparse_step, mlp_only_layers "
	  "reset" },
	{ "--expert-tensor-parallel-size", M_INT, "parallelism.etp", NULL,
	  NULL, "default the tensor-parallel size, as Megatron" },
	{ "--moe-grouped-gemm", M_FLAG, "(grouped gemm)", "true", NULL,
	  "the local experts as grouped GEMMs (TEGroupedMLP), as llmsim "
	  "simulates them; without it Megatron runs SequentialMLP, a GEMM "
	  "pair per local expert: a warning" },
	{ "--moe-use-legacy-grouped-gemm", M_FLAG, "(legacy grouped gemm)",
	  "true", NULL, "with --moe-grouped-gemm: the older GroupedMLP "
	  "kernel (simulated as grouped GEMMs too); alone it does nothing, "
	  "as Megatron reads it only when moe_grouped_gemm is set" },
	{ "--moe-token-dispatcher-type", M_STR, "(dispatcher)", NULL,
	  dispatcher_vals, "moe.dispatcher: allgather (Megatron's default), "
	  "alltoall, or flex's backend" },
	{ "--moe-flex-dispatcher-backend", M_STR, "(flex backend)", NULL,
	  flex_vals, "with flex: moe.dispatcher deepep (default) or hybridep" },
	{ "--moe-enable-deepep", M_FLAG, "(flex backend)", "deepep", NULL,
	  "deprecated: flex's backend deepep" },
	{ "--moe-router-dtype", M_STR, "moe.router_dtype", NULL,
	  router_dtype_vals, "without it the parameters' dtype, as "
	  "Megatron's router; fp64 refused (llmsim has no fp64 GEMM)" },
	{ "--overlap-moe-expert-parallel-comm", M_FLAG, "moe.a2a_overlap",
	  "true", NULL, NULL },
	{ "--delay-wgrad-compute", M_FLAG, "moe.delay_wgrad", "true", NULL,
	  NULL },
	{ "--moe-shared-expert-overlap", M_FLAG, "moe.shared_expert_overlap",
	  "true", NULL, NULL },
	{ "--moe-expert-capacity-factor", M_NUM, "moe.capacity_factor", NULL,
	  NULL, "token dropping past this times the mean (Megatron's "
	  "default None: dropless)" },
	{ "--moe-pad-expert-input-to-capacity", M_FLAG, "moe.pad_to_capacity",
	  "true", NULL, NULL },
	{ "--moe-router-padding-for-quantization", M_FLAG,
	  "moe.router_padding", "true", NULL, NULL },
	{ "--mtp-num-layers", M_INT, "moe.mtp_layers", NULL, NULL,
	  "MTP modules; the layout's m count must match" },
	{ "--seq-length", M_INT, "training.seq_len", NULL, NULL, NULL },
	{ "--micro-batch-size", M_INT, "training.micro_batch_size", NULL, NULL,
	  NULL },
	{ "--global-batch-size", M_INT, "training.global_batch_size", NULL,
	  NULL, NULL },
	{ "--bf16", M_FLAG, "training.dtype", "bf16", NULL,
	  "without --bf16, --fp16 or --fp8-format: fp32" },
	{ "--fp16", M_FLAG, "training.dtype", "fp16", NULL, NULL },
	{ "--fp8-format", M_STR, "training.dtype", NULL, fp8_vals,
	  "e4m3 or hybrid: FP8 GEMMs" },
	{ "--recompute-activations", M_FLAG, "training.recompute", "selective",
	  NULL, NULL },
	{ "--recompute-granularity", M_STR, "training.recompute", NULL,
	  recompute_vals, NULL },
	{ "--recompute-modules", M_LIST, "training.recompute_modules", NULL,
	  recompute_module_names, "with --recompute-granularity selective" },
	{ "--use-distributed-optimizer", M_FLAG, "training.zero_stage", "1",
	  NULL, "optimizer states sharded over data parallel" },
	{ "--optimizer", M_STR, "training.optimizer", NULL, opt_vals, NULL },
	{ "--use-flash-attn", M_FLAG, "training.attention", "flash", NULL,
	  NULL },
	{ "--tensor-model-parallel-size", M_INT, "parallelism.tp", NULL, NULL,
	  NULL },
	{ "--pipeline-model-parallel-size", M_INT, "parallelism.pp", NULL,
	  NULL, NULL },
	{ "--virtual-pipeline-model-parallel-size", M_INT, "parallelism.vpp",
	  NULL, NULL, NULL },
	{ "--pipeline-model-parallel-layout", M_PP_LAYOUT,
	  "parallelism.pp_layout", NULL, NULL,
	  "vpp = its stages / pp, as Megatron infers it" },
	{ "--num-layers-per-virtual-pipeline-stage", M_VPP_LAYERS,
	  "parallelism.vpp", NULL, NULL, "vpp = layers / (pp x this)" },
	{ "--context-parallel-size", M_INT, "parallelism.cp", NULL, NULL,
	  NULL },
	{ "--expert-model-parallel-size", M_INT, "parallelism.ep", NULL, NULL,
	  NULL },
	{ "--sequence-parallel", M_FLAG, "parallelism.sequence_parallel",
	  "true", NULL, NULL },
	{ "--tp-comm-overlap", M_FLAG, "parallelism.tp_comm_overlap", "true",
	  NULL, NULL },
	{ "--defer-embedding-wgrad-compute", M_FLAG,
	  "parallelism.defer_embedding_wgrad_compute", "true", NULL,
	  "the output layer's weight gradients in the pipeline flush" },
	{ "--wgrad-deferral-limit", M_INT, "parallelism.wgrad_deferral_limit",
	  NULL, NULL, "0 (Megatron's default): every microbatch" },
	{ "--overlap-grad-reduce", M_FLAG, "framework.overlap_grad_reduce",
	  "true", NULL, NULL },
	{ "--overlap-param-gather", M_FLAG, "framework.overlap_param_gather",
	  "true", NULL, NULL },
	/* megatron/training/arguments.py: --ddp-average-in-collective and
	 * --fp8-param-gather (store_true), --calculate-per-token-loss */
	{ "--ddp-average-in-collective", M_FLAG,
	  "framework.average_in_collective", "true", NULL, NULL },
	{ "--calculate-per-token-loss", M_FLAG, "framework.per_token_loss",
	  "true", NULL, "refused with --ddp-average-in-collective, as "
	  "Megatron's DDP asserts" },
	{ "--fp8-param-gather", M_FLAG, "framework.fp8_param_gather", "true",
	  NULL, "FP8 parameters all-gathered in one byte each (FP8 runs)" },
	{ "--no-gradient-accumulation-fusion", M_FLAG,
	  "training.gradient_accumulation_fusion", "false", NULL,
	  "Megatron fuses by default (true)" },
	{ "--fp8-dot-product-attention", M_FLAG, "training.fp8_attention",
	  "true", NULL, "attention in FP8 (Transformer Engine's fused "
	  "attention); at the GPU's attention.fp8_* / mxfp8_* "
	  "efficiencies, else the bf16 rates" },
	{ "--attention-dropout", M_DROPOUT, "training.dropout", NULL, NULL,
	  "dropout on when either probability is > 0; Megatron's default "
	  "for both is 0.1 (on)" },
	{ "--hidden-dropout", M_DROPOUT, "training.dropout", NULL, NULL,
	  "as --attention-dropout" },
	{ "--disable-bias-linear", M_IGNORED_FLAG,
	  "model.attention_bias, model.o_proj_bias, model.mlp_bias", NULL,
	  NULL, "false; without it true (Megatron's add_bias_linear); "
	  "--add-qkv-bias keeps q/k/v's (linear_proj's stays off)" },
};

#define NMARGS (sizeof(margs) / sizeof(margs[0]))
_Static_assert(NMARGS + 8 <= CLI_MEGATRON_KEYS,
	       "an import sets more keys than struct imported holds");

/* Arguments that take a value and do not change a step's time. */
static const char *const ignored_valued[] = {
	"--lr", "--min-lr", "--lr-decay-style", "--lr-warmup-iters",
	"--lr-warmup-fraction", "--lr-decay-iters", "--weight-decay",
	"--clip-grad", "--adam-beta1", "--adam-beta2", "--adam-eps",
	"--init-method-std", "--train-iters", "--train-samples", "--save",
	"--load", "--save-interval", "--eval-interval", "--eval-iters",
	"--log-interval", "--data-path", "--split", "--tokenizer-type",
	"--fp8-amax-history-len", "--fp8-amax-compute-algo",
	"--tokenizer-model", "--vocab-file", "--merge-file", "--seed",
	"--rotary-base",
	"--rotary-percent", "--norm-epsilon", "--data-cache-path",
	"--tensorboard-dir", "--wandb-project", "--exit-interval",
	"--distributed-backend", "--distributed-timeout-minutes",
	"--attention-backend", "--transformer-impl", "--initial-loss-scale",
	"--loss-scale-window", "--hysteresis", "--micro-batch-size-start",
	NULL,
};

static const char *const ignored_flags[] = {
	"--no-masked-softmax-fusion",
	"--no-bias-gelu-fusion", "--no-bias-dropout-fusion",
	"--use-mcore-models", "--mock-data",
	"--log-throughput", "--log-timers-to-tensorboard", "--no-load-optim",
	"--no-load-rng", "--bf16-reduce", "--accumulate-allreduce-grads-in-fp32",
	"--use-legacy-models",
	NULL,
};

static int in_list(const char *const *list, const char *a)
{
	size_t i;

	for (i = 0; list[i]; i++)
		if (strcmp(list[i], a) == 0)
			return 1;
	return 0;
}

const struct marg *cli_megatron_arg(const char *a)
{
	size_t i;

	for (i = 0; i < NMARGS; i++)
		if (strcmp(margs[i].arg, a) == 0)
			return &margs[i];
	return NULL;
}

/* ---- the mapping, for docs/megatron.md --------------------------------- */

static const char *type_text(const struct marg *m, char *buf, size_t len)
{
	size_t i, at = 0;

	switch (m->type) {
	case M_INT:
	case M_VPP_LAYERS:
		return "N";
	case M_DROPOUT:
		return "P";
	case M_NUM:
		return "X";
	case M_MOE_FREQ:
		return "N or PATTERN";
	case M_PP_LAYOUT:
		return "LAYOUT";
	case M_IGNORED_FLAG:
		return m->key ? "(flag)" : "";
	case M_FLAG:
		snprintf(buf, len, "(flag): `%s`", m->value);
		return buf;
	case M_STR:
		for (i = 0; m->values[i] && at < len; i += 2)
			at += (size_t)snprintf(buf + at, len - at, "%s`%s` -> `%s`",
					       i ? ", " : "", m->values[i],
					       m->values[i + 1]);
		return buf;
	case M_LIST:
		for (i = 0; m->values[i] && at < len; i++)
			at += (size_t)snprintf(buf + at, len - at, "%s`%s`",
					       i ? " " : "NAME... of ",
					       m->values[i]);
		return buf;
	default:
		return "";
	}
}

int cli_megatron_mapping(void)
{
	char buf[256];
	size_t i;

	puts("| Megatron-LM argument | value | llmsim job key | note |");
	puts("| --- | --- | --- | --- |");
	for (i = 0; i < NMARGS; i++)
		printf("| `%s` | %s | %s | %s |\n", margs[i].arg,
		       type_text(&margs[i], buf, sizeof(buf)),
		       margs[i].key ? margs[i].key : "-",
		       margs[i].note ? margs[i].note : "");
	printf("\nIgnored (no effect on the time of a step):");
	for (i = 0; ignored_valued[i]; i++)
		printf(" `%s`", ignored_valued[i]);
	for (i = 0; ignored_flags[i]; i++)
		printf(" `%s`", ignored_flags[i]);
	printf(".\n");
	return CLI_OK;
}

int cli_megatron_ignored(const char *a)
{
	if (in_list(ignored_valued, a))
		return 2;
	return in_list(ignored_flags, a);
}
