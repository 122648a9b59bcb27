/*
 * cli.c - global options, the command registry, dispatch.
 *
 * The registry lists every command; each command is its own file
 * (cli_run.c, cli_config.c, ...). Option parsing and usage errors are in
 * cli_opt.c, storing results in cli_store.c: leaves the commands share, so
 * no command calls back into this file.
 *
 * Standard output is checked once, at the end, for every command (as
 * git's and gnulib's close_stdout do): output lost to a full disk or a
 * closed descriptor is a failure (exit 1), never a silent success.
 */
#include "cli.h"

#include "config/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const struct cli_command commands[] = {
	{ "run", "simulate one step of a job and store the result",
	  "usage: llmsim run JOB.yaml [--set key=value]... [--json] [--trace FILE]\n"
	  "                 [--db PATH] [--no-store] [--full] [--require-fit]\n"
	  "                 [--max-memory SIZE] [--max-trace SIZE]\n"
	  "\n"
	  "Resolve the job (model, system, layout) and simulate one step. JOB\n"
	  "is a file, a job preset, or - for standard input. The summary has\n"
	  "the step time, its critical-path breakdown, compute by pass\n"
	  "(forward, backward, optimizer), exposed communication by parallel\n"
	  "dimension, and memory per GPU for every pipeline stage; it starts\n"
	  "with DOES NOT FIT when the job does not fit in memory.\n"
	  "\n"
	  "  --set key=value  override any job field after references are\n"
	  "                   resolved (e.g. --set system.nodes=64)\n"
	  "  --json           print one JSON object instead of a summary\n"
	  "                   (docs/cli-output.md documents every field)\n"
	  "  --trace FILE     write the simulated step as a Chrome trace\n"
	  "                   (opens in Perfetto); - for standard output\n"
	  "  --db PATH        results database (default results/llmsim.db)\n"
	  "  --no-store       do not store the result\n"
	  "  --full           simulate every GPU instead of one per group of\n"
	  "                   identical TP/DP peers (slow at scale)\n"
	  "  --require-fit    exit with status 5 when the job does not fit in\n"
	  "                   GPU memory (for CI gates)\n"
	  "  --max-memory SIZE  refuse (exit 2) a step or a serving run whose\n"
	  "                   simulation would need more memory than SIZE,\n"
	  "                   e.g. '24 GiB'; the estimate is checked before\n"
	  "                   anything is built (default: 80 % of this\n"
	  "                   machine's memory)\n"
	  "  --max-trace SIZE refuse a --trace file larger than SIZE\n"
	  "                   (default 2 GB); a serving run is refused when\n"
	  "                   its fewest possible engine steps pass it, and\n"
	  "                   stopped (exit 2) when its trace does\n",
	  cli_run, NULL },
	{ "sweep", "run a job over a grid of overrides into the database",
	  "usage: llmsim sweep SWEEP.yaml [-j N] [--db PATH] [--shard I/N] [--list]\n"
	  "       llmsim sweep SWEEP.yaml [-j N] --no-store\n"
	  "       mpirun -n R llmsim sweep SWEEP.yaml [-j N] [--db PATH]\n"
	  "\n"
	  "Expand a sweep file (a base job with grid, zip and cases over any\n"
	  "dotted key; see workloads/sweeps/) and simulate every point into\n"
	  "the database, one transaction per point. A point whose resolved\n"
	  "job is already stored for this sweep is skipped, so an interrupted\n"
	  "sweep (even kill -9) resumes where it stopped. A point whose job is\n"
	  "invalid is stored with its reason and does not stop the sweep.\n"
	  "Prints a table with one column per axis.\n"
	  "\n"
	  "  -j, --jobs N     worker processes (default: the CPUs online)\n"
	  "  --db PATH        results database (default results/llmsim.db)\n"
	  "  --shard I/N      run only shard I of N (1 <= I <= N): the points\n"
	  "                   whose index is I-1 modulo N (for Slurm arrays and\n"
	  "                   other batch systems); merge the shards'\n"
	  "                   databases with 'llmsim db merge'\n"
	  "  --list           print the expanded points and run nothing\n"
	  "  --no-store       print the table and keep nothing: the points go\n"
	  "                   to a temporary database, removed at the end (so\n"
	  "                   nothing to resume; not with --db, --shard or\n"
	  "                   under mpirun)\n"
	  "\n"
	  "Under mpirun (in a build with MPI) rank r runs shard r+1 of R into\n"
	  "PATH.rank-r and rank 0 merges them into PATH at the end.\n"
	  "Progress (done/total, rate, ETA) is shown on stderr when it is a\n"
	  "terminal; a line of totals is printed at the end either way.\n"
	  "Exit status: 0 all points stored (invalid ones included), 1 some\n"
	  "point failed at run time (run again to finish), 2 bad input;\n"
	  "Ctrl-C or SIGTERM stops it, says what it stored, and it dies of\n"
	  "the signal (130, 143).\n",
	  cli_sweep, NULL },
	{ "plan", "search parallel layouts for a job and rank them",
	  "usage: llmsim plan JOB.yaml [--top K] [--objective O] [--max-gpus N]\n"
	  "                  [--headroom F] [--set key=value]... [--json]\n"
	  "                  [--db PATH] [--no-store] [--full] [--analytical-only]\n"
	  "                  [--cross-node-tp] [--jobs N]\n"
	  "       llmsim plan JOB.yaml --pd-ratio [--gpus N] [--set key=value]...\n"
	  "                  [--json]\n"
	  "\n"
	  "Search tp, pp, vpp, cp, ep, etp, dp, micro-batch size, recompute,\n"
	  "ZeRO stage, sequence parallelism and pipeline schedule for the job's\n"
	  "model on its system. Every layout that passes the job's layout rules\n"
	  "and fits in memory is estimated in closed form from the same GPU and\n"
	  "fabric models a run uses; the best K are simulated in full and ranked\n"
	  "by that. Prints the ranked table (layout, step time, tokens/s, MFU,\n"
	  "memory per GPU, bound), why the best beats the runner-up, and how\n"
	  "many layouts were pruned and why.\n"
	  "\n"
	  "  --top K          layouts simulated in full (default 20)\n"
	  "  --objective O    throughput (shortest step, default), memory\n"
	  "                   (smallest peak per GPU) or cost (step x GPUs)\n"
	  "  --max-gpus N     search the node count too, up to N GPUs, and\n"
	  "                   print the Pareto front of step time against GPUs\n"
	  "  --headroom F     keep this fraction of usable memory free\n"
	  "                   (5% or 0.05; default 0)\n"
	  "  --set key=value  override a job field; a searched dimension\n"
	  "                   (parallelism.tp, parallelism.pp, parallelism.vpp,\n"
	  "                   parallelism.cp, parallelism.ep, parallelism.etp,\n"
	  "                   parallelism.dp, parallelism.sequence_parallel,\n"
	  "                   parallelism.schedule, training.micro_batch_size,\n"
	  "                   training.recompute, training.zero_stage) is\n"
	  "                   pinned to the value and not searched\n"
	  "  --json           print one JSON object instead of the table\n"
	  "  --db PATH        results database (default results/llmsim.db)\n"
	  "  --no-store       do not store the plan\n"
	  "  --full           simulate every GPU in the full tier (slow)\n"
	  "  --analytical-only  rank by the analytical tier alone\n"
	  "  --cross-node-tp  search tp beyond one node too (pinning tp does)\n"
	  "  --jobs N         processes for the analytical walk and the full\n"
	  "                   runs (default: one per CPU; the results are the\n"
	  "                   same for any N)\n"
	  "\n"
	  "--pd-ratio: for a serving job with serving.slo and the pools' layouts\n"
	  "in serving.disaggregated, every split of the GPUs into prefill and\n"
	  "decode instances and the colocated deployment, each with the largest\n"
	  "Poisson arrival rate meeting the SLO (p99 TTFT, p99 TPOT), best\n"
	  "rate per GPU first.\n"
	  "\n"
	  "  --gpus N         GPUs to split (default: the system's)\n"
	  "  --json           print a JSON array instead of the table\n",
	  cli_plan, NULL },
	{ "collective", "time one collective over a range of sizes (rccl-tests form)",
	  "usage: llmsim collective --system SYSTEM --op OP --ranks N\n"
	  "                        [--min SIZE] [--max SIZE] [--step-factor F]\n"
	  "                        [--dtype T] [--redop R] [--root N] [--group G]\n"
	  "                        [--tester T] [--algo A] [--proto P]\n"
	  "                        [--set key=value]...\n"
	  "                        [--json | --csv] [--db PATH] [--no-store]\n"
	  "       llmsim collective --system SYSTEM --op dispatch|combine --ranks N\n"
	  "                        [--tokens T[,T...]] [--hidden H] [--topk K]\n"
	  "                        [--experts E] [--groups G|nodes --topk-groups TG]\n"
	  "                        [--gate random|round_robin]\n"
	  "                        [--dispatcher D] [--sms N] [--dtype T] ...\n"
	  "\n"
	  "Predict one collective on an idle system over a range of sizes and\n"
	  "print it as rccl-tests / nccl-tests do (size, count, type, redop,\n"
	  "root, then time, algbw, busbw for out-of-place and in-place) with\n"
	  "the algorithm and protocol chosen.\n"
	  "\n"
	  "dispatch and combine are an MoE layer's token exchange over an\n"
	  "expert-parallel group: one row per token count, size = DeepEP's\n"
	  "logical bytes per GPU (tokens x nodes reached across nodes, x GPUs\n"
	  "reached inside one, x top-k without deduplication), algbw = size /\n"
	  "time (DeepEP's \"bottleneck bandwidth\").\n"
	  "\n"
	  "  --system SYSTEM  system preset or file (configs/systems)\n"
	  "  --op OP          allreduce, allgather, reducescatter, alltoall,\n"
	  "                   broadcast, reduce, sendrecv, dispatch, combine\n"
	  "  -g, --ranks N    GPUs 0..N-1 (N >= 2), filling node 0 first (--ngpus)\n"
	  "  -b, --min SIZE   smallest size as rccl-tests takes it: bytes or\n"
	  "                   K/M/G (2^10, 2^20, 2^30); default 32M (--minbytes)\n"
	  "  -e, --max SIZE   largest size; default 32M, or --min's value\n"
	  "                   when that is larger (--maxbytes)\n"
	  "  -f, --step-factor F  multiply the size by F each row (default 2)\n"
	  "  -d, --dtype T    float (default), half, bfloat16, double, int8, ...\n"
	  "                   or bf16, fp16, fp32 (--datatype); dispatch/combine:\n"
	  "                   bfloat16 (default), fp8_e4m3\n"
	  "  -o, --redop R    sum (default), prod, min, max, avg\n"
	  "  -r, --root N     root rank of broadcast and reduce (default 0)\n"
	  "  --group G        broadcast, reduce: G of them (size / G each,\n"
	  "                   rooted at ranks 0..G-1) in one library group,\n"
	  "                   launched as one (default 1)\n"
	  "  --tester T       allgather, reducescatter, alltoall: round a\n"
	  "                   rank's share as nccl-tests (16 B), rccl-tests\n"
	  "                   (4 elements; all-to-all one) or elements (one)\n"
	  "                   do; default: the system library's own suite\n"
	  "  --algo A         ring, tree, direct, rhd, hierarchical, nvls,\n"
	  "                   pairwise, p2p (default: the library's choice)\n"
	  "  --proto P        ll, ll128, simple (default: the library's choice)\n"
	  "  --tokens T,...   dispatch/combine: tokens per GPU, one row each\n"
	  "                   (default 4096)\n"
	  "  --hidden, --topk, --experts  the layer (default 7168, 8, 256)\n"
	  "  --groups G       expert groups for group-limited routing, or\n"
	  "                   'nodes' (one per node, as DeepEP's tests);\n"
	  "                   --topk-groups TG of them per token\n"
	  "  --gate G         routing: random (default: k distinct experts\n"
	  "                   at random) or round_robin (token t takes experts\n"
	  "                   k t .. k t + k - 1 mod E, framework.balanced_gate)\n"
	  "  --dispatcher D   configs/ep preset or file: deepep (default),\n"
	  "                   deepep-ll, hybridep, alltoall, hierarchical;\n"
	  "                   settings after commas, as validate's dispatch\n"
	  "                   cases take them: deepep,sm_rate=20GB/s\n"
	  "  --sms N          SMs the dispatcher's kernels hold (its preset's)\n"
	  "  --set key=value  override a system field (--set system.nodes=2)\n"
	  "  --json, --csv    print JSON (an object around the rows) or CSV\n"
	  "  --db PATH        results database (default results/llmsim.db)\n"
	  "  --no-store       do not store the results\n",
	  cli_collective, NULL },
	{ "measure", "run real collectives and kernels on hardware",
	  "usage: llmsim measure --backend mpi|hip|cuda --op OP [--min SIZE]\n"
	  "                      [--max SIZE] [--step-factor F] [--dtype T]\n"
	  "                      [--ranks N] [--iters N] [--warmup N] [--budget S]\n"
	  "                      [--m M --n N --k K] [--system S] [--set k=v]...\n"
	  "                      [--lib PATH] [--blas PATH] [--launcher CMD]\n"
	  "                      [--json | --csv] [--db PATH] [--no-store]\n"
	  "       llmsim measure --import FILE [--system S] [--db PATH] ...\n"
	  "\n"
	  "Run a measurement backend (docs/measure.md) and print what it measured\n"
	  "as rccl-tests does (size, count, type, time, algbw, busbw, with the\n"
	  "fastest and slowest iteration and the check); store every point with\n"
	  "the host, device, library versions and the system it ran on.\n"
	  "\n"
	  "  --backend B      mpi (MPI collectives on this host's CPUs), hip\n"
	  "                   (HIP + RCCL, rocBLAS), cuda (CUDA + NCCL, cuBLAS)\n"
	  "  --op OP          allreduce, allgather, reducescatter, alltoall,\n"
	  "                   alltoallv, broadcast, reduce, sendrecv, gemm, copy\n"
	  "  --min, --max     sizes as rccl-tests takes them (bytes or K/M/G);\n"
	  "                   default one size, 32M, as rccl-tests (give both\n"
	  "                   to sweep, e.g. --min 8 --max 8G); gemm: the\n"
	  "                   square's dimension, default 1024 to 16384\n"
	  "  --step-factor F  multiply the size by F each row (default 2)\n"
	  "  --dtype T        float (default), half, bfloat16, double, int32, ...\n"
	  "  --ranks N        mpi: processes (default 2); hip, cuda: GPUs of this\n"
	  "                   node (default all)\n"
	  "  --iters, --warmup  timed (default 20) and untimed (5) iterations\n"
	  "  --budget S       seconds per point: fewer iterations (>= 3) past it\n"
	  "  --m, --n, --k    gemm: one shape instead of squares\n"
	  "  --system S       the system it runs on (default for mpi: cpu-host)\n"
	  "  --set key=value  override a field of that system\n"
	  "  --lib, --blas    the collective / BLAS library file to load\n"
	  "                   ($LLMSIM_COLL_LIB, $LLMSIM_BLAS_LIB)\n"
	  "  --launcher CMD   run the backend under CMD (mpirun across nodes;\n"
	  "                   $LLMSIM_MPIRUN replaces mpi's mpirun)\n"
	  "  --import FILE    store protocol lines from FILE ('-': stdin), or\n"
	  "                   nccl-tests / rccl-tests text output (its test's\n"
	  "                   name from the output, else --op)\n"
	  "  --json, --csv    print JSON (the point lines) or CSV\n"
	  "  --db PATH        results database (default results/llmsim.db)\n"
	  "  --no-store       do not store the results\n"
	  "\n"
	  "Exit status: 0, 1 failure (a check failed), 2 bad input, 3 no GPU or\n"
	  "driver, 4 a library (RCCL, NCCL, BLAS, MPI) or the backend missing.\n",
	  cli_measure, NULL },
	{ "validate", "compare predictions with measurements; fail past a tolerance",
	  "usage: llmsim validate [--kind K[,K]...] [--reference DIR] [--db PATH]\n"
	  "                       [--run N] [--system S] [--fastest] [--gates SET]\n"
	  "                       [--tolerance P] [--set KEY=VALUE]... [--jobs N]\n"
	  "                       [--quiet] [--no-store]\n"
	  "\n"
	  "Predict every reference case (results/reference: kernels, collectives,\n"
	  "training, moe, cp, ep dispatch/combine, inference, latency) and every\n"
	  "measurement stored by `llmsim measure`, print measured, predicted and\n"
	  "the error of each row (predicted / measured - 1, in %: of a time, +\n"
	  "means llmsim is slower; of a rate or bandwidth, + means faster),\n"
	  "per-table and overall summaries (median signed and absolute error,\n"
	  "p90, max; rows whose case a constant was fitted on (fitted_on: in\n"
	  "configs/) apart from independent ones), store the rows (view\n"
	  "v_validation), and exit 1 when a table misses its gates\n"
	  "(results/reference/validate.yaml).\n"
	  "A kind's tables print when its last case has run; Ctrl-C or SIGTERM\n"
	  "stops it and says what was running: the kinds that finished are\n"
	  "printed (without the summary), nothing is stored.\n"
	  "\n"
	  "  --kind K         kernel, collective, training, moe, cp, dispatch,\n"
	  "                   measured, inference, latency or all\n"
	  "                   (default all; comma-separated)\n"
	  "  --reference DIR  reference folder (default results/reference)\n"
	  "  --db PATH        database with measurements and where the rows go\n"
	  "                   (default results/llmsim.db)\n"
	  "  --run N          only measure run N\n"
	  "  --system S       predict measurements on S (a preset, a file, a\n"
	  "                   calibration) instead of the system they name\n"
	  "  --fastest        compare the fastest iteration, not the median (a\n"
	  "                   shared, noisy host)\n"
	  "  --gates SET      gate set of validate.yaml (default targets;\n"
	  "                   regression: what make test checks)\n"
	  "  --tolerance P    every table's median |error| gate, e.g. 15% (the\n"
	  "                   sign is required)\n"
	  "  --set KEY=VALUE  override a key of every kernel set's GPU\n"
	  "                   (--set gemm_efficiency_dtype.fp8=0.7): what-ifs\n"
	  "  --jobs N         processes for the training and inference cases\n"
	  "                   (default 2)\n"
	  "  --quiet          print only the summary and the tables that miss\n"
	  "  --no-store       do not store the rows\n"
	  "\n"
	  "Exit status: 0 every gate met, 1 a gate missed or a case failed,\n"
	  "2 bad input (a bad reference file, no measurements in the database).\n",
	  cli_validate, NULL },
	{ "calibrate", "fit fabric and kernel parameters to measurements",
	  "usage: llmsim calibrate --db PATH [--run N[,N]...] [--system S]\n"
	  "                        [--params KEY[,KEY]...] [--start KEY=VALUE]...\n"
	  "                        [--max-params N] [--folds K] [--max-iter N]\n"
	  "                        [--fastest] [-o FILE]\n"
	  "\n"
	  "Fit named parameters of a system (fields `llmsim config help` marks\n"
	  "fittable, e.g. scale_up.link.sustained or\n"
	  "collectives.algorithms.ring.hop_scale_up.simple) to measurements\n"
	  "stored by `llmsim measure`, by nonlinear least squares on the log of\n"
	  "predicted / measured time (GSL). Prints the fitted values with 95%\n"
	  "intervals from the Jacobian, their correlation, the error before and\n"
	  "after, and k-fold cross-validated error (the honest figure); writes a\n"
	  "calibration file a system applies with 'calibration: FILE' (its\n"
	  "predictions then carry error bars: run --json, validate).\n"
	  "\n"
	  "  --db PATH        the measurements (required)\n"
	  "  --run N,...      only these measure runs (default all; given\n"
	  "                   again, adds)\n"
	  "  --system S       the system to fit (default the one the runs name)\n"
	  "  --params K,...   keys to fit; default: up to --max-params (4) that\n"
	  "                   move the predictions, independent of each other\n"
	  "  --start K=V      start the fit of K (one of --params) at V, e.g.\n"
	  "                   gpu.collective_launch=6.6us (a key the system\n"
	  "                   leaves at 0 = none has no start of its own)\n"
	  "  --folds K        cross-validation folds, 2 to 20 (default 5; 0:\n"
	  "                   none; more than the points: one point each)\n"
	  "  --max-iter N     solver iterations before giving up (default 60)\n"
	  "  --fastest        fit the fastest iteration, not the median\n"
	  "  -o FILE          output (default configs/calibrated/SYSTEM.yaml)\n"
	  "\n"
	  "Exit status: 0, 1 the fit did not converge, 2 bad input.\n",
	  cli_calibrate, NULL },
	{ "report", "write the results database as an HTML page of plots",
	  "usage: llmsim report [--db PATH] [-o FILE]\n"
	  "\n"
	  "Write one self-contained HTML file (no network needed to open it)\n"
	  "with plots of what the database holds: step-time breakdown and\n"
	  "memory per GPU of each job, each sweep's curves and heat map along\n"
	  "its axes, collective bus bandwidth against message size (predicted\n"
	  "and measured), predicted against measured time.\n"
	  "\n"
	  "  --db PATH        results database (default results/llmsim.db)\n"
	  "  -o, --output FILE  where to write (default results/report.html;\n"
	  "                   '-' for standard output)\n",
	  cli_report, NULL },
	{ "db", "list, export and merge the results database",
	  "usage: llmsim db views [--db PATH]\n"
	  "       llmsim db export --view NAME [--format csv|json] [--db PATH]\n"
	  "                        [-o FILE]\n"
	  "       llmsim db merge OUT.db IN.db...\n"
	  "\n"
	  "  views   every view of the database with its columns: the stable\n"
	  "          interface for dashboards (docs/results-store.md)\n"
	  "  export  one view as CSV (with a header row) or JSON (an array of\n"
	  "          objects) on standard output, or FILE\n"
	  "  merge   merge databases (sweep shards, MPI ranks) into OUT.db\n"
	  "          without duplicates\n",
	  cli_db, NULL },
	{ "config", "show, list and explain configs",
	  "usage: llmsim config show FILE|PRESET [--kind KIND] [--set key=value]...\n"
	  "                            [--json]\n"
	  "       llmsim config list [KIND]\n"
	  "       llmsim config help [KIND]\n"
	  "       llmsim config import-megatron \"ARGS...\" [--system SYSTEM]\n"
	  "                                    [--gpus N] [--model PRESET]\n"
	  "                                    [--name NAME] | --mapping\n"
	  "\n"
	  "  show   print the fully resolved config: references expanded,\n"
	  "         defaults applied, units normalized and printed\n"
	  "  list   list the shipped presets of one kind or of all kinds\n"
	  "  help   every key of a kind with its type, default, bounds\n"
	  "  import-megatron  a job from a Megatron-LM command line (one\n"
	  "         quoted string, or words after --), printed as YAML;\n"
	  "         --mapping prints which argument sets which key\n"
	  "         (docs/megatron.md); the system defaults to dgx-h100,\n"
	  "         the GPUs to tp x pp x cp\n"
	  "\n"
	  "KIND is gpu, fabric, system, model, job, link, collectives,\n"
	  "framework, engine or ep_comm; show infers it from the file's\n"
	  "directory (configs/gpus, workloads/models, ...), else model\n"
	  "for a .json file (a Hugging Face config.json), else job. --json\n"
	  "prints quantities with their units (\"1980 MHz\"), so its output\n"
	  "loads back: llmsim config show out.json --kind KIND.\n",
	  cli_config, NULL },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const struct cli_command *cli_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int cli_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return 1;
	}
	return 0;
}

