/*
 * cli_megatron.h - what `llmsim config import-megatron`'s files share:
 * the table of Megatron-LM arguments llmsim maps (cli_megatron_map.c,
 * also printed as docs/megatron.md's mapping) and the reader of a
 * command line (cli_megatron.c). Private to them.
 *
 * Depends on libc.
 */
#ifndef LLMSIM_CLI_CLI_MEGATRON_H
#define LLMSIM_CLI_CLI_MEGATRON_H

/* Job keys one import sets at most: the table's, and the derived ones. */
#define CLI_MEGATRON_KEYS 96

enum mtype {
	M_INT,		/* a whole number, copied */
	M_STR,		/* a value, mapped through `values` */
	M_FLAG,		/* no value: sets `value` */
	M_VPP_LAYERS,	/* --num-layers-per-virtual-pipeline-stage */
	M_LIST,		/* the words up to the next argument, each one of
			 * `values` (llmsim's names), as a list */
	M_DROPOUT,	/* a probability; any > 0 (or absent: Megatron's
			 * 0.1) turns training.dropout on */
	M_NUM,		/* a number > 0 (at most 1000), copied */
	M_MOE_FREQ,	/* --moe-layer-freq: N, or a list pattern
			 * (cli_megatron_moe.c) */
	M_PP_LAYOUT,	/* a pipeline layout string, quoted; its stages / pp
			 * give vpp */
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

/* The table's entry for Megatron argument a ("--hidden-size"), or NULL. */
const struct marg *cli_megatron_arg(const char *a);

/* Whether a is an argument without effect on a step's time (learning
 * rate, paths, logging): 0 not one, 1 a flag, 2 one that takes a value. */
int cli_megatron_ignored(const char *a);

struct arena;

/* Megatron's --moe-layer-freq list pattern s ("([0]*3+[1]*58)") as
 * model.moe_layers' list of the MoE layers ("[3, 4, ...]", in the arena),
 * its length in *layers; NULL with *err set (a bad or empty pattern), or
 * NULL with *err NULL out of memory. */
const char *cli_megatron_moe_layers(struct arena *a, const char *s,
				    long *layers, const char **err);

/* Print the mapping as a Markdown table with the ignored arguments
 * (docs/megatron.md). CLI_OK. */
int cli_megatron_mapping(void);

#endif
