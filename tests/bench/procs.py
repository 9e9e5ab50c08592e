"""What the benchmark tests ask of the processes a benchmark starts: whether one still runs, and
the status a benchmark ends with on SIGTERM."""
import signal
import subprocess


def running(pid):
    """Whether PID runs (a zombie has ended: a container's init may never reap it)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except OSError:
        return False


def sigterm_status(p):
    """Sends the Popen P a SIGTERM and returns its exit status (it is killed after 60 s)."""
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()
