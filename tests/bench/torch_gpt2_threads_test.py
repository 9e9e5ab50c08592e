"""bench/torch_gpt2.py --threads N runs PyTorch on N threads throughout: OpenBLAS (its FP32
matmuls on Debian) keeps a pool of its own, sized at load by OPENBLAS_NUM_THREADS before
OMP_NUM_THREADS, so with either set to something else the peer would multiply on another
thread count than the one it reports. The peer's JSON says what its OpenBLAS runs with.
Skips (77) without PyTorch."""
import json
import os
import subprocess
import sys

SRC = os.environ.get("SIXND_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "util"))
from checklist import check, verdict  # noqa: E402


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: no PyTorch")
        return 77
    cmd = [sys.executable, os.path.join(SRC, "bench", "torch_gpt2.py"), "--device", "cpu", "--shape", "small",
           "--dtype", "fp32", "--mode", "fwdbwd", "--batch", "1", "--seq-len", "8", "--warmup", "0", "--iters", "1",
           "--threads", "2"]
    for env in ({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "1"},
                {"OPENBLAS_NUM_THREADS": "3"}):
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **env), timeout=120)
        lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
        check(r.returncode == 0 and len(lines) == 1, f"{env}: exit {r.returncode}, {r.stderr.strip()[-300:]!r}")
        if r.returncode != 0 or len(lines) != 1:
            continue
        out = json.loads(lines[0])
        check(out["threads"] == 2, f"{env}: PyTorch's threads: {out['threads']}")
        blas = out.get("openblas_threads")
        check(blas == 2 or (blas == 0 and not out["openblas_core"]),
              f"{env}: OpenBLAS's threads (kernel {out['openblas_core']!r}): {blas}")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
