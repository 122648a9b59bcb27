/*
 * spec_job_layout_impl.h - what the job layout rules' two files share
 * (spec_job_layout.c: the parallel and training rules and
 * job_layout_check; spec_job_layout_infer.c: the inference and serving
 * rules; spec_job_layout_sink.c, a leaf both call: the sink's messages).
 * Private to src/config; depends on spec_job.h and cnode.h only.
 */
#ifndef LLMSIM_CONFIG_SPEC_JOB_LAYOUT_IMPL_H
#define LLMSIM_CONFIG_SPEC_JOB_LAYOUT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "spec_job.h"

struct cnode;
struct diag;

/* Where layout violations go: a bit per rule, and, when d is set, a
 * diagnostic in the job's mapping (at the key the user changed). */
struct layout_sink {
	struct diag *d;			/* NULL: only the bits */
	const struct cnode *node;	/* the job's mapping, or NULL */
	uint64_t rules;			/* the rules to check, JR_BIT(rule) each */
	uint64_t broken;		/* those broken */
};

/* Whether rule r is to be checked. */
static inline int layout_want(const struct layout_sink *s, enum job_rule r)
{
	return (s->rules >> r) & 1;
}

/* The value of "section.key" in the job's mapping, else the section's
 * mapping, else NULL. */
const struct cnode *job_layout_key(const struct cnode *job, const char *key);

/* A breach of layout rule `rule` (when s checks it): its bit, and with
 * s->d the message at the rule's key the user changed. */
void layout_error(struct layout_sink *s, enum job_rule rule,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A rule about the job's keys rather than its layout (a key its phase
 * needs): the bit, and with s->d the error at `at`. */
void layout_key_error(struct layout_sink *s, enum job_rule rule,
		      const struct cnode *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* What an ep must divide, into buf (n bytes): "the model's E routed
 * experts", or with redundant experts (inference) "the S expert slots
 * (the model's E routed experts + moe.redundant_experts R)". */
void layout_expert_slots(const struct job_spec *j, char *buf, size_t n);

/* The rules of an inference or serving job (spec_job_layout_infer.c):
 * no cp or vpp, attention_dp and ep over an instance's GPUs, MTP drafts,
 * max_model_len, the pools; may set etp and the schedule. */
void layout_check_inference(struct job_spec *j, struct layout_sink *s);

#endif
