"""Bad input to `sixnd train`, one table: flags out of range, run directories that are not
usable or belong to another run, conflicting resumes, config files. Each case ends with one
error line naming the flag or file and the fault, and the paths it names are left exactly as
they were (a refused run creates no run directory)."""
import fcntl
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from bad_input import Case, hold_dir_lock, run_cases, SIXND  # noqa: E402
import subprocess  # noqa: E402

ENV = {"OMP_NUM_THREADS": "1", "ASAN_OPTIONS": "detect_leaks=0"}


def mpi_fault(mpirun, tmp, args, fault, rank1_points=None):
    """None when `mpirun -np 2 sixnd <args>` ends within a minute, non-zero, with the line naming
    `fault` once (and, where rank1_points is given, that many lines of rank 1 pointing at rank 0);
    else what went wrong."""
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", SIXND] + args
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=dict(os.environ, **ENV))
    except subprocess.TimeoutExpired:
        return "the job hung (killed after 60 s)"
    said = [x for x in r.stderr.splitlines() if fault in x]
    pointed = [x for x in r.stderr.splitlines() if "rank 1: stopping: rank 0 failed" in x]
    if r.returncode == 0 or len(said) != 1 or (rank1_points is not None and len(pointed) != rank1_points):
        return f"exit {r.returncode}, {len(said)} lines with '{fault}', {len(pointed)} from rank 1: {r.stderr[-400:]}"
    return None


