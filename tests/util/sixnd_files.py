"""sixnd's files from Python, for the script tests and benchmarks: llm.c token shards, the flat
parameter layout (units padded to `unit_align` elements), a checkpoint's parameters by tensor
name, and the closing line a script test prints."""
import json
import os
import struct

import numpy as np

BLOCK_KINDS = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
               "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
               "mlp.c_proj.weight", "mlp.c_proj.bias"]


def layout(model, align=64):
    """([(name, offset, shape)], [(unit_begin, unit_end)]) for a meta.json "model" record."""
    C, L = model["n_embd"], model["n_layer"]
    block = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (3 * C, C), "attn.c_attn.bias": (3 * C,),
             "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,), "ln_2.weight": (C,), "ln_2.bias": (C,),
             "mlp.c_fc.weight": (4 * C, C), "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (C, 4 * C),
             "mlp.c_proj.bias": (C,)}
    units = [[("wte", (model["padded_vocab_size"], C)), ("wpe", (model["max_seq_len"], C))]]
    units += [[(f"h.{l}.{k}", block[k]) for k in BLOCK_KINDS] for l in range(L)]
    units += [[("ln_f.weight", (C,)), ("ln_f.bias", (C,))]]
    tensors, spans, off = [], [], 0
    for u in units:
        begin = off
        for name, shape in u:
            tensors.append((name, off, shape))
            off += int(np.prod(shape))
        off = (off + align - 1) // align * align
        spans.append((begin, off))
    return tensors, spans


def checkpoint_params(ckpt_dir):
    """{tensor name: float64 array} of a checkpoint's params.bin."""
    meta = json.load(open(os.path.join(ckpt_dir, "meta.json")))
    dtype = np.float32 if meta["dtype"] == "fp32" else np.uint16
    flat = np.fromfile(os.path.join(ckpt_dir, "params.bin"), dtype=dtype)
    if dtype == np.uint16:
        flat = (flat.astype(np.uint32) << 16).view(np.float32)
    tensors, _ = layout(meta["model"], meta["unit_align"])
    return {n: flat[o:o + int(np.prod(s))].reshape(s).astype(np.float64) for n, o, s in tensors}


def write_shard(path, tokens, magic=20240520, version=1):
    """An llm.c token shard of uint16 tokens (magic and version may be set wrong on purpose)."""
    h = [0] * 256
    h[:3] = [magic, version, len(tokens)]
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *h))
        f.write(np.asarray(tokens, dtype=np.uint16).tobytes())


def report(failures, what):
    """Prints each failure and the closing line; returns the exit status."""
    for f in failures:
        print("FAIL:", f)
    print(f"{'FAILED' if failures else 'PASSED'}: {what}")
    return 1 if failures else 0
