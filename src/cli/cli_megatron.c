/*
 * cli_megatron.c - `llmsim config import-megatron "ARGS..."`: a job from a
 * Megatron-LM (pretrain_gpt.py) command line.
 *
 *   llmsim config import-megatron "--num-layers 80 --hidden-size 8192 ..."
 *       [--system SYSTEM] [--gpus N] [--model PRESET] [--name NAME]
 *   llmsim config import-megatron --mapping
 *
 * The arguments may be one string (split as a shell splits it) or
 * several words after "--". Each Megatron argument llmsim knows maps to
 * one job key (the table in cli_megatron_map.c, printed by --mapping
 * and copied into docs/megatron.md, which tests/megatron.sh keeps
 * equal); the ones that
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
#include "cli_megatron.h"

#include <assert.h>
#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/pp_layout.h"
#include "config/schema.h"
#include "config/spec_job.h"
#include "config/spec_system.h"

/* ---- reading the command line ---------------------------------------- */

/* Split s at blanks into words (in the arena) as a POSIX shell does,
 * so a pasted command line reads as it ran: single quotes keep every
 * character; in double quotes a backslash escapes only $ ` " \ and a
 * newline; outside quotes it escapes any character; backslash-newline
 * joins lines (a script's continuation). 0; -1 out of memory; -2 after
 * reporting an unterminated quote (it swallowed the rest: a \" ended
 * the quote, so a quoted word's '--num-layers 64' was read). */
static int split_words(struct arena *a, struct diag *d, const char *s,
		       char ***out, int *n)
{
	size_t len = strlen(s), cap = len / 2 + 2;
	char **w = arena_alloc(a, cap * sizeof(*w));
	char *buf = arena_alloc(a, len + 1), *o = buf;
	char q = 0;

	if (!w || !buf)
		return -1;
	*n = 0;
	while (*s) {
		while (isspace((unsigned char)*s) ||
		       (s[0] == '\\' && s[1] == '\n'))
			s += s[0] == '\\' ? 2 : 1;
		if (!*s)
			break;
		w[(*n)++] = o;
		for (; *s && (q || !isspace((unsigned char)*s)); s++) {
			if (!q && (*s == '\'' || *s == '"')) {
				q = *s;
			} else if (q && *s == q) {
				q = 0;
			} else if (*s == '\\' && q != '\'' && s[1] &&
				   (!q || strchr("$`\"\\\n", s[1]))) {
				if (s[1] != '\n')
					*o++ = s[1];
				s++;
			} else if (*s != '\\' || s[1]) {
				*o++ = *s;	/* a last lone backslash: dropped */
			}
		}
		*o++ = '\0';
	}
	if (q) {
		diag_error(d, "megatron", 0, 0, "an unterminated "
			   "%c quote: it takes the rest of the line (close it)",
			   q);
		return -2;
	}
	*out = w;
	return 0;
}

/* The job built from the arguments: key = value pairs in order. */
/* Flags listed by name in the header comment; past it they are counted
 * ("and 3 more": they were dropped without a word). */
#define MAX_LISTED 256

