"""Stand-ins for the programs a test puts in the place of the real ones (a model_bench, an llm.c,
mpirun, a launcher, a wrapper around each rank): an executable script written in one call."""
import os


def write_script(path, text):
    """Writes text (starting with its #! line) to path, creating its directory, executable; returns
    path."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path
