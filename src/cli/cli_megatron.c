/*
 * cli_megatron.c - `llmsim config import-megatron "ARGS..."`: a job from a
 * Megatron-LM (pretrain_gpt.py) command line.
 *
 *   llmsim config import-megatron "--num-layers 80 --hidden-size 8192 ..."
 *       [--system SYSTEM] [--gpus N] [--model PRESET] [--name NAME]
 *   llmsim config import-megatron --mapping
 *
 * The arguments may be one string (split at blanks; quotes group) or
 * several words after "--". Each Megatron argument llmsim knows maps to
 * one job key (the table below, printed by --mapping and copied into
 * docs/megatron.md, which tests/megatron.sh keeps equal); the ones that
 * do not change a step's time (learning rate, data paths, logging) are
 * listed as ignored; any other is reported as unknown and ignored.
 * Megatron's defaults apply where it has them (tied embeddings, GeLU
 * without --swiglu, LayerNorm, fp32 without --bf16/--fp16, linear biases
 * without --disable-bias-linear, dropout 0.1, fused wgrad accumulation).
 *
 * The job is printed as YAML on standard output, with the system given
 * (default dgx-h100) sized to --gpus GPUs (default tp x pp x cp, data
 * parallel 1: a Megatron command line does not say the world size), and
 * loaded back through the job schema first: an incomplete or invalid
 * import is reported (exit 2) instead of printed.
 */
#include "cli.h"

#include <assert.h>
#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "config/spec_system.h"

enum mtype {
	M_INT,		/* a whole number, copied */
	M_STR,		/* a value, mapped through `values` */
	M_FLAG,		/* no value: sets `value` */
	M_VPP_LAYERS,	/* --num-layers-per-virtual-pipeline-stage */
	M_LIST,		/* the words up to the next argument, each one of
			 * `values` (llmsim's names), as a list */
	M_DROPOUT,	/* a probability; any > 0 (or absent: Megatron's
			 * 0.1) turns training.dropout on */
	M_IGNORED,	/* takes a value; no effect on the step */
	M_IGNORED_FLAG	/* no value; no effect on the step */
};

struct marg {
	const char *arg;		/* "--hidden-size" */
	enum mtype type;
	const char *key;		/* "model.hidden_size" */
	const char *value;		/* M_FLAG: the value it sets */
	const char *const *values;	/* M_STR: {megatron, llmsim}... NULL;
					 * M_LIST: the names, NULL-ended */
	const char *note;		/* for --mapping */
};

static const char *const norm_vals[] = {
	"LayerNorm", "layernorm", "RMSNorm", "rmsnorm", NULL };
static const char *const pos_vals[] = {
	"rope", "rope", "learned_absolute", "learned", "none", "none", NULL };
static const char *const recompute_vals[] = {
	"full", "full", "selective", "selective", NULL };
static const char *const opt_vals[] = { "adam", "adam", "sgd", "sgd", NULL };
static const char *const fp8_vals[] = {
	"e4m3", "fp8", "hybrid", "fp8", NULL };

