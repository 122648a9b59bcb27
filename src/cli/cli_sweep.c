/*
 * cli_sweep.c - `llmsim sweep SWEEP.yaml [-j N] [--db PATH] [--shard I/N]
 * [--list] [--no-store]`: expand a sweep file and run its points into the
 * database (sweep.h, sweep_run.h); under mpirun, one shard per rank,
 * merged by rank 0 at the end (sweep_mpi.h). --no-store runs into a
 * database in a fresh temporary folder, prints the table and removes it:
 * the workers store each point as they finish and the table is read back
 * from the store, so "not stored" is a store nobody keeps.
 *
 * Exit status: 0 every point ran, was already stored, or is stored as
 * invalid; 1 a runtime failure (some point failed or a worker died: run
 * again to finish); 2 bad input (the sweep file, the base job, usage).
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "sweep/sweep.h"
#include "sweep/sweep_mpi.h"
#include "sweep/sweep_run.h"

struct sweep_cli {
	const char *file;
	const char *db;
	int jobs;
	uint32_t shard, nshards;
	int list;
	int no_store;			/* a temporary database, removed */
	char tmpdir[256];		/* its folder ("" when none) */
};

/* A positive integer of at most max, all of text[0..len). */
static int parse_uint(const char *t, size_t len, unsigned long max,
		      unsigned long *out)
{
	char *end;

	if (len == 0 || t[0] < '0' || t[0] > '9')
		return -1;
	errno = 0;
	*out = strtoul(t, &end, 10);
	return errno || (size_t)(end - t) != len || *out > max ? -1 : 0;
}

/* The most shards a sweep is cut into (a batch array of a million
 * tasks is already far past any scheduler's). */
#define MAX_SHARDS 1000000

/* "I/N" with 1 <= I <= N. Errors name the option as a pseudo-file,
 * "--shard:1:COL", like --set's. */
static int parse_shard(const char *v, struct sweep_cli *o, struct diag *d)
{
	const char *slash = strchr(v, '/');
	unsigned long i, n;

	if (!slash) {
		diag_error(d, "--shard", 1, 1, "expected I/N (shard I of N, "
			   "1 <= I <= N), got '%s'", v);
		return -1;
	}
	if (parse_uint(v, (size_t)(slash - v), MAX_SHARDS, &i) != 0 ||
	    i == 0) {
		diag_error(d, "--shard", 1, 1, "'%s': I must be a whole number "
			   "from 1 to N", v);
		return -1;
	}
	/* the bound is named: 1/99999999999 was told "at least 1" */
	if (parse_uint(slash + 1, strlen(slash + 1), MAX_SHARDS, &n) != 0 ||
	    n == 0) {
		diag_error(d, "--shard", 1, (int)(slash - v) + 2, "'%s': N must "
			   "be a whole number from 1 to %d", v, MAX_SHARDS);
		return -1;
	}
	if (i > n) {
		diag_error(d, "--shard", 1, 1, "'%s': shard %lu of %lu does not "
			   "exist: I runs from 1 to N", v, i, n);
		return -1;
	}
	o->shard = (uint32_t)i;
	o->nshards = (uint32_t)n;
	return 0;
}

static int default_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 && n < 1024 ? (int)n : 1;
}

static int parse(int argc, char **argv, struct sweep_cli *o, struct diag *d)
{
	static const struct option longopts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "db", required_argument, NULL, 'd' },
		{ "shard", required_argument, NULL, 's' },
		{ "list", no_argument, NULL, 'l' },
		{ "no-store", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long j;
	int c;

	memset(o, 0, sizeof(*o));
	o->jobs = default_jobs();
	o->shard = o->nshards = 1;
	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "j:", longopts, "sweep")) != -1) {
		switch (c) {
		case 'j':
			if (parse_uint(optarg, strlen(optarg), 4096, &j) || !j)
				return cli_usage_error("sweep", "-j: expected a "
						       "number of workers from 1 "
						       "to 4096, got '%s'", optarg);
			o->jobs = (int)j;
			break;
		case 'd':
			o->db = optarg;
			break;
		case 's':
			if (parse_shard(optarg, o, d) != 0)
				return CLI_USAGE;
			break;
		case 'l':
			o->list = 1;
			break;
		case 'n':
			o->no_store = 1;
			break;
		default:
			return CLI_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error("sweep", "%s", "no sweep file given");
	if (optind + 1 < argc)
		return cli_usage_error("sweep", "more than one sweep file given "
				       "('%s')", argv[optind + 1]);
	/* run and plan read a job from standard input; a sweep is a file:
	 * its relative paths resolve from its folder, and the same file
	 * run again resumes it */
	if (strcmp(argv[optind], "-") == 0)
		return cli_usage_error("sweep", "%s", "a sweep is read from a "
				       "file, not standard input ('-'): save it "
				       "to a file (its relative paths resolve "
				       "from the file's folder; running the "
				       "same file again resumes it)");
	o->file = argv[optind];
	if (o->no_store && (o->db || o->nshards != 1))
		return cli_usage_error("sweep", "--no-store keeps no database: "
				       "%s has nothing to write to (leave one "
				       "out)", o->db ? "--db" : "--shard");
	return CLI_OK;
}

/* --no-store: a fresh folder for the throw-away database. 0 or -1
 * (reported). */
static int make_tmpdir(struct sweep_cli *o, struct diag *d)
{
	const char *t = getenv("TMPDIR");

	if (!t || !*t)
		t = "/tmp";
	if (snprintf(o->tmpdir, sizeof(o->tmpdir), "%s/llmsim-sweep-XXXXXX",
		     t) >= (int)sizeof(o->tmpdir) || !mkdtemp(o->tmpdir)) {
		diag_error(d, NULL, 0, 0, "--no-store: cannot make a temporary "
			   "folder in %s for the sweep's database: %s", t,
			   strerror(errno));
		o->tmpdir[0] = '\0';
		return -1;
	}
	return 0;
}

/* Remove the temporary folder and what the store left in it (the
 * database, its -wal and -shm files). */
static void remove_tmpdir(struct sweep_cli *o)
{
	char path[512];
	struct dirent *e;
	DIR *dir;

	if (!o->tmpdir[0] || !(dir = opendir(o->tmpdir)))
		return;
	while ((e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", o->tmpdir,
			     e->d_name) < (int)sizeof(path))
			unlink(path);
	}
	closedir(dir);
	rmdir(o->tmpdir);
	o->tmpdir[0] = '\0';
}