/* "unknown command", with the nearest command's name when one is close
 * ('runn': did you mean 'run'?), as an unknown preset or key says. */
static void unknown_command(const char *name)
{
	const char *names[NCOMMANDS];
	const char *near;
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	near = schema_closest(name, names, NCOMMANDS);
	fprintf(stderr, "llmsim: error: unknown command '%s'%s%s%s; run "
		"'llmsim --help' for the list\n", name,
		near ? " (did you mean '" : "", near ? near : "",
		near ? "'?)" : "");
}

void cli_print_usage(FILE *out, const struct cli_command *c)
{
	if (c->usage)
		fputs(c->usage, out);
	else
		fprintf(out, "usage: llmsim %s ...\n\n%s.\n"
			"Not available yet: this command is reserved for %s.\n",
			c->name, c->summary, c->later);
}

static void print_help(FILE *out)
{
	size_t i;

	fputs("usage: llmsim <command> [options]\n"
	      "       llmsim <command> --help\n"
	      "       llmsim --version\n"
	      "\n"
	      "llmsim predicts how long one step of a large language model takes\n"
	      "on a GPU cluster, where the time goes, and whether it fits.\n"
	      "\n"
	      "commands:\n", out);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-11s %s%s\n", commands[i].name,
			commands[i].summary, commands[i].fn ? "" : " (reserved)");
	fputs("\nExit status: 0 success, 1 runtime failure, 2 bad input or usage,\n"
	      "3 (measure) no device, 4 (measure) a library or backend missing,\n"
	      "5 (run --require-fit) the job does not fit in GPU memory.\n"
	      "'llmsim help --man' and 'llmsim help --bash-completion' print the\n"
	      "man page and the bash completion (make install installs them).\n",
	      out);
}

