"""The PyTorch peer of the parity tests, imported before anything else they need from it: torch
itself, or the test ends as skipped (ctest's code 77) where python3-torch is not installed; and
bench/ on the path, for torch_gpt2 (the reference GPT-2 the benchmarks share)."""
import os
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("SKIP: python3-torch is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "bench"))

__all__ = ["torch", "F"]
