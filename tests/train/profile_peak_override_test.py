"""On a CPU the profile's roofline is the measured matmul ceiling over the measured triad bandwidth
(README), also under `--peak-tflops`: that flag sets the peak MFU is measured against, not what
the CPU's matmuls reach. Against an override of 50 TFLOP/s the ridge would be thousands of FLOP
per byte and every matmul would read as memory-bound. The profile's MFU stays against the
override."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
PEAK = 50e12


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data, out, log = (os.path.join(tmp, n) for n in ("train.bin", "run", "run.jsonl"))
        sixnd_files.write_repeating_shard(data)
        cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32",
               "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len", "16",
               "--steps", "2", "--checkpoint-every", "0", "--profile", "1", "--peak-tflops", str(PEAK / 1e12),
               "--out", out, "--log", log]
        recs = sixnd_files.run_train(cmd, "profiled run", log)
        p = json.load(open(os.path.join(out, "profile.json")))
        if not p["peak_source"].startswith("measured matmul ceiling") or p["peak_flops"] == PEAK:
            failures.append(f"the roof's peak is {p['peak_flops']:.3g} FLOP/s from '{p['peak_source']}', "
                            "not the measured matmul ceiling")
        step_s, model = p["step_s"], p["model_flops_per_step"]
        if abs(p["mfu"] - model / step_s / PEAK) > 1e-9 * p["mfu"]:
            failures.append(f"the profile's MFU {p['mfu']} is not against --peak-tflops ({model / step_s / PEAK})")
        header = recs[0]
        if header["peak_flops"] != PEAK:
            failures.append(f"the run's peak is {header['peak_flops']}, not --peak-tflops")
    return sixnd_files.report(failures, "the CPU profile's roof is the measured ceiling under --peak-tflops")


if __name__ == "__main__":
    sys.exit(main())