/* Descriptors 0-2 the parent left closed are held open on /dev/null,
 * read-only: nothing the command opens (the results database) takes
 * stdout's number, and a write to a closed stdout fails (EBADF) and is
 * reported by finish_stdout like any other write error. */
static void hold_std_fds(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) == -1 && errno == EBADF)
			(void)open("/dev/null", O_RDONLY);	/* lowest: fd */
}

/* Flush and close stdout; on any write error say so and fail. */
static int finish_stdout(int rc)
{
	int failed = ferror(stdout) != 0, e = 0;

	if (fflush(stdout) != 0) {
		failed = 1;
		e = errno;
	}
	if (fclose(stdout) != 0 && !failed) {
		failed = 1;
		e = errno;
	}
	if (!failed)
		return rc;
	if (e)
		fprintf(stderr, "llmsim: error: cannot write the output: %s\n",
			strerror(e));
	else
		fputs("llmsim: error: cannot write the output\n", stderr);
	return rc == CLI_OK ? CLI_FAIL : rc;
}

static int dispatch(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc < 2) {
		print_help(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		/* `make man`: the page and the completion from this registry */
		if (argc > 2 && strcmp(argv[2], "--man") == 0)
			return cli_doc_man(stdout, commands, NCOMMANDS);
		if (argc > 2 && strcmp(argv[2], "--bash-completion") == 0)
			return cli_doc_completion(stdout, commands, NCOMMANDS);
		if (argc > 2 && (c = cli_command(argv[2])) != NULL) {
			cli_print_usage(stdout, c);
			return CLI_OK;
		}
		if (argc > 2 && strcmp(argv[2], "--help") != 0 &&
		    strcmp(argv[2], "-h") != 0) {	/* `help TYPO`: not the
							 * list, exit 0 */
			unknown_command(argv[2]);
			return CLI_USAGE;
		}
		print_help(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("llmsim %s\n", cli_version());
		return CLI_OK;
	}
	c = cli_command(argv[1]);
	if (!c) {
		unknown_command(argv[1]);
		return CLI_USAGE;
	}
	if (cli_wants_help(argc - 1, argv + 1)) {
		cli_print_usage(stdout, c);
		return CLI_OK;
	}
	if (!c->fn) {
		fprintf(stderr, "llmsim: error: '%s' is not available yet: it is "
			"reserved for %s\n", c->name, c->later);
		return CLI_FAIL;
	}
	return c->fn(argc - 1, argv + 1, argv[0]);
}

int cli_main(int argc, char **argv)
{
	hold_std_fds();
	return finish_stdout(dispatch(argc, argv));
}