static const struct marg margs[] = {
	{ "--num-layers", M_INT, "model.num_hidden_layers", NULL, NULL, NULL },
	{ "--hidden-size", M_INT, "model.hidden_size", NULL, NULL, NULL },
	{ "--ffn-hidden-size", M_INT, "model.intermediate_size", NULL, NULL,
	  "default 4 x hidden size, as Megatron" },
	{ "--num-attention-heads", M_INT, "model.num_attention_heads", NULL,
	  NULL, NULL },
	{ "--num-query-groups", M_INT, "model.num_key_value_heads", NULL, NULL,
	  "with --group-query-attention (ignored without, as Megatron)" },
	{ "--group-query-attention", M_IGNORED_FLAG, NULL, NULL, NULL,
	  "enables --num-query-groups" },
	{ "--kv-channels", M_INT, "model.head_dim", NULL, NULL, NULL },
	{ "--padded-vocab-size", M_INT, "model.vocab_size", NULL, NULL, NULL },
	{ "--vocab-size", M_INT, "model.vocab_size", NULL, NULL, NULL },
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
	  NULL },
	{ "--moe-ffn-hidden-size", M_INT, "model.moe_intermediate_size", NULL,
	  NULL, NULL },
	{ "--moe-shared-expert-intermediate-size", M_INT,
	  "model.shared_expert_intermediate_size", NULL, NULL, NULL },
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
	{ "--overlap-grad-reduce", M_FLAG, "framework.overlap_grad_reduce",
	  "true", NULL, NULL },
	{ "--overlap-param-gather", M_FLAG, "framework.overlap_param_gather",
	  "true", NULL, NULL },
	{ "--no-gradient-accumulation-fusion", M_FLAG,
	  "training.gradient_accumulation_fusion", "false", NULL,
	  "Megatron fuses by default (true)" },
	{ "--attention-dropout", M_DROPOUT, "training.dropout", NULL, NULL,
	  "dropout on when either probability is > 0; Megatron's default "
	  "for both is 0.1 (on)" },
	{ "--hidden-dropout", M_DROPOUT, "training.dropout", NULL, NULL,
	  "as --attention-dropout" },
	{ "--disable-bias-linear", M_IGNORED_FLAG,
	  "model.attention_bias, model.mlp_bias", NULL, NULL,
	  "false; without it true (Megatron's add_bias_linear); "
	  "--add-qkv-bias keeps the attention's" },
};

#define NMARGS (sizeof(margs) / sizeof(margs[0]))

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

static const struct marg *find_marg(const char *a)
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

static int print_mapping(void)
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

/* ---- reading the command line ---------------------------------------- */

/* Split s at blanks, quotes grouping, into words (in the arena). */
static int split_words(struct arena *a, const char *s, char ***out, int *n)
{
	size_t len = strlen(s), cap = len / 2 + 2;
	char **w = arena_alloc(a, cap * sizeof(*w));
	char *buf = arena_alloc(a, len + 1), *o = buf;
	char q = 0;

	if (!w || !buf)
		return -1;
	*n = 0;
	while (*s) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		w[(*n)++] = o;
		for (; *s && (q || !isspace((unsigned char)*s)); s++) {
			if (!q && (*s == '\'' || *s == '"'))
				q = *s;
			else if (q && *s == q)
				q = 0;
			else if (*s != '\\' || q == '\'')
				*o++ = *s;
		}
		*o++ = '\0';
	}
	*out = w;
	return 0;
}

/* The job built from the arguments: key = value pairs in order. */
struct imported {
	const char *key[NMARGS + 8];
	const char *val[NMARGS + 8];
	int n;
	int gqa;			/* --group-query-attention seen */
	int no_bias;			/* --disable-bias-linear seen */
	double dropout[2];		/* attention, hidden; < 0: absent */
	long layers, pp, vpp_layers;
	const char *ignored[256];
	int nignored;
	const char *unknown[256];
	int nunknown;
	struct arena *arena;		/* for values built here */
};

static void set(struct imported *im, const char *key, const char *val)
{
	int i;

	for (i = 0; i < im->n; i++)
		if (strcmp(im->key[i], key) == 0) {
			im->val[i] = val;
			return;
		}
	im->key[im->n] = key;
	im->val[im->n++] = val;
}

static const char *get(const struct imported *im, const char *key)
{
	int i;

	for (i = 0; i < im->n; i++)
		if (strcmp(im->key[i], key) == 0)
			return im->val[i];
	return NULL;
}

static int whole(const char *v)
{
	if (!*v)
		return 0;
	for (; *v; v++)
		if (!isdigit((unsigned char)*v))
			return 0;
	return 1;
}

/* An M_LIST value: names separated by blanks (read_args joins the
 * words), each one llmsim knows, set as a YAML flow list. A name given
 * twice is kept once (Megatron's config only asks whether a module is in
 * the list), so the list is bounded by the names llmsim knows; no words
 * at all is the empty list (nargs '*': recompute nothing). */
