/*
 * spec_job.c - the job schema and its layout checks.
 */
#include "spec_job.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "cnode.h"
#include "diag.h"

const char *const job_phase_names[] = {"training", NULL};
const char *const recompute_names[] = {"none", "selective", "full", NULL};
const char *const optimizer_names[] = {"adam", "sgd", NULL};
const char *const pp_schedule_names[] = {"gpipe", "1f1b", "interleaved", NULL};

#define TOFF(m) offsetof(struct training_spec, m)

static const struct schema_field training_fields[] = {
	{ .key = "seq_len", .type = ST_INT, .offset = TOFF(seq_len),
	  .min = 1, .max = 1e8, .flags = SF_REQUIRED, .help = "tokens per sequence" },
	{ .key = "global_batch_size", .type = ST_INT,
	  .offset = TOFF(global_batch_size), .min = 1, .max = 1e9,
	  .flags = SF_REQUIRED, .help = "sequences per step over all replicas" },
	{ .key = "micro_batch_size", .type = ST_INT, .offset = TOFF(micro_batch_size),
	  .def = "1", .min = 1, .max = 1e6,
	  .help = "sequences per microbatch on one replica" },
	{ .key = "dtype", .type = ST_ENUM, .offset = TOFF(dtype),
	  .values = dtype_names, .def = "bf16",
	  .help = "compute dtype of the matrix multiplies" },
	{ .key = "recompute", .type = ST_ENUM, .offset = TOFF(recompute),
	  .values = recompute_names, .def = "none",
	  .help = "activation recomputation: none, selective (attention core), full" },
	{ .key = "zero_stage", .type = ST_INT, .offset = TOFF(zero_stage),
	  .def = "0", .min = 0, .max = 3,
	  .help = "ZeRO stage: 1 optimizer, 2 +gradients, 3 +parameters (FSDP)" },
	{ .key = "optimizer", .type = ST_ENUM, .offset = TOFF(optimizer),
	  .values = optimizer_names, .def = "adam", .help = "optimizer" },
};

static const struct schema training_schema = {
	.kind = "job.training",
	.help = "training settings",
	.size = sizeof(struct training_spec),
	.fields = training_fields,
	.nfields = SCHEMA_COUNT(training_fields),
};

#define POFF(m) offsetof(struct parallel_spec, m)
#define DEG(k, d, h) { .key = #k, .type = ST_INT, .offset = POFF(k), \
	.def = d, .min = 1, .max = 1e6, .help = h }

static const struct schema_field parallel_fields[] = {
	DEG(tp, "1", "tensor-parallel degree"),
	DEG(pp, "1", "pipeline-parallel stages"),
	DEG(cp, "1", "context-parallel degree"),
	DEG(ep, "1", "expert-parallel degree"),
	{ .key = "dp", .type = ST_INT, .offset = POFF(dp), .min = 1, .max = 1e7,
	  .flags = SF_OPTIONAL,
	  .help = "data-parallel degree (default: GPUs / (tp * pp * cp))" },
	DEG(vpp, "1", "virtual pipeline stages per rank (interleaved schedule)"),
	{ .key = "sequence_parallel", .type = ST_BOOL,
	  .offset = POFF(sequence_parallel), .def = "false",
	  .help = "sequence parallelism with TP (reduce-scatter/all-gather)" },
	{ .key = "schedule", .type = ST_ENUM, .offset = POFF(schedule),
	  .values = pp_schedule_names, .flags = SF_OPTIONAL,
	  .help = "pipeline schedule (default: interleaved when vpp > 1, else 1f1b)" },
};

static const struct schema parallel_schema = {
	.kind = "job.parallelism",
	.help = "parallel layout",
	.size = sizeof(struct parallel_spec),
	.fields = parallel_fields,
	.nfields = SCHEMA_COUNT(parallel_fields),
};

#define OFF(m) offsetof(struct job_spec, m)

static const struct schema_field job_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "job name" },
	{ .key = "model", .type = ST_REF, .offset = OFF(model), .sub = &model_schema,
	  .flags = SF_REQUIRED, .help = "model preset, path (YAML or config.json), or mapping" },
	{ .key = "system", .type = ST_REF, .offset = OFF(system),
	  .sub = &system_schema, .flags = SF_REQUIRED,
	  .help = "system preset, path, or mapping" },
	{ .key = "phase", .type = ST_ENUM, .offset = OFF(phase),
	  .values = job_phase_names, .def = "training", .help = "what step to simulate" },
	{ .key = "training", .type = ST_SECTION, .offset = OFF(training),
	  .sub = &training_schema, .flags = SF_REQUIRED, .help = "training settings" },
	{ .key = "parallelism", .type = ST_SECTION, .offset = OFF(parallelism),
	  .sub = &parallel_schema, .help = "parallel layout" },
};

