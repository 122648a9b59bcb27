/*
 * jobj.c - adding keys to the cJSON objects of a result (jobj.h).
 */
#include "jobj.h"

#include <cjson/cJSON.h>
#include <math.h>

int jobj_add(struct cJSON *o, const char *key, struct cJSON *item)
{
	if (item && cJSON_AddItemToObject(o, key, item))
		return 1;
	cJSON_Delete(item);
	return 0;
}

int jobj_add_num(struct cJSON *o, const char *key, double v)
{
	return jobj_add(o, key, cJSON_CreateNumber(v));
}

int jobj_add_finite(struct cJSON *o, const char *key, double v)
{
	return jobj_add_num(o, key, isfinite(v) ? v : 0);
}

int jobj_add_str(struct cJSON *o, const char *key, const char *v)
{
	return jobj_add(o, key, v ? cJSON_CreateString(v) :
				cJSON_CreateNull());
}

struct cJSON *jobj_complete(struct cJSON *o, int ok)
{
	if (ok)
		return o;
	cJSON_Delete(o);
	return NULL;
}
