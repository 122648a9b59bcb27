/*
 * config_kinds.c - the registry of config kinds. A module that adds a
 * kind adds one line here.
 */
#include "config.h"

#include "spec_collectives.h"
#include "spec_engine.h"
#include "spec_fabric.h"
#include "spec_gpu.h"
#include "spec_job.h"
#include "spec_model.h"
#include "spec_moe.h"
#include "spec_system.h"

const struct schema *const config_kinds[] = {
	&gpu_schema,
	&fabric_schema,
	&system_schema,
	&model_schema,
	&job_schema,
	&link_schema,
	&collectives_schema,
	&framework_schema,
	&engine_schema,
	&ep_comm_schema,
	NULL,
};