static int take_list(struct imported *im, const struct marg *m,
		     const char *arg, const char *v, struct diag *d)
{
	char buf[512], name[64];
	unsigned long long seen = 0;
	size_t at = 0, i, k;
	int n;

	buf[at++] = '[';
	while (*v) {
		for (k = 0; *v && *v != ' ' && k + 1 < sizeof(name); v++)
			name[k++] = *v;
		name[k] = '\0';
		while (*v == ' ')
			v++;
		for (i = 0; m->values[i] && strcmp(m->values[i], name); i++)
			;
		if (!m->values[i]) {
			diag_error(d, "megatron", 0, 0, "%s: llmsim does not "
				   "know the value '%s'", arg, name);
			return -1;
		}
		assert(i < 64);
		if (seen & (1ULL << i))
			continue;
		seen |= 1ULL << i;
		n = snprintf(buf + at, sizeof(buf) - at, "%s%s",
			     at > 1 ? ", " : "", name);
		/* room for this name, ']' and the NUL */
		if (n < 0 || (size_t)n + 2 > sizeof(buf) - at) {
			diag_error(d, "megatron", 0, 0, "%s: the list is too "
				   "long", arg);
			return -1;
		}
		at += (size_t)n;
	}
	buf[at++] = ']';
	buf[at] = '\0';
	if (!(v = arena_strdup(im->arena, buf))) {
		diag_oom(d);
		return -1;
	}
	set(im, m->key, v);
	return 0;
}

/* One Megatron argument (with its value when it takes one). */
static int take(struct imported *im, const struct marg *m, const char *arg,
		const char *v, struct diag *d)
{
	size_t i;

	switch (m->type) {
	case M_INT:
	case M_VPP_LAYERS:
		if (!whole(v)) {
			diag_error(d, "megatron", 0, 0, "%s: expected a whole "
				   "number, got '%s'", arg, v);
			return -1;
		}
		if (m->type == M_VPP_LAYERS)
			im->vpp_layers = atol(v);
		else if (strcmp(m->key, "model.num_key_value_heads") == 0)
			set(im, "(query groups)", v);
		else
			set(im, m->key, v);
		if (strcmp(arg, "--num-layers") == 0)
			im->layers = atol(v);
		if (strcmp(arg, "--pipeline-model-parallel-size") == 0)
			im->pp = atol(v);
		return 0;
	case M_FLAG:
		set(im, m->key, m->value);
		return 0;
	case M_STR:
		for (i = 0; m->values[i]; i += 2)
			if (strcmp(m->values[i], v) == 0) {
				set(im, m->key, m->values[i + 1]);
				return 0;
			}
		diag_error(d, "megatron", 0, 0, "%s: llmsim does not know the "
			   "value '%s'", arg, v);
		return -1;
	case M_LIST:
		return take_list(im, m, arg, v, d);
	case M_DROPOUT: {
		char *end;
		double p = strtod(v, &end);

		if (!*v || *end || !(p >= 0 && p <= 1)) {
			diag_error(d, "megatron", 0, 0, "%s: expected a "
				   "probability from 0 to 1, got '%s'", arg, v);
			return -1;
		}
		im->dropout[strcmp(arg, "--hidden-dropout") == 0] = p;
		return 0;
	}
	case M_IGNORED_FLAG:
		if (strcmp(arg, "--group-query-attention") == 0)
			im->gqa = 1;
		if (strcmp(arg, "--disable-bias-linear") == 0)
			im->no_bias = 1;
		return 0;
	default:
		return 0;
	}
}

static int takes_value(const struct marg *m)
{
	return m->type == M_INT || m->type == M_STR ||
	       m->type == M_VPP_LAYERS || m->type == M_IGNORED ||
	       m->type == M_DROPOUT;
}

