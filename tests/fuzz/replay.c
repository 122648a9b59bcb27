/*
 * replay.c - run a fuzz harness over saved inputs without libFuzzer, so
 * the corpus the fuzzers grew (tests/fuzz/corpus/) replays under GCC's
 * sanitizers in `make check` and plainly in `make test`.
 *
 *   replay-NAME FILE|DIR...
 *
 * Calls LLVMFuzzerTestOneInput once per file (a directory: every regular
 * file in it, in name order, so a failure replays the same way). The
 * harness aborts on a failed check and the sanitizers on a fault; then
 * the input's path is printed before the process dies. A file that cannot
 * be read is an error. On success prints one line: how many inputs.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_SANITIZED 1
#endif
#endif
#ifdef REPLAY_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input being replayed, for the last words of a dying process. */
static const char *current;

static void name_current(void)
{
	static const char pre[] = "replay: the input was ";

	if (!current)
		return;
	(void)!write(2, pre, sizeof(pre) - 1);
	(void)!write(2, current, strlen(current));
	(void)!write(2, "\n", 1);
}

static void on_signal(int sig)
{
	name_current();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, got;

	if (!f) {
		perror(path);
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *nb;

			cap = cap ? 2 * cap : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				fprintf(stderr, "%s: out of memory\n", path);
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got > 0);
	if (ferror(f)) {
		perror(path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	current = path;
	(void)LLVMFuzzerTestOneInput(buf, len);
	current = NULL;
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Replay every regular file of dir; how many, or -1. */
static long replay_dir(const char *dir)
{
	struct dirent **names;
	char path[4096];
	struct stat st;
	long n = 0;
	int count, i, rc = 0;

	count = scandir(dir, &names, NULL, by_name);
	if (count < 0) {
		perror(dir);
		return -1;
	}
	for (i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(path) != 0)
				rc = -1;
			n++;
		}
		free(names[i]);
	}
	free(names);
	return rc ? -1 : n;
}

int main(int argc, char **argv)
{
	struct stat st;
	long n = 0, k;
	int i;

	signal(SIGABRT, on_signal);
	signal(SIGSEGV, on_signal);
	signal(SIGFPE, on_signal);
#ifdef REPLAY_SANITIZED
	__sanitizer_set_death_callback(name_current);
#endif
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			k = replay_dir(argv[i]);
		} else {
			k = replay_file(argv[i]) == 0 ? 1 : -1;
		}
		if (k < 0)
			return 1;
		n += k;
	}
	printf("%s: %ld inputs replayed\n", argv[0], n);
	return 0;
}
