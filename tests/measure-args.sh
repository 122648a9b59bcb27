#!/bin/sh
# measure-args.sh - what `llmsim measure` asks its backend for, and what
# it says when the backend fails, with a stand-in backend
# ($LLMSIM_BACKEND_DIR) that records its arguments and exits 3 (no
# device) with or without a protocol error line. Runs on any host.
#
#  1. Sizes: neither --min nor --max: one size, 32 MiB = 33554432 B,
#     as rccl-tests' -b/-e defaults, and a note on stderr saying so;
#     gemm: squares 1024 to 16384; one bound alone keeps the other's
#     default unless that would put them out of order (--min 64M:
#     67108864 both; --max 1K: 1024 both); --min 0 is refused (2).
#  2. mpi and gemm: refused before mpirun starts (2; the backend never
#     runs).
#  3. More sizes than a backend run walks (256: 427 from 1 B to 1 GiB by
#     1.05) are refused before it starts (2; it measured 256, then
#     refused); 31 (by 2) run.
#  4. A backend that fails with no error line: named with its status
#     (a silent exit 3 passed without a word); one with an error line:
#     its message, not the no-line one.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"

mkdir "$tmp/bk"
for b in cuda mpi; do
	cat >"$tmp/bk/llmsim-backend-$b" <<'FAKE'
#!/bin/sh
echo "$*" >"$FAKE_DIR/args"
if [ -n "${FAKE_ERROR:-}" ]; then
	printf '{"type":"error","status":3,"reason":"no_device","message":"%s"}\n' \
		"$FAKE_ERROR"
fi
exit 3
FAKE
	chmod +x "$tmp/bk/llmsim-backend-$b"
done
LLMSIM_BACKEND_DIR=$tmp/bk FAKE_DIR=$tmp
export LLMSIM_BACKEND_DIR FAKE_DIR

# sizes WANT_MIN WANT_MAX WHAT ARGS...: the backend got these sizes
sizes() {
	lo=$1 hi=$2 what=$3
	shift 3
	rm -f "$tmp/args"
	"$llmsim" measure --backend cuda --no-store "$@" >"$tmp/out" 2>"$tmp/err"
	[ $? = 3 ] || bad "$what: exit $?, expected 3 (the stand-in's)"
	grep -q -- "--min $lo --max $hi " "$tmp/args" 2>/dev/null ||
		bad "$what: backend asked for '$(cat "$tmp/args" 2>/dev/null)', expected --min $lo --max $hi"
}
sizes 33554432 33554432 "defaults" --op allreduce
grep -q 'one size, 32 MiB (rccl-tests' "$tmp/err" || bad "defaults: no note on stderr"
sizes 1024 16384 "gemm defaults" --op gemm
grep -q 'one size' "$tmp/err" && bad "gemm defaults: the collectives' note"
sizes 1024 33554432 "--min alone" --op allreduce --min 1K
grep -q 'one size' "$tmp/err" && bad "--min alone: the defaults' note"
sizes 67108864 67108864 "--min past the default --max" --op allreduce --min 64M
sizes 1024 1024 "--max below the default --min" --op allreduce --max 1K
sizes 2048 8192 "both" --op allgather --min 2K --max 8K

status() {	# status WANT WHAT PATTERN ARGS...
	want=$1 what=$2 pat=$3
	shift 3
	rm -f "$tmp/args"
	"$llmsim" measure --no-store "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" = "$want" ] && grep -q -- "$pat" "$tmp/err" ||
		{ bad "$what: exit $got, expected $want and '$pat'"; cat "$tmp/err"; }
}
status 2 "--min 0" "got '0' (it must be at least 1)" --backend cuda --op allreduce --min 0
status 2 "mpi gemm" "the mpi backend does not run gemm" --backend mpi --op gemm \
	--launcher "$tmp/bk/llmsim-backend-mpi"
[ -e "$tmp/args" ] && bad "mpi gemm: the backend ran"
# More sizes than a backend run walks (256): refused before it starts (it
# measured 256 sizes, then refused the 257th): 1 B to 1 GiB by 1.05 is
# 1 + floor(ln(2^30) / ln(1.05)) = 427 sizes; by 2 it is 31, which run.
status 2 "427 sizes" "is more than 256 sizes, a backend run's most" \
	--backend cuda --op allreduce --min 1 --max 1G --step-factor 1.05
[ -e "$tmp/args" ] && bad "427 sizes: the backend ran"
status 3 "31 sizes" "exited with status 3" \
	--backend cuda --op allreduce --min 1 --max 1G --step-factor 2
status 3 "silent backend" "exited with status 3 and no error line" \
	--backend cuda --op allreduce --min 1K --max 1K
FAKE_ERROR="no CUDA device" status 3 "backend with an error line" \
	"cuda backend: no CUDA device" --backend cuda --op allreduce --min 1K --max 1K
grep -q 'no error line' "$tmp/err" && bad "error line: also called silent"
exit $fail