/* Report a layout error at the job's `key` mapping (or the job itself). */
static void layout_error(struct diag *d, const struct cnode *job,
			 const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void layout_error(struct diag *d, const struct cnode *job,
			 const char *key, const char *fmt, ...)
{
	const struct cnode *at = job ? cnode_get(job, key) : NULL;
	char msg[512];
	va_list ap;

	if (!at)
		at = job;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_error(d, at ? at->file : NULL, at ? at->line : 0,
		   at ? at->col : 0, "layout: %s", msg);
}

static int infer_dp(struct parallel_spec *p, int64_t gpus, struct diag *d,
		    const struct cnode *node)
{
	int64_t tpc = p->tp * p->pp * p->cp;

	if (p->dp == 0) {
		if (gpus % tpc != 0) {
			layout_error(d, node, "parallelism",
				     "tp*pp*cp = %lld does not divide the %lld "
				     "GPUs of the system",
				     (long long)tpc, (long long)gpus);
			return -1;
		}
		p->dp = gpus / tpc;
	} else if (tpc * p->dp != gpus) {
		layout_error(d, node, "parallelism",
			     "tp*pp*cp*dp = %lld*%lld*%lld*%lld = %lld but the "
			     "system has %lld GPUs", (long long)p->tp,
			     (long long)p->pp, (long long)p->cp, (long long)p->dp,
			     (long long)(tpc * p->dp), (long long)gpus);
		return -1;
	}
	return 0;
}

static int job_check(void *obj, const struct cnode *node, struct diag *d)
{
	struct job_spec *j = obj;
	struct parallel_spec *p = &j->parallelism;
	const struct training_spec *t = &j->training;
	const struct model_spec *m = j->model;
	unsigned before = d->errors;

	if (infer_dp(p, system_gpus(j->system), d, node) != 0)
		return -1;
	if (p->schedule < 0)
		p->schedule = p->vpp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B;
	if (p->schedule == SCHED_INTERLEAVED && p->vpp < 2)
		layout_error(d, node, "parallelism", "the interleaved schedule "
			     "needs vpp >= 2, got vpp %lld", (long long)p->vpp);
	if (p->vpp > 1 && p->schedule != SCHED_INTERLEAVED)
		layout_error(d, node, "parallelism", "vpp %lld needs schedule "
			     "'interleaved'", (long long)p->vpp);
	if (t->global_batch_size % (t->micro_batch_size * p->dp) != 0)
		layout_error(d, node, "training", "global_batch_size %lld is not "
			     "divisible by micro_batch_size * dp = %lld * %lld",
			     (long long)t->global_batch_size,
			     (long long)t->micro_batch_size, (long long)p->dp);
	if (m->num_attention_heads % p->tp != 0)
		layout_error(d, node, "parallelism", "tp %lld does not divide "
			     "num_attention_heads %lld", (long long)p->tp,
			     (long long)m->num_attention_heads);
	if (t->seq_len % p->cp != 0)
		layout_error(d, node, "parallelism", "cp %lld does not divide "
			     "seq_len %lld", (long long)p->cp,
			     (long long)t->seq_len);
	if (!model_is_moe(m) && p->ep != 1)
		layout_error(d, node, "parallelism", "ep %lld on a dense model: "
			     "expert parallelism needs 'n_routed_experts'",
			     (long long)p->ep);
	if (p->pp * p->vpp > m->num_hidden_layers)
		layout_error(d, node, "parallelism", "pp*vpp = %lld*%lld exceeds "
			     "the model's %lld layers", (long long)p->pp,
			     (long long)p->vpp, (long long)m->num_hidden_layers);
	return d->errors == before ? 0 : -1;
}

static const char *const job_dirs[] = {"workloads/jobs", NULL};

const struct schema job_schema = {
	.kind = "job",
	.help = "a job: model, system, phase, training settings, parallel layout",
	.preset_dirs = job_dirs,
	.size = sizeof(struct job_spec),
	.fields = job_fields,
	.nfields = SCHEMA_COUNT(job_fields),
	.check = job_check,
};