def main():
    tmp = tempfile.mkdtemp(prefix="sixnd_bad_train_")
    try:
        return run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    V = 64
    data = os.path.join(tmp, "train.bin")
    sixnd_files.write_shard(data, [(i * 7) % V for i in range(4000)])
    other_data = os.path.join(tmp, "other.bin")
    sixnd_files.write_shard(other_data, [(i * 5) % V for i in range(4000)])
    fresh = os.path.join(tmp, "fresh")  # never created: every refused case must leave it absent

    def train(*extra, out=fresh, steps=2, data=data):
        """The base command with `extra` flags added; a flag the base has takes extra's value."""
        base = {"--init": "random", "--model": "tiny", "--vocab-size": str(V), "--max-seq-len": "16", "--device": "cpu",
                "--dtype": "fp32", "--train-data": data, "--batch": "1", "--seq-len": "8", "--steps": str(steps),
                "--peak-tflops": "1", "--out": out}
        rest, i = [], 0
        while i < len(extra):
            has_value = i + 1 < len(extra) and not extra[i + 1].startswith("--")
            if extra[i] in base:
                base[extra[i]] = extra[i + 1]
            else:
                rest += list(extra[i:i + 1 + has_value])
            i += 1 + has_value
        return ["train"] + [x for kv in base.items() for x in kv] + rest

    def sixnd(args):
        r = subprocess.run([SIXND] + args, capture_output=True, text=True, env=dict(os.environ, **ENV))
        if r.returncode != 0:
            raise RuntimeError(f"setup failed: {args}: {r.stderr}")
        return r

    def flag(name, value, words):
        return Case(f"{name} {value}", train(name, value), [name] + words, unchanged=[fresh], env=ENV)

    cases = [
        # An unquoted glob: the shell gives --train-data one name and the rest as loose arguments.
        Case("a second shard after --train-data", train() + [other_data], ["not expected", other_data, "quote it"],
             unchanged=[fresh], env=ENV),
        # The flags after it were dropped: "--train-data is required", or a run without them.
        Case("a '--' before flags", ["train", "--"] + train()[1:], ["--:", "not a flag", "after a '--'"],
             unchanged=[fresh], env=ENV),
        flag("--lr", "nan", ["finite"]), flag("--lr", "inf", ["finite"]), flag("--lr", "-1e-3", ["> 0"]),
        flag("--lr", "0", ["> 0"]),
        flag("--eps", "0", ["> 0"]), flag("--eps", "nan", ["finite"]),
        flag("--beta1", "1", ["[0, 1)"]), flag("--beta2", "-0.5", ["[0, 1)"]), flag("--beta2", "nan", ["[0, 1)"]),
        flag("--warmup", "-1", ["0 or more"]),
        # A step copied from a checkpoint's name is not octal 320; nor is 0x10 read as 16.
        flag("--stop-at", "00000500", ["decimal number without leading zeros", "(write 500)"]),
        flag("--warmup", "0x10", ["takes a decimal number, got '0x10'"]),
        flag("--final-lr-frac", "1.5", ["[0, 1]"]), flag("--final-lr-frac", "-0.1", ["[0, 1]"]),
        flag("--grad-clip", "-1", [">= 0"]), flag("--grad-clip", "inf", ["finite"]),
        flag("--weight-decay", "-0.1", [">= 0"]), flag("--weight-decay", "nan", ["finite"]),
        flag("--checkpoint-every", "-1", ["0"]), flag("--keep-last", "-2", ["0"]),
        flag("--stop-at", "-1", ["between 0"]), flag("--stop-at", "5", ["--steps (2)"]),
        flag("--eval-batches", "0", ["positive"]), flag("--eval-every", "-1", ["0"]),
        flag("--steps", "0", ["positive"]), flag("--batch", "0", ["[1,"]), flag("--batch", "-4", ["[1,"]),
        flag("--seq-len", "0", ["[1,"]), flag("--zero", "5", ["0, 1, 2 or 3"]), flag("--max-bad-steps", "0", ["positive"]),
        flag("--peak-tflops", "-1", ["at least 1e-6"]), flag("--peak-tflops", "1e-300", ["at least 1e-6"]),
        flag("--seed", "-1", []), flag("--seed", "18446744073709551616", ["2^64-1"]),
        flag("--seed", "99999999999999999999999", ["2^64-1"]),
        flag("--total-batch-tokens", "100", ["multiple of batch x seq-len x ranks", "8"]),
        flag("--total-batch-tokens", "-8", ["0 (the default", "positive multiple"]),
        flag("--total-batch-tokens", "80000000000", ["micro-steps"]),
        flag("--vocab-size", "0", ["[1,"]), flag("--vocab-size", "-5", ["[1,"]),
        flag("--vocab-size", "2000000000", ["[1,"]),
        flag("--max-seq-len", "0", ["[1,"]), flag("--max-seq-len", "-3", ["[1,"]),
        flag("--optimizer", "sgd", ["adamw or muon", "sgd"]), flag("--optimizer", "Muon", ["adamw or muon"]),
        flag("--muon-lr", "0", ["> 0"]), flag("--muon-lr", "nan", ["finite"]), flag("--muon-lr", "-0.02", ["> 0"]),
        flag("--muon-momentum", "1", ["[0, 1)"]), flag("--muon-momentum", "-0.1", ["[0, 1)"]),
        flag("--muon-momentum", "nan", ["[0, 1)"]),
        flag("--muon-weight-decay", "-1", [">= 0"]), flag("--muon-weight-decay", "inf", ["finite"]),
        Case("--vocab-size with an llm.c model", train("--init", "llmc:/nonexistent.bin"), ["--vocab-size", "--init random"],
             unchanged=[fresh], env=ENV),
        Case("--lr that is not a number", train("--lr", "abc"), ["--lr"], unchanged=[fresh], env=ENV),
        Case("--check with good flags", train("--check"), [], exit_code=0, unchanged=[fresh], env=ENV),
        # Settings that run but cannot do what they say are warned of, not refused.
        Case("--lr above 1", train("--lr", "2", out=os.path.join(tmp, "warn_lr")), [], exit_code=0, env=ENV,
             warns=["--lr 2", "above 1"]),
        # Decoupled decay multiplies the weights by 1 - lr x decay: at 1 or more it zeroes or flips them.
        Case("weight decay x lr at 1 or more", train("--weight-decay", "2000", "--lr", "1e-3",
                                                     out=os.path.join(tmp, "warn_decay")), [], exit_code=0, env=ENV,
             warns=["--weight-decay 2000 x --lr 0.001 = 2", "below 1"]),
        Case("Muon's weight decay x its lr at 1 or more",
             train("--optimizer", "muon", "--muon-weight-decay", "60", out=os.path.join(tmp, "warn_muon_decay")), [],
             exit_code=0, env=ENV, warns=["--muon-weight-decay 60 x --muon-lr 0.02 = 1.2", "below 1"]),
        Case("--warmup past --steps", train("--warmup", "5", out=os.path.join(tmp, "warn_warmup")), [], exit_code=0,
             env=ENV, warns=["--warmup 5", "--steps 2"]),
        Case("--master-weights on in fp32", train("--master-weights", "on", out=os.path.join(tmp, "warn_master")), [],
             exit_code=0, env=ENV, warns=["--master-weights on", "--dtype fp32"]),
        Case("--check with a bad flag", train("--check", "--lr", "-1"), ["--lr", "> 0"], unchanged=[fresh], env=ENV),
        # What the run itself would refuse later, --check refuses now (ablate relies on it).
        Case("--check: --seq-len over the model's context", train("--check", "--seq-len", "32"),
             ["--seq-len", "32", "max_seq_len 16"], unchanged=[fresh], env=ENV),
        Case("--check: --eval-task without --tokenizer", train("--check", "--eval-every", "1", "--eval-task", "hs.jsonl"),
             ["--eval-task", "--tokenizer"], unchanged=[fresh], env=ENV),
        # The architecture knobs (tiny: 4 heads of 12 channels).
        flag("--n-layer", "0", ["[1,"]), flag("--n-head", "-2", ["[1,"]), flag("--n-embd", "0", ["[1,"]),
        flag("--n-head", "5", ["not divisible", "48"]), flag("--n-embd", "50", ["not divisible", "50"]),
        flag("--pos", "alibi", ["learned or rope"]), flag("--rope-theta", "1", ["above 1"]),
        flag("--rope-theta", "nan", ["finite"]), flag("--rope-theta", "1e-50", ["got 1e-50"]), flag("--rope-theta", "500", ["--pos rope only"]), flag("--norm", "batchnorm", ["layernorm or rmsnorm"]),
        flag("--mlp", "geglu", ["gelu, swiglu or relu2"]), flag("--mlp-hidden", "-1", ["[0,"]),
        flag("--qk-norm", "yes", ["on or off"]), flag("--tie-embeddings", "1", ["on or off"]),
        flag("--bias", "none", ["on or off"]), flag("--n-kv-head", "3", ["divide", "4"]),
        flag("--n-kv-head", "8", ["divide"]), flag("--n-kv-head", "-1", ["[0,"]),
        flag("--model", "llama-huge", ["unknown preset", "llama-tiny"]),
        Case("rope with an odd head size", train("--pos", "rope", "--n-embd", "36", "--n-head", "4"),
             ["--pos", "even head size", "9"], unchanged=[fresh], env=ENV),
        # A rope preset reshaped to an odd head size is named by the shape flag that did it, and
        # --pos learned makes that shape legal (the preset's rope was refused before --pos applied).
        Case("a rope preset with an odd head size", train("--model", "llama-tiny", "--n-embd", "60"),
             ["--n-embd", "rope (the llama-tiny preset's)", "15", "--pos learned"], unchanged=[fresh], env=ENV),
        Case("a rope preset with an odd head size and --pos learned",
             train("--model", "llama-tiny", "--n-embd", "60", "--pos", "learned", "--check"), [], exit_code=0,
             unchanged=[fresh], env=ENV),
        Case("--n-kv-head that does not divide an --n-head override",
             train("--model", "llama-tiny", "--n-head", "3", "--n-kv-head", "2"), ["--n-kv-head", "divide", "3"],
             unchanged=[fresh], env=ENV),
        Case("a knob with an llm.c model", ["train", "--init", "llmc:/nonexistent.bin", "--norm", "rmsnorm", "--train-data",
                                            data, "--out", fresh], ["--norm", "--init random"], unchanged=[fresh], env=ENV),
    ]

    # Loss spikes: detection, --on-spike and fault injection.
    cases += [
        flag("--spike-window", "1", ["[2,"]), flag("--spike-window", "0", ["[2,"]), flag("--spike-window", "-5", ["[2,"]),
        flag("--spike-window", "abc", []),
        flag("--spike-z-loss", "-1", [">= 0"]), flag("--spike-z-loss", "nan", ["finite"]), flag("--spike-z-loss", "inf", ["finite"]),
        flag("--spike-z-grad", "-0.5", [">= 0"]), flag("--spike-z-grad", "nan", ["finite"]),
        flag("--on-spike", "panic", ["warn, skip or rollback", "panic"]), flag("--on-spike", "", ["warn, skip or rollback"]),
        Case("--on-spike rollback with nothing to roll back to", train("--on-spike", "rollback"),
             ["--on-spike", "--snapshot-every", "--checkpoint-every"], unchanged=[fresh], env=ENV),
        Case("--rollback-steps 0", train("--on-spike", "rollback", "--snapshot-every", "1", "--rollback-steps", "0"),
             ["--rollback-steps", "[1,"], unchanged=[fresh], env=ENV),
        flag("--rollback-steps", "-3", ["[1,"]),
        flag("--rollback-skip-batches", "-1", ["[0,"]),
        flag("--snapshot-every", "-1", ["0"]),
        Case("--snapshot-every without rollback", train("--snapshot-every", "2"), ["--snapshot-every", "--on-spike rollback"],
             unchanged=[fresh], env=ENV),
        flag("--max-rollbacks", "0", ["positive"]), flag("--max-rollbacks", "-2", ["positive"]),
        flag("--inject-lr-spike", "5", ["STEP:FACTOR"]), flag("--inject-lr-spike", "a:b", ["STEP:FACTOR"]),
        flag("--inject-lr-spike", "1:2:3:4", ["STEP:FACTOR"]), flag("--inject-lr-spike", "", ["STEP:FACTOR"]),
        flag("--inject-lr-spike", "0:10", ["STEP", "1 or more"]), flag("--inject-lr-spike", "-1:10", ["1 or more"]),
        flag("--inject-lr-spike", "3:10", ["--steps (2)"]), flag("--inject-lr-spike", "1:0", ["FACTOR", "> 0"]),
        flag("--inject-lr-spike", "1:-5", ["FACTOR"]), flag("--inject-lr-spike", "1:nan", ["FACTOR", "finite"]),
        flag("--inject-lr-spike", "1:inf", ["FACTOR", "finite"]), flag("--inject-lr-spike", "1:10:0", ["STEPS"]),
        flag("--inject-lr-spike", "1:10:9", ["STEPS", "--steps (2)"]), flag("--inject-lr-spike", "1:10:x", ["STEP:FACTOR"]),
        flag("--inject-junk-batch", "0", ["STEP", "1"]), flag("--inject-junk-batch", "-1", ["STEP"]),
        flag("--inject-junk-batch", "3", ["--steps (2)"]), flag("--inject-junk-batch", "x", []),
    ]

    # A flag for something the run does not do is said, not taken and ignored in silence; not
    # refused either, since one flag set for several runs (an ablation's variants) applies to
    # some of them only. --check says nothing. A 0 or an empty value that would read as the
    # flag left out is refused.
    def inert(name, args, flags):
        return Case(name, train(*args, out=os.path.join(tmp, name.replace(" ", "_")), steps=1), [], exit_code=0, env=ENV,
                    warned=[f + " has no effect" for f in flags])
    cases += [
        inert("knobs of what the run does not do",
              ["--schedule", "constant", "--final-lr-frac", "0.1", "--muon-lr", "0.03", "--muon-momentum", "0.9",
               "--muon-weight-decay", "0.1", "--rollback-steps", "3", "--rollback-skip-batches", "0", "--max-rollbacks", "1",
               "--eval-batches", "2", "--sample-tokens", "8", "--allow-resume-changes"],
              ["--final-lr-frac", "--muon-lr", "--muon-momentum", "--muon-weight-decay", "--rollback-steps",
               "--rollback-skip-batches", "--max-rollbacks", "--eval-batches", "--sample-tokens", "--allow-resume-changes"]),
        inert("spike handling without detection",
              ["--spike-z-loss", "0", "--spike-z-grad", "0", "--on-spike", "skip", "--spike-window", "8", "--val-data", data,
               "--eval-batches", "2"],
              ["--on-spike", "--spike-window", "--eval-batches", "--val-data"]),
        Case("--check: an inert flag", train("--check", "--muon-lr", "0.03"), [], exit_code=0, unchanged=[fresh], env=ENV),
        flag("--peak-tflops", "0", ["> 0", "leave it out"]), flag("--price-per-device-hour", "0", ["> 0", "leave it out"]),
        flag("--log", "", ["is empty"]), flag("--tokenizer", "", ["is empty"]), flag("--resume", "", ["is empty"]),
        flag("--norm", "", ["is empty"]), flag("--config", "", ["is empty"]),
        # "--config=" is an empty value too, not "--config" taking the next flag as its file.
        Case("--config= before another flag", train("--config=", "--check"), ["--config", "is empty"], unchanged=[fresh], env=ENV),
        Case("--tokenizer= before another flag", train("--tokenizer=", "--check"), ["--tokenizer", "is empty"], unchanged=[fresh],
             env=ENV),
        Case("--master-weights off in fp32", train("--master-weights", "off", out=os.path.join(tmp, "warn_master_off")), [],
             exit_code=0, env=ENV, warns=["--master-weights off", "--dtype fp32"]),
        # What does apply stays accepted.
        Case("flags that apply", train("--check", "--optimizer", "muon", "--muon-lr", "0.03", "--muon-momentum", "0.9",
                                       "--muon-weight-decay", "0.1", "--schedule", "wsd", "--final-lr-frac", "0.1",
                                       "--spike-z-loss", "0", "--spike-window", "8", "--on-spike", "rollback",
                                       "--snapshot-every", "1", "--rollback-steps", "2", "--rollback-skip-batches", "0",
                                       "--max-rollbacks", "2", "--val-data", data, "--eval-every", "1", "--eval-batches", "2",
                                       "--resume", "latest", "--allow-resume-changes", "--price-per-device-hour", "2"),
             [], exit_code=0, unchanged=[fresh], env=ENV),
    ]

    # Run directories that cannot be used.
    a_file = os.path.join(tmp, "a_file")
    with open(a_file, "w") as f:
        f.write("not a directory\n")
    cases += [
        Case("--out empty", train(out=""), ["--out", "empty"], env=ENV),
        Case("--out is a file", train(out=a_file), ["--out", a_file, "not a directory"], unchanged=[a_file], env=ENV),
        Case("--out below a file", train(out=os.path.join(a_file, "run")), ["--out", a_file], unchanged=[a_file], env=ENV),
        Case("--out cannot take files", train(out="/proc/self"), ["--out", "/proc/self", "not writable"], env=ENV),
    ]
    # Paths that are not UTF-8 (a Latin-1 name): the run log and checkpoints record them as JSON
    # text, so they are refused before the run, not at its first record or its first save.
    latin1_dir = os.path.join(tmp, os.fsdecode(b"donn\xe9es"))
    os.makedirs(latin1_dir)
    shutil.copy(data, os.path.join(latin1_dir, "train.bin"))
    cases += [
        Case("--out not UTF-8", train(out=os.path.join(tmp, os.fsdecode(b"caf\xe9"))), ["--out", "not valid UTF-8", "\\xe9"],
             unchanged=[os.path.join(tmp, os.fsdecode(b"caf\xe9"))], env=ENV),
        Case("--log not UTF-8", train("--log", os.path.join(tmp, os.fsdecode(b"log\xe9.jsonl")), out=os.path.join(tmp, "latin1_log")),
             ["--log", "not valid UTF-8"], unchanged=[os.path.join(tmp, os.fsdecode(b"log\xe9.jsonl")), os.path.join(tmp, "latin1_log")],
             env=ENV),
        Case("a shard under a directory not UTF-8", train(data=os.path.join(tmp, "donn*", "train.bin"), out=os.path.join(tmp, "latin1_data")),
             ["train.bin", "not valid UTF-8"], unchanged=[os.path.join(tmp, "latin1_data")], env=ENV),
    ]
    ck_file_run = os.path.join(tmp, "ck_file_run")
    os.makedirs(ck_file_run)
    with open(os.path.join(ck_file_run, "checkpoints"), "w") as f:
        f.write("x")
    cases.append(Case("OUT/checkpoints is a file", train(out=ck_file_run), ["--out", "checkpoints", "not a directory"],
                      unchanged=[ck_file_run], env=ENV))
    if os.geteuid() != 0:
        ro = os.path.join(tmp, "readonly")
        os.makedirs(ro)
        os.chmod(ro, 0o555)
        cases.append(Case("--out read-only", train(out=ro), ["--out", "not writable"], unchanged=[ro], env=ENV))

    # A run directory in use: another process holds its lock.
    locked = os.path.join(tmp, "locked")
    lock = hold_dir_lock(locked)  # noqa: F841 (held while the cases run)
    cases.append(Case("--out locked by another run", train(out=locked), ["--out", "in use", "4242"], timeout=20,
                      unchanged=[locked], env=ENV))

    # A run directory holding another run: a fresh run is refused, --overwrite replaces it.
    owned = os.path.join(tmp, "owned")
    owned_log = os.path.join(tmp, "owned.jsonl")
    sixnd(train("--log", owned_log, out=owned, steps=2))
    ckroot = os.path.join(owned, "checkpoints")
    cases.append(Case("fresh run into another run's --out", train(out=owned), ["--out", "another run", "--overwrite"],
                      unchanged=[ckroot], env=ENV))
    # A fresh run elsewhere given that run's --log (a typo) keeps its history.
    cases.append(Case("fresh run on the --log of a run into another --out", train("--log", owned_log),
                      [owned_log, "holds the log of a run into " + owned, "--overwrite"], unchanged=[owned_log, fresh], env=ENV))

    # --overwrite deletes the other run's checkpoints only once the run has passed its checks.
    cases.append(Case("--overwrite with a --log that is no run log keeps the other run",
                      train("--overwrite", "--log", a_file, out=owned, steps=1), [a_file, "not a sixnd run log"],
                      unchanged=[ckroot, a_file], env=ENV))
    def overwritten():
        steps = sorted(os.listdir(ckroot))
        ids = {json.load(open(os.path.join(ckroot, s, "meta.json")))["run_id"] for s in steps}
        return None if len(ids) == 1 and steps == ["step-00000001"] else f"left {steps} with run ids {ids}"
    cases.append(Case("--overwrite", train("--overwrite", out=owned, steps=1), [], exit_code=0, check=overwritten, env=ENV))

    # A BF16 run resumed with the other --master-weights goes on, saying what happens to the copy.
    for was, now, words in (("on", "off", ["--master-weights off", "dropped"]), ("off", "on", ["--master-weights on", "no FP32 master"])):
        run = os.path.join(tmp, f"master_{was}")
        sixnd(train("--dtype", "bf16", "--master-weights", was, "--stop-at", "1", out=run))
        cases.append(Case(f"resumed with --master-weights {now} after {was}",
                          train("--dtype", "bf16", "--master-weights", now, "--resume", "latest", out=run), [], exit_code=0,
                          env=ENV, warns=words))

    # Resuming an older step in a directory holding newer ones starts a new branch: its first
    # save deletes the abandoned newer ones, and pruning removes this lineage's older ones.
    older = os.path.join(tmp, "older")
    sixnd(train("--checkpoint-every", "1", "--keep-last", "0", out=older, steps=4))
    ock = os.path.join(older, "checkpoints")

    def pruned_right():
        left = sorted(os.listdir(ock))
        return None if left == ["step-00000003"] else f"left {left}"
    cases.append(Case("resume an older step, --keep-last 1",
                      train("--resume", os.path.join(ock, "step-00000002"), "--keep-last", "1", out=older, steps=3),
                      [], exit_code=0, check=pruned_right, env=ENV))

    # The profiled window of a resumed run ends at --steps: first step + --profile summed past
    # INT_MAX (UBSan stops the sanitized build there).
    prof = os.path.join(tmp, "prof")
    sixnd(train(out=prof, steps=2))
    cases.append(Case("--profile 2147483647 on a resumed run", train("--resume", "latest", "--profile", "2147483647", out=prof,
                                                                       steps=3), [], exit_code=0, env=ENV))

    # Resumes that conflict with the checkpoint.
    res = os.path.join(tmp, "res")
    sixnd(train("--checkpoint-every", "1", out=res, steps=2))
    rck = os.path.join(res, "checkpoints")
    cases += [
        Case("resume with another --model", train("--resume", "latest", "--model", "d6", out=res, steps=3),
             ["--resume", "fixes the model"], unchanged=[rck], env=ENV),
        Case("resume with another --vocab-size", train("--resume", "latest", "--vocab-size", "80", out=res, steps=3),
             ["--resume", "fixes the model"], unchanged=[rck], env=ENV),
        Case("resume with another --mlp", train("--resume", "latest", "--mlp", "relu2", out=res, steps=3),
             ["--resume", "fixes the model"], unchanged=[rck], env=ENV),
        Case("resume with another --seq-len", train("--resume", "latest", "--seq-len", "4", out=res, steps=3),
             ["--resume", "--seq-len 8 -> 4", "--allow-resume-changes"], unchanged=[rck], env=ENV),
        Case("resume with another --batch", train("--resume", "latest", "--batch", "2", out=res, steps=3),
             ["--resume", "tokens per step 8 -> 16"], unchanged=[rck], env=ENV),
        Case("resume with other --train-data",
             train("--resume", "latest", out=res, steps=3, data=other_data), ["--resume", "--train-data"], unchanged=[rck],
             env=ENV),
    ]
    # The checkpoint's model bounds the sequence length: refused before the run log is touched.
    res_log = os.path.join(res, "run.jsonl")
    sixnd(train("--resume", "latest", "--log", res_log, out=res, steps=3))
    cases += [
        Case("resume with --seq-len past the checkpoint's context",
             train("--resume", "latest", "--allow-resume-changes", "--seq-len", "32", "--log", res_log, out=res, steps=4),
             ["--seq-len", "32", "max_seq_len 16"], unchanged=[rck, res_log], env=ENV),
        Case("--resume a run's checkpoints directory", train("--resume", rck, out=res, steps=4),
             [rck, "checkpoints directory, not a checkpoint", "step-00000003"], unchanged=[rck], env=ENV),
    ]
    # The optimizer state is AdamW's or Muon's: a resume with the other optimizer is refused either way.
    muon_res = os.path.join(tmp, "muon_res")
    sixnd(train("--checkpoint-every", "1", "--optimizer", "muon", out=muon_res, steps=2))
    mck = os.path.join(muon_res, "checkpoints")
    cases += [
        Case("resume an adamw checkpoint with --optimizer muon",
             train("--resume", "latest", "--optimizer", "muon", out=res, steps=3),
             ["--optimizer adamw", "same optimizer"], unchanged=[rck], env=ENV),
        Case("resume a muon checkpoint with adamw", train("--resume", "latest", out=muon_res, steps=3),
             ["--optimizer muon", "same optimizer"], unchanged=[mck], env=ENV),
    ]

    # Integrity: an edited meta.json; a newest checkpoint without DONE.
    edited = os.path.join(tmp, "edited")
    sixnd(train("--checkpoint-every", "1", out=edited, steps=2))
    emeta = os.path.join(edited, "checkpoints", "step-00000002", "meta.json")
    text = open(emeta).read()
    with open(emeta, "w") as f:
        f.write(text.replace('"step": 2', '"step": 1'))
    cases.append(Case("edited meta.json step", train("--resume", "latest", out=edited, steps=3),
                      [emeta, "checksum mismatch"], unchanged=[os.path.join(edited, "checkpoints")], env=ENV))
    undone = os.path.join(tmp, "undone")
    sixnd(train("--checkpoint-every", "1", out=undone, steps=2))
    os.remove(os.path.join(undone, "checkpoints", "step-00000002", "DONE"))
    only_undone = os.path.join(tmp, "only_undone")
    sixnd(train(out=only_undone, steps=1))
    os.remove(os.path.join(only_undone, "checkpoints", "step-00000001", "DONE"))

    def resumed_from_1():
        log = [json.loads(x) for x in open(os.path.join(tmp, "undone.jsonl"))]
        steps = [r["step"] for r in log if r.get("type") == "step"]
        return None if steps == [2, 3] else f"resumed run logged steps {steps}, expected [2, 3]"
    cases += [
        Case("resume latest past a checkpoint without DONE",
             train("--resume", "latest", "--log", os.path.join(tmp, "undone.jsonl"), out=undone, steps=3),
             [], exit_code=0, check=resumed_from_1, env=ENV),
        Case("resume latest with only a checkpoint without DONE", train("--resume", "latest", out=only_undone, steps=2),
             ["--resume", "step-00000001", "incomplete"], unchanged=[os.path.join(only_undone, "checkpoints")], env=ENV),
    ]

    # --config files.
    def config(name, text):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p
    unknown = config("unknown.toml", "# a run\nlr = 1e-3\nlearning_rate = 2e-3\n")
    section = config("section.toml", "[train]\nlr = 1e-3\n[bogus]\nx = 1\n")
    badval = config("badval.toml", "\n\nlr = fast\n")
    nanval = config("nanval.toml", "[train]\nlr = nan\n")
    emptyval = config("emptyval.toml", "[train]\nlr = 1e-3\ngrad-clip =\n")
    good = config("good.toml", "# underscores, a [train] section and a [sample] one that train skips\n"
                  "warmup = 0\n[train]\nfinal_lr_frac = 0.5\nshuffle = \"off\"\n[sample]\ntop_k = 3\n")
    cases += [
        Case("config: unknown key", train("--config", unknown), [unknown + ":3", "unknown key 'learning_rate'"],
             unchanged=[fresh], env=ENV),
        Case("config: unknown section", train("--config", section), [section + ":3", "unknown section [bogus]"],
             unchanged=[fresh], env=ENV),
        Case("config: bad value", train("--config", badval), [badval + ":3", "--lr"], unchanged=[fresh], env=ENV),
        Case("config: nan", train("--config", nanval), ["--lr", "finite"], unchanged=[fresh], env=ENV),
        Case("config: an empty number", train("--config", emptyval), [emptyval + ":3", "--grad-clip", "value is empty"],
             unchanged=[fresh], env=ENV),
        Case("an empty --lr", train("--lr", ""), ["--lr", "value is empty"], unchanged=[fresh], env=ENV),
        Case("--lr twice", train("--lr", "1e-3") + ["--lr", "2e-3"], ["--lr: is given 2 times"], unchanged=[fresh], env=ENV),
        Case("config: missing file", train("--config", os.path.join(tmp, "none.toml")), ["none.toml", "cannot open"],
             unchanged=[fresh], env=ENV),
    ]

    def good_config_applied():
        log = [json.loads(x) for x in open(os.path.join(tmp, "good.jsonl"))]
        c = log[0]["config"]
        return None if (c["final_lr_frac"] == 0.5 and c["shuffle"] is False and c["warmup"] == 0) else f"config {c}"
    cases.append(Case("config: underscores and sections", train("--config", good, "--log", os.path.join(tmp, "good.jsonl"),
                                                                out=os.path.join(tmp, "good_run"), steps=1),
                      [], exit_code=0, check=good_config_applied, env=ENV))
    # Input that only the run finds wrong (after it has created and locked --out): the run
    # directory it created goes again, parents included.
    text = os.path.join(tmp, "text.txt")
    with open(text, "w") as f:
        f.write("the cat sat on the mat and the dog sat on the log\n" * 50)
    tok = os.path.join(tmp, "tok.bin")
    sixnd(["tokenizer", "train", "--input", text, "--vocab-size", "260", "--out", tok])
    tok_eot = os.path.join(tmp, "tok_eot.bin")
    sixnd(["tokenizer", "train", "--input", text, "--vocab-size", "260", "--special", "<|endoftext|>", "--out", tok_eot])
    nested = os.path.join(tmp, "parent")
    # A shard without a manifest carries no tokenizer hash: its ids are checked against --tokenizer.
    val_other = os.path.join(tmp, "val_other.bin")
    sixnd_files.write_shard(val_other, [5, 6, 280, 7] * 20)
    hs = os.path.join(tmp, "hs.jsonl")
    with open(hs, "w") as f:
        f.write(json.dumps({"ctx": "the cat", "endings": [" sat", " ran", " mat", " log"], "label": 0}) + "\n")
    cases += [
        Case("--val-data with ids --tokenizer lacks",
             train("--tokenizer", tok, "--vocab-size", "300", "--val-data", val_other, "--eval-every", "1"),
             [val_other, "token 280 at position 2", "260 tokens of " + tok, "another tokenizer"], unchanged=[fresh], env=ENV),
        # One flag set serves an ablation's variants: a task that is never scored is warned of.
        Case("--eval-task without --eval-every", train("--tokenizer", tok, "--vocab-size", "300", "--eval-task", hs,
                                                     out=os.path.join(tmp, "warn_task")),
             [], exit_code=0, env=ENV, warns=["--eval-task has no effect without --eval-every"]),
        # A sample is at most the context long: more was drawn as that, without a word.
        Case("--sample-tokens past the context", train("--tokenizer", tok_eot, "--vocab-size", "300", "--sample-every", "1",
                                                       "--sample-tokens", "500", out=os.path.join(tmp, "warn_sample")),
             [], exit_code=0, env=ENV, warns=["--sample-tokens 500", "context", "each sample is"]),
        Case("--tokenizer with more tokens than the model's vocabulary", train("--tokenizer", tok),
             [tok, "260 tokens", "vocabulary of 64"], unchanged=[fresh], env=ENV),
        Case("--check: --tokenizer with more tokens than the model's vocabulary", train("--check", "--tokenizer", tok),
             [tok, "260 tokens", "vocabulary of 64"], unchanged=[fresh], env=ENV),
        Case("--train-data that matches nothing", train(data=os.path.join(tmp, "none_*.bin")), ["none_*.bin", "no files"],
             unchanged=[fresh], env=ENV),
        Case("--train-data that matches nothing, --out below new directories",
             train(data=os.path.join(tmp, "none.bin"), out=os.path.join(nested, "a", "run")), ["none.bin"],
             unchanged=[nested], env=ENV),
    ]
    # --log: never a file the run reads (it would be overwritten), never one another run writes,
    # and under mpirun a log rank 0 cannot open stops every rank, promptly.
    cfg = os.path.join(tmp, "run.toml")
    with open(cfg, "w") as f:
        f.write("lr = 1e-3\n")
    shared_log = os.path.join(tmp, "shared.jsonl")
    with open(shared_log, "w") as f:
        f.write('{"type": "header"}\n')
    log_lock = open(shared_log, "a")
    fcntl.flock(log_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    cases += [
        Case("--log names the training shard", train("--log", data), [data, "not a sixnd run log"],
             unchanged=[data, fresh], env=ENV),
        Case("--log names the tokenizer", train("--tokenizer", tok, "--vocab-size", "260", "--log", tok),
             [tok, "not a sixnd run log"], unchanged=[tok, fresh], env=ENV),
        Case("--log names the config file", train("--config", cfg, "--log", cfg), [cfg, "not a sixnd run log"],
             unchanged=[cfg, fresh], env=ENV),
        Case("--log another run is writing", train("--log", shared_log), [shared_log, "in use"],
             unchanged=[shared_log, fresh], timeout=20, env=ENV),
        Case("--log in a missing directory", train("--log", os.path.join(tmp, "nodir", "x.jsonl")),
             ["nodir", "cannot open run log"], unchanged=[fresh], env=ENV),
        Case("--log is the run's lock file", train("--log", os.path.join(fresh, ".lock")),
             ["--log", "lock file"], unchanged=[fresh], env=ENV),
    ]
    mpirun = shutil.which("mpirun")
    if mpirun:
        bad_log_run = train("--log", os.path.join(tmp, "nodir", "mpi.jsonl"), out=os.path.join(tmp, "mpi_run"))
        cases.append(Case("--log rank 0 cannot open, under mpirun -np 2", ["--version"], [], exit_code=0,
                          check=lambda: mpi_fault(mpirun, tmp, bad_log_run, "cannot open run log",
                                                  rank1_points=0), env=ENV))
    else:
        print("mpirun not found: the mpirun --log case is left out")
    # Branches, data identity, odd checkpoint entries, --stop-at, resume faults under mpirun.
    branch = os.path.join(tmp, "branch")
    bck = os.path.join(branch, "checkpoints")
    sixnd(train("--checkpoint-every", "2", "--stop-at", "4", out=branch, steps=8))

    def branch_left(want):
        return lambda: None if sorted(os.listdir(bck)) == want else f"left {sorted(os.listdir(bck))}, expected {want}"

    def resumed_at(log, first):
        def check():
            steps = [json.loads(x)["step"] for x in open(log) if json.loads(x).get("type") == "step"]
            return None if steps and steps[0] == first else f"logged steps {steps}, expected the first {first}"
        return check
    branch_log = os.path.join(tmp, "branch.jsonl")
    cases += [
        Case("resume an older step: the abandoned newer checkpoint goes at the first save",
             train("--resume", os.path.join(bck, "step-00000002"), "--checkpoint-every", "1", "--keep-last", "1",
                   "--stop-at", "3", out=branch, steps=8), [], exit_code=0, check=branch_left(["step-00000003"]), env=ENV),
        Case("--resume latest after a branch continues the new branch",
             train("--resume", "latest", "--checkpoint-every", "1", "--keep-last", "1", "--stop-at", "5", "--log", branch_log,
                   out=branch, steps=8), [], exit_code=0, check=resumed_at(branch_log, 4), env=ENV),
        Case("--stop-at at the checkpoint's step", train("--resume", "latest", "--stop-at", "5", out=branch, steps=8),
             ["--stop-at", "already at step 5"], unchanged=[bck], env=ENV),
    ]

    # The data's identity is its content, not the spelling of its path.
    spelled = os.path.join(tmp, "spelled")
    sixnd(train("--checkpoint-every", "1", out=spelled, steps=2))
    inplace_data = os.path.join(tmp, "inplace.bin")
    shutil.copy(data, inplace_data)
    inplace = os.path.join(tmp, "inplace")
    sixnd(train(out=inplace, steps=1, data=inplace_data))
    sixnd_files.write_shard(inplace_data, [(i * 11) % V for i in range(4000)])
    cases += [
        Case("resume with --train-data spelled relative", train("--resume", "latest", out=spelled, steps=3,
                                                                data=os.path.relpath(data)), [], exit_code=0, env=ENV),
        Case("resume with --train-data spelled with ./ and //",
             train("--resume", "latest", out=spelled, steps=4, data=os.path.join(tmp, ".", "", "train.bin").replace("/", "//")),
             [], exit_code=0, env=ENV),
        Case("resume after the data was rewritten in place",
             train("--resume", "latest", out=inplace, steps=2, data=inplace_data),
             ["--resume", "--train-data inplace.bin changed in place", "4000 tokens"],
             unchanged=[os.path.join(inplace, "checkpoints")], env=ENV),
        Case("resume with other --train-data says what differs",
             train("--resume", "latest", out=spelled, steps=5, data=other_data),
             ["--train-data 1 shard (train.bin, 4000 tokens) -> 1 shard (other.bin, 4000 tokens)"],
             unchanged=[os.path.join(spelled, "checkpoints")], env=ENV),
    ]

    # Odd entries in checkpoints/: an empty step directory is skipped, a symlink or a file refused.
    odd = os.path.join(tmp, "odd")
    ock2 = os.path.join(odd, "checkpoints")
    sixnd(train("--checkpoint-every", "1", out=odd, steps=2))
    linked = os.path.join(tmp, "linked")
    lck = os.path.join(linked, "checkpoints")
    sixnd(train("--checkpoint-every", "1", out=linked, steps=2))
    os.symlink("step-00000001", os.path.join(lck, "step-00000009"))
    filed = os.path.join(tmp, "filed")
    os.makedirs(os.path.join(filed, "checkpoints"))
    with open(os.path.join(filed, "checkpoints", "step-00000001"), "w") as f:
        f.write("mine")
    cases += [
        Case("resume latest past an empty newer step directory",
             train("--resume", "latest", out=odd, steps=3), [], exit_code=0,
             setup=lambda: os.makedirs(os.path.join(ock2, "step-00000006")), env=ENV),
        Case("a symlinked step directory", train("--resume", "latest", out=linked, steps=3),
             [os.path.join(lck, "step-00000009"), "symlink"], unchanged=[lck], env=ENV),
        Case("a file named like a step directory", train("--checkpoint-every", "1", out=filed, steps=2),
             [os.path.join(filed, "checkpoints", "step-00000001"), "not a directory"],
             unchanged=[os.path.join(filed, "checkpoints")], env=ENV),
    ]
    if mpirun:
        # Rank 1 meets the same fault: it says nothing (train/run_dir.h on_all_agreed), where it
        # used to add a line pointing at rank 0's.
        missing_run = train("--resume", os.path.join(tmp, "no_such_checkpoint"), out=os.path.join(tmp, "mpi_resume"))
        cases.append(Case("--resume of a missing checkpoint, under mpirun -np 2", ["--version"], [], exit_code=0,
                          check=lambda: mpi_fault(mpirun, tmp, missing_run, "no such checkpoint directory",
                                                  rank1_points=0), env=ENV))
    return run_cases(cases, "sixnd train bad input")


if __name__ == "__main__":
    sys.exit(main())
