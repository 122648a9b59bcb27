/*
 * maxmin_batch.c - variables added as one batch, list by list.
 *
 * Adding a variable appends one entry to the list of each constraint it
 * uses. The flows of a replayed all-to-all that a TP flow evicts (crun.c)
 * are adopted together: 128 flows of ~176 links each on ~1,200 lists,
 * ~19 entries a list. Appended flow after flow, every entry lands on a
 * list line that has gone cold since the previous flow's (cachegrind on
 * DeepSeek-V3 with ep 128: 107 M of 168 M appends missed L1), and this
 * was a third of the run.
 *
 * Why the batch is the sequence. Appending the k variables in order
 * leaves on constraint c's list its entries before the batch, then the
 * batch's variables that use c in batch order, at positions n_c, n_c +
 * 1, ...; each variable's element i records its constraint, that
 * position and its coefficient; busy[c] is the new length; ids come
 * from the free slots in the same order (mm_var_slot), the fresh list
 * in batch order, the rate alone is min(bound, C_i / a_i), the min of
 * the same doubles. The transposed index gives, per constraint, its
 * batch entries in batch order, so writing each list's entries at once
 * makes the same lists, positions and counts. With each variable's
 * constraints ascending (plan.c sorts a flow's links) and the index's
 * constraints ascending, each variable's elements are written in order
 * too. The index is trusted to match the variables' constraints (the
 * count of its entries is checked): its pass only stores. Memory is
 * found before anything changes: the id slots, element
 * arrays, list room and the fresh list's room (room already there is
 * only capacity), so a failure adds nothing.
 */
#include "maxmin_impl.h"

#include "base/diag.h"

double mm_links_alone(const struct mm *m, const mm_id *cons,
		      const double *coef, uint32_t n)
{
	double alone_Bps = INFINITY;
	uint32_t i;

	/* mm_var_add's minimum (of the same doubles: any order gives it) */
	for (i = 0; i < n; i++) {
		double alone;

		if (cons[i] >= m->ncons || !(coef[i] > 0))
			BUG("bad constraint or coefficient");
		alone = m->cons[cons[i]].cap_Bps / coef[i];
		if (alone < alone_Bps)
			alone_Bps = alone;
	}
	return alone_Bps;
}

/* Room for `need` entries on c's list. */
static int cons_room(struct cons *c, uint32_t need)
{
	while (c->capn < need)
		if (mm_cons_grow(c) != 0)
			return -1;
	return 0;
}

int mm_var_add_batch(struct mm *m, const struct mm_new_var *vars,
		     uint32_t k, const mm_id *tcons, const uint32_t *toff,
		     uint32_t nt, const struct mm_tpair *tp,
		     const uint32_t *map, mm_id *id)
{
	uint32_t j, i, d, t, got = 0;
	uint64_t elems = 0, placed = 0;

	if (m->dying.n)
		mm_unlink_dying(m);
	while (m->fresh.cap - m->fresh.n < k)
		if (mm_vec_grow(&m->fresh) != 0)
			return -1;
	for (d = 0; d < nt; d++) {
		uint32_t need = 0;

		if (tcons[d] >= m->ncons)
			BUG("bad constraint");
		for (t = toff[d]; t < toff[d + 1]; t++)
			need += map[tp[t].who] != UINT32_MAX;
		if (need && cons_room(&m->cons[tcons[d]],
				      m->cons[tcons[d]].n + need) != 0)
			return -1;
	}
	for (j = 0; j < k; j++, got++) {
		const struct mm_new_var *nv = &vars[j];
		struct var *x;

		if (nv->n == 0 && !(nv->bound_Bps > 0))
			BUG("a variable needs a constraint or a bound");
		if (!(nv->links_alone_Bps > 0))
			BUG("mm_var_add_batch: not a rate alone");
		id[j] = mm_var_slot(m);
		if (id[j] == MM_NONE)
			goto fail;
		x = &m->vars[id[j]];
		if (mm_var_room(x, nv->n) != 0) {
			mm_var_release(m, id[j]);
			goto fail;
		}
		x->alone_Bps = nv->bound_Bps > 0 ? nv->bound_Bps : INFINITY;
		if (nv->links_alone_Bps < x->alone_Bps)
			x->alone_Bps = nv->links_alone_Bps;
		x->nelems = nv->n;
		x->bound_Bps = nv->bound_Bps;
		x->data = nv->data;
		x->live = 1;
		x->pending = PEND_NEW;
		elems += nv->n;
		for (i = 0; i < nv->n; i++) {
			if (nv->cons[i] >= m->ncons || !(nv->coef[i] > 0))
				BUG("bad constraint or coefficient");
			x->elems[i] = (struct elem){ nv->cons[i], 0,
						     nv->coef[i] };
		}
	}
	for (d = 0; d < nt; d++) {
		struct cons *c = &m->cons[tcons[d]];
		uint32_t n = c->n;

		/* stores only: nothing here waits on a load of the
		 * variables' elements */
		for (t = toff[d]; t < toff[d + 1]; t++) {
			uint32_t b = map[tp[t].who], ei = tp[t].ei;

			if (b == UINT32_MAX)
				continue;
			m->vars[id[b]].elems[ei].pos = n;
			c->list[n++] = (struct centry){ id[b], ei,
							vars[b].coef[ei] };
			placed++;
		}
		c->n = n;
		m->busy[tcons[d]] = n;
	}
	if (placed != elems)
		BUG("mm_var_add_batch: the index misses an element");
	for (j = 0; j < k; j++)
		m->fresh.v[m->fresh.n++] = id[j];
	m->live += k;
	return 0;
fail:
	/* slots back in reverse, so the free list is as it was */
	while (got-- > 0)
		mm_var_release(m, id[got]);
	return -1;
}
