/*
 * serve_xfer.c - disaggregated prefill/decode: the KV cache's way from a
 * prefill instance to a decode instance.
 *
 * When a prefill instance's step ends a prompt, the request's KV (its
 * prompt tokens x the KV bytes a token takes on one prefill GPU, one copy
 * per TP rank: tp parallel transfers) moves from the prefill instance's
 * GPUs to a decode instance's (round-robin) as a send/recv on the serving
 * loop's own fabric model, so concurrent transfers share links (RDMA NICs
 * and switches, or NVLink). Layer-wise transfer (vLLM's NixlConnector,
 * SGLang's Mooncake path, DistServe) sends each layer's KV as the prefill
 * computes it: the send starts when the request's last prefill step
 * starts, the handoff completes when both the step and the send are done;
 * otherwise the send starts after the step. The decode instance admits the
 * request when its pool has the pages (pending requests wait in its
 * queue); the prefill instance's pages are freed when the send is done.
 */
#include "serve_impl.h"

#include "base/mem.h"
#include "engine/sim.h"
#include "network/net.h"

struct xfer {
	struct serve *s;
	int64_t id;
	int from;			/* prefill instance */
	double start_s;
	uint32_t gpus[2];
	struct coll_desc desc;
};

static void xfer_done(void *token);

/* A decode instance for the next handoff (round-robin over the pool). */
static int decode_inst(struct serve *s)
{
	int ndec = s->ninst - s->nprefill;

	return s->nprefill + (int)(s->handoff_rr++ % ndec);
}

int serve_xfer_begin(struct serve *s, int64_t id, double now)
{
	struct serve_req *r = &s->req[id];
	const struct infer_ctx *px = &s->steppers[0].ctx;
	struct xfer *x;
	int64_t tokens = r->computed + (r->in_step ? r->step_q : 0);
	double per_gpu;

	if (r->xfer)
		return 0;
	x = mem_calloc(1, sizeof(*x));
	if (!x)
		return -1;
	x->s = s;
	x->id = id;
	x->from = r->instance;
	x->start_s = now;
	r->xfer = 1;
	r->handoff_to = decode_inst(s);
	per_gpu = (double)tokens * infer_kv_token_layer_B(&px->dims) *
		  px->dims.layers / (double)px->pp;
	x->gpus[0] = (uint32_t)s->first_gpu[x->from];
	x->gpus[1] = (uint32_t)s->first_gpu[r->handoff_to];
	x->desc = (struct coll_desc){.op = COLL_SENDRECV, .bytes = per_gpu,
		.gpus = x->gpus, .ngpus = 2, .algo = -1, .proto = -1,
		.replicas = (uint32_t)(px->tp * px->pp)};
	s->xfer_bytes += per_gpu * (double)(px->tp * px->pp);
	net_comm_ops.start(s->xfer_net, &x->desc, xfer_done, x);
	return 0;
}

/* The KV has arrived and the prefill has ended: the request waits at its
 * decode instance. */
static void arrived(struct serve *s, int64_t id, int from, double now)
{
	struct serve_req *r = &s->req[id];

	serve_kv_free(&s->inst[from], r, now);
	r->instance = r->handoff_to;
	r->state = REQ_WAITING;
	serve_seat(&s->inst[r->instance], r);
	if (rq_push_back(&s->inst[r->instance].waiting, id) != 0)
		s->failed = 1;
	s->wake(s, r->instance);
	s->wake(s, from);
}

int serve_handoff(struct serve *s, int64_t id, double now)
{
	struct serve_req *r = &s->req[id];

	r->state = REQ_TRANSFER;
	r->prefilled = 1;
	r->prefill_inst = r->instance;
	if (!r->xfer && serve_xfer_begin(s, id, now) != 0)
		return -1;
	if (r->xfer == 2)
		arrived(s, id, r->prefill_inst, now);
	return 0;
}

static void xfer_done(void *token)
{
	struct xfer *x = token;
	struct serve *s = x->s;
	struct serve_req *r = &s->req[x->id];
	double now = units_ns_to_s(sim_now(s->sim));

	s->xfer_sum_s += now - x->start_s;
	s->xfers++;
	r->transfer_s = now - x->start_s;
	r->xfer = 2;
	if (r->prefilled)
		arrived(s, x->id, x->from, now);
	mem_free(x);
}