/* --list: every point's axis values, one line each. */
static int list_points(const struct sweep *sw, const struct sweep_cli *o,
		       struct arena *a)
{
	const struct cnode **vals = arena_alloc(a, (sw->naxes + 1) *
						sizeof(*vals));
	uint64_t i;
	size_t k;

	if (!vals)
		return CLI_FAIL;
	printf("# sweep %s: %llu points, %zu ax%s%s\n", sw->name,
	       (unsigned long long)sw->npoints, sw->naxes,
	       sw->naxes == 1 ? "is" : "es",
	       sw->plan ? "; the planner at each point" : "");
	printf("point");
	for (k = 0; k < sw->naxes; k++)
		printf("\t%s", sw->axes[k].key);
	printf("\n");
	for (i = o->shard - 1; i < sw->npoints; i += o->nshards) {
		sweep_point_values(sw, i, vals);
		printf("%llu", (unsigned long long)i);
		for (k = 0; k < sw->naxes; k++)
			printf("\t%s", sweep_value_text(a, vals[k]));
		printf("\n");
	}
	return CLI_OK;
}

static const char *db_path(struct arena *a, const struct sweep_cli *o,
			   const char *root)
{
	if (o->tmpdir[0])
		return arena_printf(a, "%s/sweep.db", o->tmpdir);
	return o->db ? o->db : cli_default_db_in(a, root);
}

int cli_sweep(int argc, char **argv, const char *argv0)
{
	struct sweep_opts so;
	struct sweep_tally t;
	struct sweep_cli o = { 0 };
	struct sweep_mpi mpi;
	struct sweep sw;
	struct arena a;
	struct diag d;
	const char *root;
	int rc;

	arena_init(&a);
	diag_init(&d, stderr);
	rc = parse(argc, argv, &o, &d);
	if (rc != CLI_OK)
		goto out;
	if (sweep_load(&a, o.file, &job_schema, &sw, &d) != 0) {
		rc = d.oom ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	if (o.list) {
		rc = list_points(&sw, &o, &a);
		goto out;
	}
	if (o.no_store && make_tmpdir(&o, &d) != 0) {
		rc = CLI_FAIL;
		goto out;
	}
	root = config_data_root(&a, argv0);
	memset(&so, 0, sizeof(so));
	so = (struct sweep_opts){ db_path(&a, &o, root ? root : "."), root,
				  cli_version(), o.jobs, o.shard, o.nshards,
				  isatty(STDERR_FILENO), stdout, o.no_store };
	if (!root || !so.db) {
		diag_oom(&d);
		rc = CLI_FAIL;
		goto out;
	}
	rc = sweep_mpi_begin(&mpi, &so, &a, &d);
	if (rc != 0) {
		rc = rc < 0 ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	/* each rank would make its own folder: rank 0 could not merge */
	if (mpi.active && o.no_store) {
		diag_error(&d, NULL, 0, 0, "--no-store does not run under "
			   "mpirun (the ranks merge their databases into one): "
			   "give --db PATH instead");
		rc = sweep_mpi_end(&mpi, CLI_USAGE, &d);
		goto out;
	}
	rc = sweep_run(&sw, &so, &t, &d);
	rc = sweep_mpi_end(&mpi, rc, &d);
	remove_tmpdir(&o);
	if (t.stopped) {
		/* Die of the signal, so that a shell or make running us
		 * stops too (128 + the signal, as if not caught). */
		fflush(NULL);
		signal(t.stopped, SIG_DFL);
		raise(t.stopped);
		rc = 128 + t.stopped;
	}
out:
	remove_tmpdir(&o);
	arena_release(&a);
	return rc;
}
