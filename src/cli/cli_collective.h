/*
 * cli_collective.h - what `llmsim collective`'s files share: the options,
 * a result row, and its output (cli_collective_out.c: the rccl-tests
 * table, CSV, the JSON object, the stored config). Private to them.
 *
 * Depends on network/net.h, models/ep.h.
 */
#ifndef LLMSIM_CLI_CLI_COLLECTIVE_H
#define LLMSIM_CLI_CLI_COLLECTIVE_H

#include <stddef.h>

#include "models/ep.h"
#include "network/net.h"

struct diag;
struct ep_comm_spec;
struct system_spec;

#define MAX_ROWS 256

/* The version of the --json object's layout (docs/cli-output.md). */
#define COLLECTIVE_JSON_SCHEMA 1

enum out_fmt {
	FMT_TABLE,
	FMT_CSV,
	FMT_JSON
};

struct opts {
	const char *system;
	const char **sets;		/* --set values (argc entries) */
	size_t nsets;
	int op;				/* enum coll_op; -1 unset */
	long ranks;			/* 0 unset */
	double min_B, max_B;		/* B */
	double factor;
	const char *dtype;		/* nccl-tests' name */
	int redop;			/* index into redop_names */
	long root;			/* broadcast and reduce */
	long group;			/* broadcast and reduce: operations in one
					 * library group, rooted at ranks 0..group-1
					 * (coll_desc.group); 0 or 1 = one */
	int algo, proto;		/* -1 = the library's choice */
	int fmt;			/* enum out_fmt */
	const char *db;			/* NULL = default */
	int store;
	/* dispatch / combine (ep != EP_OP_NONE) */
	int ep;				/* enum ep_op */
	double tokens[MAX_ROWS];	/* per GPU, one row each */
	int ntokens;
	double hidden, topk, experts;
	double groups;			/* 0 none, -1 = the nodes spanned */
	double topk_groups;
	int gate;			/* enum balanced_gate (--gate) */
	const char *dispatcher;		/* configs/ep preset or file */
	long sms;			/* 0 = the dispatcher's */
	int dtype_set;
	int tester;			/* enum coll_tester; -1: the library's
					 * (coll_resolve_tester) */
};

/* Whose per-rank rounding the split ops' sizes follow (--tester): the
 * library's own test suite, so a row is that suite's row. */
enum coll_tester {
	TESTER_ELEMENTS,		/* whole elements a rank */
	TESTER_NCCL,			/* nccl-tests: 16 B a rank */
	TESTER_RCCL,			/* rccl-tests: 4 elements (AG, RS) */
	TESTER_COUNT
};

/* Their --tester names ("elements", "nccl-tests", "rccl-tests"). */
extern const char *const coll_tester_names[TESTER_COUNT + 1];

enum ep_op {
	EP_OP_NONE,
	EP_OP_DISPATCH,
	EP_OP_COMBINE
};

struct row {
	double size_B, count;		/* B, elements (tokens for dispatch) */
	struct net_coll_result r;
	struct ep_traffic ep;		/* dispatch / combine */
};

/* The reductions -o takes, NULL-terminated. */
extern const char *const coll_redop_names[];

/* The op as the user named it ("dispatch" for an EP dispatch). */
const char *coll_op_name(const struct opts *o);

/* The reduction and root as nccl-tests print them: "none" and -1 where
 * they do not apply. */
const char *coll_redop(const struct opts *o);
long coll_root(const struct opts *o);

/* Print the rows (table, CSV or JSON, by o->fmt) and store them unless
 * o->store is 0. e: the dispatch path for dispatch/combine, else NULL.
 * A CLI status. */
int coll_output(const struct opts *o, const struct system_spec *s,
		const struct ep_comm_spec *e, const struct row *rows, int n,
		const char *data_root, struct diag *d);

#endif
