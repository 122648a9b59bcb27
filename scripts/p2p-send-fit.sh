#!/bin/sh
# scripts/p2p-send-fit.sh - fit a GPU generation's NCCL p2p kernel costs
# (gpu.p2p_channel_send: one channel's send rate, src/network/pipe.c "p2p";
# gpu.p2p_launch: the kernel's fixed cost, src/network/algo.c direct_lat)
# to one SKU's all-to-all tables with `llmsim calibrate` (GSL trust-region
# LM on ln time, k-fold CV), as round 44 (p2p44) fitted the shipped values:
#
#   [PARAMS=KEY[,KEY]] [SIMPLE=1] [LOTO=1] scripts/p2p-send-fit.sh GPU SYSTEM [FOLDS]
#
# GPU: a table name's GPU (aic-ncclVER-GPU-alltoall-Ng.yaml: h100, b200,
# a100 ...); SYSTEM: the system the fit predicts on. PARAMS (default
# gpu.p2p_channel_send,gpu.p2p_launch): the keys fitted, started at 20 GB/s
# and 8.4 us (NCCL's Simple p2p base) whatever SYSTEM's GPU holds (a system
# file written beside the database); gpu.p2p_gpu_send (all of a GPU's
# channels together, round 52) starts at 300 GB/s, below the links. Rows >= 1 KiB (the rows validate
# scores; the send rate moves only the Simple ones); SIMPLE=1: only the
# Simple rows, more than 16 KiB a peer (>= ranks x 32 KiB; NCCL_P2P_LL_
# THRESHOLD, nccl.yaml peer_max_bytes), as the Hopper rate was fitted
# (PARAMS=gpu.p2p_channel_send SIMPLE=1 ... h100 dgx-h100). LOTO=1 also fits each
# table from the others and prints its median |error| (leave one table
# out). Writes its files under ${TMPDIR:-/tmp}.
set -eu
gpu=$1 sys=$2 folds=${3:-5}
params=${PARAMS:-gpu.p2p_channel_send,gpu.p2p_launch}
llmsim=${LLMSIM:-build/llmsim}
tmp=${TMPDIR:-/tmp}/p2p-send-fit.$$
mkdir -p "$tmp"
db=$tmp/fit.db
{
	printf 'preset: %s\ngpu:\n' "$sys"
	case ,$params, in *,gpu.p2p_channel_send,*) echo '  p2p_channel_send: 20 GB/s' ;; esac
	case ,$params, in *,gpu.p2p_launch,*) echo '  p2p_launch: 8.4 us' ;; esac
	case ,$params, in *,gpu.p2p_peer,*) echo '  p2p_peer: 0.2 us' ;; esac
	case ,$params, in *,gpu.p2p_gpu_send,*) echo '  p2p_gpu_send: 300 GB/s' ;; esac
} >"$tmp/start.yaml"
n=0
for t in results/reference/collectives/aic-nccl*-"$gpu"-alltoall-*g.yaml; do
	[ -f "$t" ] || continue
	min=1024
	[ "${SIMPLE:-0}" = 1 ] && min=$(($(sed -n 's/^ranks: *//p' "$t") * 32768))
	python3 scripts/coll-table-jsonl.py "$t" --min-bytes "$min" >"$tmp/t.jsonl"
	"$llmsim" measure --import "$tmp/t.jsonl" --system "$sys" --db "$db" \
		>/dev/null
	n=$((n + 1))
	echo "run $n: $(sed -n 's/^id: *//p' "$t")"
done
[ "$n" -gt 0 ] || { echo "p2p-send-fit.sh: no all-to-all table of $gpu" >&2; exit 2; }
fit() {	# RUNS FOLDS OUT
	"$llmsim" calibrate --db "$db" --run "$1" --system "$tmp/start.yaml" \
		--params "$params" --folds "$2" -o "$3"
}
fit "$(seq -s, 1 "$n")" "$folds" "$tmp/calibrated.yaml"
echo "database $db, calibration file $tmp/calibrated.yaml"
[ "${LOTO:-0}" = 1 ] || exit 0
for i in $(seq 1 "$n"); do
	fit "$(seq 1 "$n" | grep -vx "$i" | paste -sd,)" 0 "$tmp/loto$i.yaml" \
		>/dev/null
	v=$(sed -n 's/^    \(p2p_[a-z_]*\): \(.*\)/\1 \2/p' "$tmp/loto$i.yaml" | paste -sd' ')
	printf 'preset: %s\ncalibration: %s\n' "$sys" "$tmp/loto$i.yaml" \
		>"$tmp/sys$i.yaml"
	printf 'left out run %s: fitted %s; ' "$i" "$v"
	"$llmsim" validate --kind measured --db "$db" --run "$i" --no-store \
		--system "$tmp/sys$i.yaml" 2>/dev/null |
		sed -n 's/.*all rows: \([0-9]* scored\), error median \([^,]*\), |error| median \([0-9.]*%\).*/\1, held out: median \2, |median| \3/p' |
		head -1
done
