"""Time V0's per-step TP metadata path on this CPU: the driver pickles the
broadcast_tensor_dict metadata list (ROCm/vllm v0.8.5+rocm
parallel_state._split_tensor_dict + MessageQueue.enqueue: pickle.dumps
protocol HIGHEST) and a worker unpickles it and rebuilds its input
objects (from_broadcasted_tensor_dict: the attention metadata dataclass,
the model input dataclass). torch is not installed here: dtype/device/Size
are stand-ins that pickle the way torch's do (a global by name, a class
with args, a tuple subclass)."""
import copyreg, dataclasses, pickle, statistics, sys, time
from collections import namedtuple

class dtype:                                   # torch.dtype: pickled by name
    def __init__(s, n): s.n = n
    def __reduce__(s): return s.n              # -> global lookup
class device:                                  # torch.device(type, index)
    def __init__(s, t, i=None): s.t, s.i = t, i
    def __reduce__(s): return (device, (s.t, s.i))
class Size(tuple): pass                        # torch.Size
int64 = dtype("int64"); int32 = dtype("int32")
TensorMetadata = namedtuple("TensorMetadata", ["device", "dtype", "size"])
cuda = device("cuda", 0)
def tm(dt, *shape): return TensorMetadata("cuda", dt, Size(shape))

@dataclasses.dataclass
class AttnMeta:                                # ROCmFlashAttentionMetadata's fields
    num_prefills: int; num_prefill_tokens: int; num_decode_tokens: int
    slot_mapping: object; multi_modal_placeholder_index_maps: object
    enable_kv_scales_calculation: bool; seq_lens: object
    seq_lens_tensor: object; max_prefill_seq_len: int
    max_decode_seq_len: int; context_lens_tensor: object
    block_tables: object; use_cuda_graph: bool; max_query_len: object
    max_decode_query_len: object; query_start_loc: object
    seq_start_loc: object

@dataclasses.dataclass
class ModelInput:                              # ModelInputForGPUWithSamplingMetadata
    input_tokens: object; input_positions: object; attn_metadata: object
    lora_requests: object; lora_mapping: object; multi_modal_kwargs: object
    prompt_adapter_mapping: object; prompt_adapter_requests: object
    virtual_engine: int; request_ids_to_seq_ids: object
    finished_requests_ids: object; sampling_metadata: object
    is_prompt: bool

def metadata(bs, ctx):
    blocks = (ctx + 15) // 16
    return [
        # WorkerInput.as_broadcastable_tensor_dict
        ("num_seq_groups", bs), ("blocks_to_swap_in", tm(int64, 0, 2)),
        ("blocks_to_swap_out", tm(int64, 0, 2)),
        ("blocks_to_copy", tm(int64, 0, 2)), ("virtual_engine", 0),
        ("num_steps", 1),
        # ModelInputForGPUWithSamplingMetadata.as_broadcastable_tensor_dict
        ("input_tokens", tm(int64, bs)), ("input_positions", tm(int64, bs)),
        ("lora_requests", set()), ("lora_mapping", None),
        ("multi_modal_kwargs", {}), ("prompt_adapter_mapping", None),
        ("prompt_adapter_requests", set()), ("virtual_engine", 0),
        ("request_ids_to_seq_ids", {str(i): [i] for i in range(bs)}),
        ("finished_requests_ids", []),
        ("is_prompt", False),
        ("selected_token_indices", tm(int64, bs)),
        # attention metadata (asdict_zerocopy)
        ("num_prefills", 0), ("num_prefill_tokens", 0),
        ("num_decode_tokens", bs), ("slot_mapping", tm(int64, bs)),
        ("multi_modal_placeholder_index_maps", {}),
        ("enable_kv_scales_calculation", False),
        ("seq_lens", [ctx] * bs), ("seq_lens_tensor", tm(int32, bs)),
        ("max_prefill_seq_len", 0), ("max_decode_seq_len", ctx),
        ("context_lens_tensor", tm(int32, bs)),
        ("block_tables", tm(int32, bs, blocks)), ("use_cuda_graph", True),
        ("max_query_len", 1), ("max_decode_query_len", 1),
        ("query_start_loc", tm(int32, bs + 1)),
        ("seq_start_loc", tm(int32, bs + 1)),
    ]

ATTN = {f.name for f in dataclasses.fields(AttnMeta)}
MI = {f.name for f in dataclasses.fields(ModelInput)}

def worker(buf):
    lst = pickle.loads(buf)
    d = {}
    for k, v in lst:                            # broadcast_tensor_dict receiver
        if isinstance(v, TensorMetadata):
            v = ("empty", v.size, v.dtype)      # torch.empty stand-in
        d[k] = v
    attn = AttnMeta(**{k: d.get(k) for k in ATTN})
    return ModelInput(**{k: d.get(k) for k in MI if k != "attn_metadata"},
                      attn_metadata=attn)

def bench(bs, ctx, n=20000):
    lst = metadata(bs, ctx)
    ts, tw = [], []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        buf = pickle.dumps(lst, protocol=pickle.HIGHEST_PROTOCOL)
        t1 = time.perf_counter_ns()
        worker(buf)
        t2 = time.perf_counter_ns()
        ts.append(t1 - t0); tw.append(t2 - t1)
    return len(buf), statistics.median(ts) / 1e3, statistics.median(tw) / 1e3

for bs, ctx in [(1, 1088), (2, 1088), (256, 1088)]:
    for rep in range(3):
        nb, s, w = bench(bs, ctx)
        print(f"bs {bs:4d} ctx {ctx}: {nb:6d} B pickled; driver dumps "
              f"{s:7.2f} us, worker loads+rebuild {w:7.2f} us (median)")
