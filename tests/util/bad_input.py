"""The table-driven bad-input suite's runner. A case is a command, the exit code it must end
with, the words its one-line error must contain, and the paths that must be exactly as they
were before (content, kind — regular file, directory, symlink, device — and, for a directory,
every entry under it). Each room's table lives in its own tests/<room>/bad_input_*_test.py and
calls run_cases()."""
import fcntl
import hashlib
import os
import resource
import signal
import stat
import subprocess
from dataclasses import dataclass, field
from typing import Callable, List, Optional

SIXND = os.environ.get("SIXND_BIN", "sixnd")


@dataclass
class Case:
    name: str
    args: List[str]
    words: List[str]                         # each must appear in the error line
    exit_code: int = 1
    unchanged: List[str] = field(default_factory=list)
    setup: Optional[Callable[[], None]] = None  # runs just before the command
    check: Optional[Callable[[], Optional[str]]] = None  # returns a fault, or None
    timeout: float = 120
    env: Optional[dict] = None
    file_size_limit: Optional[int] = None  # RLIMIT_FSIZE in bytes, SIGXFSZ at its default (as a shell has it)
    warns: List[str] = field(default_factory=list)  # all must appear in one warning line
    warned: List[str] = field(default_factory=list)  # each must appear in a warning line of its own


def hold_dir_lock(directory, pid_text="4242"):
    """Takes a directory's lock (core/dir_lock.h: flock on DIR/.lock holding the holder's pid) as
    another sixnd process would; held until the returned file is closed or this process ends."""
    os.makedirs(directory, exist_ok=True)
    lock = open(os.path.join(directory, ".lock"), "w")
    lock.write(pid_text)
    lock.flush()
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return lock


def snapshot(path):
    """A comparable description of what is at path (not following a symlink at the top)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ("absent",)
    if stat.S_ISLNK(st.st_mode):
        return ("symlink", os.readlink(path))
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return ("device", st.st_rdev)
    if stat.S_ISDIR(st.st_mode):
        return ("dir", tuple((name, snapshot(os.path.join(path, name))) for name in sorted(os.listdir(path))))
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            return ("file", hashlib.sha256(f.read()).hexdigest())
    return ("other", stat.S_IFMT(st.st_mode))


def file_size_limit(limit):
    """A child's set-up that caps the size of the files it writes; None without a limit."""
    if limit is None:
        return None

    def limit_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    return limit_files


def run_case(c: Case):
    """None when the case behaves, else what went wrong."""
    if c.setup:
        c.setup()
    before = {p: snapshot(p) for p in c.unchanged}
    env = dict(os.environ, **(c.env or {}))
    try:
        r = subprocess.run([SIXND] + c.args, capture_output=True, text=True, errors="replace", timeout=c.timeout, env=env,
                           stdin=subprocess.DEVNULL, preexec_fn=file_size_limit(c.file_size_limit))
    except subprocess.TimeoutExpired:
        return f"timed out after {c.timeout} s"
    errors = [x for x in r.stderr.splitlines() if "error" in x.lower()]
    if r.returncode != c.exit_code:
        return f"exit {r.returncode}, expected {c.exit_code}; stderr: {r.stderr.strip()[-400:]}"
    if c.exit_code != 0:
        if len(errors) != 1:
            return f"expected one error line, got {len(errors)}: {r.stderr.strip()[-400:]}"
        missing = [w for w in c.words if w not in errors[0]]
        if missing:
            return f"error line lacks {missing}: {errors[0]}"
    warnings = [x for x in r.stderr.splitlines() if "warn" in x.lower()]
    if c.warns and not any(all(w in x for w in c.warns) for x in warnings):
        return f"no warning line with {c.warns}: {r.stderr.strip()[-400:]}"
    unsaid = [w for w in c.warned if not any(w in x for x in warnings)]
    if unsaid:
        return f"no warning line with {unsaid}: {r.stderr.strip()[-600:]}"
    for p, b in before.items():
        if snapshot(p) != b:
            return f"{p} changed"
    if c.check:
        fault = c.check()
        if fault:
            return fault
    return None


def run_cases(cases, what):
    """Runs every case, prints one line each and the closing line; returns the exit status."""
    failures = []
    for c in cases:
        fault = run_case(c)
        print(f"{'ok  ' if fault is None else 'FAIL'} {c.name}" + ("" if fault is None else f": {fault}"), flush=True)
        if fault is not None:
            failures.append(f"{c.name}: {fault}")
    for f in failures:
        print("FAIL:", f)
    print(f"{'FAILED' if failures else 'PASSED'}: {what} ({len(cases) - len(failures)} of {len(cases)} cases)")
    return 1 if failures else 0
