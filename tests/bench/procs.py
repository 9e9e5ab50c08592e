"""What the benchmark tests ask of the processes a benchmark starts: whether one still runs."""


def running(pid):
    """Whether PID runs (a zombie has ended: a container's init may never reap it)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except OSError:
        return False