/* Read the Megatron words into im. 0 or -1 after reporting. */
static int read_args(struct imported *im, char **w, int n, struct diag *d)
{
	int i, rc = 0;

	for (i = 0; i < n; i++) {
		char *a = w[i], *eq = strchr(a, '=');
		const char *v = NULL;
		const struct marg *m;

		if (strncmp(a, "--", 2) != 0) {
			if (im->nunknown < 256)
				im->unknown[im->nunknown++] = a;
			continue;
		}
		if (eq) {
			*eq = '\0';
			v = eq + 1;
		}
		m = find_marg(a);
		if (!m && in_list(ignored_valued, a)) {
			if (!v && i + 1 < n)
				i++;
			if (im->nignored < 256)
				im->ignored[im->nignored++] = a;
			continue;
		}
		if (!m && in_list(ignored_flags, a)) {
			if (im->nignored < 256)
				im->ignored[im->nignored++] = a;
			continue;
		}
		if (!m) {
			if (im->nunknown < 256)
				im->unknown[im->nunknown++] = a;
			/* a value that follows belongs to it */
			if (!v && i + 1 < n && strncmp(w[i + 1], "--", 2) != 0)
				i++;
			continue;
		}
		if (m->type == M_LIST && !v) {	/* the words up to the next -- */
			size_t len = 1;
			int j;
			char *joined;

			for (j = i + 1; j < n && strncmp(w[j], "--", 2) != 0; j++)
				len += strlen(w[j]) + 1;
			joined = arena_alloc(im->arena, len);
			if (!joined) {
				diag_oom(d);
				return -1;
			}
			joined[0] = '\0';
			for (j = i + 1; j < n && strncmp(w[j], "--", 2) != 0; j++) {
				if (j > i + 1)
					strcat(joined, " ");
				strcat(joined, w[j]);
			}
			i = j - 1;
			v = joined;
		}
		if (takes_value(m) && !v) {
			if (i + 1 >= n) {
				diag_error(d, "megatron", 0, 0, "%s needs a value",
					   a);
				rc = -1;
				continue;
			}
			v = w[++i];
		}
		if (take(im, m, a, v ? v : "", d) != 0)
			rc = -1;
	}
	return rc;
}

/* Megatron's defaults and the derived keys. */
static void finish_import(struct arena *a, struct imported *im)
{
	const char *h = get(im, "model.hidden_size");

	if (im->gqa && get(im, "(query groups)"))
		set(im, "model.num_key_value_heads", get(im, "(query groups)"));
	if (!get(im, "model.intermediate_size") && h)
		set(im, "model.intermediate_size",
		    arena_printf(a, "%ld", 4 * atol(h)));
	if (!get(im, "model.hidden_act"))
		set(im, "model.hidden_act", "gelu");
	if (!get(im, "model.norm"))
		set(im, "model.norm", "layernorm");
	if (!get(im, "model.position_embedding"))
		set(im, "model.position_embedding", "learned");
	if (!get(im, "model.tie_word_embeddings"))
		set(im, "model.tie_word_embeddings", "true");
	if (!get(im, "training.dtype"))
		set(im, "training.dtype", "fp32");
	/* Megatron's add_bias_linear (every linear layer's bias) unless
	 * --disable-bias-linear; --add-qkv-bias sets the attention's. */
	if (!get(im, "model.attention_bias"))
		set(im, "model.attention_bias", im->no_bias ? "false" : "true");
	set(im, "model.mlp_bias", im->no_bias ? "false" : "true");
	/* arguments.py: --attention-dropout and --hidden-dropout 0.1 */
	set(im, "training.dropout",
	    (im->dropout[0] < 0 ? 0.1 : im->dropout[0]) > 0 ||
	    (im->dropout[1] < 0 ? 0.1 : im->dropout[1]) > 0 ? "true" : "false");
	if (im->vpp_layers > 0 && im->layers > 0)
		set(im, "parallelism.vpp", arena_printf(a, "%ld", im->layers /
			((im->pp > 0 ? im->pp : 1) * im->vpp_layers)));
}

