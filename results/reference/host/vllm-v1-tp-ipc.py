"""Time vLLM V1's per-step TP round trip on this CPU (MultiprocExecutor,
TP > 1). The engine core pickles the execute_model call for the workers
(ROCm/vllm 0909_rc3 @ 6663000a v1/executor/multiproc_executor.py
collective_rpc: rpc_broadcast_mq.enqueue((method, args, kwargs,
unique_reply_rank)); shm_broadcast.py MessageQueue.enqueue: pickle.dumps
protocol HIGHEST), a worker unpickles it (worker_busy_loop: dequeue ->
pickle.loads), and after the step the output rank pickles (SUCCESS,
ModelRunnerOutput) into its worker_response_mq, which the engine core
unpickles. Dataclasses with the fields of v1/core/sched/output.py
(SchedulerOutput, CachedRequestData) and v1/outputs.py (ModelRunnerOutput)
as they stand at 0909_rc3, filled as a pure decode step fills them:
request ids as LLM.generate makes them (str(next(request_counter))), one
scheduled token each, a new block for the requests whose context crosses
a 16-token block boundary this step, no PP (new_token_ids empty), no
connector, one KV-cache group; one sampled token each, no logprobs."""
import dataclasses, pickle, statistics, time
from typing import Optional


@dataclasses.dataclass
class CachedRequestData:
    req_ids: list
    resumed_from_preemption: list
    new_token_ids: list
    new_block_ids: list
    num_computed_tokens: list


@dataclasses.dataclass
class SchedulerOutput:
    scheduled_new_reqs: list
    scheduled_cached_reqs: CachedRequestData
    num_scheduled_tokens: dict
    total_num_scheduled_tokens: int
    scheduled_spec_decode_tokens: dict
    scheduled_encoder_inputs: dict
    num_common_prefix_blocks: list
    finished_req_ids: set
    free_encoder_mm_hashes: list
    structured_output_request_ids: dict
    grammar_bitmask: Optional[object]
    kv_connector_metadata: Optional[object] = None


@dataclasses.dataclass
class ModelRunnerOutput:
    req_ids: list
    req_id_to_index: dict
    sampled_token_ids: list
    logprobs: Optional[object]
    prompt_logprobs_dict: dict
    pooler_output: list
    kv_connector_output: Optional[object] = None
    num_nans_in_logits: Optional[dict] = None


def step(bs, ctx):
    ids = [str(i) for i in range(bs)]
    comp = [ctx + (i % 7) for i in range(bs)]
    blocks = [([100000 + i],) if c % 16 == 0 else None
              for i, c in enumerate(comp)]
    so = SchedulerOutput(
        scheduled_new_reqs=[],
        scheduled_cached_reqs=CachedRequestData(
            req_ids=ids, resumed_from_preemption=[False] * bs,
            new_token_ids=[], new_block_ids=blocks,
            num_computed_tokens=comp),
        num_scheduled_tokens={r: 1 for r in ids},
        total_num_scheduled_tokens=bs, scheduled_spec_decode_tokens={},
        scheduled_encoder_inputs={}, num_common_prefix_blocks=[0],
        finished_req_ids=set(), free_encoder_mm_hashes=[],
        structured_output_request_ids={}, grammar_bitmask=None)
    mro = ModelRunnerOutput(
        req_ids=list(ids), req_id_to_index={r: i for i, r in enumerate(ids)},
        sampled_token_ids=[[12345 + i % 1000] for i in range(bs)],
        logprobs=None, prompt_logprobs_dict={}, pooler_output=[])
    return ("execute_model", (so,), {}, 0), ("SUCCESS", mro)


def bench(bs, ctx, n):
    call, reply = step(bs, ctx)
    d = {k: [] for k in ("call_dumps", "call_loads", "reply_dumps",
                         "reply_loads")}
    for _ in range(n):
        t0 = time.perf_counter_ns()
        b1 = pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
        t1 = time.perf_counter_ns()
        pickle.loads(b1)
        t2 = time.perf_counter_ns()
        b2 = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        t3 = time.perf_counter_ns()
        pickle.loads(b2)
        t4 = time.perf_counter_ns()
        for k, a, b in (("call_dumps", t0, t1), ("call_loads", t1, t2),
                        ("reply_dumps", t2, t3), ("reply_loads", t3, t4)):
            d[k].append(b - a)
    med = {k: statistics.median(v) / 1e3 for k, v in d.items()}
    return len(b1), len(b2), med


if __name__ == "__main__":
    sizes = [1, 2, 4, 64, 256, 512, 1024, 2048, 3104]
    best = {}
    for bs in sizes:
        n = 20000 if bs <= 256 else 2000
        for rep in range(3):
            n1, n2, m = bench(bs, 1088, n)
            tot = sum(m.values())
            best[bs] = min(best.get(bs, tot), tot)
            print(f"bs {bs:5d}: call {n1:6d} B dumps {m['call_dumps']:8.2f} "
                  f"loads {m['call_loads']:8.2f} | reply {n2:6d} B dumps "
                  f"{m['reply_dumps']:8.2f} loads {m['reply_loads']:8.2f} | "
                  f"sum {tot:8.2f} us (medians)")
    # least squares a + b bs over the fastest repetition of each size
    xs = sizes; ys = [best[b] for b in sizes]
    mx = sum(xs) / len(xs); my = sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / \
        sum((x - mx) ** 2 for x in xs)
    print(f"fit: {my - b * mx:.1f} us + {b:.3f} us a sequence "
          f"(fastest of 3 repetitions each)")
