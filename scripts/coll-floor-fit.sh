#!/bin/sh
# scripts/coll-floor-fit.sh - fit a GPU generation's ring LL floor
# (gpu.collective_launch, gpu.collective_ll_step) to the all-gather and
# reduce-scatter nccl-tests tables of its GPUs with `llmsim calibrate`
# (GSL trust-region LM, k-fold CV), starting from NCCL's tuner line
# (ring LL base 6.6 us, hop 0.6 us). Round 44 (floor44).
#
#   scripts/coll-floor-fit.sh GPU[,GPU...] SYSTEM [MAXBYTES] [FOLDS]
#
# GPU: a table name's GPU (aic-ncclVER-GPU-OP-Ng.yaml: a100, h100, b200 ...);
# SYSTEM: the system the fit predicts on (each table's own system is used
# at import; calibrate lays every run out on SYSTEM); MAXBYTES: rows up to
# this size (whole buffer; default 65536, where the fixed costs are most of
# a ring LL time: 80-100 % on 2-8 GPUs; 0 = all).
# The all-reduce tables are not read: they stay the out-of-sample check.
# Writes its database and calibration file under ${TMPDIR:-/tmp}.
set -eu
gpus=$1 sys=$2 max=${3:-65536} folds=${4:-5}
llmsim=${LLMSIM:-build/llmsim}
tmp=${TMPDIR:-/tmp}/coll-floor-fit.$$
mkdir -p "$tmp"
db=$tmp/fit.db
n=0
for g in $(echo "$gpus" | tr , ' '); do
	for t in results/reference/collectives/aic-nccl*-"$g"-allgather-*g.yaml \
		 results/reference/collectives/aic-nccl*-"$g"-reducescatter-*g.yaml; do
		[ -f "$t" ] || continue
		tsys=$(sed -n 's/^system: *//p' "$t")
		python3 scripts/coll-table-jsonl.py "$t" --max-bytes "$max" > "$tmp/t.jsonl"
		"$llmsim" measure --import "$tmp/t.jsonl" --system "$tsys" \
			--db "$db" >/dev/null
		n=$((n + 1))
		echo "run $n: $(sed -n 's/^id: *//p' "$t") ($tsys)"
	done
done
fit() {	# RUNS OUT: fit on RUNS from NCCL's tuner line, write OUT
	"$llmsim" calibrate --db "$db" --run "$1" --system "$sys" \
		--params "gpu.collective_launch,gpu.collective_ll_step$chp" \
		--start gpu.collective_launch=6.6us \
		--start gpu.collective_ll_step=0.6us $chs --folds "$folds" -o "$2"
}
# CHANNEL=1 fits the ring LL channel rate too (gpu.collective_ll_channel,
# round 50), from CHANNEL_START (default 10 GB/s: start where it binds); give it MAXBYTES through the LL sizes (1M).
chp= chs=
if [ "${CHANNEL:-0}" = 1 ]; then
	chp=,gpu.collective_ll_channel
	chs="--start gpu.collective_ll_channel=${CHANNEL_START:-10GB/s}"
fi
fit "$(seq -s, 1 "$n")" "$tmp/calibrated.yaml"
echo "database $db, calibration file $tmp/calibrated.yaml"
# Leave one table out: each table predicted by the fit to the others
# (LOTO=1), its median |error| over its rows.
[ "${LOTO:-0}" = 1 ] || exit 0
for i in $(seq 1 "$n"); do
	fit "$(seq 1 "$n" | grep -vx "$i" | paste -sd,)" "$tmp/loto$i.yaml" \
		>/dev/null
	printf 'preset: %s\ncalibration: %s\n' "$sys" "$tmp/loto$i.yaml" \
		> "$tmp/loto$i-sys.yaml"
	"$llmsim" validate --kind measured --db "$db" --run "$i" \
		--system "$tmp/loto$i-sys.yaml" --no-store 2>/dev/null |
		sed -n "s/^== measure run \([0-9]*\): [^(]*(1 x \([0-9]*\)).* on \([^ ]*\) .*/loto run \1 \3/p; s/^  all rows: \(.*\)/    \1/p" |
		paste - -
done