/* ---- the job ---------------------------------------------------------- */

/* Print the section (model, training, ...) of the imported keys. */
static void put_section(FILE *out, const struct imported *im,
			const char *sect, int indent)
{
	size_t n = strlen(sect);
	int i;

	for (i = 0; i < im->n; i++)
		if (strncmp(im->key[i], sect, n) == 0 && im->key[i][n] == '.')
			fprintf(out, "%*s%s: %s\n", indent, "", im->key[i] + n + 1,
				im->val[i]);
}

static int section_count(const struct imported *im, const char *sect)
{
	size_t n = strlen(sect);
	int i, c = 0;

	for (i = 0; i < im->n; i++)
		c += strncmp(im->key[i], sect, n) == 0 && im->key[i][n] == '.';
	return c;
}

struct opts {
	const char *system, *model, *name;
	long gpus;
};

static void put_job(FILE *out, const struct imported *im,
		    const struct opts *o, long nodes)
{
	int i;

	fprintf(out, "# Imported from a Megatron-LM command line by "
		"'llmsim config import-megatron'\n# (docs/megatron.md has the "
		"mapping).\n");
	if (im->nignored) {
		fprintf(out, "# Ignored (no effect on a step's time):");
		for (i = 0; i < im->nignored; i++)
			fprintf(out, " %s", im->ignored[i]);
		fprintf(out, "\n");
	}
	if (im->nunknown) {
		fprintf(out, "# Unknown to llmsim, ignored:");
		for (i = 0; i < im->nunknown; i++)
			fprintf(out, " %s", im->unknown[i]);
		fprintf(out, "\n");
	}
	fprintf(out, "name: %s\nmodel:\n", o->name);
	if (o->model)
		fprintf(out, "  preset: %s\n", o->model);
	else
		fprintf(out, "  name: %s\n", o->name);
	put_section(out, im, "model", 2);
	fprintf(out, "system: {preset: %s, nodes: %ld}\nframework:\n"
		"  preset: megatron-core\n", o->system, nodes);
	put_section(out, im, "framework", 2);
	fprintf(out, "training:\n");
	put_section(out, im, "training", 2);
	if (section_count(im, "parallelism")) {
		fprintf(out, "parallelism:\n");
		put_section(out, im, "parallelism", 2);
	}
}

/* tp x pp x cp from the import (1 where absent). */
static long model_parallel(const struct imported *im)
{
	const char *k[] = { "parallelism.tp", "parallelism.pp", "parallelism.cp" };
	long p = 1;
	size_t i;

	for (i = 0; i < 3; i++)
		if (get(im, k[i]))
			p *= atol(get(im, k[i]));
	return p;
}

/* Nodes of the system for the GPUs; 0 after reporting. */
static long nodes_for(struct config_ctx *cx, const struct opts *o, long gpus)
{
	struct system_spec *s = arena_alloc(cx->arena, sizeof(*s));

	if (!s || config_load(cx, &system_schema, o->system, NULL, 0, s) != 0)
		return 0;
	if (gpus % s->gpus_per_node != 0) {
		diag_error(cx->diag, NULL, 0, 0, "%ld GPUs are not whole nodes of "
			   "%s (%lld GPUs each); give --gpus", gpus, o->system,
			   (long long)s->gpus_per_node);
		return 0;
	}
	return gpus / s->gpus_per_node;
}

/* Load the printed job back through the schema. 0 or -1. */
static int check_job(struct config_ctx *cx, const char *text, size_t len)
{
	struct cnode *root = cnode_parse_yaml(cx->arena, text, len,
					      "<imported job>", cx->diag);
	const struct cnode *base;
	struct job_spec *j = arena_alloc(cx->arena, job_schema.size);

	if (!root || !j)
		return -1;
	base = config_resolve_node(cx, &job_schema, root);
	if (!base)
		return -1;
	return config_load_resolved(cx, &job_schema, base, NULL, 0, j);
}

