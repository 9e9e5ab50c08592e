"""Bad input to `--init hf:DIR` (eval, train, sample) and `sixnd export`: truncated, misaligned
and header-corrupt safetensors files, configurations and tensors that are not GPT-2, and export
targets that must not be touched — each one error line naming the file or flag and the fault,
exit 1, and nothing written."""
import json
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from bad_input import SIXND, Case, run_cases, snapshot  # noqa: E402
import rename_signal  # noqa: E402
import subprocess  # noqa: E402

FIXTURES = os.path.join(os.environ.get("SIXND_SHARED", "../shared"), "fixtures", "tokenizer")
V = 300


def sixnd(*args):
    r = subprocess.run([SIXND] + [str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"sixnd {' '.join(map(str, args))}: {r.stderr.strip()[-500:]}")
    return r.stdout


def split(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def join(path, header, data, pad=True):
    text = json.dumps(header).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def first_tensor(header):
    return min((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])


def main():
    d = tempfile.mkdtemp(prefix="sixnd_hf_bad_")
    try:
        shard = os.path.join(d, "train.bin")
        sixnd_files.write_shard(shard, [(i * 7919) % V for i in range(4000)])
        run = os.path.join(d, "run")
        out = json.loads(sixnd("train", "--init", "random", "--model", "tiny", "--vocab-size", V, "--train-data", shard,
                               "--batch", 2, "--seq-len", 16, "--steps", 1, "--dtype", "fp32", "--device", "cpu",
                               "--out", run).strip().splitlines()[-1])
        ck = out["checkpoint"]
        out = json.loads(sixnd("train", "--init", "random", "--model", "tiny", "--vocab-size", V, "--train-data", shard,
                               "--batch", 2, "--seq-len", 16, "--steps", 1, "--dtype", "fp32", "--device", "cpu",
                               "--norm", "rmsnorm", "--out", os.path.join(d, "run-rms")).strip().splitlines()[-1])
        ck_rms = out["checkpoint"]
        good = os.path.join(d, "good")
        sixnd("export", "--checkpoint", ck, "--out", good)
        tok = os.path.join(d, "tok.bin")
        sixnd("tokenizer", "train", "--input", os.path.join(FIXTURES, "address.txt"), "--vocab-size", 280, "--out", tok)
        big_tok = os.path.join(d, "big-tok.bin")
        sixnd("tokenizer", "train", "--input", os.path.join(FIXTURES, "corpus.en"), "--vocab-size", 320, "--out", big_tok)

        bad = os.path.join(d, "bad")
        model = os.path.join(bad, "model.safetensors")
        config = os.path.join(bad, "config.json")

        def fresh(edit=None):
            def setup():
                shutil.rmtree(bad, ignore_errors=True)
                shutil.copytree(good, bad)
                if edit:
                    edit()
            return setup

        def cut_tail():
            raw = open(model, "rb").read()
            open(model, "wb").write(raw[:-10])

        def length_past_end():
            raw = open(model, "rb").read()
            open(model, "wb").write(struct.pack("<Q", len(raw)) + raw[8:])

        def range_not_size():
            h, data = split(model)
            name = first_tensor(h)
            h[name]["shape"][0] -= 1
            join(model, h, data)

        def gap():
            h, data = split(model)
            name = first_tensor(h)
            end = h[name]["data_offsets"][1]
            for k, e in h.items():
                if k != "__metadata__" and e["data_offsets"][0] >= end:
                    e["data_offsets"] = [e["data_offsets"][0] + 4, e["data_offsets"][1] + 4]
            join(model, h, data[:end] + b"\0" * 4 + data[end:])

        def shifted_data():
            h, data = split(model)
            join(model, h, b"\0" + data)

        def corrupt_header():
            raw = bytearray(open(model, "rb").read())
            raw[8 + 20:8 + 26] = b"\xff#@!\x00\x01"
            open(model, "wb").write(bytes(raw))

        def header_not_object():
            raw = bytearray(open(model, "rb").read())
            raw[8] = ord("X")
            open(model, "wb").write(bytes(raw))

        def int_dtype():
            h, data = split(model)
            h[first_tensor(h)]["dtype"] = "I32"
            join(model, h, data)

        def nul_in_name():
            h, data = split(model)
            h["transformer.h.0.attn.bias\u0000x"] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
            join(model, h, data + b"\0" * 4)

        def set_config(**kv):
            def edit():
                c = json.load(open(config))
                c.update(kv)
                json.dump(c, open(config, "w"))
            return edit

        eval_args = ["eval", "--data", shard, "--batch", 2, "--seq-len", 16, "--device", "cpu", "--dtype", "fp32",
                     "--init", "hf:" + bad]
        eval_args = [str(a) for a in eval_args]
        cases = [
            Case("good export evaluates", eval_args, [], exit_code=0, setup=fresh()),
            Case("truncated safetensors", eval_args, [model, "truncated"], setup=fresh(cut_tail)),
            Case("header length past the end", eval_args, [model, "truncated", "header length"],
                 setup=fresh(length_past_end)),
            Case("misaligned: range is not dtype x shape", eval_args, [model, "misaligned", "needs"],
                 setup=fresh(range_not_size)),
            Case("misaligned: gap between tensors", eval_args, [model, "misaligned", "(gap)"], setup=fresh(gap)),
            Case("misaligned: data shifted by a byte", eval_args, [model, "misaligned", "belong to none"],
                 setup=fresh(shifted_data)),
            Case("header-corrupt: bytes overwritten", eval_args, [model, "corrupt safetensors header"],
                 setup=fresh(corrupt_header)),
            Case("header-corrupt: not a JSON object", eval_args, [model, "corrupt safetensors header"],
                 setup=fresh(header_not_object)),
            Case("integer tensor", eval_args, [model, "dtype I32"], setup=fresh(int_dtype)),
            # A zero byte in a name (JSON's \u0000) is quoted, not the end of the message.
            Case("a tensor name with a zero byte", eval_args, [model, "attn.bias\\x00x'", "is not a parameter of GPT-2"],
                 setup=fresh(nul_in_name)),
            Case("no config.json", eval_args, [config], setup=fresh(lambda: os.remove(config))),
            Case("llama config", eval_args, [config, "model_type 'llama'"], setup=fresh(set_config(model_type="llama"))),
            Case("exact-erf GELU", eval_args, [config, "activation_function"],
                 setup=fresh(set_config(activation_function="gelu"))),
            Case("config vocabulary disagrees with wte", eval_args, [model, "wte.weight", "has shape"],
                 setup=fresh(set_config(vocab_size=V + 1))),
            Case("no such directory", eval_args[:-1] + ["hf:" + os.path.join(d, "nope")], [os.path.join(d, "nope"), "no such"]),
            Case("train --init hf: writes nothing",
                 ["train", "--init", "hf:" + bad, "--train-data", shard, "--batch", "2", "--seq-len", "16", "--steps",
                  "1", "--device", "cpu", "--dtype", "fp32", "--out", os.path.join(d, "run-bad")],
                 [model, "truncated"], unchanged=[os.path.join(d, "run-bad")], setup=fresh(cut_tail)),
            Case("sample --init hf:", ["sample", "--init", "hf:" + bad, "--prompt-ids", "1,2", "--device", "cpu"],
                 [config, "model_type"], setup=fresh(set_config(model_type="bert"))),
            # Opening a FIFO waits for a writer: refused before it is opened, not a hang.
            Case("config.json is a FIFO", eval_args, [config, "not a regular file"], timeout=20,
                 setup=fresh(lambda: (os.remove(config), os.mkfifo(config)))),
            Case("model.safetensors is a FIFO", eval_args, [model, "not a regular file"], timeout=20,
                 setup=fresh(lambda: (os.remove(model), os.mkfifo(model)))),
        ]

        out_dir = os.path.join(d, "export")
        foreign = os.path.join(d, "foreign")
        os.makedirs(foreign)
        open(os.path.join(foreign, "notes.txt"), "w").write("mine\n")
        afile = os.path.join(d, "a-file")
        open(afile, "w").write("x")
        linked_target, linked = os.path.join(d, "real-dir"), os.path.join(d, "linked-dir")
        os.makedirs(linked_target)
        os.symlink(linked_target, linked)
        ck_nodone = os.path.join(d, "ck-nodone")
        shutil.copytree(ck, ck_nodone)
        os.remove(os.path.join(ck_nodone, "DONE"))
        ck_flip = os.path.join(d, "ck-flip")
        shutil.copytree(ck, ck_flip)
        with open(os.path.join(ck_flip, "params.bin"), "r+b") as f:
            f.seek(100)
            f.write(b"\x7f")
        empty = os.path.join(d, "empty")
        os.makedirs(empty)

        def exported(path):
            def check():
                names = sorted(os.listdir(path))
                want = ["config.json", "generation_config.json", "model.safetensors"]
                return None if names == want else f"{path} holds {names}"
            return check

        long_out = os.path.join(d, "e" * 250)
        fsize_out = os.path.join(d, "fsize")

        def exported_alone(path):
            def check():
                others = [n for n in os.listdir(d) if n.startswith((".eeee", "eeee")) and n != "e" * 250]
                return exported(path)() or (f"siblings left: {[n[-30:] for n in others]}" if others else None)
            return check

        # The model keeps all its ids; the tokenizer makes the first 280 of them.
        smaller_tok_out = os.path.join(d, "smaller-tok")

        def exported_with_smaller_tokenizer():
            names = sorted(os.listdir(smaller_tok_out))
            if "tokenizer.json" not in names:
                return f"{smaller_tok_out} holds {names}"
            n_config = json.load(open(os.path.join(smaller_tok_out, "config.json")))["vocab_size"]
            n_tok = len(json.load(open(os.path.join(smaller_tok_out, "tokenizer.json")))["model"]["vocab"])
            return None if (n_config, n_tok) == (V, 280) else f"config vocab_size {n_config}, tokenizer.json {n_tok} tokens"

        # Files under an export's names that sixnd did not write: the user's own config.json, and a
        # model as downloaded (an export's files, its model.safetensors written by someone else).
        own_config = os.path.join(d, "own-config")
        os.makedirs(own_config)
        open(os.path.join(own_config, "config.json"), "w").write('{"my": "notes"}\n')
        downloaded = os.path.join(d, "downloaded")
        shutil.copytree(good, downloaded)
        raw = open(os.path.join(downloaded, "model.safetensors"), "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + n])
        header["__metadata__"] = {"format": "pt"}
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        open(os.path.join(downloaded, "model.safetensors"), "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])

        exp = ["export", "--checkpoint", ck]
        cases += [
            Case("--out holds a config.json sixnd did not write", exp + ["--out", own_config],
                 [own_config, "not an earlier export"], unchanged=[own_config]),
            Case("--out holds a model sixnd did not write", exp + ["--out", downloaded],
                 [downloaded, "not an earlier export"], unchanged=[downloaded]),
            Case("unknown format", exp + ["--format", "onnx", "--out", out_dir], ["--format", "onnx"],
                 unchanged=[out_dir]),
            Case("--out holds other files", exp + ["--out", foreign], [foreign, "notes.txt"], unchanged=[foreign]),
            Case("--out is a file", exp + ["--out", afile], [afile, "a regular file, not a directory sixnd export wrote"],
                 unchanged=[afile]),
            # A link to a directory: named as the link it is (it read "exists and is not a directory").
            Case("--out is a link to a directory", exp + ["--out", linked],
                 [linked, "a symbolic link, not a directory sixnd export wrote"], unchanged=[linked, linked_target]),
            Case("--out below a file", exp + ["--out", os.path.join(afile, "ex")],
                 ["--out", os.path.join(afile, "ex") + ": cannot create"], unchanged=[afile]),
            Case("checkpoint without DONE", ["export", "--checkpoint", ck_nodone, "--out", out_dir], [ck_nodone, "DONE"],
                 unchanged=[out_dir]),
            Case("corrupt params.bin", ["export", "--checkpoint", ck_flip, "--out", out_dir], ["params.bin", "checksum"],
                 unchanged=[out_dir]),
            Case("tokenizer with more tokens than the model has ids", exp + ["--out", out_dir, "--tokenizer", big_tok],
                 [big_tok, "320 tokens", "vocabulary of 300"], unchanged=[out_dir]),
            Case("tokenizer with fewer tokens than the model has ids", exp + ["--out", smaller_tok_out, "--tokenizer", tok],
                 [], exit_code=0, check=exported_with_smaller_tokenizer),
            Case("unknown dtype", exp + ["--out", out_dir, "--dtype", "fp16"], ["--dtype", "fp16"], unchanged=[out_dir]),
            Case("a model with an architecture knob", ["export", "--checkpoint", ck_rms, "--out", out_dir],
                 [ck_rms, "GPT-2 only", "--norm rmsnorm"], unchanged=[out_dir]),
            Case("export into an empty directory", exp + ["--out", empty], [], exit_code=0, check=exported(empty)),
            # An export inside the checkpoint would change the checkpoint it reads.
            Case("--out inside the checkpoint", exp + ["--out", os.path.join(ck, "hf")], [ck, "inside the checkpoint"],
                 unchanged=[ck]),
            Case("--out inside the checkpoint, by a relative path", ["export", "--checkpoint", ck, "--out",
                 os.path.relpath(os.path.join(ck, "sub", "hf"))], ["inside the checkpoint"], unchanged=[ck]),
            # A run takes a step directory without DONE for its own interrupted save, and replaces it.
            Case("--out a step the run has not saved", exp + ["--out", os.path.join(os.path.dirname(ck), "step-00000099")],
                 ["step-00000099", "named as a run's checkpoint"], unchanged=[os.path.dirname(ck)]),
            # ... also where --out reaches the run's checkpoints/ through a symlink of another name.
            Case("--out a step the run has not saved, through a symlink",
                 exp + ["--out", os.path.join(d, "steps-link", "step-00000099")],
                 ["step-00000099", "named as a run's checkpoint"], unchanged=[os.path.dirname(ck)],
                 setup=lambda: os.symlink(os.path.dirname(ck), os.path.join(d, "steps-link"))),
            # A run deletes every hidden .step-* in its checkpoints/ at each save: an export named so, or
            # named step-* (its staging sibling is .step-*), would be deleted under it.
            Case("--out a hidden .step- name in a run's checkpoints",
                 exp + ["--out", os.path.join(os.path.dirname(ck), ".step-00000099")],
                 [".step-00000099", "run deletes hidden .step-*"], unchanged=[os.path.dirname(ck)]),
            Case("--out a step- name in a run's checkpoints", exp + ["--out", os.path.join(os.path.dirname(ck), "step-4")],
                 ["step-4", "run deletes hidden .step-*"], unchanged=[os.path.dirname(ck)]),
            # An empty value (a script's unset variable) names its flag, and is not the flag left out.
            Case("--checkpoint ''", ["export", "--checkpoint", "", "--out", out_dir], ["--checkpoint", "empty"],
                 unchanged=[out_dir]),
            Case("--dtype ''", exp + ["--out", out_dir, "--dtype", ""], ["--dtype", "empty"], unchanged=[out_dir]),
            Case("--tokenizer ''", exp + ["--out", out_dir, "--tokenizer", ""], ["--tokenizer", "empty"],
                 unchanged=[out_dir]),
            Case("export over an earlier export", exp + ["--out", good, "--dtype", "bf16"], [], exit_code=0,
                 check=exported(good)),
            # A write that fails (a full disk; here the file-size limit) names the file in --out, not in
            # the hidden staging directory, which is gone when the error is read; the earlier export stays.
            Case("export over an earlier one past the file-size limit", exp + ["--out", fsize_out],
                 [os.path.join(fsize_out, "model.safetensors") + ": write failed", "File too large"], unchanged=[d],
                 setup=lambda: sixnd(*exp, "--out", fsize_out, "--dtype", "bf16"), file_size_limit=20000),
            # The staging and moved-aside siblings' names are cut to fit NAME_MAX (255 bytes).
            Case("export into a 250-byte --out, twice", exp + ["--out", long_out], [], exit_code=0,
                 setup=lambda: sixnd(*exp, "--out", long_out), check=exported_alone(long_out)),
        ]
        # A signal as each rename of an export over an earlier one returns (tests/util/rename_signal.py).
        if rename_signal.STRACE:
            sixnd(*exp, "--out", os.path.join(d, "sig-old"))
            sixnd(*exp, "--out", os.path.join(d, "sig-new"), "--dtype", "bf16")
            cases.append(Case("signals between the renames of an export over an earlier one", ["export", "--help"], [],
                              exit_code=0, check=lambda: rename_signal.dir_commit_fault(
                                  [SIXND] + exp + ["--out", os.path.join(d, "sig", "ex"), "--dtype", "bf16"],
                                  os.path.join(d, "sig", "ex"), os.path.join(d, "sig-old"), os.path.join(d, "sig-new"),
                                  ".export-old.", snapshot)))
        else:
            print("skip:", rename_signal.SKIP_NOTE)
        return run_cases(cases, "Hugging Face import/export bad input")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (AssertionError, RuntimeError, OSError, ValueError, subprocess.SubprocessError) as e:
        print(f"FAILED: Hugging Face import/export bad input ({type(e).__name__}: {e})")
        sys.exit(1)
