/*
 * fuzz_config.c - libFuzzer harness for the config loader (make fuzz).
 *
 * The first byte picks what the rest is:
 *   0  a YAML job file, loaded with config_load (references resolve
 *      against LLMSIM_DATA, normally tests/data)
 *   1  a JSON model file (a Hugging Face config.json)
 *   2  a YAML GPU file
 *   3  --set options (one per line) applied to the fixture job test-job
 *
 * Besides "no crash, no leak, no undefined behaviour" (the sanitizers),
 * every input that loads must survive the round trip `config show` makes
 * users rely on: printed as YAML, loaded back as the same kind, it must
 * hash the same. A difference aborts, so libFuzzer keeps the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/diag.h"
#include "base/arena.h"
#include "config/schema.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print obj, load the text back as kind s, compare the hashes. */
static void round_trip(struct config_ctx *cx, const struct schema *s,
		       const void *obj)
{
	char *text = NULL, h1[65], h2[65];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const char *path = fuzz_scratch("shown.yaml");
	void *back = arena_alloc(cx->arena, s->size);

	schema_print_yaml(f, s, obj, 0);
	fclose(f);
	fuzz_put(path, text, len);
	if (!back || config_load(cx, s, path, NULL, 0, back) != 0 ||
	    config_hash(s, obj, h1) != 0 || config_hash(s, back, h2) != 0 ||
	    strcmp(h1, h2) != 0) {
		fprintf(stderr, "round trip failed for:\n%s", text);
		abort();
	}
	free(text);
}

/* Up to 8 --set options, one per line of data. */
static size_t split_sets(char *text, const char **sets)
{
	size_t n = 0;
	char *line = text, *nl;

	while (line && n < 8) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		sets[n++] = line;
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const kinds[] = {"job", "model", "gpu", "job"};
	static const char *const names[] = {"in.yaml", "in.json", "in.yaml"};
	const char *sets[8], *what;
	struct arena a;
	struct diag d;
	struct config_ctx cx = {&a, &d, NULL};
	const struct schema *s;
	char *text;
	size_t nsets = 0;
	void *obj;

	if (size < 1)
		return 0;
	s = config_kind(kinds[data[0] % 4]);
	arena_init(&a);
	diag_init(&d, NULL);
	cx.data_root = getenv("LLMSIM_DATA") ? getenv("LLMSIM_DATA")
					     : "tests/data";
	text = arena_strndup(&a, (const char *)data + 1, size - 1);
	if (data[0] % 4 == 3) {
		what = "test-job";
		nsets = split_sets(text, sets);
	} else {
		what = fuzz_scratch(names[data[0] % 4]);
		fuzz_put(what, data + 1, size - 1);
	}
	obj = arena_alloc(&a, s->size);
	if (config_load(&cx, s, what, sets, nsets, obj) == 0)
		round_trip(&cx, s, obj);
	arena_release(&a);
	return 0;
}
