# Measurement backends (src/backend, docs/measure.md): programs of their
# own, each built by its own compiler and only where that compiler is
# installed. Included by the Makefile; `make` builds what it can:
#
#   $(BUILD)/backend/llmsim-backend-mpi    mpicc (Debian: libopenmpi-dev)
#   $(BUILD)/backend/llmsim-backend-hip    hipcc (Debian: hipcc)
#   $(BUILD)/backend/llmsim-backend-cuda   nvcc ($CUDA_HOME/bin, PATH or
#                                          /usr/local/cuda/bin)
#
# With mpicc present the GPU flavours are built with MPI too
# (-DBK_WITH_MPI): one process per node, the NCCL id over MPI. They load
# RCCL / NCCL and rocBLAS / cuBLAS at run time, so none is needed to build.
# Sanitizers are for llmsim itself: backends build without them.
#
# Overrides (config.mak or the command line): MPICC, HIPCC, NVCC,
# HIP_ARCH (offload targets; default: the newest of gfx942/gfx940 hipcc
# accepts, and gfx90a), CUDA_GENCODE.

BK_DIR := $(BUILD)/backend
# Objects beside the library's (scripts/check-layers.sh reads them there).
BK_OBJ := $(BUILD)/obj/src/backend
BK_SRC := src/backend
BK_CFLAGS = $(BASE_CFLAGS) $(WARN) -MMD -MP
BK_COMMON := $(BK_OBJ)/bk_main.o $(BK_OBJ)/bk_data.o
BK_BINS :=

MPICC ?= $(shell command -v mpicc 2>/dev/null)
HIPCC ?= $(shell command -v hipcc 2>/dev/null)
NVCC ?= $(shell for n in "$$CUDA_HOME/bin/nvcc" "$$(command -v nvcc)" \
	/usr/local/cuda/bin/nvcc; do [ -x "$$n" ] && { echo "$$n"; break; }; \
	done)

$(BK_OBJ)/%.o: $(BK_SRC)/%.c
	@mkdir -p $(@D)
	$(CC) $(BK_CFLAGS) -c $< -o $@

ifneq ($(MPICC),)
BK_BINS += $(BK_DIR)/llmsim-backend-mpi
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS := $(shell $(MPICC) --showme:link 2>/dev/null)
# The C API only: no MPI C++ bindings in a C++ translation unit.
BK_GPU_MPI := -DBK_WITH_MPI -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1 \
	$(MPI_CFLAGS)

$(BK_OBJ)/mpi.o: $(BK_SRC)/mpi.c
	@mkdir -p $(@D)
	$(MPICC) $(BK_CFLAGS) -c $< -o $@

$(BK_DIR)/llmsim-backend-mpi: $(BK_OBJ)/mpi.o $(BK_COMMON)
	@mkdir -p $(@D)
	$(MPICC) -o $@ $^ -lm
endif

ifneq ($(HIPCC),)
BK_BINS += $(BK_DIR)/llmsim-backend-hip
# hipcc asks the GPU which target to build for unless told; probe once
# which of MI300's names this hipcc knows (clang 15 has gfx940, not 942).
HIP_ARCH ?= $(shell f=$(BK_DIR)/hip-arch; [ -s $$f ] && cat $$f || { \
	mkdir -p $(BK_DIR); echo 'int x;' > $(BK_DIR)/probe.hip; a=gfx90a; \
	for t in gfx942 gfx940; do if $(HIPCC) -x hip --offload-arch=$$t \
	-c $(BK_DIR)/probe.hip -o /dev/null >/dev/null 2>&1; then \
	a="$$a $$t"; break; fi; done; echo $$a | tee $$f; })
HIP_FLAGS = -x hip $(addprefix --offload-arch=,$(HIP_ARCH)) -O2 -g \
	-Wall -Wextra -Werror $(BK_GPU_MPI) -MMD -MP

$(BK_OBJ)/gpu-hip.o: $(BK_SRC)/gpu.cu
	@mkdir -p $(@D)
	$(HIPCC) $(HIP_FLAGS) -c $< -o $@

$(BK_DIR)/llmsim-backend-hip: $(BK_OBJ)/gpu-hip.o $(BK_OBJ)/dl.o $(BK_COMMON)
	@mkdir -p $(@D)
	$(HIPCC) $(addprefix --offload-arch=,$(HIP_ARCH)) -o $@ $^ \
		$(MPI_LIBS) -ldl -lm
endif

ifneq ($(NVCC),)
BK_BINS += $(BK_DIR)/llmsim-backend-cuda $(BK_OBJ)/abi_nccl.o
CUDA_INC := $(dir $(NVCC))../include
# Ampere and Hopper code, and Hopper PTX for anything newer.
CUDA_GENCODE ?= -gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=[sm_90,compute_90]
NV_FLAGS = $(CUDA_GENCODE) -O2 -g -Xcompiler -Wall,-Wextra,-Werror \
	$(BK_GPU_MPI) -MMD -MP

$(BK_OBJ)/gpu-cuda.o: $(BK_SRC)/gpu.cu
	@mkdir -p $(@D)
	$(NVCC) $(NV_FLAGS) -c $< -o $@

$(BK_DIR)/llmsim-backend-cuda: $(BK_OBJ)/gpu-cuda.o $(BK_OBJ)/dl.o $(BK_COMMON)
	@mkdir -p $(@D)
	$(NVCC) $(CUDA_GENCODE) -o $@ $^ $(filter -L% -l%,$(MPI_LIBS)) -ldl -lm

# Our NCCL and cuBLAS declarations against the real headers (compile-time
# checks only: the object is not linked anywhere).
$(BK_OBJ)/abi_nccl.o: tests/backend/abi_nccl.c $(BK_SRC)/coll_dl.h \
		$(BK_SRC)/blas_dl.h
	@mkdir -p $(@D)
	@if [ -f $(CUDA_INC)/nccl.h ]; then \
		echo "$(CC) ... -c tests/backend/abi_nccl.c"; \
		$(CC) $(BK_CFLAGS) -isystem $(CUDA_INC) -Isrc/backend -c $< -o $@; \
	else echo "abi_nccl: no nccl.h under $(CUDA_INC), not checked"; \
		touch $@; fi
endif

# A test program for the loader (tests/backend.sh).
$(BK_DIR)/dl-test: $(BK_OBJ)/dl_test.o $(BK_OBJ)/dl.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ -ldl

$(BK_OBJ)/dl_test.o: tests/backend/dl_test.c
	@mkdir -p $(@D)
	$(CC) $(BK_CFLAGS) -Isrc/backend -c $< -o $@

BK_BINS += $(BK_DIR)/dl-test

backends: $(BK_BINS)

-include $(wildcard $(BK_OBJ)/*.d)
