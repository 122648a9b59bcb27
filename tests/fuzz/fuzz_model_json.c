/*
 * fuzz_model_json.c - libFuzzer harness for the JSON front end and the
 * model schema (make fuzz): the input is a Hugging Face config.json.
 *
 * Beyond "no crash, no leak, no undefined behaviour" (the sanitizers),
 * a model that loads must survive both round trips users rely on:
 *   - printed as YAML (`config show`) and loaded back as a model, it
 *     hashes the same;
 *   - printed as canonical JSON (schema_to_json, what the results store
 *     and config_hash use) and loaded back from a .json file, it hashes
 *     the same.
 * A difference aborts, so libFuzzer keeps the input.
 */
#include <cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/schema.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Load the text written to path as a model; compare its hash with h1. */
static void reload(struct config_ctx *cx, const struct schema *s,
		   const char *path, const char *text, const char *h1,
		   const char *how)
{
	void *back = arena_alloc(cx->arena, s->size);
	char h2[65];

	if (!back || config_load(cx, s, path, NULL, 0, back) != 0 ||
	    config_hash(s, back, h2) != 0 || strcmp(h1, h2) != 0) {
		fprintf(stderr, "%s round trip failed for:\n%s\n", how, text);
		abort();
	}
}

static void round_trips(struct config_ctx *cx, const struct schema *s,
			const void *obj)
{
	char *yaml = NULL, *json, h1[65];
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);
	cJSON *j;

	if (!f || config_hash(s, obj, h1) != 0)
		abort();
	schema_print_yaml(f, s, obj, 0);
	fclose(f);
	fuzz_put(fuzz_scratch("shown.yaml"), yaml, len);
	reload(cx, s, fuzz_scratch("shown.yaml"), yaml, h1, "YAML");
	free(yaml);
	j = schema_to_json(s, obj);
	json = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	if (!json)
		abort();
	fuzz_put(fuzz_scratch("shown.json"), json, strlen(json));
	reload(cx, s, fuzz_scratch("shown.json"), json, h1, "JSON");
	cJSON_free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct schema *s = config_kind("model");
	const char *path = fuzz_scratch("config.json");
	struct arena a;
	struct diag d;
	struct config_ctx cx = {&a, &d, NULL};
	void *obj;

	arena_init(&a);
	diag_init(&d, NULL);
	cx.data_root = getenv("LLMSIM_DATA") ? getenv("LLMSIM_DATA")
					     : "tests/data";
	fuzz_put(path, data, size);
	obj = arena_alloc(&a, s->size);
	if (obj && config_load(&cx, s, path, NULL, 0, obj) == 0)
		round_trips(&cx, s, obj);
	arena_release(&a);
	return 0;
}
