#!/bin/sh
# scripts/nvls-reduce-fit.sh - fit an NVLink Switch fabric's in-switch
# reduction rate (fabric reduction_bandwidth: bytes of one GPU's data the
# switches reduce per second, src/network/algo.c nvls_reduce_bound) to
# NVLS all-reduce rows with `llmsim calibrate` (GSL trust-region LM,
# k-fold CV). Round 51 (coll51).
#
#   scripts/nvls-reduce-fit.sh SYSTEM MINBYTES TABLE [TABLE...]
#
# SYSTEM: the system the fit predicts on; MINBYTES: rows from this size
# (whole buffer), where the reduce's rate is most of an NVLS time; TABLE:
# results/reference/collectives/*.yaml all-reduce tables (each imported on
# its own system). START (default 400 GB/s) must lie below the link bound
# (~475 GB/s on 8 B200s), where the reduce rate binds: from above, the
# parameter moves no prediction and calibrate exits 2. Writes its database
# and calibration file under ${TMPDIR:-/tmp}.
set -eu
sys=$1 min=$2
shift 2
llmsim=${LLMSIM:-build/llmsim}
tmp=${TMPDIR:-/tmp}/nvls-reduce-fit.$$
mkdir -p "$tmp"
db=$tmp/fit.db
n=0
for t in "$@"; do
	tsys=$(sed -n 's/^system: *//p' "$t" | sed 's/ *#.*//')
	python3 scripts/coll-table-jsonl.py "$t" --min-bytes "$min" > "$tmp/t.jsonl"
	"$llmsim" measure --import "$tmp/t.jsonl" --system "$tsys" \
		--db "$db" >/dev/null
	n=$((n + 1))
	echo "run $n: $(sed -n 's/^id: *//p' "$t") ($tsys)"
done
"$llmsim" calibrate --db "$db" --run "$(seq -s, 1 "$n")" --system "$sys" \
	--params scale_up.reduction_bandwidth \
	--start scale_up.reduction_bandwidth="${START:-400GB/s}" \
	--folds "${FOLDS:-5}" -o "$tmp/calibrated.yaml"
echo "database $db, calibration file $tmp/calibrated.yaml"
