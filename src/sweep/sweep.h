/*
 * sweep.h - a sweep file: a base job and axes over any of its dotted
 * keys, expanded into points (one job each).
 *
 *   name: nic-x-fabric                 # optional; default: the file's stem
 *   base: ../jobs/llama3-70b-h100-64.yaml   # preset, path or inline mapping
 *   set:                               # fixed overrides (optional)
 *     training.global_batch_size: 512
 *   grid:                              # cartesian product, in file order
 *     system.scale_out.link: [ethernet-400g, ethernet-800g]
 *     system.nodes: [8, 16, 32]
 *   zip:                               # lock-step lists of equal length
 *     parallelism.tp: [2, 4, 8]        # (or a list of such mappings:
 *     parallelism.pp: [8, 4, 2]        #  several independent groups)
 *   cases:                             # explicit points
 *     - {system.gpu: h100}
 *     - {system.gpu: h200, training.micro_batch_size: 2}
 *   plan: false                        # true: the planner at each point
 *                                      # ({top: K, objective: O}: with options)
 *
 * Points. The dimensions are, in this order, `cases` (one dimension of
 * as many positions as cases), each `grid` key, each `zip` group; the
 * points are their cartesian product, the last dimension varying
 * fastest. Point i's position along each dimension is i written in the
 * mixed radix of the dimensions' lengths. With no cases, no grid and no
 * zip there is nothing to sweep, which is an error.
 *
 * Axes. Every distinct key that a dimension sets is an axis (a column of
 * the sweep's table and view). A key may appear in several cases, but in
 * one dimension only. Values are YAML exactly as in a job file, so units
 * work (`system.scale_out.nic_bandwidth: [400 Gbit/s, 800 Gbit/s]`), a
 * reference may be a preset, a path (relative to the sweep file) or an
 * inline mapping.
 *
 * Overrides. A point's job is the base with the `set` overrides and the
 * point's axis values deep-merged onto it (config.h), shallow keys
 * first (then in file order), so `system: dgx-h100` and `system.nodes:
 * 16` in one point both take effect.
 *
 * Checks (every one reported at file:line:col before giving up): unknown
 * keys in the sweep file, an axis on a key the job does not have (with
 * "did you mean"), a value that is not a list, an empty list or an empty
 * grid/zip/cases, zip lists of unequal length, a key in two dimensions,
 * two keys with one column name, a `plan:` that is not true, false or
 * {top: K, objective: O}. A point whose job is invalid (a layout that does not divide
 * the GPUs, a preset that does not exist) is not an error of the sweep
 * file: the sweep stores it with its reason.
 *
 * Depends on config (cnode.h, schema.h), base (mem.h, diag.h).
 */
#ifndef LLMSIM_SWEEP_SWEEP_H
#define LLMSIM_SWEEP_SWEEP_H

#include <stddef.h>
#include <stdint.h>

struct arena;
struct cnode;
struct cJSON;
struct diag;
struct schema;

/* At most this many points in one sweep (a typo such as 1..10^6 in a
 * grid of five axes is caught before anything runs). */
#define SWEEP_MAX_POINTS 10000000ull

/* One swept key: a column of the sweep's results. */
struct sweep_axis {
	const char *key;		/* dotted key, "system.nodes" */
	const char *column;		/* its column: '.' and '-' as '_' */
	const struct cnode *at;		/* where it is first written */
	int depth;			/* dots in key */
	size_t dim;			/* the dimension that sets it */
};

enum sweep_dim_kind {
	SWEEP_CASES,
	SWEEP_GRID,
	SWEEP_ZIP
};

/* One dimension of the product. */
struct sweep_dim {
	enum sweep_dim_kind kind;
	size_t n;			/* positions along it (>= 1) */
	size_t naxes;			/* axes it sets */
	size_t *axis;			/* [naxes] indices into sweep.axes */
	const struct cnode **val;	/* [naxes * n]: val[k * n + p] is axis
					 * k's value at position p; NULL when
					 * a case leaves the axis out */
};

/* A fixed override (`set:`). */
struct sweep_set {
	const char *key;		/* dotted key */
	const struct cnode *at;		/* the key in the file */
	const struct cnode *value;
	int depth;			/* dots in key */
};

struct sweep {
	const char *file;		/* the sweep file as given */
	const char *name;		/* `name:` or the file's stem */
	const struct cnode *base;	/* scalar (preset or path) or mapping */
	struct sweep_set *set;		/* [nset] fixed overrides */
	size_t nset;
	struct sweep_axis *axes;	/* [naxes] in dimension order */
	size_t naxes;
	struct sweep_dim *dims;		/* [ndims] cases, grid keys, zip groups */
	size_t ndims;
	uint64_t npoints;		/* product of the dimensions' lengths */
	int plan;			/* run the planner at each point */
	const struct cnode *plan_at;	/* the `plan:` value, or NULL */
	int plan_top;			/* plan.top: layouts simulated in
					 * full; 0 = the planner's default */
	int plan_objective;		/* plan.objective (enum
					 * plan_objective); -1 = default */
};

/*
 * Load and check the sweep file at path against the job schema `job`
 * (the kind the points are). Everything lives in a. Returns 0, or -1
 * after reporting every error to d (d->oom when out of memory).
 */
int sweep_load(struct arena *a, const char *path, const struct schema *job,
	       struct sweep *out, struct diag *d);

/* The value of every axis at point i (< npoints) into vals[naxes]; NULL
 * where the point leaves an axis at the base's value. */
void sweep_point_values(const struct sweep *sw, uint64_t i,
			const struct cnode **vals);

/*
 * The override trees of point i ({system: {nodes: 16}}, one per set key
 * and per axis the point sets, positioned where the sweep file writes
 * them), in the order they apply, in *out (an array in a) and their
 * number in *n. 0, or -1 when out of memory (reported).
 */
int sweep_point_overrides(struct arena *a, const struct sweep *sw,
			  uint64_t i, struct cnode ***out, size_t *n,
			  struct diag *d);

/* The point's axis values as a JSON object keyed by the axes' keys in
 * axis order: plain numbers, true/false and null as JSON, anything else
 * (a quantity with a unit, a name) as its text, mappings and lists as
 * JSON; axes the point leaves out are absent. NULL when out of memory. */
struct cJSON *sweep_point_json(const struct sweep *sw, uint64_t i);

/* A scalar or tree as short one-line text for tables ("16", "400 Gbit/s",
 * "{preset: dgx-h100, nodes: 2}"), in a; "-" for NULL. NULL when out of
 * memory. */
const char *sweep_value_text(struct arena *a, const struct cnode *v);

#endif
