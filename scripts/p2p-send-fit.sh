#!/bin/sh
# scripts/p2p-send-fit.sh - fit a GPU generation's p2p channel send rate
# (gpu.p2p_channel_send; src/network/pipe.c "p2p") to one SKU's NCCL
# all-to-all tables with `llmsim calibrate` (GSL trust-region LM on ln
# time, k-fold CV), as round 44 (p2p44) fitted the shipped values:
#
#   scripts/p2p-send-fit.sh GPU SYSTEM [FOLDS]
#
# GPU: a table name's GPU (aic-ncclVER-GPU-alltoall-Ng.yaml: h100, b200 ...);
# SYSTEM: the system the fit predicts on (its GPU must carry the key: the
# fit starts at its value). Only the Simple rows are read, the rows the
# rate acts on: more than 16 KiB a peer, i.e. at least ranks x 32 KiB
# (NCCL's NCCL_P2P_LL_THRESHOLD; configs/collectives/nccl.yaml
# peer_max_bytes). LOTO=1 also fits each table's rows from the others and
# prints its median |error| (leave one table out). Writes its database and
# calibration files under ${TMPDIR:-/tmp}.
set -eu
gpu=$1 sys=$2 folds=${3:-5}
llmsim=${LLMSIM:-build/llmsim}
tmp=${TMPDIR:-/tmp}/p2p-send-fit.$$
mkdir -p "$tmp"
db=$tmp/fit.db
n=0
for t in results/reference/collectives/aic-nccl*-"$gpu"-alltoall-*g.yaml; do
	[ -f "$t" ] || continue
	p=$(sed -n 's/^ranks: *//p' "$t")
	python3 scripts/coll-table-jsonl.py "$t" --min-bytes $((p * 32768)) \
		>"$tmp/t.jsonl"
	"$llmsim" measure --import "$tmp/t.jsonl" --system "$sys" --db "$db" \
		>/dev/null
	n=$((n + 1))
	echo "run $n: $(sed -n 's/^id: *//p' "$t")"
done
[ "$n" -gt 0 ] || { echo "p2p-send-fit.sh: no all-to-all table of $gpu" >&2; exit 2; }
fit() {	# RUNS FOLDS OUT
	"$llmsim" calibrate --db "$db" --run "$1" --system "$sys" \
		--params gpu.p2p_channel_send --folds "$2" -o "$3"
}
fit "$(seq -s, 1 "$n")" "$folds" "$tmp/calibrated.yaml"
echo "database $db, calibration file $tmp/calibrated.yaml"
[ "${LOTO:-0}" = 1 ] || exit 0
for i in $(seq 1 "$n"); do
	fit "$(seq 1 "$n" | grep -vx "$i" | paste -sd,)" 0 "$tmp/loto$i.yaml" \
		>/dev/null
	v=$(sed -n 's/^    p2p_channel_send: //p' "$tmp/loto$i.yaml")
	printf 'preset: %s\ncalibration: %s\n' "$sys" "$tmp/loto$i.yaml" \
		>"$tmp/sys$i.yaml"
	printf 'left out run %s: fitted %s; ' "$i" "$v"
	"$llmsim" validate --kind measured --db "$db" --run "$i" --no-store \
		--system "$tmp/sys$i.yaml" 2>/dev/null |
		sed -n 's/.*all rows: \([0-9]* scored\), error median \([^,]*\), |error| median \([0-9.]*%\).*/\1, held out: median \2, |median| \3/p' |
		head -1
done
