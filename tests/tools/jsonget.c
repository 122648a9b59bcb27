/*
 * jsonget.c - print one number of a JSON document, for the validation
 * scripts (scripts/validate-inference.sh).
 *
 *   jsonget KEY.PATH < FILE.json
 *
 * KEY.PATH is a dotted path of object keys ("serving.ttft_s.p99"). Prints
 * the number with 17 significant digits. Exit status: 0 printed, 1 the
 * path is absent or not a number, 2 bad usage or JSON that does not parse.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(FILE *f)
{
	size_t cap = 1 << 16, n = 0, got;
	char *buf = malloc(cap), *grown;

	while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap) {
			grown = realloc(buf, cap * 2);
			if (!grown) {
				free(buf);
				return NULL;
			}
			buf = grown;
			cap *= 2;
		}
	}
	if (buf)
		buf[n] = '\0';
	return buf;
}

int main(int argc, char **argv)
{
	char *text, *path, *key, *save = NULL;
	cJSON *root, *node;
	int rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: jsonget KEY.PATH < FILE.json\n");
		return 2;
	}
	text = slurp(stdin);
	root = text ? cJSON_Parse(text) : NULL;
	free(text);
	if (!root) {
		fprintf(stderr, "jsonget: the input is not JSON\n");
		return 2;
	}
	path = strdup(argv[1]);
	node = root;
	for (key = strtok_r(path, ".", &save); key && node;
	     key = strtok_r(NULL, ".", &save))
		node = cJSON_GetObjectItemCaseSensitive(node, key);
	if (node && cJSON_IsNumber(node)) {
		printf("%.17g\n", node->valuedouble);
		rc = 0;
	} else {
		fprintf(stderr, "jsonget: no number at '%s'\n", argv[1]);
	}
	free(path);
	cJSON_Delete(root);
	return rc;
}
