/*
 * spec_gpu_clock.c - the `fitted_clock` section of a GPU preset: per key
 * fitted on op tables, the clock those tables ran at (configs/gpus/
 * README.md "Clock basis").
 *
 * An efficiency is a fraction of the peak at the clock its kernel runs
 * at: its fit reads the tables with llmsim at their clock f_t (or solves
 * at sustained_matrix_clock f_s and multiplies by f_s / f_t), so it holds
 * at any clock, and the section only records f_t. A fixed time (a work
 * unit's least time) is that unit's cycles at f_t: llmsim scales it at use
 * by f_t / f, f the step's matrix clock (gpu_fitted_time, src/gpu/gpu.c),
 * so it follows a system's clock or the power model's as the rates do.
 *
 * Checked here: f_t at most max_clock (a key set to 0, off, may keep
 * its clock).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "spec_gpu.h"
#include "base/units.h"

#define FC(m) offsetof(struct gpu_fitted_clock, m)

static const struct schema_field fc_fields[] = {
	{ .key = "flashmla_sparse_efficiency", .type = ST_FREQ,
	  .offset = FC(flashmla_sparse_eff_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the figure flashmla_sparse_efficiency was fitted "
		  "on" },
	{ .key = "triton_moe_fp8_block_rate", .type = ST_FREQ,
	  .offset = FC(triton_moe_fp8_block_rate_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables triton_moe_fp8_block_rate was fitted "
		  "on" },
	{ .key = "triton_moe_default_efficiency", .type = ST_FREQ,
	  .offset = FC(triton_moe_default_eff_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables triton_moe_default_efficiency was "
		  "fitted on" },
	{ .key = "weight_only_moe_efficiency", .type = ST_FREQ,
	  .offset = FC(weight_only_moe_eff_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables every weight_only_moe_efficiency "
		  "kernel was fitted on" },
	{ .key = "trtllm_ctx16_efficiency", .type = ST_FREQ,
	  .offset = FC(trtllm_ctx16_eff_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables attention.trtllm_ctx16_efficiency "
		  "was fitted on" },
	{ .key = "trtllm_mla_efficiency", .type = ST_FREQ,
	  .offset = FC(trtllm_mla_eff_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables attention.trtllm_mla_efficiency was "
		  "fitted on" },
	{ .key = "trtllm_mla_fp8_efficiency", .type = ST_FREQ,
	  .offset = FC(trtllm_mla_fp8_eff_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables attention.trtllm_mla_fp8_efficiency "
		  "was fitted on" },
	{ .key = "trtllm_mla_unit_time", .type = ST_FREQ,
	  .offset = FC(trtllm_mla_unit_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables attention.trtllm_mla_unit_time was "
		  "fitted on (the time scales by it / the step's matrix clock)" },
	{ .key = "xqa_hmma_unit_time", .type = ST_FREQ,
	  .offset = FC(xqa_hmma_unit_hz), .min = 1e8, .max = 1e10,
	  .flags = SF_OPTIONAL,
	  .help = "clock of the tables attention.xqa_hmma_unit_time was "
		  "fitted on (the time scales by it / the step's matrix clock)" },
};

const struct schema gpu_fitted_clock_schema = {
	.kind = "gpu.fitted_clock",
	.help = "per key fitted on op tables, the clock (in "
		"sustained_matrix_clock's terms) those tables ran at: an "
		"efficiency is fitted at it and holds at any clock; a fixed "
		"time scales by it / the step's matrix clock",
	.size = sizeof(struct gpu_fitted_clock),
	.fields = fc_fields,
	.nfields = SCHEMA_COUNT(fc_fields),
};

int gpu_fitted_clock_check(const struct gpu_spec *g,
			   const struct schema_at *at, struct diag *d)
{
	char key[96], got[64], lim[64];
	size_t i;
	int rc = 0;
	double ft;

	for (i = 0; i < SCHEMA_COUNT(fc_fields); i++) {
		memcpy(&ft, (const char *)&g->fitted_clock +
		       fc_fields[i].offset, sizeof(ft));
		if (ft <= g->max_clock_hz)
			continue;
		snprintf(key, sizeof(key), "fitted_clock.%s",
			 fc_fields[i].key);
		schema_check_error(d, at, key, "expected at most 'max_clock' "
				   "(%s), got %s",
				   units_format(lim, sizeof(lim),
						g->max_clock_hz, UNIT_FREQ),
				   units_format(got, sizeof(got), ft,
						UNIT_FREQ));
		rc = -1;
	}
	return rc;
}
