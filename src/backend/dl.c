/*
 * dl.c - loading the collective library (NCCL / RCCL) and the BLAS
 * (cuBLAS / rocBLAS) at run time: coll_dl.h and blas_dl.h.
 *
 * Search order: an explicit path (--lib, --blas), then the environment
 * ($LLMSIM_COLL_LIB, $LLMSIM_BLAS_LIB), then each name of the flavour's
 * list, which holds bare file names (the dynamic loader's search path:
 * LD_LIBRARY_PATH, ldconfig's cache) and the usual install places
 * (/opt/rocm/lib, the CUDA toolkit, pip's nvidia-nccl-cu* wheels).
 * A name with a '*' is a glob.
 */
#define _GNU_SOURCE
#include "coll_dl.h"
#include "blas_dl.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dl_origin(void *handle, const char *fallback, char *out, size_t len)
{
	struct link_map *lm = NULL;

	if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm &&
	    lm->l_name && lm->l_name[0])
		snprintf(out, len, "%s", lm->l_name);
	else
		snprintf(out, len, "%s", fallback);
}

/* dlopen one candidate, expanding a glob; the handle or NULL. */
static void *open_one(const char *name, char *why, size_t len)
{
	glob_t g;
	void *h = NULL;
	size_t i;

	if (!strchr(name, '*')) {
		h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			snprintf(why, len, "%s", dlerror());
		return h;
	}
	if (glob(name, 0, NULL, &g) != 0)
		return NULL;
	for (i = g.gl_pathc; i-- > 0 && !h;)	/* newest version last */
		if (!(h = dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_LOCAL)))
			snprintf(why, len, "%s", dlerror());
	globfree(&g);
	return h;
}

/* Open path, or the env variable's file, or the first name that opens. */
static void *open_lib(const char *path, const char *env, const char *names,
		      char *used, size_t usedlen, char *err, size_t errlen)
{
	char list[2048], why[512] = "not found", *save = NULL, *n;
	const char *e = getenv(env);
	void *h;

	if (path || (e && *e)) {
		const char *p = path ? path : e;

		h = open_one(p, why, sizeof(why));
		if (!h)
			snprintf(err, errlen, "cannot load %s (%s%s): %s", p,
				 path ? "given" : "from $", path ? "" : env, why);
		else
			dl_origin(h, p, used, usedlen);
		return h;
	}
	snprintf(list, sizeof(list), "%s", names);
	for (n = strtok_r(list, ":", &save); n; n = strtok_r(NULL, ":", &save))
		if ((h = open_one(n, why, sizeof(why)))) {
			dl_origin(h, n, used, usedlen);
			return h;
		}
	snprintf(err, errlen, "none of %s could be loaded (last: %s); set $%s "
		 "or pass the path", names, why, env);
	return NULL;
}

/* Resolve every symbol of a table; -1 naming the first missing. */
struct sym {
	const char *name;
	void **slot;
};

static int resolve(void *h, const struct sym *s, size_t n, const char *lib,
		   char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*s[i].slot = dlsym(h, s[i].name);
		if (!*s[i].slot) {
			snprintf(err, errlen, "%s has no %s: not a usable "
				 "NCCL/RCCL/BLAS build", lib, s[i].name);
			return -1;
		}
	}
	return 0;
}

int nc_load(struct nc_lib *l, const char *path, const char *names,
	    char *err, size_t errlen)
{
	const struct sym syms[] = {
		{"ncclGetVersion", (void **)&l->GetVersion},
		{"ncclGetUniqueId", (void **)&l->GetUniqueId},
		{"ncclCommInitRank", (void **)&l->CommInitRank},
		{"ncclCommInitAll", (void **)&l->CommInitAll},
		{"ncclCommDestroy", (void **)&l->CommDestroy},
		{"ncclGetErrorString", (void **)&l->GetErrorString},
		{"ncclAllReduce", (void **)&l->AllReduce},
		{"ncclAllGather", (void **)&l->AllGather},
		{"ncclReduceScatter", (void **)&l->ReduceScatter},
		{"ncclBroadcast", (void **)&l->Broadcast},
		{"ncclReduce", (void **)&l->Reduce},
		{"ncclSend", (void **)&l->Send},
		{"ncclRecv", (void **)&l->Recv},
		{"ncclGroupStart", (void **)&l->GroupStart},
		{"ncclGroupEnd", (void **)&l->GroupEnd},
	};

	memset(l, 0, sizeof(*l));
	l->handle = open_lib(path, "LLMSIM_COLL_LIB", names, l->path,
			     sizeof(l->path), err, errlen);
	if (!l->handle)
		return -1;
	if (resolve(l->handle, syms, sizeof(syms) / sizeof(syms[0]), l->path,
		    err, errlen) != 0) {
		nc_unload(l);
		return -1;
	}
	return 0;
}

void nc_unload(struct nc_lib *l)
{
	if (l->handle)
		dlclose(l->handle);
	l->handle = NULL;
}

void nc_version_text(int code, char *out, size_t len)
{
	if (code >= 20900)
		snprintf(out, len, "%d.%d.%d", code / 10000,
			 code / 100 % 100, code % 100);
	else
		snprintf(out, len, "%d.%d.%d", code / 1000, code / 100 % 10,
			 code % 100);
}

int bl_load(struct bl_lib *l, enum bl_kind kind, const char *path,
	    const char *names, char *err, size_t errlen)
{
	const struct sym cub[] = {
		{"cublasCreate_v2", (void **)&l->create},
		{"cublasDestroy_v2", (void **)&l->destroy},
		{"cublasSetStream_v2", (void **)&l->set_stream},
		{"cublasGemmEx", (void **)&l->cublas_gemm_ex},
	};
	const struct sym rocb[] = {
		{"rocblas_create_handle", (void **)&l->create},
		{"rocblas_destroy_handle", (void **)&l->destroy},
		{"rocblas_set_stream", (void **)&l->set_stream},
		{"rocblas_gemm_ex", (void **)&l->rocblas_gemm_ex},
	};

	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->handle = open_lib(path, "LLMSIM_BLAS_LIB", names, l->path,
			     sizeof(l->path), err, errlen);
	if (!l->handle)
		return -1;
	if (resolve(l->handle, kind == BL_CUBLAS ? cub : rocb, 4, l->path,
		    err, errlen) != 0) {
		bl_unload(l);
		return -1;
	}
	return 0;
}

void bl_unload(struct bl_lib *l)
{
	if (l->handle)
		dlclose(l->handle);
	l->handle = NULL;
}

int bl_gemm(const struct bl_lib *l, void *h, enum bl_dtype dt, int m, int n,
	    int k, const void *a, const void *b, void *c)
{
	static const int cu[] = {CB_R_32F, CB_R_16F, CB_R_16BF};
	static const int roc[] = {RB_R_32F, RB_R_16F, RB_R_16BF};
	const float one = 1, zero = 0;

	if (l->kind == BL_CUBLAS)
		return l->cublas_gemm_ex(h, CB_OP_N, CB_OP_N, m, n, k, &one, a,
					 cu[dt], m, b, cu[dt], k, &zero, c,
					 cu[dt], m, CB_COMPUTE_32F,
					 CB_GEMM_DEFAULT);
	return l->rocblas_gemm_ex(h, RB_OP_N, RB_OP_N, m, n, k, &one, a,
				  roc[dt], m, b, roc[dt], k, &zero, c, roc[dt],
				  m, c, roc[dt], m, RB_R_32F, RB_GEMM_STANDARD,
				  0, 0);
}
