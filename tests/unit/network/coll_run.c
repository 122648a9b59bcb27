/*
 * coll_run.c - the collective tests' shared runner (coll_run.h).
 */
#include "coll_run.h"

#include "base/diag.h"

const uint32_t coll_ids[64] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
	32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
	48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
};

int coll_desc_try(const struct system_spec *s, const struct coll_desc *c,
		  struct net_coll_result *out)
{
	struct diag d;
	struct net *n;
	int rc;

	diag_init(&d, NULL);
	n = net_new(s, NULL, &d);
	cr_assert_not_null(n);
	rc = net_collective_time(n, c, out, &d);
	net_free(n);
	return rc;
}

struct net_coll_result coll_desc_timed(const struct system_spec *s,
				       const struct coll_desc *c)
{
	struct net_coll_result out;

	cr_assert_eq(coll_desc_try(s, c, &out), 0,
		     "%s over %u GPUs should run", coll_op_names[c->op],
		     c->ngpus);
	return out;
}

int coll_try_time(const struct system_spec *s, const struct run *r,
		  struct net_coll_result *out)
{
	struct coll_desc c = { r->op, r->bytes,
			       r->gpus ? r->gpus : coll_ids, r->n,
			       r->a2a, r->algo, -1, r->replicas, 0, NULL, 0, 0, 0 };

	return coll_desc_try(s, &c, out);
}

struct net_coll_result coll_timed(const struct system_spec *s,
				  const struct run *r)
{
	struct net_coll_result out;

	cr_assert_eq(coll_try_time(s, r, &out), 0,
		     "%s over %u GPUs should run", coll_op_names[r->op], r->n);
	return out;
}

void coll_expect(const struct system_spec *s, const struct run *r,
		 const char *proto, double time_s)
{
	struct net_coll_result out = coll_timed(s, r);

	cr_assert_str_eq(out.protocol, proto);
	EQ_REL(out.time_s, time_s, 1e-6);
}
