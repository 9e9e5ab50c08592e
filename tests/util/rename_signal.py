"""Signals at every step of a commit: runs a sixnd command under strace with a signal delivered
as its Nth rename(2) (or renameat2(2): the one-step directory swap) returns, once for each N, so
that every moment between two renames, and after the last, is hit. renameat2 may be made to fail
(fallback=True), so that a directory swap takes its two-rename path. Without strace, or where it
cannot trace (ptrace refused in a container), STRACE is None and callers leave their cases out,
saying so."""
import os
import shutil
import signal
import subprocess
import tempfile

def _usable_strace():
    path = shutil.which("strace")
    if path and subprocess.run([path, "-qq", "-o", "/dev/null", "true"], capture_output=True).returncode == 0:
        return path
    return None


STRACE = _usable_strace()
# LeakSanitizer cannot run in a traced process (it stops the world with ptrace itself) and would
# end a sanitized build's every traced run with an abort; leaks are the untraced tests' business.
TRACED_ENV = dict(os.environ, ASAN_OPTIONS=":".join(filter(None, [os.environ.get("ASAN_OPTIONS", ""), "detect_leaks=0"])))
SKIP_NOTE = "strace not found or cannot trace here: signal-injection cases left out"


def _strace(cmd, extra):
    return [STRACE, "-qq", "-e", "trace=rename,renameat2"] + extra + cmd


def count_calls(cmd, syscall, fail):
    with tempfile.NamedTemporaryFile("r") as log:
        subprocess.run(_strace(cmd, fail + ["-o", log.name]), capture_output=True, stdin=subprocess.DEVNULL, check=True,
                       env=TRACED_ENV)
        return sum(1 for line in log if line.startswith(syscall + "("))


def each_rename(cmd, setup, check, sig="SIGTERM", fallback=False, syscall="rename"):
    """For each call N of syscall in cmd: setup(), the run with sig as call N returns, then
    check(N, result), which returns a fault or None. Returns the first fault, or None."""
    fail = ["-e", "inject=renameat2:error=EXDEV"] if fallback else []
    setup()
    count = count_calls(cmd, syscall, fail)
    if count == 0:
        return f"no {syscall}(2) seen in {cmd}"
    for n in range(1, count + 1):
        setup()
        r = subprocess.run(_strace(cmd, fail + ["-o", "/dev/null", "-e", f"inject={syscall}:signal={sig}:when={n}"]),
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, env=TRACED_ENV)
        fault = check(n, r)
        if fault:
            return f"{sig} after {syscall} {n} of {count}{' (renameat2 failing)' if fallback else ''}: {fault}"
    return None


def dir_commit_fault(cmd, out, old_ref, new_ref, aside_mark, snapshot):
    """cmd replaces the directory out (alone in its parent) by one like new_ref; before each run
    out is made a copy of old_ref. With SIGTERM at any rename out is old or new, never missing,
    and only a moved-aside sibling (its name holds aside_mark) may be left, for the next run to
    remove. With SIGKILL anything may be left, and the next run puts back an earlier output left
    aside (saying so) and removes the rest. Both through renameat2's one-step swap and without
    it. Returns the first fault, or None."""
    parent = os.path.dirname(out)
    old, new = snapshot(old_ref), snapshot(new_ref)

    def siblings():
        return sorted(n for n in os.listdir(parent) if n != os.path.basename(out))

    def earlier():
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(old_ref, out)

    def terminated(n, r):
        left = siblings()
        if r.returncode != -signal.SIGTERM:
            return f"exit {r.returncode}, expected death by SIGTERM: {r.stderr.strip()[-300:]}"
        if snapshot(out) not in (old, new):
            return f"{out} is {'missing' if not os.path.exists(out) else 'neither the earlier output nor the new one'}"
        if len(left) > 1 or any(aside_mark not in n for n in left):
            return f"left {left}"
        return None

    def killed(n, r):
        if r.returncode != -signal.SIGKILL:
            return f"exit {r.returncode}, expected death by SIGKILL: {r.stderr.strip()[-300:]}"
        missing = not os.path.exists(out)
        rerun = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if rerun.returncode != 0:
            return f"the next run failed: {rerun.stderr.strip()[-300:]}"
        if missing and "put back" not in rerun.stderr:
            return f"{out} was missing and the next run did not say it put it back: {rerun.stderr.strip()[-300:]}"
        if snapshot(out) != new or siblings():
            return f"after the next run: {out} {'is new' if snapshot(out) == new else 'is not the new output'}, left {siblings()}"
        return None

    for sig, check in (("SIGTERM", terminated), ("SIGKILL", killed)):
        for fallback, syscall in ((True, "rename"), (False, "renameat2")):
            fault = each_rename(cmd, earlier, check, sig, fallback, syscall)
            if fault:
                return fault
    r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0 or snapshot(out) != new or siblings():
        return f"the last run: exit {r.returncode}, left {siblings()}"
    return None
