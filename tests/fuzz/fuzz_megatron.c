/*
 * fuzz_megatron.c - libFuzzer harness for `llmsim config import-megatron`
 * (make fuzz FUZZ_TARGETS=megatron): a Megatron-LM command line read
 * into a job (src/cli/cli_megatron.c), on the fixture system test-sys
 * (LLMSIM_DATA, normally tests/data).
 *
 * The first byte picks the form: even, the rest is the command line as
 * one string (split as a shell splits it: quotes, backslashes,
 * continuation lines); odd, the rest is words separated by NUL bytes,
 * given after "--" (each word one argument, as a shell would pass them).
 *
 * Beyond "no crash, no leak, no undefined behaviour": the import exits
 * 0 (the job printed), 2 (bad or incomplete arguments) or 1 (out of
 * memory only), and what it prints on 0 is a job that loads (the import
 * loads it back before printing; here it is read again from what was
 * printed, as a user's next command would), or the --mapping table
 * (where the input names --mapping or a prefix of it).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/diag.h"
#include "cli/cli.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At most this many words in the odd form (a command line of 4 KiB has
 * at most ~2000). */
#define MAX_WORDS 4096

/* Run the import on argv[0..argc) with its stdout in the scratch file
 * out, then stdout back where it was (replay prints its count there);
 * the exit status. */
static int import(struct config_ctx *cx, int argc, char **argv,
		  const char *out)
{
	static int saved = -1;
	int fd, rc;

	fflush(stdout);
	if (saved < 0)
		saved = dup(STDOUT_FILENO);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	FUZZ_CHECK(saved >= 0 && fd >= 0 && dup2(fd, STDOUT_FILENO) >= 0,
		   "cannot redirect stdout to %s", out);
	close(fd);
	rc = cli_import_megatron(cx, argc, argv);
	fflush(stdout);
	FUZZ_CHECK(dup2(saved, STDOUT_FILENO) >= 0, "cannot restore stdout");
	return rc;
}

/* Whether the file at path is --mapping's table (the input named
 * --mapping, or a prefix of it such as --mappi), not a job. */
static int mapping(const char *path)
{
	static const char head[] = "| Megatron-LM argument |";
	char buf[sizeof(head)] = "";
	FILE *f = fopen(path, "r");

	FUZZ_CHECK(f, "cannot read %s", path);
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strcmp(buf, head) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *argv[MAX_WORDS + 8];
	struct arena a;
	struct diag d;
	struct config_ctx cx = {&a, &d, NULL};
	const char *out;
	char *text;
	int argc = 0, rc;
	size_t i, start;

	if (size < 1)
		return 0;
	arena_init(&a);
	diag_init(&d, NULL);
	cx.data_root = getenv("LLMSIM_DATA") ? getenv("LLMSIM_DATA")
					     : "tests/data";
	text = arena_alloc(&a, size);
	FUZZ_CHECK(text, "out of memory");
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	argv[argc++] = "import-megatron";
	argv[argc++] = "--system";
	argv[argc++] = "test-sys";
	if (data[0] % 2 == 0) {
		/* one string: a word with a blank in it, or empty, is the
		 * command line wherever it stands (cli_import_megatron);
		 * else the one operand. NULs end it early. */
		argv[argc++] = text;
	} else {
		argv[argc++] = "--";
		for (i = start = 0; i < size && argc < MAX_WORDS; i++)
			if (i == size - 1 || text[i] == '\0') {
				argv[argc++] = text + start;
				start = i + 1;
			}
	}
	argv[argc] = NULL;
	out = fuzz_scratch("job.yaml");
	rc = import(&cx, argc, argv, out);
	FUZZ_CHECK(rc == CLI_OK || rc == CLI_USAGE || (rc == CLI_FAIL && d.oom),
		   "import-megatron exited %d", rc);
	if (rc == CLI_OK && !mapping(out)) {
		struct job_spec *j = arena_alloc(&a, job_schema.size);

		FUZZ_CHECK(j, "out of memory");
		FUZZ_CHECK(config_load(&cx, &job_schema, out, NULL, 0, j) == 0,
			   "the printed job does not load");
	}
	arena_release(&a);
	return 0;
}
