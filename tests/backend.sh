#!/bin/sh
# backend.sh - the measurement backends themselves (src/backend), below
# `llmsim measure`: the mpi backend run for real on 2 and 4 ranks (every
# op checked, the JSON-lines protocol well formed), bad input, the GPU
# flavours on a host without a GPU or library (status 3 / 4), and the
# run-time loader (dl-test).
#
# Environment: LLMSIM (build/llmsim): the backends are in its folder's
# backend/ (build/backend). Skips what was not built (no mpicc, hipcc,
# nvcc), saying so.
set -u
llmsim=${LLMSIM:-build/llmsim}
dir=$(dirname "$llmsim")/backend
. "$(dirname "$0")/lib.sh"

# mpirun as root needs consent; several ranks per core need oversubscribe.
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# protocol FILE POINTS: hello first, end last with the count, every
# point line with the columns and a passed check.
protocol() {
	head -1 "$1" | grep -q '^{"type":"hello","protocol":2,' ||
		bad "$1: no hello line first"
	tail -1 "$1" | grep -q "^{\"type\":\"end\",\"points\":$2}\$" ||
		bad "$1: last line is not the end of $2 points"
	n=$(grep -c '"type":"point"' "$1")
	[ "$n" = "$2" ] || bad "$1: $n points, expected $2"
	for k in op dtype bytes count ranks iters time_us time_min_us \
		time_max_us check; do
		[ "$(grep -c "\"$k\":" "$1")" -ge "$2" ] || bad "$1: key $k missing"
	done
	if grep '"type":"point"' "$1" | grep -v '"check":"ok"' | grep -q .; then
		bad "$1: a point failed its check"
		grep -v '"check":"ok"' "$1" | head -3
	fi
}

mpi=$dir/llmsim-backend-mpi
if [ -x "$mpi" ] && command -v mpirun >/dev/null; then
	# 1K, 8K, 64K (x8): three points per op on 2 ranks; every op's
	# result checked element by element (bk_data.c).
	for op in allreduce allgather reducescatter alltoall alltoallv \
		broadcast reduce sendrecv copy; do
		mpirun -n 2 --oversubscribe "$mpi" --op "$op" --min 1K --max 64K \
			--step-factor 8 --iters 5 --warmup 1 >"$tmp/$op" \
			2>"$tmp/err" || { bad "mpi $op 2 ranks: exit $?"; cat "$tmp/err"; }
		protocol "$tmp/$op" 3
	done
	# 4 ranks (oversubscribed on small machines): uneven all-to-all-v
	# blocks and a reduction over 4, in int32 and double.
	for a in "alltoallv --dtype int32" "allreduce --dtype double" \
		"reducescatter --dtype int32"; do
		# shellcheck disable=SC2086
		mpirun -n 4 --oversubscribe "$mpi" --op $a --min 4K --max 4K \
			--iters 3 --warmup 1 >"$tmp/four" 2>"$tmp/err" ||
			{ bad "mpi $a 4 ranks: exit $?"; cat "$tmp/err"; }
		protocol "$tmp/four" 1
		grep -q '"ranks":4' "$tmp/four" || bad "mpi $a: not 4 ranks"
	done
	# The hello line names the library and the host.
	grep -q '"library":"Open MPI"' "$tmp/allreduce" ||
		bad "hello line without the library"
	# busbw = algbw x 2(p-1)/p = algbw for an all-reduce over 2 ranks.
	grep '"type":"point"' "$tmp/allreduce" | head -1 |
		sed 's/.*"algbw_GBps":\([^,]*\),"busbw_GBps":\([^,]*\),.*/\1 \2/' |
		awk '{ if ($1 != $2) exit 1 }' || bad "allreduce busbw != algbw on 2 ranks"
	# Sizes and counts as rccl-tests prints them (protocol 2): 1K
	# all-gather on 2 ranks is count 128 a rank (the buffer's 256
	# before); 1000 B float is 250 elements, 125 a rank, run as
	# rccl-tests' ALIGN 4: 124 a rank, 992 B (all_gather.cu
	# AllGatherGetCollByteCount @ ae3e635).
	grep -q '"bytes":1024,"count":128,"ranks":2,' "$tmp/allgather" ||
		bad "allgather 1K on 2 ranks: count not 128 a rank"
	mpirun -n 2 --oversubscribe "$mpi" --op allgather --min 1000 --max 1000 \
		--iters 3 --warmup 1 >"$tmp/ag1000" 2>"$tmp/err" ||
		{ bad "mpi allgather 1000 B: exit $?"; cat "$tmp/err"; }
	grep -q '"bytes":992,"count":124,"ranks":2,' "$tmp/ag1000" ||
		{ bad "allgather 1000 B: not rccl-tests' 992 B, count 124"; cat "$tmp/ag1000"; }

	# Bad input: exit 2 with a message, before any MPI work.
	for a in "--op frobnicate" "--op allreduce --min 1M --max 1K" \
		"--op gemm" "--op allreduce --dtype bfloat16" "--min 1K"; do
		# shellcheck disable=SC2086
		"$mpi" $a >"$tmp/out" 2>"$tmp/err"
		rc=$?
		[ "$rc" = 2 ] && [ -s "$tmp/err" ] || bad "mpi '$a': exit $rc, expected 2 with a message"
	done
else
	echo "backend.sh: no mpi backend built (no mpicc): skipping its runs"
fi

# GPU flavours on this host: with no GPU they must say so (3), or that
# the library is missing (4), never crash or print a point.
for f in hip cuda; do
	b=$dir/llmsim-backend-$f
	[ -x "$b" ] || { echo "backend.sh: no $f backend built: skipping"; continue; }
	"$b" --op allreduce --min 1K --max 1K >"$tmp/out" 2>"$tmp/err"
	rc=$?
	case $rc in
	0) grep -q '"type":"point"' "$tmp/out" || bad "$f: exit 0 without points" ;;
	3) grep -q '"reason":"no_device"' "$tmp/out" || bad "$f: status 3 without no_device" ;;
	4) grep -q '"reason":"no_library"' "$tmp/out" || bad "$f: status 4 without no_library" ;;
	*) bad "$f: exit $rc (expected 0, 3 or 4)"; cat "$tmp/err" ;;
	esac
	"$b" --op allreduce --lib /nonexistent/libnccl.so.2 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" = 4 ] && grep -q /nonexistent "$tmp/err" ||
		bad "$f --lib missing: exit $rc, expected 4 naming the file"
	"$b" --op gemm --dtype int8 >"$tmp/out" 2>"$tmp/err"
	[ $? = 2 ] || bad "$f gemm int8: expected exit 2"
done

# The loader on this machine's libraries, where installed.
dl=$dir/dl-test
if [ -x "$dl" ]; then
	"$dl" missing >"$tmp/out" || bad "dl-test missing"
	for lib in nccl cublas; do
		"$dl" "$lib" >"$tmp/out"
		rc=$?
		[ "$rc" = 0 ] || [ "$rc" = 77 ] || bad "dl-test $lib: exit $rc"
	done
fi
exit $fail