static int parse_opts(int argc, char **argv, struct opts *o, int *mapping)
{
	static const struct option longopts[] = {
		{ "system", required_argument, NULL, 's' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "model", required_argument, NULL, 'm' },
		{ "name", required_argument, NULL, 'n' },
		{ "mapping", no_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ "dgx-h100", NULL, "megatron-import", 0 };
	*mapping = 0;
	cli_getopt_reset();
	/* "+": stop at the first operand, so that words after "--" (the
	 * Megatron arguments) are not taken as ours. */
	while ((c = cli_getopt(argc, argv, "+", longopts, "config")) != -1) {
		switch (c) {
		case 's': o->system = optarg; break;
		case 'm': o->model = optarg; break;
		case 'n': o->name = optarg; break;
		case 'M': *mapping = 1; break;
		case 'g':
			if (!whole(optarg) || (o->gpus = atol(optarg)) <= 0)
				return cli_usage_error("config", "--gpus: expected "
						       "a number of GPUs, got '%s'",
						       optarg);
			break;
		default: return CLI_USAGE;
		}
	}
	return CLI_OK;
}

int cli_import_megatron(struct config_ctx *cx, int argc, char **argv)
{
	struct imported *im = arena_alloc(cx->arena, sizeof(*im));
	struct opts o;
	char **words = NULL, *text = NULL;
	size_t len = 0;
	long nodes;
	int mapping, nwords = 0, rc;
	FILE *mf;

	char **ours = arena_alloc(cx->arena, ((size_t)argc + 1) * sizeof(*ours));
	const char *line = NULL;
	int i, n = 0;

	if (!im || !ours) {
		diag_oom(cx->diag);
		return CLI_FAIL;
	}
	im->arena = cx->arena;
	im->dropout[0] = im->dropout[1] = -1;	/* not given */
	/* The Megatron command line as one string starts with "--" too:
	 * take a word with a blank in it out before reading our options. */
	for (i = 0; i < argc; i++) {
		if (i > 0 && !line && strpbrk(argv[i], " \t\n"))
			line = argv[i];
		else
			ours[n++] = argv[i];
	}
	rc = parse_opts(n, ours, &o, &mapping);
	if (rc != CLI_OK || mapping)
		return rc != CLI_OK ? rc : print_mapping();
	if (line && optind < n)
		return cli_usage_error("config", "import-megatron: give the "
				       "Megatron arguments as one string or as "
				       "words after --, not both");
	if (line || optind + 1 == n) {
		if (split_words(cx->arena, line ? line : ours[optind], &words,
				&nwords) != 0) {
			diag_oom(cx->diag);
			return CLI_FAIL;
		}
	} else {
		words = ours + optind;
		nwords = n - optind;
	}
	if (nwords == 0)
		return cli_usage_error("config", "%s", "import-megatron needs "
				       "the Megatron-LM arguments (one quoted "
				       "string, or words after --)");
	if (read_args(im, words, nwords, cx->diag) != 0)
		return CLI_USAGE;
	finish_import(cx->arena, im);
	nodes = nodes_for(cx, &o, o.gpus ? o.gpus : model_parallel(im));
	if (nodes == 0)
		return cx->diag->oom ? CLI_FAIL : CLI_USAGE;
	mf = open_memstream(&text, &len);
	if (!mf) {
		diag_oom(cx->diag);
		return CLI_FAIL;
	}
	put_job(mf, im, &o, nodes);
	fclose(mf);
	rc = check_job(cx, text, len) == 0 ? CLI_OK
					   : cx->diag->oom ? CLI_FAIL : CLI_USAGE;
	if (rc == CLI_OK)
		fputs(text, stdout);
	else
		fprintf(stderr, "llmsim: the imported job (below) is not "
			"complete; add the arguments it lacks:\n%s", text);
	free(text);
	return rc;
}
