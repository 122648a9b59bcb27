/*
 * scratch.c - the fuzz harnesses' scratch directory (scratch.h).
 */
#include "scratch.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/llmsim-fuzz-XXXXXX";

/* Every file the harness left in the directory, then the directory. */
static void remove_scratch(void)
{
	char path[sizeof(dir) + 256];
	struct dirent *e;
	DIR *dp = opendir(dir);

	while (dp && (e = readdir(dp)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		(void)unlink(path);
	}
	if (dp)
		closedir(dp);
	(void)rmdir(dir);
}

const char *fuzz_scratch(const char *name)
{
	static char path[sizeof(dir) + 64];
	static int made;	/* mkdtemp's name may itself end in X */

	if (!made) {
		if (!mkdtemp(dir)) {
			fprintf(stderr, "fuzz: cannot create %s: %s\n", dir,
				strerror(errno));
			abort();
		}
		atexit(remove_scratch);
		made = 1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

void fuzz_put(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "fuzz: cannot write %s: %s\n", path,
			strerror(errno));
		abort();
	}
}
