/*
 * cli_store.c - storing a command's result in the results database, with
 * the resolved config, its hash and the llmsim version.
 *
 * A leaf of the CLI: the commands and cli.c (--version) call it; it calls
 * none of them.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "base/sha256.h"
#include "base/version.h"
#include "config/schema.h"
#include "config/spec_job.h"
#include "store/store.h"

const char *cli_version(void)
{
	return LLMSIM_VERSION_STRING;
}

/* 1 when the data root is an installed copy (PREFIX/share/llmsim). */
static int installed(const char *data_root)
{
	static const char tail[] = "/share/llmsim";
	size_t n = strlen(data_root), t = sizeof(tail) - 1;

	return n >= t && strcmp(data_root + n - t, tail) == 0;
}

char *cli_default_db(const char *data_root)
{
	static const char tail[] = "results/llmsim.db";
	size_t n;
	char *path;

	if (installed(data_root))
		return mem_strdup(tail);
	n = strlen(data_root) + sizeof(tail) + 1;
	path = mem_alloc(n);
	if (path)
		snprintf(path, n, "%s/%s", data_root, tail);
	return path;
}

const char *cli_default_db_in(struct arena *a, const char *data_root)
{
	char *p = cli_default_db(data_root);
	const char *s = p ? arena_strdup(a, p) : NULL;

	mem_free(p);
	return s;
}

/* The result's rows into the open store: the run id, or -1. */
static int64_t put(struct store *st, const struct store_run *run,
		   const struct cli_result *r, struct diag *d)
{
	if (r->meas_info)
		return store_put_measure(st, run, r->meas_info, r->meas,
					 r->nmeas, d);
	if (r->valid)
		return store_put_validation(st, run, r->valid, r->nvalid, d);
	if (r->plan)
		return store_put_plan(st, run, r->plan, r->nplan, d);
	return store_put(st, run, r->step, r->rows, r->nrows, d);
}

int cli_store(const char *db, const char *data_root,
	      const struct cli_result *r, struct diag *d)
{
	cJSON *cfg = r->schema ? schema_to_json(r->schema, r->config) : NULL;
	char *cfg_s = cfg ? cJSON_PrintUnformatted(cfg) :
		      r->schema ? NULL : mem_strdup(r->config_json);
	char *path = db ? NULL : cli_default_db(data_root);
	struct store *st = NULL;
	char hex[65];
	struct store_run run = { r->command,
				 r->schema ? r->schema->kind : r->kind, cfg_s,
				 hex, r->json, cli_version() };
	int64_t id;
	int rc = CLI_FAIL;

	if (!cfg_s || (!db && !path)) {
		diag_oom(d);
		goto out;
	}
	sha256_hex(cfg_s, strlen(cfg_s), hex);	/* as config_hash() */
	if (!db)
		db = path;
	if (!(st = store_open(db, d)))
		goto out;
	if (r->meas_info && r->json &&
	    (id = store_find_measure(st, &run, r->meas_info, d)) != 0) {
		if (id > 0) {
			fprintf(stderr, "llmsim: not stored again: run %lld in "
				"%s holds the same points from the same device "
				"for the same system (imported before?)\n",
				(long long)id, db);
			rc = CLI_OK;
		}
		goto out;
	}
	id = put(st, &run, r, d);
	if (id > 0) {
		fprintf(stderr, "llmsim: stored as run %lld in %s\n",
			(long long)id, db);
		rc = CLI_OK;
	}
out:
	store_close(st);
	mem_free(path);
	if (cfg)
		cJSON_free(cfg_s);
	else
		mem_free(cfg_s);
	cJSON_Delete(cfg);
	return rc;
}

int cli_store_run(const char *db, const char *data_root,
		  const struct job_spec *j, const char *json,
		  const struct store_step *step, struct diag *d)
{
	struct cli_result res = { .command = "run", .schema = &job_schema,
				  .config = j, .json = json, .step = step };

	return cli_store(db, data_root, &res, d);
}
