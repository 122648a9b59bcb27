/*
 * jobj.h - building the JSON objects of a result (`llmsim run --json`):
 * add a key to a cJSON object so that out of memory never leaves a key
 * out silently. Each jobj_add* frees the item it could not add and
 * returns 0; a builder chains them with && and ends with jobj_complete,
 * which frees the half-built object when anything failed.
 *
 * Shared by the step, inference and serving reports (run/, serve/).
 * Depends on cJSON only.
 */
#ifndef LLMSIM_RUN_JOBJ_H
#define LLMSIM_RUN_JOBJ_H

struct cJSON;

/* Add item under key to o, or free it (item may be NULL: out of memory):
 * 1 if added, else 0. */
int jobj_add(struct cJSON *o, const char *key, struct cJSON *item);

/* Add the number v as it is (cJSON prints a non-finite one as null). */
int jobj_add_num(struct cJSON *o, const char *key, double v);

/* Add the number v, or 0 when v is not finite (NaN, inf). */
int jobj_add_finite(struct cJSON *o, const char *key, double v);

/* Add the string v (copied), or null when v is NULL. */
int jobj_add_str(struct cJSON *o, const char *key, const char *v);

/* o when everything was added (ok), else NULL with o freed. */
struct cJSON *jobj_complete(struct cJSON *o, int ok);

#endif
