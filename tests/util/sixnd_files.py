"""sixnd's files from Python, for the script tests and benchmarks: llm.c token shards, the flat
parameter layout (units padded to `unit_align` elements) and the ZeRO engine's per-rank bytes
over it, a run's newest checkpoint and its parameters by tensor name, the steps a run log holds,
a training run under mpirun, the relative distance the parity tests compare by, a child run as a
user the permission bits bind, and the closing line a script test prints."""
import json
import os
import shutil
import struct
import subprocess

import numpy as np

# The environment for `mpirun` under a test: ranks oversubscribe the CI machine's 2 cores, run as
# root in containers, one OpenMP thread each, and ASan's leak check (which OpenMPI trips) is off.
MPI_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
MPIRUN = shutil.which("mpirun")


# The user a test running as root drops to, so that permission bits it sets keep sixnd out.
NOBODY = 65534


def as_user():
    """preexec_fn for a child: root drops to nobody, whom the permission bits bind; others run as they are."""
    if os.geteuid() != 0:
        return None

    def drop():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    return drop


def mpirun_missing():
    """ctest's skip status (77), after saying why, where mpirun is missing; None where it is there."""
    if MPIRUN is None:
        print("SKIP: mpirun not found (Debian's openmpi-bin)")
        return 77
    return None


def mpi_job_errors(cmd, timeout):
    """Runs the mpirun job `cmd` in MPI_ENV: its exit status and the lines sixnd printed on stderr
    (mpirun's own banners left out), or None when it ran past `timeout` seconds."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return r.returncode, [x for x in r.stderr.splitlines() if x.startswith("sixnd")]


def write_repeating_shard(path, repeats=900):
    """23 random tokens below 101 (seed 0), repeated: a text a tiny model learns within steps, the
    same for every test that compares runs on it."""
    write_shard(path, np.tile(np.random.default_rng(0).integers(0, 101, 23), repeats))


BLOCK_KINDS = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
               "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
               "mlp.c_proj.weight", "mlp.c_proj.bias"]


def mlp_hidden(model):
    """The MLP's hidden width H of a model record (0 or absent: 4C, swiglu 8C/3 up to a multiple of 64)."""
    C = model["n_embd"]
    if model.get("mlp_hidden", 0) > 0:
        return model["mlp_hidden"]
    return (8 * C // 3 + 63) // 64 * 64 if model.get("mlp", "gelu") == "swiglu" else 4 * C


def layout(model, align=64):
    """([(name, offset, shape)], [(unit_begin, unit_end)]) for a meta.json "model" record; the
    architecture knobs (absent: GPT-2's) drop or reshape tensors, never rename them."""
    C, L, NH = model["n_embd"], model["n_layer"], model["n_head"]
    hs = C // NH
    nkv = model.get("n_kv_head", 0) or NH
    H = mlp_hidden(model)
    F = 2 * H if model.get("mlp", "gelu") == "swiglu" else H
    bias = model.get("bias", True)
    norm_bias = bias and model.get("norm", "layernorm") == "layernorm"
    qw = C + 2 * nkv * hs
    block = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (qw, C), "attn.c_attn.bias": (qw,),
             "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,), "ln_2.weight": (C,), "ln_2.bias": (C,),
             "mlp.c_fc.weight": (F, C), "mlp.c_fc.bias": (F,), "mlp.c_proj.weight": (C, H),
             "mlp.c_proj.bias": (C,)}

    def present(k):
        if k.startswith("ln_") and k.endswith(".bias"):
            return norm_bias
        return bias or not k.endswith(".bias")

    emb = [("wte", (model["padded_vocab_size"], C))]
    if model.get("pos", "learned") == "learned":
        emb.append(("wpe", (model["max_seq_len"], C)))
    if not model.get("tie_embeddings", True):
        emb.append(("lm_head.weight", (model["padded_vocab_size"], C)))
    units = [emb]
    units += [[(f"h.{l}.{k}", block[k]) for k in BLOCK_KINDS if present(k)] for l in range(L)]
    units += [[("ln_f.weight", (C,))] + ([("ln_f.bias", (C,))] if norm_bias else [])]
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


def zero_table(meta, stage, n, dtype_bytes, master):
    """A rank's expected bytes of params, grads, master, adam_m and adam_v at ZeRO `stage` over
    n ranks, for a checkpoint's meta.json (stage 3 keeps the embeddings unit and two gathered
    block units beside its slice; stages 2-3 a bucket of each for the gradients)."""
    _, spans = layout(meta["model"], meta["unit_align"])
    psi = spans[-1][1]
    unit0 = spans[0][1] - spans[0][0]
    max_unit = max(e - b for b, e in spans[1:])
    state = psi // n if stage > 0 else psi
    return {"master": 4 * state if master else 0, "adam_m": 4 * state, "adam_v": 4 * state,
            "params": dtype_bytes * (psi if stage < 3 else psi // n + unit0 + 2 * max_unit),
            "grads": dtype_bytes * (psi if stage < 2 else psi // n + unit0 + max_unit)}


def last_checkpoint(out):
    """The newest step-* checkpoint directory of a run's --out."""
    ck = os.path.join(out, "checkpoints")
    return os.path.join(ck, sorted(d for d in os.listdir(ck) if d.startswith("step-"))[-1])


def determined(params):
    """The parameters whose values a correct run determines. The key bias's gradient is exactly
    zero in exact arithmetic (softmax ignores a per-query constant), so Adam turns rounding noise
    into full-size steps there; it is left out, the query and value biases stay."""
    out = {}
    for k, v in params.items():
        if k.endswith("attn.c_attn.bias"):
            C = v.shape[0] // 3
            v = np.concatenate([v[:C], v[2 * C:]])
        out[k] = v
    return out


def rel(a, b):
    """||a - b|| / ||b|| in float64 (||a - b|| where b is all zeros)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    den = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (den if den > 0 else 1.0))


def run_train(cmd, name, log, ranks=1, mpi=False):
    """Runs a `sixnd train` command line, under mpirun with `ranks` ranks where there are more
    than one or `mpi` asks (ZeRO needs a communicator even alone), in MPI_ENV; raises with the
    run's stderr if it fails; returns the records of its --log."""
    if ranks > 1 or mpi:
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + list(cmd)
    r = subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{name} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return [json.loads(line) for line in open(log)]


def write_shard(path, tokens, magic=20240520, version=1):
    """An llm.c token shard of uint16 tokens (magic and version may be set wrong on purpose)."""
    h = [0] * 256
    h[:3] = [magic, version, len(tokens)]
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *h))
        f.write(np.asarray(tokens, dtype=np.uint16).tobytes())


def steps_logged(log):
    """The step numbers of a run log's step records, in order ([] before the log exists); a line
    still being written is passed over."""
    out = []
    if os.path.exists(log):
        for line in open(log):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("type") == "step":
                out.append(r["step"])
    return out


def report(failures, what):
    """Prints each failure and the closing line; returns the exit status."""
    for f in failures:
        print("FAIL:", f)
    print(f"{'FAILED' if failures else 'PASSED'}: {what}")
    return 1 if failures else 0
