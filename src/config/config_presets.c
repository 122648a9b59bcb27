/*
 * config_presets.c - where configs live: the data root, preset lookup
 * and listing, the registry lookup, the kind of a config from where it
 * lives, and the config hash.
 */
#include "config.h"

#include <cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_impl.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/sha256.h"

static const char *const preset_exts[] = {".yaml", ".yml", ".json", NULL};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

int config_is_path(const char *text)
{
	size_t i;

	if (strchr(text, '/'))
		return 1;
	for (i = 0; preset_exts[i]; i++)
		if (ends_with(text, preset_exts[i]))
			return 1;
	return 0;
}

char *config_join(struct arena *a, const char *dir, const char *name)
{
	if (name[0] == '/' || strcmp(dir, ".") == 0)
		return arena_strdup(a, name);
	return arena_printf(a, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/",
			    name);
}

char *config_dir_of(struct arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return arena_strdup(a, ".");
	if (slash == path)
		return arena_strdup(a, "/");
	return arena_strndup(a, path, (size_t)(slash - path));
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory above dir, as text: "build" -> ".", "a/b" -> "a". */
static char *parent_of(struct arena *a, const char *dir)
{
	const char *slash = strrchr(dir, '/');
	const char *last = slash ? slash + 1 : dir;

	if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
		return arena_printf(a, "%s/..", dir);
	return config_dir_of(a, dir);
}

/* The directory the running binary is in: from argv0 when it has a '/',
 * else from /proc/self/exe. NULL when unknown. */
static char *binary_dir(struct arena *a, const char *argv0)
{
	char exe[4096];
	ssize_t n;

	if (argv0 && strchr(argv0, '/'))
		return config_dir_of(a, argv0);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	return config_dir_of(a, exe);
}

const char *config_data_root(struct arena *a, const char *argv0)
{
	const char *env = getenv("LLMSIM_DATA");
	char *dir, *probe;
	int up;

	if (env && env[0])
		return arena_strdup(a, env);
	dir = binary_dir(a, argv0);
	/* build/llmsim sits one level under the root, build/asan/llmsim
	 * two: look up to three levels for the folder holding configs/.
	 * An installed llmsim (PREFIX/bin/llmsim, `make install`) has its
	 * data in PREFIX/share/llmsim: look there at each level too. */
	for (up = 0; dir && up < 3; up++) {
		dir = parent_of(a, dir);
		probe = dir ? arena_printf(a, "%s/configs", dir) : NULL;
		if (probe && is_dir(probe))
			return dir;
		probe = dir ? arena_printf(a, "%s/share/llmsim/configs", dir)
			    : NULL;
		if (probe && is_dir(probe))
			return arena_printf(a, "%s/share/llmsim", dir);
	}
	return arena_strdup(a, ".");
}

const char *config_preset_file(struct config_ctx *cx, const struct schema *s,
			       const char *name, int *oom)
{
	size_t i, k;
	char *path;

	*oom = 0;
	for (i = 0; s->preset_dirs && s->preset_dirs[i]; i++) {
		for (k = 0; preset_exts[k]; k++) {
			path = arena_printf(cx->arena, "%s/%s%s",
					    s->preset_dirs[i], name,
					    preset_exts[k]);
			path = path ? config_join(cx->arena, cx->data_root,
						  path) : NULL;
			if (!path) {
				*oom = 1;
				diag_oom(cx->diag);
				return NULL;
			}
			if (is_file(path))
				return path;
		}
	}
	return NULL;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Add the presets in one directory to *v (n used, cap slots). */
static int scan_dir(struct config_ctx *cx, const char *dir, const char ***v,
		    size_t *n, size_t *cap)
{
	struct dirent *e;
	DIR *dp = opendir(dir);
	int rc = 0;
	size_t k;

	if (!dp)
		return 0;	/* no such folder: no presets */
	while (rc == 0 && (e = readdir(dp)) != NULL) {
		char *path, *name;

		for (k = 0; preset_exts[k]; k++)
			if (ends_with(e->d_name, preset_exts[k]))
				break;
		if (e->d_name[0] == '.' || !preset_exts[k])
			continue;
		path = arena_printf(cx->arena, "%s/%s", dir, e->d_name);
		name = arena_strndup(cx->arena, e->d_name, strlen(e->d_name) -
				     strlen(preset_exts[k]));
		if (!path || !name || arena_grow(cx->arena, (void **)v, cap,
						 *n + 2, sizeof(**v)) != 0)
			rc = -1;
		else if (is_file(path))
			(*v)[(*n)++] = name;
	}
	closedir(dp);
	return rc;
}

const char **config_list_presets(struct config_ctx *cx,
				 const struct schema *s)
{
	const char **v = NULL;
	size_t n = 0, cap = 0, i, k;
	char *dir;

	if (arena_grow(cx->arena, (void **)&v, &cap, 1, sizeof(*v)) != 0)
		return NULL;
	for (i = 0; s->preset_dirs && s->preset_dirs[i]; i++) {
		dir = config_join(cx->arena, cx->data_root, s->preset_dirs[i]);
		if (!dir || scan_dir(cx, dir, &v, &n, &cap) != 0)
			return NULL;
	}
	qsort(v, n, sizeof(*v), by_name);
	for (i = k = 0; i < n; i++)	/* h100.yaml and h100.json: once */
		if (k == 0 || strcmp(v[k - 1], v[i]) != 0)
			v[k++] = v[i];
	v[k] = NULL;
	return v;
}

void config_no_preset(struct config_ctx *cx, const struct schema *s,
		      const char *name, const struct cnode *at,
		      const char *path)
{
	const char **list = config_list_presets(cx, s);
	const char *near = NULL, *file = at ? at->file : NULL;
	int line = at ? at->line : 0, col = at ? at->col : 0;
	char names[2048], where[1024];
	size_t n = 0, k = 0;
	struct stat sb;

	if (!list) {
		diag_oom(cx->diag);
		return;
	}
	for (n = 0; list[n]; n++)
		k += (size_t)snprintf(names + k, k < sizeof(names) ?
				      sizeof(names) - k : 0, "%s%s",
				      n ? ", " : "", list[n]);
	near = schema_closest(name, list, n);
	snprintf(where, sizeof(where), "%s%s%s", path ? "'" : "",
		 path ? path : "", path ? "': " : "");
	diag_error(cx->diag, file, line, col, "%sno %s preset '%s'%s%s%s",
		   where, s->kind, name, near ? ", did you mean '" : "",
		   near ? near : "", near ? "'?" : "");
	if (n)
		diag_note(cx->diag, file, line, col, "%s presets: %s", s->kind,
			  names);
	else
		diag_note(cx->diag, file, line, col, "no %s presets under "
			  "'%s' (set LLMSIM_DATA to the folder holding "
			  "configs/ and workloads/)", s->kind, cx->data_root);
	/* a bare name is a preset, but the user may have meant what is in
	 * this folder under that name */
	if (!at && !path && stat(name, &sb) == 0)
		diag_note(cx->diag, file, line, col, "'%s' in this folder is "
			  "%s; a bare name is a preset: give a config file as "
			  "a path (./%s)", name, S_ISDIR(sb.st_mode) ?
			  "a directory, not a config file" : "a file", name);
}

/* The kind whose preset folder holds the file, else model for .json,
 * else job. */
static const struct schema *kind_of_path(struct arena *a, const char *path)
{
	char real[PATH_MAX], *dir = config_dir_of(a, path);
	size_t i, k, n, len = strlen(path);

	if (dir && realpath(dir, real)) {
		n = strlen(real);
		for (i = 0; config_kinds[i]; i++) {
			const struct schema *s = config_kinds[i];

			for (k = 0; s->preset_dirs && s->preset_dirs[k]; k++) {
				size_t m = strlen(s->preset_dirs[k]);

				if (n > m && real[n - m - 1] == '/' &&
				    strcmp(real + n - m, s->preset_dirs[k]) == 0)
					return s;
			}
		}
	}
	if (len > 5 && strcmp(path + len - 5, ".json") == 0)
		return config_kind("model");
	return config_kind("job");
}

/* A bare preset name: a job's if there is one, else the only kind that
 * has it. NULL when several kinds have it (*several lists them) or out
 * of memory (*oom, reported). */
static const struct schema *kind_of_preset(struct config_ctx *cx,
					   const char *name,
					   const char **several, int *oom)
{
	const struct schema *job = config_kind("job"), *found = NULL;
	const char *list = "";
	size_t i, hits = 0;

	if (config_preset_file(cx, job, name, oom) || *oom)
		return *oom ? NULL : job;
	for (i = 0; config_kinds[i]; i++) {
		if (!config_preset_file(cx, config_kinds[i], name, oom)) {
			if (*oom)
				return NULL;
			continue;
		}
		found = config_kinds[i];
		list = arena_printf(cx->arena, "%s%s%s", list,
				    hits++ ? ", " : "", found->kind);
		if (!list) {
			diag_oom(cx->diag);
			*oom = 1;
			return NULL;
		}
	}
	if (hits > 1) {
		*several = list;
		return NULL;
	}
	return found ? found : job;
}

const struct schema *config_kind_of(struct config_ctx *cx, const char *what,
				    const char **several)
{
	int oom = 0;

	*several = NULL;
	if (config_is_path(what))
		return kind_of_path(cx->arena, what);
	return kind_of_preset(cx, what, several, &oom);
}

const struct schema *config_kind(const char *name)
{
	size_t i;

	for (i = 0; config_kinds[i]; i++)
		if (strcmp(config_kinds[i]->kind, name) == 0)
			return config_kinds[i];
	return NULL;
}

int config_hash(const struct schema *s, const void *obj, char hex[65])
{
	cJSON *json = schema_to_json(s, obj);
	char *text = json ? cJSON_PrintUnformatted(json) : NULL;
	int rc = -1;

	if (text) {
		sha256_hex(text, strlen(text), hex);
		rc = 0;
	}
	cJSON_free(text);
	cJSON_Delete(json);
	return rc;
}