struct imported {
	const char *key[CLI_MEGATRON_KEYS];
	const char *val[CLI_MEGATRON_KEYS];
	int n;
	int gqa;			/* --group-query-attention seen */
	int null_tokenizer;		/* --tokenizer-type NullTokenizer */
	int no_bias;			/* --disable-bias-linear seen */
	double dropout[2];		/* attention, hidden; < 0: absent */
	long layers, pp, vpp_layers;
	long moe_pattern;		/* --moe-layer-freq list's length */
	int vpp_given;			/* --num-layers-per-virtual-... seen */
	int64_t layout_stages;		/* --pipeline-model-parallel-layout's;
					 * 0: not given */
	const char *ignored[MAX_LISTED];
	int nignored, more_ignored;	/* listed; past MAX_LISTED */
	const char *unknown[MAX_LISTED];
	int nunknown, more_unknown;
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

/* Digits only, at most WHOLE_DIGITS of them: atol saturated a longer
 * one (--tensor-model-parallel-size 99999999999999999999 became
 * "9223372036854775807 GPUs"); the job's schema bounds the value after. */
#define WHOLE_DIGITS 12

static int whole(const char *v)
{
	size_t n = 0;

	if (!*v)
		return 0;
	for (; *v; v++, n++)
		if (!isdigit((unsigned char)*v) || n >= WHOLE_DIGITS)
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

/* A pipeline layout string (config/pp_layout.h): checked here so that
 * a string that is not one is named by its argument, then set quoted
 * (its '|' and '*' are YAML syntax). */
static int take_layout(struct imported *im, const struct marg *m,
		       const char *arg, const char *v, struct diag *d)
{
	struct pp_layout l;
	char why[160];
	const char *q;
	int rc = pp_layout_parse(v, &l, NULL, 0, why, sizeof(why));

	if (rc == -2) {
		diag_oom(d);
		return -1;
	}
	if (rc != 0) {
		diag_error(d, "megatron", 0, 0, "%s '%s': %s", arg, v, why);
		return -1;
	}
	if (!(q = arena_printf(im->arena, "\"%s\"", v))) {
		diag_oom(d);
		return -1;
	}
	set(im, m->key, q);
	im->layout_stages = l.stages;
	return 0;
}

/* One Megatron argument (with its value when it takes one). */
/* --moe-layer-freq alone decides the MoE layers (Megatron's
 * get_gpt_decoder_layer_specs reads only it): moe_layers `list` ("[]":
 * by moe_layer_freq), and a preset's other rules undone, its
 * first_k_dense_replace `dense` (the pattern's length when every layer
 * is dense: the model then loads as a dense one, with its note),
 * decoder_sparse_step 1 and no mlp_only_layers. 0, or -1 out of memory. */
static int moe_alone(struct imported *im, const char *list, const char *dense,
		     struct diag *d)
{
	if (!dense) {
		diag_oom(d);
		return -1;
	}
	set(im, "model.moe_layers", list);
	set(im, "model.first_k_dense_replace", dense);
	set(im, "model.decoder_sparse_step", "1");
	set(im, "model.mlp_only_layers", "[]");
	return 0;
}

static int take(struct imported *im, const struct marg *m, const char *arg,
		const char *v, struct diag *d)
{
	size_t i;

	switch (m->type) {
	case M_INT:
	case M_VPP_LAYERS:
		if (!whole(v)) {
			diag_error(d, "megatron", 0, 0, "%s: expected a whole "
				   "number of at most %d digits, got '%s'", arg,
				   WHOLE_DIGITS, v);
			return -1;
		}
		if (m->type == M_VPP_LAYERS)
			im->vpp_layers = atol(v), im->vpp_given = 1;
		else if (strcmp(m->key, "model.num_key_value_heads") == 0)
			set(im, "(query groups)", v);
		else if (strcmp(arg, "--vocab-size") == 0)
			set(im, "(vocab)", v);	/* padded: finish_import */
		else if (strcmp(arg, "--make-vocab-size-divisible-by") == 0) {
			if (atol(v) < 1) {	/* Megatron divides by it */
				diag_error(d, "megatron", 0, 0, "%s: expected "
					   "at least 1, got '%s'", arg, v);
				return -1;
			}
			set(im, "(vocab multiple)", v);
		} else
			set(im, m->key, v);
		if (strcmp(arg, "--num-layers") == 0)
			im->layers = atol(v);
		if (strcmp(arg, "--pipeline-model-parallel-size") == 0)
			im->pp = atol(v);
		return 0;
	case M_FLAG:
		/* --bf16 / --fp16 are the parameters' dtype (and an MoE
		 * router's by default, finish_import); --fp8-format's fp8
		 * GEMMs stand whichever of them comes first */
		if (strcmp(m->key, "training.dtype") == 0) {
			const char *had = get(im, m->key);

			set(im, "(params dtype)", m->value);
			if (had && strcmp(had, "fp8") == 0)
				return 0;
		}
		set(im, m->key, m->value);
		return 0;
	case M_STR:
		for (i = 0; m->values[i]; i += 2)
			if (strcmp(m->values[i], v) == 0) {
				set(im, m->key, m->values[i + 1]);
				return 0;
			}
		if (strcmp(v, "fp64") == 0 &&	/* valid Megatron: say why */
		    strcmp(m->key, "moe.router_dtype") == 0)
			diag_error(d, "megatron", 0, 0, "%s fp64: llmsim's "
				   "dtypes (moe.router_dtype's) have no fp64 "
				   "GEMM; give fp32 to simulate the router "
				   "in fp32", arg);
		else
			diag_error(d, "megatron", 0, 0, "%s: llmsim does not "
				   "know the value '%s'", arg, v);
		return -1;
	case M_LIST:
		return take_list(im, m, arg, v, d);
	case M_MOE_FREQ: {
		const char *list, *err;

		if (!strchr(v, '[')) {	/* N: layer i is MoE when i % N == 0 */
			if (!whole(v) || atol(v) < 1) {
				diag_error(d, "megatron", 0, 0, "%s: expected a "
					   "whole number from 1 or a list "
					   "pattern, got '%s'", arg, v);
				return -1;
			}
			set(im, "model.moe_layer_freq", v);
			im->moe_pattern = 0;	/* the last one wins */
			return moe_alone(im, "[]", "0", d);
		}
		list = cli_megatron_moe_layers(im->arena, v, &im->moe_pattern,
					       &err);
		if (!list && !err) {
			diag_oom(d);
			return -1;
		}
		if (!list) {
			diag_error(d, "megatron", 0, 0, "%s '%s': %s", arg, v,
				   err);
			return -1;
		}
		set(im, "model.moe_layer_freq", "1");
		return moe_alone(im, list, strcmp(list, "[]") ? "0" :
				 arena_printf(im->arena, "%ld", im->moe_pattern), d);
	}
	case M_NUM: {
		char *end;
		double x = strtod(v, &end);

		if (!*v || *end || !(x > 0 && x <= 1000)) {
			diag_error(d, "megatron", 0, 0, "%s: expected a "
				   "number above 0 and at most 1000, got '%s'",
				   arg, v);
			return -1;
		}
		set(im, m->key, v);
		return 0;
	}
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
	case M_PP_LAYOUT:
		return take_layout(im, m, arg, v, d);
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
	       m->type == M_DROPOUT || m->type == M_PP_LAYOUT ||
	       m->type == M_NUM || m->type == M_MOE_FREQ;
}

static void note_word(const char **list, int *n, int *more, const char *a)
{
	if (*n < MAX_LISTED)
		list[(*n)++] = a;
	else
		(*more)++;
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
			note_word(im->unknown, &im->nunknown,
				  &im->more_unknown, a);
			continue;
		}
		if (eq) {
			*eq = '\0';
			v = eq + 1;
		}
		m = cli_megatron_arg(a);
		if (!m && cli_megatron_ignored(a) == 2) {
			if (!v && i + 1 < n)
				v = w[++i];
			/* its vocabulary is --vocab-size + 1 (its EOD) */
			if (strcmp(a, "--tokenizer-type") == 0)
				im->null_tokenizer =
					v && strcmp(v, "NullTokenizer") == 0;
			note_word(im->ignored, &im->nignored,
				  &im->more_ignored, a);
			continue;
		}
		if (!m && cli_megatron_ignored(a) == 1) {
			note_word(im->ignored, &im->nignored,
				  &im->more_ignored, a);
			continue;
		}
		if (!m) {
			note_word(im->unknown, &im->nunknown,
				  &im->more_unknown, a);
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

/* vpp from the layout's stages, as Megatron's arguments.py infers it
 * (virtual_pipeline_model_parallel_size = stages / pp, after asserting
 * that at most one of the layout and the per-stage layer count is given
 * and that pp divides the stages). 0 or -1 after reporting. */
static int layout_vpp(struct arena *a, struct imported *im, struct diag *d)
{
	long pp = im->pp > 0 ? im->pp : 1;

	/* Megatron-LM arguments.py: the layers of a pipeline stage must be
	 * divisible by --num-layers-per-virtual-pipeline-stage ("number of
	 * layers per pipeline stage must be divisible number of layers per
	 * virtual pipeline stage"; 0 divides by zero). The import took 0 as
	 * no interleaving and 16 / 5 as vpp 3 without a word. */
	if (im->vpp_given && (im->vpp_layers < 1 ||
	    (im->layers > 0 && (im->layers / pp) % im->vpp_layers != 0))) {
		diag_error(d, "megatron", 0, 0, "--num-layers-per-virtual-"
			   "pipeline-stage %ld does not divide the %ld layers of "
			   "a pipeline stage (--num-layers %ld / "
			   "--pipeline-model-parallel-size %ld); Megatron "
			   "refuses it", im->vpp_layers, im->layers / pp,
			   im->layers, pp);
		return -1;
	}
	if (im->layout_stages == 0)
		return 0;
	if (im->vpp_layers > 0) {
		diag_error(d, "megatron", 0, 0, "%s", "give one of "
			   "--pipeline-model-parallel-layout and "
			   "--num-layers-per-virtual-pipeline-stage (Megatron "
			   "refuses both)");
		return -1;
	}
	if (im->layout_stages % pp != 0) {
		diag_error(d, "megatron", 0, 0, "--pipeline-model-parallel-layout "
			   "has %lld stages, not a multiple of "
			   "--pipeline-model-parallel-size %ld",
			   (long long)im->layout_stages, pp);
		return -1;
	}
	set(im, "parallelism.vpp", arena_printf(a, "%lld",
		(long long)(im->layout_stages / pp)));
	return 0;
}

/* Megatron's defaults and the derived keys. */
/* Megatron asserts a --moe-layer-freq list has a layer per layer
 * (gpt_layer_specs.py, @ 2a75ac12c). 0, or -1 after reporting. */
static int moe_pattern_check(const struct imported *im, struct diag *d)
{
	if (im->moe_pattern == 0 || im->layers == 0 ||
	    im->moe_pattern == im->layers)
		return 0;
	diag_error(d, "megatron", 0, 0, "--moe-layer-freq: the pattern has "
		   "%ld layers, --num-layers %ld", im->moe_pattern, im->layers);
	return -1;
}

/* Megatron's MoE defaults where llmsim's differ (TransformerConfig @
 * NVIDIA/Megatron-LM 2a75ac12c): moe_token_dispatcher_type "allgather"
 * (llmsim: alltoall); "flex" runs moe_flex_dispatcher_backend, "deepep"
 * unless given (--moe-enable-deepep, deprecated, says deepep too); and
 * moe_router_dtype None: the router's GEMM in its input's dtype, the
 * parameters' (router.py gating; llmsim: fp32). moe_router_topk 2
 * (transformer_config.py @ d98e8a64dd; llmsim has none: an MoE model
 * without num_experts_per_tok is an error). moe_ffn_hidden_size None is
 * ffn_hidden_size (arguments.py validate_args), llmsim's own default for
 * a model with no model_type: left out. */
static void moe_defaults(struct imported *im)
{
	const char *t = get(im, "(dispatcher)"), *b = get(im, "(flex backend)");

	if (!get(im, "model.num_experts_per_tok"))
		set(im, "model.num_experts_per_tok", "2");

	if (!t)
		t = "allgather";
	set(im, "moe.dispatcher", strcmp(t, "flex") != 0 ? t :
	    b ? b : "deepep");
	if (!get(im, "moe.router_dtype"))
		set(im, "moe.router_dtype", get(im, "(params dtype)") ?
		    get(im, "(params dtype)") : "fp32");
}

static void finish_import(struct arena *a, struct imported *im)
{
	const char *h = get(im, "model.hidden_size");

	/* --num-query-groups defaults to 1 (arguments.py), so
	 * --group-query-attention alone is one KV head (it imported one a
	 * query head) */
	if (im->gqa)
		set(im, "model.num_key_value_heads", get(im, "(query groups)") ?
		    get(im, "(query groups)") : "1");
	const char *act = get(im, "model.hidden_act");
	const char *voc = get(im, "(vocab)"), *mul = get(im, "(vocab multiple)");
	const char *tp = get(im, "parallelism.tp");

	/* Megatron's arguments.py validate_args: ffn_hidden_size 4 h, and
	 * with --swiglu int((4 h 2 / 3) / 64) * 64, the gated MLP's two
	 * projections near 4 h's parameters, a multiple of 64 (it imported
	 * 4 h: 1.5x the MLP) */
	if (!get(im, "model.intermediate_size") && h) {
		long hv = atol(h);

		set(im, "model.intermediate_size", arena_printf(a, "%ld",
		    act && strcmp(act, "silu") == 0 ?
		    (long)((double)(8 * hv) / 3 / 64) * 64 : 4 * hv));
	}
	/* --vocab-size is the tokenizer's (NullTokenizer: + 1, its EOD);
	 * the model's is padded to a multiple of make_vocab_size_divisible_by
	 * (128) x tp (training/tokenizer/tokenizer.py build_tokenizer,
	 * _vocab_size_with_padding), unless --padded-vocab-size gives it */
	if (!get(im, "model.vocab_size") && voc) {
		double m = (double)(mul ? atol(mul) : 128) *
			   (double)(tp ? atol(tp) : 1);

		set(im, "model.vocab_size", arena_printf(a, "%.0f",
		    ceil((double)(atol(voc) + im->null_tokenizer) / m) * m));
	}
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
	/* TransformerConfig moe_permute_fusion = False (@ d7288711ba);
	 * llmsim's default is Megatron-Bridge's MoE bridges' True */
	if (get(im, "model.n_routed_experts") && !get(im, "moe.permute_fusion"))
		set(im, "moe.permute_fusion", "false");
	if (get(im, "model.n_routed_experts"))
		moe_defaults(im);
	/* Megatron's add_bias_linear (every linear layer's bias) unless
	 * --disable-bias-linear; --add-qkv-bias sets q/k/v's alone
	 * (megatron/core/transformer/attention.py: linear_qkv bias=
	 * add_bias_linear or add_qkv_bias, linear_proj bias=
	 * add_bias_linear). */
	if (!get(im, "model.attention_bias"))
		set(im, "model.attention_bias", im->no_bias ? "false" : "true");
	set(im, "model.o_proj_bias", im->no_bias ? "false" : "true");
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

/* Print the section (model, training, ...) of the imported keys; a key
 * one level further down (framework.elementwise.eager_activation) goes
 * into its sub-section's mapping, printed once where it first appears. */
static void put_section(FILE *out, const struct imported *im,
			const char *sect, int indent)
{
	size_t n = strlen(sect);
	int i, j;

	for (i = 0; i < im->n; i++) {
		const char *k = im->key[i] + n + 1, *dot;

		if (strncmp(im->key[i], sect, n) != 0 || im->key[i][n] != '.')
			continue;
		dot = strchr(k, '.');
		if (!dot) {
			fprintf(out, "%*s%s: %s\n", indent, "", k, im->val[i]);
			continue;
		}
		for (j = 0; j < i; j++)	/* printed with an earlier key */
			if (strncmp(im->key[j], im->key[i],
				    (size_t)(dot - im->key[i]) + 1) == 0)
				break;
		if (j < i)
			continue;
		fprintf(out, "%*s%.*s:\n", indent, "", (int)(dot - k), k);
		for (j = i; j < im->n; j++)
			if (strncmp(im->key[j], im->key[i],
				    (size_t)(dot - im->key[i]) + 1) == 0)
				fprintf(out, "%*s%s: %s\n", indent + 2, "",
					im->key[j] + (dot - im->key[i]) + 1,
					im->val[j]);
	}
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
		if (im->more_ignored)
			fprintf(out, " (and %d more)", im->more_ignored);
		fprintf(out, "\n");
	}
	if (im->nunknown) {
		fprintf(out, "# Unknown to llmsim, ignored:");
		for (i = 0; i < im->nunknown; i++)
			fprintf(out, " %s", im->unknown[i]);
		if (im->more_unknown)
			fprintf(out, " (and %d more)", im->more_unknown);
		fprintf(out, "\n");
	}
	/* our options' values as YAML strings (--name "run #2" loaded as
	 * "run", its comment cut off) */
	fputs("name: ", out);
	schema_print_string(out, o->name);
	fputs("\nmodel:\n", out);
	fputs(o->model ? "  preset: " : "  name: ", out);
	schema_print_string(out, o->model ? o->model : o->name);
	fputs("\n", out);
	put_section(out, im, "model", 2);
	fputs("system: {preset: ", out);
	schema_print_string(out, o->system);
	fprintf(out, ", nodes: %ld}\nframework:\n  preset: megatron-core\n",
		nodes);
	put_section(out, im, "framework", 2);
	fprintf(out, "training:\n");
	put_section(out, im, "training", 2);
	if (section_count(im, "parallelism")) {
		fprintf(out, "parallelism:\n");
		put_section(out, im, "parallelism", 2);
	}
	if (section_count(im, "moe")) {
		fprintf(out, "moe:\n");
		put_section(out, im, "moe", 2);
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
	if (gpus < 1) {	/* a parallel size of 0: exit 2 said nothing */
		diag_error(cx->diag, NULL, 0, 0, "tp x pp x cp = %ld GPUs: "
			   "Megatron's --tensor-, --pipeline- and "
			   "--context-parallel-size are at least 1", gpus);
		return 0;
	}
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

/* Whether argv[i] is the value of one of our options given as the word
 * before it (--name NAME; getopt_long also takes a prefix, --sys), before
 * a "--" that ends them. */
static int value_of_ours(char **argv, int i)
{
	static const char *const valued[] = { "system", "gpus", "model",
					      "name" };
	const char *o;
	size_t k, len;
	int j;

	for (j = 1; j < i - 1; j++)
		if (strcmp(argv[j], "--") == 0)
			return 0;
	if (i < 2 || strncmp(argv[i - 1], "--", 2) != 0 ||
	    strcmp(argv[i - 1], "--") == 0 || strchr(argv[i - 1], '='))
		return 0;
	o = argv[i - 1] + 2;
	len = strlen(o);
	for (k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
		if (strncmp(valued[k], o, len) == 0)
			return 1;
	return 0;
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
	 * take a word with a blank in it out before reading our options
	 * (an empty one too: it is no arguments, not the end of ours), but
	 * not the value of one of our options (--name "my job" was taken
	 * for the command line, and the command line for the name). */
	for (i = 0; i < argc; i++) {
		if (i > 0 && !line && !value_of_ours(argv, i) &&
		    (strpbrk(argv[i], " \t\n") || !*argv[i]))
			line = argv[i];
		else
			ours[n++] = argv[i];
	}
	rc = parse_opts(n, ours, &o, &mapping);
	if (rc != CLI_OK || mapping)
		return rc != CLI_OK ? rc : cli_megatron_mapping();
	if (line && optind < n)
		return cli_usage_error("config", "import-megatron: give the "
				       "Megatron arguments as one string or as "
				       "words after --, not both");
	if (line || optind + 1 == n) {
		rc = split_words(cx->arena, cx->diag, line ? line :
				 ours[optind], &words, &nwords);
		if (rc == -2)
			return CLI_USAGE;
		if (rc != 0) {
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
	if (read_args(im, words, nwords, cx->diag) != 0 ||
	    layout_vpp(cx->arena, im, cx->diag) != 0 ||
	    moe_pattern_check(im, cx->diag) != 0)
		return cx->diag->oom ? CLI_FAIL : CLI_USAGE;
	finish_import(cx->arena, im);
	/* TransformerConfig moe_grouped_gemm False (@ d98e8a64dd
	 * moe_module_specs.py: SequentialMLP unless moe_grouped_gemm):
	 * llmsim has no per-expert loop to simulate.
	 * moe_use_legacy_grouped_gemm is read only inside
	 * `if moe_grouped_gemm:` (same file): alone it changes nothing */
	if (get(im, "model.n_routed_experts") && !get(im, "(grouped gemm)"))
		diag_warn(cx->diag, "megatron", 0, 0, "no "
			  "--moe-grouped-gemm: Megatron runs the local experts "
			  "one after another (SequentialMLP); llmsim simulates "
			  "them as grouped GEMMs (TEGroupedMLP), as with the "
			  "flag%s", get(im, "(legacy grouped gemm)") ?
			  " (--moe-use-legacy-grouped-gemm alone has no "
			  "effect: Megatron reads it only with "
			  "--moe-grouped-gemm)" : "");
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
