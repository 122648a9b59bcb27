/*
 * coll_dl.h - NCCL's API (which RCCL shares), declared here and loaded
 * at run time with dlopen, so one build of the hip or cuda backend runs
 * wherever either library is installed, wheel or system package, and
 * builds where neither is.
 *
 * Only the entry points the backend calls. Types are NCCL's ABI:
 * ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums (int);
 * ncclComm_t and cudaStream_t / hipStream_t are pointers; ncclUniqueId is
 * 128 bytes. tests/backend/abi_nccl.c checks these against nccl.h where
 * the header is installed.
 *
 * Which file: the path given (--lib), else $LLMSIM_COLL_LIB, else the
 * flavour's names in the loader's search path, then its usual install
 * directories (coll_dl.c).
 */
#ifndef LLMSIM_BACKEND_COLL_DL_H
#define LLMSIM_BACKEND_COLL_DL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int nc_result;			/* ncclResult_t; 0 = ncclSuccess */
typedef struct nc_comm_s *nc_comm;	/* ncclComm_t */
typedef void *nc_stream;		/* cudaStream_t / hipStream_t */

#define NC_UNIQUE_ID_BYTES 128
typedef struct { char internal[NC_UNIQUE_ID_BYTES]; } nc_unique_id;

/* ncclDataType_t */
enum {
	NC_INT8 = 0, NC_UINT8 = 1, NC_INT32 = 2, NC_UINT32 = 3,
	NC_INT64 = 4, NC_UINT64 = 5, NC_FLOAT16 = 6, NC_FLOAT32 = 7,
	NC_FLOAT64 = 8, NC_BFLOAT16 = 9,
};

/* ncclRedOp_t */
enum { NC_SUM = 0 };

struct nc_lib {
	void *handle;
	char path[512];			/* the file loaded */
	nc_result (*GetVersion)(int *version);
	nc_result (*GetUniqueId)(nc_unique_id *id);
	nc_result (*CommInitRank)(nc_comm *comm, int nranks, nc_unique_id id,
				  int rank);
	nc_result (*CommInitAll)(nc_comm *comms, int ndev, const int *devs);
	nc_result (*CommDestroy)(nc_comm comm);
	const char *(*GetErrorString)(nc_result r);
	nc_result (*AllReduce)(const void *send, void *recv, size_t count,
			       int dtype, int op, nc_comm comm, nc_stream s);
	nc_result (*AllGather)(const void *send, void *recv, size_t sendcount,
			       int dtype, nc_comm comm, nc_stream s);
	nc_result (*ReduceScatter)(const void *send, void *recv,
				   size_t recvcount, int dtype, int op,
				   nc_comm comm, nc_stream s);
	nc_result (*Broadcast)(const void *send, void *recv, size_t count,
			       int dtype, int root, nc_comm comm, nc_stream s);
	nc_result (*Reduce)(const void *send, void *recv, size_t count,
			    int dtype, int op, int root, nc_comm comm,
			    nc_stream s);
	nc_result (*Send)(const void *send, size_t count, int dtype, int peer,
			  nc_comm comm, nc_stream s);
	nc_result (*Recv)(void *recv, size_t count, int dtype, int peer,
			  nc_comm comm, nc_stream s);
	nc_result (*GroupStart)(void);
	nc_result (*GroupEnd)(void);
};

/* Load the library: path, else $LLMSIM_COLL_LIB, else names (a
 * colon-separated list of file names and paths tried in turn).
 * 0, or -1 with the reason in err (every file tried and dlerror's last
 * word). */
int nc_load(struct nc_lib *l, const char *path, const char *names,
	    char *err, size_t errlen);

void nc_unload(struct nc_lib *l);

/* "2.21.5" from ncclGetVersion's code (major*10000 + minor*100 + patch
 * since 2.9; major*1000 + minor*100 + patch before). */
void nc_version_text(int code, char *out, size_t len);

/* The file a dlopen handle came from (dlinfo), into out. */
void dl_origin(void *handle, const char *fallback, char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif
