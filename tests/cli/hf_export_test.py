"""`sixnd export --format hf` and `--init hf:DIR`, end to end, without transformers installed.

A tiny model (own BPE tokenizer, vocabulary padded by sixnd) is trained for a few steps in FP32,
exported, and the export is judged independently of sixnd's code:
- model.safetensors is parsed here (8-byte little-endian header length, JSON header, raw
  tensors) and every tensor checked bitwise against the checkpoint's params.bin;
- the tensors are loaded into a PyTorch GPT-2 written below with transformers' module names and
  Conv1D layout (weights (in, out), LM head tied to wte), built from config.json, whose fields
  are checked against the tensors' shapes; its logits match sixnd's to 1e-5 (sixnd's come from
  the checkpoint through tests/tools/gpt_dump);
- `sixnd eval --init hf:DIR` gives that model's loss; `sixnd train --init hf:DIR` trains from it (the
  bitwise round trip is tests/model/hf_gpt2_test.cpp's); `sixnd sample
  --init hf:DIR` generates what `--checkpoint` does;
- `--dtype bf16` holds the checkpoint's values rounded to nearest even; a BF16 checkpoint
  exports its values exactly."""
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from torch_peer import F, torch  # noqa: E402  (ends the test as skipped without PyTorch)
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
import torch_gpt2  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
DUMP = os.path.join(os.environ["SIXND_BUILD"], "tests", "gpt_dump")
FIXTURES = os.path.join(os.environ.get("SIXND_SHARED", "../shared"), "fixtures", "tokenizer")
LOGITS_TOL = 1e-5
LOSS_TOL = 1e-5
B, T = 2, 24


def sixnd(*args):
    r = subprocess.run([SIXND] + [str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"sixnd {' '.join(map(str, args))}: exit {r.returncode}: {r.stderr.strip()[-600:]}")
    return r.stdout


# ---- safetensors, read independently ------------------------------------------------------------

def read_safetensors(path):
    """({name: (dtype, shape, np.ndarray float32 or uint16 bits)}, metadata, data start)."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    out, ends = {}, []
    for name, e in header.items():
        b, end = e["data_offsets"]
        ends.append((b, end))
        buf = data[b:end]
        if e["dtype"] == "F32":
            a = np.frombuffer(buf, dtype="<f4")
        elif e["dtype"] == "BF16":
            a = np.frombuffer(buf, dtype="<u2")
        else:
            raise ValueError(f"unexpected dtype {e['dtype']}")
        assert a.size == int(np.prod(e["shape"])), name
        out[name] = (e["dtype"], tuple(e["shape"]), a.reshape(e["shape"]))
    ends.sort()
    assert ends[0][0] == 0 and all(ends[i][1] == ends[i + 1][0] for i in range(len(ends) - 1)), "offsets do not tile"
    assert ends[-1][1] == len(data), "data section size"
    return out, meta, 8 + n


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_rne(x):
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


# ---- GPT-2 with transformers' names and layout ---------------------------------------------------

class Conv1D(torch.nn.Module):
    """transformers' Conv1D: y = x @ W + b with W stored (in, out)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(nx, nf, dtype=torch.float64))
        self.bias = torch.nn.Parameter(torch.zeros(nf, dtype=torch.float64))

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.n_embd = c["n_head"], c["n_embd"]
        self.c_attn = Conv1D(3 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], c["n_embd"])

    def forward(self, x):
        Bn, Tn, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(Bn, Tn, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.n_head)
        mask = torch.ones(Tn, Tn, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(Bn, Tn, C))


class MLP(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c.get("n_inner") or 4 * c["n_embd"]
        self.c_fc = Conv1D(inner, c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], inner)
        assert c["activation_function"] in ("gelu_new", "gelu_pytorch_tanh")

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        eps = c["layer_norm_epsilon"]
        self.ln_1 = torch.nn.LayerNorm(c["n_embd"], eps=eps, dtype=torch.float64)
        self.attn = Attention(c)
        self.ln_2 = torch.nn.LayerNorm(c["n_embd"], eps=eps, dtype=torch.float64)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = torch.nn.Embedding(c["vocab_size"], c["n_embd"], dtype=torch.float64)
        self.wpe = torch.nn.Embedding(c["n_positions"], c["n_embd"], dtype=torch.float64)
        self.h = torch.nn.ModuleList([Block(c) for _ in range(c["n_layer"])])
        self.ln_f = torch.nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"], dtype=torch.float64)


class GPT2LMHeadModel(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = Transformer(c)
        self.lm_head = torch.nn.Linear(c["n_embd"], c["vocab_size"], bias=False, dtype=torch.float64)
        if c.get("tie_word_embeddings", True):
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx):
        t = self.transformer
        x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def config_faults(cfg, tensors):
    """config.json's fields against the shapes of the tensors it describes."""
    faults = []
    shape = {n.removeprefix("transformer."): s for n, (_, s, _) in tensors.items()}
    layers = {int(n.split(".")[1]) for n in shape if n.startswith("h.")}
    want = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
            "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True, "n_inner": None,
            "vocab_size": shape["wte.weight"][0], "n_embd": shape["wte.weight"][1],
            "n_positions": shape["wpe.weight"][0], "n_ctx": shape["wpe.weight"][0], "n_layer": len(layers),
            "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False}
    for k, v in want.items():
        if cfg.get(k) != v:
            faults.append(f"config.json {k} = {cfg.get(k)!r}, the tensors say {v!r}")
    if layers != set(range(len(layers))):
        faults.append(f"layers {sorted(layers)} are not 0..n-1")
    if cfg["n_embd"] % cfg["n_head"] != 0:
        faults.append("n_head does not divide n_embd")
    C = cfg["n_embd"]
    if shape.get("h.0.attn.c_attn.weight") != (C, 3 * C) or shape.get("h.0.mlp.c_proj.weight") != (4 * C, C):
        faults.append("block shapes are not Conv1D (in, out)")
    return faults


def load_hf(dirpath):
    """(model, config, tensors) from an export directory, via this file's own reader."""
    cfg = json.load(open(os.path.join(dirpath, "config.json")))
    tensors, meta, _ = read_safetensors(os.path.join(dirpath, "model.safetensors"))
    model = GPT2LMHeadModel(cfg)
    state = {}
    for name, (dt, _, a) in tensors.items():
        state[name] = torch.from_numpy((bf16_to_f32(a) if dt == "BF16" else a).astype(np.float64))
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert unexpected == [], f"names transformers' GPT2LMHeadModel does not have: {unexpected}"
    assert missing == ["lm_head.weight"], f"names the export lacks: {missing}"
    return model, cfg, tensors, meta


# ---- the test ------------------------------------------------------------------------------------

