"""`sixnd plan` from the command line: the worked numbers through --json (every number in base
units), the human table, and one clear error line (exit 1) for every inconsistent or incomplete
input combination and for a bad --check file."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from bad_input import Case, run_cases  # noqa: E402

SIXND = os.environ["SIXND_BIN"]


def plan(*args):
    r = subprocess.run([SIXND, "plan", "--json"] + list(args), capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"plan {args}: {r.stderr}")
    return json.loads(r.stdout)


def worked_numbers():
    faults = []

    def want(what, got, text):
        if got != text:
            faults.append(f"{what}: {got} != {text}")

    j = plan("--params", "405e9", "--tokens", "15.6e12")
    want("Llama 3 405B 6ND", f"{j['compute']['flops']:.3g}", "3.79e+25")
    j = plan("--flops", "5.88e23")
    want("Chinchilla N", f"{j['compute']['params']:.3g}", "7e+10")
    want("Chinchilla D", f"{j['compute']['tokens']:.3g}", "1.4e+12")
    j = plan("--params", "70e9", "--tokens", "1.4e12")
    want("Chinchilla 70B C", f"{j['compute']['flops']:.3g}", "5.88e+23")
    want("7B x 16", f"{plan('--params', '7e9')['memory']['model_states']:.0f}", "112000000000")
    want("bubble P4 M4", plan("--params", "1e9", "--pipeline-stages", "4", "--micro-batches", "4")["pipeline"]["bubble"], 3 / 7)
    want("bubble P4 M32", plan("--params", "1e9", "--pipeline-stages", "4", "--micro-batches", "32")["pipeline"]["bubble"], 3 / 35)
    want("H100 ridge", f"{plan('--params', '1e9', '--device', 'h100')['device']['ridge_flop_per_byte']:.3g}", "295")
    want("Llama 3 8B", f"{plan('--params', '8e9', '--tokens', '15e12')['compute']['tokens_per_param']:.4g}", "1875")
    want("GPT-3", f"{plan('--params', '175e9', '--tokens', '300e9')['compute']['tokens_per_param']:.2g}", "1.7")
    j = plan("--params", "405e9", "--tokens", "15.6e12", "--device", "h100", "--devices", "16000", "--days", "54")
    want("interruptions", f"{j['reliability']['interruptions']:.3g}", "419")
    want("hours between", f"{j['reliability']['mtbf_s'] / 3600:.2g}", "3.1")
    want("MFU needed", f"{j['time']['mfu_required']:.2g}", "0.51")
    # A model shape: N counts the matmul parameters; activations follow the recompute policy.
    j = plan("--model", "gpt2-124m", "--tokens", "1e10", "--batch", "4", "--seq-len", "1024", "--recompute", "selective")
    want("124M N", f"{j['compute']['params']:.4g}", "1.237e+08")  # 124.4M less wpe (1024 x 768)
    if not j["memory"]["activations_none"] > j["memory"]["activations_selective"] > j["memory"]["activations_full"]:
        faults.append(f"activations by policy: {j['memory']}")
    if "12 L C T" not in j["formulas"]["compute.flops"]:
        faults.append("the attention term is not named")
    j = plan("--model", "d12", "--zero", "3", "--ranks", "8", "--batch", "4", "--device", "h100", "--devices", "8",
             "--mfu", "0.4", "--tokens", "1e9")
    if j["comm"]["zero3"] <= j["comm"]["zero2"] or j["memory"]["fits"] != "yes":
        faults.append(f"ZeRO-3 on 8 ranks: {j['comm']}, fits {j['memory']['fits']}")
    # ZeRO-3 sends the paper's 3 psi from a parameter count (every forward and backward gathers
    # all of it), and less with a model shape, whose gather slots keep some units.
    j = plan("--params", "1e9", "--devices", "8", "--device", "h100", "--zero", "3")
    want("count ZeRO-3 / ZeRO-0", f"{j['comm']['zero3'] / j['comm']['zero0']:.4g}", "1.5")
    j = plan("--model", "gpt2-124m", "--devices", "8", "--device", "h100", "--zero", "3")
    want("124M ZeRO-3 / 3 psi", f"{j['comm']['zero3'] / (1.5 * j['comm']['zero0']):.2f}", "0.88")
    # README's worked budget (64 H100s): its bytes per rank per step.
    j = plan("--flops", "1e22", "--device", "h100", "--devices", "64", "--mfu", "0.4")
    want("worked budget ZeRO-0 GB", f"{j['comm']['zero0'] / 1e9:.2f}", "35.94")
    want("worked budget ZeRO-3 GB", f"{j['comm']['zero3'] / 1e9:.2f}", "53.92")
    # The ZeRO bytes-per-parameter rows follow the dtype and master weights, as model_states does.
    j = plan("--model", "gpt2-124m", "--batch", "4", "--zero", "1", "--devices", "8", "--device", "h100", "--dtype", "fp32")
    want("fp32 ZeRO-1 bytes/param", j["memory"]["zero1_bytes_per_param"], 9)
    want("fp32 ZeRO-0 bytes/param", j["memory"]["zero0_bytes_per_param"], 16)
    want("fp32 ZeRO-1 formula", j["formulas"]["memory.zero1_bytes_per_param"].split(" (")[0], "4 + 4 + 8/n")
    # An FP32 run's time on a GPU is at the CUDA cores' FP32 peak (its GEMMs ask for FP32, not TF32).
    j = plan("--params", "1e9", "--device", "h100", "--dtype", "fp32", "--devices", "8", "--mfu", "0.4", "--tokens", "1e10")
    want("H100 FP32 peak", f"{j['device']['peak_flops']:.3g}", "6.7e+13")
    want("H100 FP32 hours", f"{j['time']['seconds'] / 3600:.3g}", "77.7")
    want("H100 BF16 peak", f"{plan('--params', '1e9', '--device', 'h100')['device']['peak_flops']:.3g}", "9.89e+14")
    j = plan("--params", "1e9", "--ranks", "4", "--zero", "2", "--master-weights", "off")
    want("no master ZeRO-2 bytes/param", j["memory"]["zero2_bytes_per_param"], 2 + 10 / 4)
    want("no master model states", j["memory"]["model_states"], 1e9 * (2 + 10 / 4))
    # Without master weights the formulas say so, not "4 psi" beside a 0.
    want("no master formula", j["formulas"]["memory.zero2_bytes_per_param"], "2 + 2/n + 8/n (params + grads + m, v)")
    want("no master row", j["formulas"]["memory.master"], "none: --master-weights off")
    # A model shape without --batch (no activations) still totals its rows: ZeRO 1-3's scratch slice
    # is a workspace row of its own.
    for z in ("0", "1", "3"):
        m = plan("--model", "gpt2-124m", "--ranks", "8", "--zero", z)["memory"]
        want(f"--model without --batch, ZeRO-{z}: total = its rows", m["total"],
             sum(m.get(k, 0) for k in ("params", "grads", "master", "adam_m", "adam_v", "workspace")))
    # Devices are data-parallel ranks x pipeline stages.
    j = plan("--params", "1e9", "--devices", "64", "--device", "h100", "--pipeline-stages", "4", "--micro-batches", "8")
    want("ranks per stage", j["memory"]["ranks"], 16)
    # Pipeline stages each hold their own units: the embeddings on the first, the final norm and
    # the LM head on the last (a tied head's copy, or an untied head moved there), so the
    # stages' model states add up to the whole model's plus one [Vp, C] when tied, and to the
    # whole model's when not (GPT-2's units are multiples of 64 either way).
    head = 50304 * 768
    for tie in ("on", "off"):
        shape = ["--model", "gpt2-124m", "--tie-embeddings", tie, "--batch", "4", "--seq-len", "1024", "--tokens", "1e9",
                 "--device", "h100"]
        whole = plan(*shape)["memory"]["model_states"]
        j = plan(*shape, "--devices", "4", "--pipeline-stages", "4", "--micro-batches", "8")
        st = j["memory_by_stage"]
        totals = [st[f"stage{i}_total"] for i in range(4)]
        if [st[f"stage{i}_layers"] for i in range(4)] != [3, 3, 3, 3] or [st[f"stage{i}_in_flight"] for i in range(4)] != [4, 3, 2, 1]:
            faults.append(f"pipeline stages (tie {tie}): {st}")
        if j["memory"]["total"] != max(totals) or j["memory"]["stage"] != totals.index(max(totals)):
            faults.append(f"pipeline (tie {tie}): memory.total {j['memory']['total']} is not the heaviest of {totals}")
        want(f"stages' model states, tie {tie}", sum(st[f"stage{i}_model_states"] for i in range(4)),
             whole + (16 * head if tie == "on" else 0))
        want(f"the tied head's gradient sum, tie {tie}", j["pipeline"].get("tied_head_sum_bytes"),
             2 * head if tie == "on" else None)
        want(f"stage boundary bytes (B T C e), tie {tie}", j["pipeline"]["p2p_bytes_per_micro_batch"], 4 * 1024 * 768 * 2)
    # --peak-tflops on any device; decoding is bandwidth-bound up to the ridge point, compute-bound
    # past it (2N FLOPs a token); memory as the driver reports it (nvidia-smi's 81559 MiB).
    want("--peak-tflops on an H100", plan("--params", "1e9", "--device", "h100", "--peak-tflops", "500")["device"]["peak_flops"], 5e14)
    # Given on this CPU too, the peak is said to be the given one (it was labelled "BF16 FLOP/s").
    j = plan("--params", "1e9", "--device", "cpu", "--peak-tflops", "2")
    want("--peak-tflops on the CPU", (j["device"]["peak_flops"], j["formulas"]["device.peak_flops"]),
         (2e12, "FLOP/s from --peak-tflops"))
    want("decode at batch 1: bandwidth / weight bytes",
         plan("--params", "1e9", "--device", "h100")["serving"]["decode_tokens_per_s"], 3.35e12 / 2e9)
    want("decode at batch 1024: peak / 2N",
         plan("--params", "1e9", "--device", "h100", "--serve-batch", "1024")["serving"]["decode_tokens_per_s"], 989e12 / 2e9)
    want("H100 memory", plan("--params", "1e9", "--device", "h100")["device"]["mem_bytes"], 81559 * 2 ** 20)
    # The data-sheet devices with memory and bandwidth figures are planned too, by key or by the
    # name nvidia-smi shows ("H100 PCIe" used to be an unknown device).
    want("H100 PCIe by name", plan("--params", "1e9", "--device", "H100 PCIe")["device"]["peak_flops"], 756e12)
    want("H200 NVL by key", plan("--params", "1e9", "--device", "h200-nvl")["device"]["mem_bw"], 4.8e12)
    # Counts whose products leave an int are planned in doubles.
    j = plan("--model", "tiny", "--batch", "1", "--ranks", "2", "--zero", "2", "--pipeline-stages", "2",
             "--micro-batches", "65536", "--grad-accum", "65536")
    want("p2p over 2^32 micro-steps", j["pipeline"]["p2p_bytes_per_step"], 65536.0 * 65536 * j["pipeline"]["p2p_bytes_per_micro_batch"])
    # A pipeline stage's ranks sync that stage's units: from a count, a quarter of the model's.
    whole = plan("--params", "1e9", "--ranks", "8")["comm"]["bytes_per_rank_per_step"]
    want("a pipeline stage's ring bytes", plan("--params", "1e9", "--ranks", "8", "--pipeline-stages", "4",
                                               "--micro-batches", "8")["comm"]["bytes_per_rank_per_step"], whole / 4)
    j = plan("--model", "gpt2-124m", "--batch", "4", "--tokens", "1e9", "--pipeline-stages", "4", "--micro-batches", "8",
             "--pipeline-schedule", "gpipe")
    want("GPipe in flight", [j["memory_by_stage"][f"stage{i}_in_flight"] for i in range(4)], [8, 8, 8, 8])
    want("GPipe schedule", j["pipeline"]["schedule"], "gpipe")
    want("pipeline tokens per step (B x T x M)", j["steps"]["tokens_per_step"], 4 * 1024 * 8)
    r = subprocess.run([SIXND, "plan", "--params", "1e9", "--device", "h100", "--devices", "4", "--mfu", "0.8",
                        "--tokens", "1e10", "--pipeline-stages", "4", "--micro-batches", "4"], capture_output=True, text=True)
    if r.returncode != 0 or "above what the pipeline leaves" not in r.stdout + r.stderr:
        faults.append(f"an MFU above 1 - bubble (4/7) without a note: {r.stdout[-400:]} {r.stderr}")
    # Young/Daly's sqrt(2 x write x MTBF) holds for writes far shorter than the MTBF: 1e12 parameters
    # on 2^24 H100s write for 1.9 h between interruptions 11 s apart, an "interval" of 6.4 min.
    r = subprocess.run([SIXND, "plan", "--params", "1e12", "--device", "h100", "--devices", "16777216", "--mfu", "0.4"],
                       capture_output=True, text=True)
    if r.returncode != 0 or "note: a checkpoint write" not in r.stdout:
        faults.append(f"a checkpoint write longer than the MTBF without a note: {r.stdout[-600:]} {r.stderr}")
    r = subprocess.run([SIXND, "plan", "--params", "1e9", "--device", "h100", "--devices", "8", "--mfu", "0.4"],
                       capture_output=True, text=True)
    if r.returncode != 0 or "note: a checkpoint write" in r.stdout:
        faults.append(f"a checkpoint write far shorter than the MTBF with a note: {r.stdout[-600:]} {r.stderr}")
    r = subprocess.run([SIXND, "plan", "--model", "gpt2-124m", "--batch", "4", "--tokens", "1e9", "--pipeline-stages", "2",
                        "--micro-batches", "4"], capture_output=True, text=True)
    if r.returncode != 0 or "memory_by_stage" not in r.stdout or "stage1_total" not in r.stdout:
        faults.append(f"human table without the stages: {r.stdout[:300]} {r.stderr}")
    r = subprocess.run([SIXND, "plan", "--flops", "1e22", "--device", "h100", "--devices", "64", "--mfu", "0.4",
                        "--serve-tokens", "1e13", "--price-per-device-hour", "2"], capture_output=True, text=True)
    if r.returncode != 0 or "sqrt(C / 120)" not in r.stdout or "option2_total_dollars" not in r.stdout:
        faults.append(f"human table: {r.stdout[:300]} {r.stderr}")
    for f in faults:
        print("FAIL", f)
    print(f"{'ok  ' if not faults else 'FAIL'} worked numbers through the CLI")
    return faults


def main():
    faults = worked_numbers()
    with tempfile.TemporaryDirectory() as tmp:
        notlog = os.path.join(tmp, "notlog.jsonl")
        with open(notlog, "w") as f:
            f.write('{"type": "step", "step": 1}\n')
        broken = os.path.join(tmp, "broken.jsonl")
        with open(broken, "w") as f:
            f.write("{not json\n")
        cases = [
            Case("nothing", [], ["nothing to plan"]),
            # A script's unset variable: not the device left out.
            Case("an empty --device", ["--params", "1e9", "--device", ""], ["--device", "empty"]),
            Case("over-determined", ["--flops", "1e21", "--params", "1e9", "--tokens", "1e12"], ["--flops", "two of"]),
            Case("days without devices", ["--device", "h100", "--days", "3", "--mfu", "0.4"], ["--devices", "missing"]),
            Case("devices without device", ["--devices", "8", "--days", "3", "--mfu", "0.4"], ["--device", "missing"]),
            Case("two budgets", ["--flops", "1e21", "--device", "h100", "--devices", "8", "--days", "1", "--mfu", "0.4"],
                 ["one compute budget"]),
            Case("ratio alone", ["--tokens-per-param", "20"], ["--tokens-per-param"]),
            Case("ratio over-determined", ["--params", "1e9", "--tokens", "1e10", "--tokens-per-param", "20"], ["over-determined"]),
            Case("pipeline without micro-batches", ["--params", "1e9", "--pipeline-stages", "4"], ["--micro-batches"]),
            Case("micro-batches without pipeline", ["--params", "1e9", "--micro-batches", "8"], ["--pipeline-stages"]),
            Case("unknown schedule", ["--params", "1e9", "--pipeline-stages", "4", "--micro-batches", "8",
                                      "--pipeline-schedule", "zigzag"], ["--pipeline-schedule", "zigzag"]),
            Case("schedule without pipeline", ["--params", "1e9", "--pipeline-schedule", "gpipe"], ["--pipeline-stages"]),
            Case("params and model", ["--params", "1e9", "--model", "d12"], ["--params", "not both"]),
            Case("batch without shape", ["--params", "1e9", "--batch", "8"], ["--model"]),
            Case("unknown device", ["--params", "1e9", "--device", "tpu9"], ["--device", "tpu9"]),
            Case("unknown preset", ["--model", "gpt9"], ["--model", "gpt9"]),
            Case("mfu over one", ["--params", "1e9", "--device", "h100", "--devices", "8", "--mfu", "40"], ["--mfu"]),
            Case("negative tokens", ["--tokens", "-5"], ["--tokens"]),
            Case("negative pipeline stages", ["--params", "1e9", "--pipeline-stages", "-2"],
                 ["--pipeline-stages: must be at least 1, got -2"]),
            Case("negative pipeline stages with micro-batches",
                 ["--params", "1e9", "--pipeline-stages", "-2", "--micro-batches", "8"],
                 ["--pipeline-stages: must be at least 1, got -2"]),
            Case("negative micro-batches", ["--params", "1e9", "--micro-batches", "-1"], ["--micro-batches", "got -1"]),
            Case("zero grad-accum", ["--params", "1e9", "--grad-accum", "0"], ["--grad-accum: must be at least 1, got 0"]),
            Case("negative shape", ["--n-layer", "-2", "--n-head", "2", "--n-embd", "64"], ["--n-layer", "got -2"]),
            Case("negative vocab", ["--model", "d6", "--vocab-size", "-1"], ["--vocab-size", "got -1"]),
            Case("infinite flops", ["--flops", "inf"], ["--flops: must be a finite number"]),
            Case("fractional devices", ["--device", "h100", "--devices", "2.5", "--days", "1", "--mfu", "0.4"],
                 ["--devices", "whole number", "2.5"]),
            Case("negative peak", ["--params", "1e9", "--device", "h100", "--peak-tflops", "-3"], ["--peak-tflops", "got -3"]),
            Case("partial shape", ["--n-layer", "12", "--tokens", "1e9"], ["--n-layer"]),
            Case("seq-len over context", ["--model", "d6", "--batch", "1", "--seq-len", "4096"], ["--seq-len"]),
            Case("knob without a shape", ["--mlp", "swiglu", "--tokens", "1e9"], ["--mlp", "--n-layer"]),
            Case("bad knob value", ["--model", "d6", "--norm", "batchnorm"], ["--norm", "batchnorm"]),
            Case("kv heads not dividing", ["--model", "d6", "--n-kv-head", "4"], ["--n-kv-head", "must divide"]),
            Case("unknown optimizer", ["--model", "d6", "--optimizer", "sgd"], ["--optimizer", "sgd"]),
            Case("muon without a model", ["--params", "1e9", "--optimizer", "muon"], ["--optimizer", "needs a model"]),
            Case("zero devices", ["--params", "1e9", "--device", "h100", "--devices", "0", "--mfu", "0.4"],
                 ["--devices: must be at least 1, got 0"]),
            Case("zero flops", ["--flops", "0"], ["--flops: must be above 0, got 0"]),
            Case("zero tokens", ["--params", "1e9", "--tokens", "0"], ["--tokens: must be at least 1, got 0"]),
            Case("params below one", ["--params", "0.5"], ["--params: must be at least 1, got 0.5"]),
            Case("a plan past the doubles", ["--params", "1e308"], ["compute.flops", "not a finite number"]),
            Case("ranks beyond any cluster", ["--params", "1e9", "--ranks", "2147483647"], ["--ranks: must be at most"]),
            Case("peak without device", ["--params", "1e9", "--peak-tflops", "500"], ["--peak-tflops: needs --device"]),
            Case("price without device", ["--params", "1e9", "--price-per-device-hour", "2"],
                 ["--price-per-device-hour: needs --device"]),
            Case("serve batch without device", ["--params", "1e9", "--serve-batch", "64"], ["--serve-batch: needs --device"]),
            Case("checkpoint write without a training time", ["--params", "1e9", "--device", "h100", "--checkpoint-write-s", "10"],
                 ["--checkpoint-write-s", "training time"]),
            Case("write bandwidth without a training time", ["--params", "1e9", "--write-bw", "5e9"], ["--write-bw", "training time"]),
            Case("zero batch", ["--model", "d6", "--batch", "0"], ["--batch: must be at least 1, got 0"]),
            Case("zero stage out of range", ["--params", "1e9", "--zero", "5"], ["--zero: stage must be 0, 1, 2 or 3, got 5"]),
            # Flags that would change no row are refused, not dropped.
            Case("seq-len without a model", ["--params", "1e9", "--seq-len", "2048"], ["--seq-len", "needs a model"]),
            Case("recompute without a batch", ["--model", "d6", "--recompute", "full"], ["--recompute", "needs --batch"]),
            Case("attention without a batch", ["--params", "1e9", "--attention", "naive"], ["--attention", "needs --batch"]),
            Case("grad-accum with no batch and one rank", ["--model", "d6", "--tokens", "1e9", "--grad-accum", "8"],
                 ["--grad-accum", "--batch", "--ranks"]),
            Case("grad-accum for ZeRO-2's traffic", ["--params", "1e9", "--ranks", "8", "--zero", "2", "--grad-accum", "8"], [],
                 exit_code=0),
            Case("a budget that buys no token", ["--flops", "1e3", "--model", "d6"], ["plan: ", "tokens: a run needs at least one"]),
            Case("more stages than layers", ["--model", "gpt2-124m", "--pipeline-stages", "40", "--micro-batches", "8"],
                 ["--pipeline-stages", "40", "12 layers"]),
            Case("ranks not the devices", ["--params", "1e9", "--device", "h100", "--devices", "8", "--mfu", "0.4", "--ranks", "4"],
                 ["--ranks", "4", "--devices 8"]),
            Case("devices not a multiple of the stages",
                 ["--params", "1e9", "--device", "h100", "--devices", "6", "--mfu", "0.4", "--pipeline-stages", "4",
                  "--micro-batches", "8"], ["--devices", "6", "4 pipeline stages"]),
            # An input is quoted as given: %g's six digits showed 16777217 as the limit itself, 10001
            # devices as 1e+04 (which split into 2 stages) and an MFU of 1.00001 as 1.
            Case("devices one past the limit", ["--params", "1e9", "--device", "h100", "--devices", "16777217", "--mfu", "0.4"],
                 ["--devices: must be a whole number up to 16777216, got 16777217"]),
            Case("a fractional device count of eight digits",
                 ["--params", "1e9", "--device", "h100", "--devices", "10000000.5", "--mfu", "0.4"], ["got 10000000.5"]),
            Case("devices not a multiple of the stages, as given",
                 ["--params", "1e9", "--device", "h100", "--devices", "10001", "--mfu", "0.4", "--pipeline-stages", "2",
                  "--micro-batches", "8"], ["--devices: 10001 devices do not split into 2 pipeline stages"]),
            Case("ranks not the devices, as given",
                 ["--params", "1e9", "--device", "h100", "--devices", "12345", "--mfu", "0.4", "--ranks", "12344"],
                 ["is not --devices 12345 ("]),
            Case("mfu just over one", ["--params", "1e9", "--device", "h100", "--devices", "8", "--mfu", "1.00001"],
                 ["--mfu", "got 1.00001"]),
            # Two sources of one write time: the given one would win and --write-bw go unused.
            Case("write time and write bandwidth", ["--params", "1e9", "--device", "h100", "--devices", "8", "--mfu", "0.4",
                                                    "--checkpoint-write-s", "10", "--write-bw", "5e9"],
                 ["--write-bw", "--checkpoint-write-s", "one of them"]),
            Case("master weights in fp32", ["--params", "1e9", "--dtype", "fp32", "--master-weights", "on"], [],
                 exit_code=0, warns=["--master-weights on", "no effect"]),
            Case("serving without device", ["--params", "1e9", "--serve-tokens", "1e9"], ["--device"]),
            Case("check missing file", ["--check", os.path.join(tmp, "absent.jsonl")], ["absent.jsonl"]),
            Case("check without header", ["--check", notlog], ["notlog.jsonl", "header"]),
            Case("check not json", ["--check", broken], ["broken.jsonl:1"]),
            Case("check an empty path", ["--check", ""], ["--check: is empty"]),
            Case("check with plan flags", ["--check", notlog, "--params", "1e9"], ["--check", "--params"]),
        ]
        for c in cases:
            c.args = ["plan"] + c.args
        status = run_cases(cases, "sixnd plan: worked numbers and one-line errors")
    if faults:
        print(f"FAILED: {len(faults)} worked numbers")
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
