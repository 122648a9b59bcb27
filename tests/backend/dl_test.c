/*
 * dl_test.c - the backends' run-time loader (src/backend/dl.c) on this
 * machine, for tests/backend.sh:
 *
 *   dl-test missing          a path that is not there: -1 and a reason
 *                            naming it
 *   dl-test nccl [PATH]      load NCCL (or RCCL) by its usual names or
 *                            PATH; print its version and file
 *   dl-test cublas [PATH]    load cuBLAS; print its file
 *
 * Exit 0 when the call behaves as described, 1 when it does not, 77
 * when the library is not installed here (the test skips).
 */
#include <stdio.h>
#include <string.h>

#include "blas_dl.h"
#include "coll_dl.h"

#define NCCL_NAMES "libnccl.so.2:/usr/local/cuda/lib/libnccl.so.2:" \
	"/usr/local/cuda/lib64/libnccl.so.2:librccl.so.1:/opt/rocm/lib/librccl.so.1"

int main(int argc, char **argv)
{
	char err[1024] = "", ver[32];
	struct nc_lib nc;
	struct bl_lib bl;
	int code = 0;

	if (argc >= 2 && strcmp(argv[1], "missing") == 0) {
		if (nc_load(&nc, "/nonexistent/libnccl.so.2", NCCL_NAMES, err,
			    sizeof(err)) == 0 || !strstr(err, "/nonexistent")) {
			fprintf(stderr, "dl-test: loaded a missing file (%s)\n", err);
			return 1;
		}
		printf("missing: %s\n", err);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "nccl") == 0) {
		if (nc_load(&nc, argc > 2 ? argv[2] : NULL, NCCL_NAMES, err,
			    sizeof(err)) != 0) {
			printf("skip: %s\n", err);
			return 77;
		}
		if (nc.GetVersion(&code) != 0 || code < 2000) {
			fprintf(stderr, "dl-test: ncclGetVersion gave %d\n", code);
			return 1;
		}
		nc_version_text(code, ver, sizeof(ver));
		printf("nccl %s from %s\n", ver, nc.path);
		nc_unload(&nc);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "cublas") == 0) {
		if (bl_load(&bl, BL_CUBLAS, argc > 2 ? argv[2] : NULL,
			    "libcublas.so.13:libcublas.so.12:libcublas.so:"
			    "/usr/local/cuda/lib64/libcublas.so", err,
			    sizeof(err)) != 0) {
			printf("skip: %s\n", err);
			return 77;
		}
		printf("cublas from %s\n", bl.path);
		bl_unload(&bl);
		return 0;
	}
	fprintf(stderr, "usage: dl-test missing | nccl [PATH] | cublas [PATH]\n");
	return 2;
}