def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        tok = os.path.join(d, "tok.bin")
        sixnd("tokenizer", "train", "--input", os.path.join(FIXTURES, "corpus.en"), "--vocab-size", 300,
              "--special", "<|endoftext|>", "--out", tok)
        shard = os.path.join(d, "train.bin")
        sixnd("tokenizer", "encode", "--tokenizer", tok, "--input", os.path.join(FIXTURES, "corpus.en"), "--out", shard)
        V = json.loads(sixnd("tokenizer", "info", "--tokenizer", tok))["vocab_size"]
        common = ["--model", "tiny", "--vocab-size", V, "--train-data", shard, "--batch", B, "--seq-len", T,
                  "--device", "cpu", "--tokenizer", tok, "--shuffle", "off"]
        run = os.path.join(d, "run")
        out = json.loads(sixnd("train", "--init", "random", *common, "--steps", 3, "--lr", "1e-2", "--dtype", "fp32",
                               "--out", run).strip().splitlines()[-1])
        ck = out["checkpoint"]
        hf = os.path.join(d, "hf32")
        # Its progress shows off a terminal too (it showed only on one): lines up to the whole size.
        r = subprocess.run([SIXND, "export", "--checkpoint", ck, "--format", "hf", "--out", hf], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError(f"sixnd export: exit {r.returncode}: {r.stderr.strip()[-600:]}")
        shown = re.findall(r"^export: ([0-9.]+) / ([0-9.]+) MB$", r.stderr, re.M)
        if len(shown) < 2 or len(shown) > 22 or shown[-1][0] != shown[-1][1]:
            failures.append(f"export's progress off a terminal: {shown} (expected 2 to 22 lines, the last at the whole)")

        files = sorted(os.listdir(hf))
        want_files = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                      "tokenizer_config.json"]
        if files != want_files:
            failures.append(f"export holds {files}, expected {want_files}")

        model, cfg, tensors, meta = load_hf(hf)
        failures += config_faults(cfg, tensors)
        if meta.get("format") != "pt":
            failures.append(f"__metadata__ {meta}")
        if any(not n.startswith("transformer.") for n in tensors):
            failures.append("tensor names lack transformers' 'transformer.' prefix")
        if cfg["vocab_size"] != V or cfg["torch_dtype"] != "float32":
            failures.append(f"config vocab_size {cfg['vocab_size']} / torch_dtype {cfg['torch_dtype']}")

        # Bitwise: every exported tensor is the checkpoint's, transposed for Conv1D, padding cut.
        ckp = sixnd_files.checkpoint_params(ck)
        for name, ref in ckp.items():
            hn = "transformer." + (name + ".weight" if name in ("wte", "wpe") else name)
            dt, shape, a = tensors[hn]
            ref = ref.astype(np.float32)
            if name == "wte":
                if not np.all(ref[V:] == 0):
                    failures.append("the checkpoint's padded vocabulary rows are not zero")
                ref = ref[:V]
            elif name.startswith("h.") and len(ref.shape) == 2:
                ref = ref.T
            if dt != "F32" or a.shape != ref.shape or not np.array_equal(a.view(np.uint32), np.ascontiguousarray(ref).view(np.uint32)):
                failures.append(f"{hn}: not bitwise the checkpoint's {name}")

        # Logits: this file's GPT-2 against sixnd's forward on the checkpoint.
        g = torch.Generator().manual_seed(3)
        toks = torch.randint(0, V, (B * T + 1,), generator=g, dtype=torch.int64)
        tpath = os.path.join(d, "tokens.bin")
        toks.numpy().astype(np.int32).tofile(tpath)
        mpath = os.path.join(d, "ck.bin")
        tcfg = torch_gpt2.Config(cfg["n_layer"], cfg["n_head"], cfg["n_embd"], V, cfg["n_positions"])
        torch_gpt2.write_llmc(mpath, tcfg, {n: torch.from_numpy(v) for n, v in ckp.items()}, version=3)
        dump = os.path.join(d, "dump")
        os.makedirs(dump)
        subprocess.run([DUMP, "--model", mpath, "--tokens", tpath, "--batch", str(B), "--seq-len", str(T), "--dtype",
                        "fp32", "--out", dump], check=True)
        got = np.fromfile(os.path.join(dump, "logits.bin"), dtype=np.float32).reshape(B * T, V).astype(np.float64)
        with torch.no_grad():
            ref_logits = model(toks[:-1].view(B, T))
            ref_loss = F.cross_entropy(ref_logits.reshape(-1, V), toks[1:]).item()
        ref_logits = ref_logits.reshape(B * T, V).numpy()
        e = np.linalg.norm(got - ref_logits) / np.linalg.norm(ref_logits)
        print(f"logits: sixnd vs transformers-layout PyTorch GPT-2 rel {e:.1e}")
        if not e <= LOGITS_TOL:
            failures.append(f"logits rel error {e:.2e} > {LOGITS_TOL}")

        # sixnd eval --init hf:DIR: the same loss.
        sixnd_files.write_shard(os.path.join(d, "eval.bin"), toks.tolist())
        ev = json.loads(sixnd("eval", "--init", "hf:" + hf, "--data", os.path.join(d, "eval.bin"), "--batch", B,
                              "--seq-len", T, "--device", "cpu", "--dtype", "fp32").strip().splitlines()[-1])
        e = abs(ev["loss"] - ref_loss) / ref_loss
        print(f"eval --init hf: loss {ev['loss']:.7f} vs {ref_loss:.7f} (rel {e:.1e})")
        if not e <= LOSS_TOL:
            failures.append(f"eval --init hf loss rel error {e:.2e}")

        # sixnd train --init hf:DIR starts from the HF model (the bitwise import round trip is
        # tests/model/hf_gpt2_test.cpp's): its first step runs and logs a finite loss.
        run2 = os.path.join(d, "run2")
        model_free = [a for a in common if a not in ("--model", "tiny", "--vocab-size", V)]
        out2 = json.loads(sixnd("train", "--init", "hf:" + hf, *model_free, "--steps", 1, "--lr", "1e-3", "--warmup", 0,
                                "--dtype", "fp32", "--out", run2).strip().splitlines()[-1])
        print(f"train --init hf: first loss {out2.get('loss')}")
        if not (isinstance(out2.get("loss"), float) and math.isfinite(out2["loss"])):
            failures.append(f"train --init hf: summary {out2}")

        # sample --init hf:DIR generates what --checkpoint does (greedy).
        s_args = ["--prompt", "The ", "--max-tokens", 12, "--temperature", 0, "--device", "cpu"]
        s1 = sixnd("sample", "--checkpoint", ck, *s_args)
        s2 = sixnd("sample", "--init", "hf:" + hf, "--dtype", "fp32", "--tokenizer", tok, *s_args)
        if s1 != s2:
            failures.append(f"sample differs: checkpoint {s1!r}, hf {s2!r}")

        # Tokenizer files.
        tj = json.load(open(os.path.join(hf, "tokenizer.json")))
        tc = json.load(open(os.path.join(hf, "tokenizer_config.json")))
        gc = json.load(open(os.path.join(hf, "generation_config.json")))
        eot = [t["id"] for t in tj["added_tokens"] if t["content"] == "<|endoftext|>"]
        if len(tj["model"]["vocab"]) != V or eot != [cfg["eos_token_id"]] or gc.get("eos_token_id") != eot[0]:
            failures.append(f"tokenizer.json vocabulary {len(tj['model']['vocab'])} / eos {eot} vs config "
                            f"{cfg['eos_token_id']} / generation_config {gc}")
        if tc.get("eos_token") != "<|endoftext|>" or tc.get("tokenizer_class") != "GPT2TokenizerFast" or \
                tc.get("model_max_length") != cfg["n_positions"]:
            failures.append(f"tokenizer_config.json {tc}")

        # BF16 on request: round to nearest even of the FP32 checkpoint.
        hf16 = os.path.join(d, "hf16")
        sixnd("export", "--checkpoint", ck, "--out", hf16, "--dtype", "bf16")
        t16, _, _ = read_safetensors(os.path.join(hf16, "model.safetensors"))
        c16 = json.load(open(os.path.join(hf16, "config.json")))
        bad = [n for n, (dt, _, a) in t16.items() if dt != "BF16" or not np.array_equal(a, f32_to_bf16_rne(tensors[n][2]))]
        if bad or c16["torch_dtype"] != "bfloat16":
            failures.append(f"bf16 export: {bad[:3]} not the rounded FP32 values, torch_dtype {c16['torch_dtype']}")
        size32 = os.path.getsize(os.path.join(hf, "model.safetensors"))
        size16 = os.path.getsize(os.path.join(hf16, "model.safetensors"))
        print(f"model.safetensors: FP32 {size32} bytes, BF16 {size16} bytes")

        # A BF16 checkpoint exports its own values, exactly (BF16 by default, FP32 on request).
        run3 = os.path.join(d, "run3")
        out3 = json.loads(sixnd("train", "--init", "random", *common, "--steps", 2, "--lr", "1e-2", "--dtype", "bf16",
                                "--out", run3).strip().splitlines()[-1])
        ck3 = sixnd_files.checkpoint_params(out3["checkpoint"])
        for dtype in ("", "fp32"):
            hf3 = os.path.join(d, "hf3" + dtype)
            sixnd("export", "--checkpoint", out3["checkpoint"], "--out", hf3, *(["--dtype", dtype] if dtype else []))
            t3, _, _ = read_safetensors(os.path.join(hf3, "model.safetensors"))
            for name, ref in ck3.items():
                hn = "transformer." + (name + ".weight" if name in ("wte", "wpe") else name)
                dt, _, a = t3[hn]
                vals = bf16_to_f32(a) if dt == "BF16" else a
                ref = ref[:V] if name == "wte" else (ref.T if name.startswith("h.") and len(ref.shape) == 2 else ref)
                if dt != ("BF16" if not dtype else "F32") or not np.array_equal(vals, ref.astype(np.float32)):
                    failures.append(f"bf16 checkpoint export ({dtype or 'default'}): {hn} differs")
                    break
    return sixnd_files.report(failures, "Hugging Face export and import")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (AssertionError, RuntimeError, OSError, ValueError, subprocess.SubprocessError) as e:
        print(f"FAILED: Hugging Face export and import ({type(e).__name__}: {e})")
        sys.exit(1)
