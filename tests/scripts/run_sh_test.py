"""scripts/run.sh, as a new user and CI run it, on a copy of the script in a repository of its own
whose setup.sh and cmake are stand-ins (nothing is installed or built: build/sixnd is this build's
sixnd), on Debian's fortunes:
1. a bad SIXND_STEPS (0, -3, abc, "1 2", 1e3) or SIXND_CPU_ISA stops it at once with one line
   naming it, exit 2, before any stage runs and without touching the previous run's checkpoint and log;
2. a relative SIXND_RUN with a space is taken from the directory run.sh is started in, not the
   repository, and the paths it prints at the end are whole; a short SIXND_STEPS gets a warm-up
   that fits it (30 steps outlasted the run, and training warned of a --warmup never given);
3. a run directory in use (a sixnd train holding its lock, or another run.sh) is refused before
   any stage runs;
4. SIGTERM sent to run.sh alone during training reaches the trainer, which checkpoints: run.sh
   waits for it, leaves nothing running, exits 143 and says how to continue the run;
5. Ctrl-C (SIGINT to run.sh's process group) reaches the trainer once (it checkpoints rather than
   exiting at once), exit 130, and under SIXND_CPU_ISA the command printed sets it too (a resume
   takes the kernels it finds: pasted into another shell, it continued the run on other kernels);
6. run.sh again after that starts a new run (its own checkpoint only);
7. the shards are made from the fortune files the tokenizer learnt from, no others;
8. while another run.sh (of another run directory) builds build/, run.sh says so and waits for it
   before its own build;
9. a run directory holding things of its own under the names a fresh run deletes (texts/ with a
   file, spikes/ with more than spike reports, data/ without a manifest or with more than shards, a
   train_summary.json directory, a run.jsonl that is no run log or no file, a checkpoints file) is
   refused before any stage runs, with one line naming it, and they are untouched (texts/ used to
   be deleted; training refused run.jsonl and checkpoints only after the tokenizer and the shards);
10. SIGTERM that comes while run.sh starts training (its fork held up by strace) still reaches the
   trainer (it reached no process group, and training ran all its steps), and a trainer stopped
   before it removed the last run's checkpoints gets no command printed that would continue those;
11. a GPU older than compute capability 8.0 (nvidia-smi and nvcc stand-ins) is no device for the
   CUDA kernels: run.sh builds without CUDA and trains on the CPU, saying why (it took the GPU, and
   the run died at its first kernel); a newer one is taken.
12. started through a link to it, or to its folder, run.sh sets up and builds its own checkout (it
   looked for cpu_isa_check.sh and setup.sh beside the link);
13. a checkout whose build/ cannot be written (read-only) is refused before set-up, in one line (it
   was mkdir's own error, once set-up had run);
14. under SIXND_BF16_MATMUL=fp32 (BF16 matmuls in FP32 arithmetic) the default run is sized for
   FP32 FMAs (it took the 600 steps of a CPU whose dot products run them);
and 1. also covers SIXND_BF16_MATMUL: an unknown value, or bf16 under SIXND_CPU_ISA=avx2 (sixnd
   refused both only at training, after the build, the tokenizer and the shards).
Skips (77) without Debian's fortunes or a built sixnd."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("SIXND_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIXND = os.environ.get("SIXND_BIN") or os.path.join(SRC, "build", "sixnd")
FORTUNES = "/usr/share/games/fortunes"
sys.path.insert(0, os.path.join(SRC, "tests", "util"))
from checklist import check, verdict  # noqa: E402
import stand_in  # noqa: E402
from rename_signal import SKIP_NOTE, STRACE  # noqa: E402


def tools_dir(path, stubs):
    """PATH folder of stand-ins: name -> body of a /bin/sh script."""
    os.makedirs(path)
    for name, body in stubs.items():
        stand_in.write_script(os.path.join(path, name), "#!/bin/sh\n" + body)
    return path


def make_repo(t):
    """T/repo/scripts/run.sh and cpu_isa_check.sh (the real ones), a setup.sh that only leaves a mark, and on PATH a
    cmake whose build links build/sixnd to this build's and an nvidia-smi that finds no GPU."""
    repo = os.path.join(t, "repo")
    os.makedirs(os.path.join(repo, "scripts"))
    for script in ("run.sh", "cpu_isa_check.sh"):
        shutil.copy(os.path.join(SRC, "scripts", script), os.path.join(repo, "scripts"))
    with open(os.path.join(repo, "scripts", "setup.sh"), "w") as f:
        f.write('touch "$(dirname "$0")/../setup_ran"\n')
    tools = tools_dir(os.path.join(t, "tools"), {
        "cmake": f'touch "$(dirname "$0")/../cmake_ran"\n'
                 f'for a in "$@"; do [ "$a" = --build ] && mkdir -p build && ln -sf {SIXND} build/sixnd; done\n'
                 'exit 0\n',
        "nvidia-smi": "exit 1\n"})
    env = dict(os.environ, PATH=tools + ":" + os.environ["PATH"])
    for k in ("SIXND_RUN", "SIXND_STEPS", "SIXND_CPU_ISA", "SIXND_BF16_MATMUL"):
        env.pop(k, None)
    return repo, env


def start(repo, env, cwd, script=None, **kw):
    return subprocess.Popen(["bash", script or os.path.join(repo, "scripts", "run.sh")], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kw)


def run(repo, env, cwd, timeout=600, script=None):
    p = start(repo, env, cwd, script)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def processes_under(path):
    """Processes whose command line names PATH (what a run here left running)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if path in cmd:
            found.append(f"{pid}: {cmd[:120]}")
    return found


def wait_for_step(run_dir, p, timeout=300):
    """Until the run log holds a step record (training is under way) or run.sh ended."""
    log = os.path.join(run_dir, "run.jsonl")
    end = time.time() + timeout
    while time.time() < end and p.poll() is None:
        if os.path.exists(log) and '"type":"step"' in open(log, errors="replace").read().replace(" ", ""):
            return True
        time.sleep(0.2)
    return False


def interrupt(repo, env, t, run_dir, send, expect_rc, name):
    p = start(repo, dict(env, SIXND_RUN=run_dir, SIXND_STEPS="100000"), t, start_new_session=True)
    if not wait_for_step(run_dir, p):
        p.kill()
        out, err = p.communicate()
        check(False, f"{name}: training did not start: {last_line(err)}")
        return
    send(p)
    try:
        out, err = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    time.sleep(0.5)
    left = processes_under(run_dir)
    check(not left, f"{name}: nothing left running after run.sh ended ({left})")
    check(p.returncode == expect_rc, f"{name}: exit {p.returncode} (expected {expect_rc})")
    ckpts = os.listdir(os.path.join(run_dir, "checkpoints")) if os.path.isdir(os.path.join(run_dir, "checkpoints")) else []
    check(len(ckpts) == 1, f"{name}: the trainer wrote its checkpoint on the way out ({ckpts})")
    check(not os.path.exists(os.path.join(run_dir, "train_summary.json.tmp")), f"{name}: no half-written summary left")
    sig = "SIGTERM" if expect_rc == 143 else "SIGINT"
    check(f"run.sh: interrupted by {sig} during training" in err,
          f"{name}: run.sh says where it was interrupted (stderr ends: {err[-400:]!r})")
    check("--resume latest" in last_line(err) and last_line(err).lstrip().startswith("cd "),
          f"{name}: the last line is the command that continues the run ({last_line(err)!r})")
    check("second signal" not in err and f"interrupted by {sig} after step" in err,
          f"{name}: the trainer got one signal, not two")
    isa = env.get("SIXND_CPU_ISA")
    check(not isa or f"&& SIXND_CPU_ISA={isa} " in last_line(err),
          f"{name}: the command continues on the kernels of SIXND_CPU_ISA={isa} ({last_line(err)!r})")


def interrupt_as_training_starts(repo, env, t, run_dir):
    """SIGTERM to run.sh while it starts training in run_dir, which holds the last run's
    checkpoints, its fork held up by strace (attached once the tokenizer runs, delaying each
    fork's return in run.sh)."""
    last_ckpts = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
    err_path = os.path.join(t, "start.err")
    with open(err_path, "w") as err_f:
        p = subprocess.Popen(["bash", os.path.join(repo, "scripts", "run.sh")], cwd=t, stdout=subprocess.DEVNULL,
                             stderr=err_f, env=dict(env, SIXND_RUN=run_dir, SIXND_STEPS="100000"),
                             start_new_session=True)

    def wait_for(text):
        end = time.time() + 300
        while time.time() < end and p.poll() is None:
            if text in open(err_path, errors="replace").read():
                return True
            time.sleep(0.05)
        return False

    tracer = None
    if wait_for("== tokenizer"):
        tracer = subprocess.Popen([STRACE, "-qq", "-o", "/dev/null", "-p", str(p.pid), "-e", "trace=clone,clone3",
                                   "-e", "inject=clone,clone3:delay_exit=3000000"], stderr=subprocess.DEVNULL)
    started = tracer is not None and wait_for("== train")
    if started:
        time.sleep(1.5)
        os.kill(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    if tracer:
        tracer.wait(timeout=30)
    err = open(err_path, errors="replace").read()
    check(started and p.returncode == 143 and "run.sh: interrupted by SIGTERM during training" in err,
          f"SIGTERM as training starts reaches the trainer: exit {p.returncode} (stderr ends: {err[-300:]!r})")
    check("second signal" not in err, "SIGTERM as training starts: the trainer got one signal, not two")
    ckpts = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
    check(not ("--resume latest" in err and ckpts == last_ckpts),
          f"SIGTERM as training starts: no command that continues the last run's checkpoints {last_ckpts} is printed")


def main():
    if not os.path.isdir(FORTUNES) or not os.access(SIXND, os.X_OK):
        print(f"skipped: needs {FORTUNES} (the fortunes package) and a built sixnd ({SIXND})")
        return 77
    t = tempfile.mkdtemp(prefix="sixnd_run_sh_")
    try:
        repo, env = make_repo(t)
        mark = os.path.join(repo, "setup_ran")

        # --- 1. bad SIXND_STEPS
        old = os.path.join(t, "old")
        os.makedirs(os.path.join(old, "checkpoints", "step-00000007"))
        with open(os.path.join(old, "run.jsonl"), "w") as f:
            f.write('{"type":"header"}\n')
        for steps in ("0", "-3", "abc", "1 2", "1e3"):
            t0 = time.time()
            rc, out, err = run(repo, dict(env, SIXND_RUN=old, SIXND_STEPS=steps), t, timeout=60)
            lines = [line for line in err.splitlines() if line.strip()]
            check(rc == 2 and len(lines) == 1 and "SIXND_STEPS" in lines[0] and time.time() - t0 < 10,
                  f"SIXND_STEPS={steps!r}: exit {rc}, one line naming SIXND_STEPS ({lines})")
        rc, out, err = run(repo, dict(env, SIXND_RUN=old, SIXND_STEPS="1", SIXND_CPU_ISA="avx3"), t, timeout=60)
        lines = [line for line in err.splitlines() if line.strip()]
        check(rc == 2 and len(lines) == 1 and "SIXND_CPU_ISA=avx3" in lines[0],
              f"SIXND_CPU_ISA=avx3: exit {rc}, one line naming it ({lines})")
        for kernels in ({"SIXND_BF16_MATMUL": "fp16"}, {"SIXND_BF16_MATMUL": "bf16", "SIXND_CPU_ISA": "avx2"}):
            rc, out, err = run(repo, dict(env, SIXND_RUN=old, SIXND_STEPS="1", **kernels), t, timeout=60)
            lines = [line for line in err.splitlines() if line.strip()]
            check(rc == 2 and len(lines) == 1 and f"SIXND_BF16_MATMUL={kernels['SIXND_BF16_MATMUL']}" in lines[0],
                  f"{kernels}: exit {rc}, one line naming SIXND_BF16_MATMUL before any stage ({lines})")
        check(not os.path.exists(mark), "bad SIXND_STEPS, SIXND_CPU_ISA or SIXND_BF16_MATMUL: no stage ran")
        check(os.path.isdir(os.path.join(old, "checkpoints", "step-00000007")) and
              os.path.getsize(os.path.join(old, "run.jsonl")) > 0,
              "bad SIXND_STEPS: the previous run's checkpoint and log are untouched")

        # --- 3. a run directory in use
        with open(os.path.join(old, ".lock"), "w") as lock:
            lock.write("4242")
            lock.flush()
            fcntl.flock(lock, fcntl.LOCK_EX)
            rc, out, err = run(repo, dict(env, SIXND_RUN=old, SIXND_STEPS="1"), t, timeout=60)
        check(rc != 0 and "in use by a sixnd train (pid 4242)" in last_line(err),
              f"a run directory a sixnd train holds is refused: exit {rc}, {last_line(err)!r}")
        with open(os.path.join(old, ".run_sh.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            rc, out, err = run(repo, dict(env, SIXND_RUN=old, SIXND_STEPS="1"), t, timeout=60)
        check(rc != 0 and "in use by another scripts/run.sh" in last_line(err),
              f"a run directory another run.sh holds is refused: exit {rc}, {last_line(err)!r}")
        check(not os.path.exists(mark), "a run directory in use: no stage ran")
        check(os.path.isdir(os.path.join(old, "checkpoints", "step-00000007")),
              "a run directory in use: its checkpoint is untouched")

        # --- 9. a SIXND_RUN holding other things under the names a fresh run deletes
        other = os.path.join(t, "home")
        for name, fault in (("texts/notes.txt", "holds more than links"),
                            ("spikes/todo.txt", "holds more than spike reports"),
                            ("spikes/sub/step-0000001.json", "holds more than spike reports"),
                            ("texts", "not a directory"),
                            ("data/notes.txt", "holds no manifest.json"),
                            ("data", "not a directory"),
                            ("train_summary.json/notes.txt", "a directory"),
                            ("run.jsonl", "its first line is no sixnd run log header"),
                            ("run.jsonl/notes.txt", "not a file"),
                            ("checkpoints", "not a directory")):
            shutil.rmtree(other, ignore_errors=True)
            path = os.path.join(other, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("mine\n")
            rc, out, err = run(repo, dict(env, SIXND_RUN=other, SIXND_STEPS="1"), t, timeout=60)
            lines = [line for line in err.splitlines() if line.strip()]
            check(rc == 1 and len(lines) == 1 and f"SIXND_RUN={other}: " in lines[0] and fault in lines[0],
                  f"a run directory with {name} of its own is refused: exit {rc}, {lines}")
            check(os.path.isfile(path) and open(path).read() == "mine\n", f"{name} of the run directory's own is untouched")
        shutil.rmtree(other)
        os.makedirs(os.path.join(other, "data"))
        for name in ("manifest.json", "train_000001.bin", "notes.txt"):
            with open(os.path.join(other, "data", name), "w") as f:
                f.write("mine\n")
        rc, out, err = run(repo, dict(env, SIXND_RUN=other, SIXND_STEPS="1"), t, timeout=60)
        check(rc == 1 and "holds more than shards and their manifest" in last_line(err),
              f"a data directory with a file data prepare does not write is refused: exit {rc}, {last_line(err)!r}")
        check(os.path.isfile(os.path.join(other, "data", "notes.txt")), "data/notes.txt is untouched")
        check(not os.path.exists(mark), "a run directory holding other things: no stage ran")

        # --- 2. a relative SIXND_RUN with a space, from another directory than the repository
        cwd = os.path.join(t, "elsewhere")
        os.makedirs(cwd)
        # ... 8. while another run.sh holds the build directory
        os.makedirs(os.path.join(repo, "build"), exist_ok=True)
        cmake_mark = os.path.join(t, "cmake_ran")
        with open(os.path.join(repo, "build", ".run_sh.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            p = start(repo, dict(env, SIXND_RUN="my run", SIXND_STEPS="1"), cwd)
            deadline = time.time() + 120
            while not os.path.exists(mark) and p.poll() is None and time.time() < deadline:
                time.sleep(0.2)
            time.sleep(1)
            check(p.poll() is None and not os.path.exists(cmake_mark),
                  "while another run.sh holds build/, run.sh waits before its build")
        out, err = p.communicate(timeout=600)
        rc = p.returncode
        check("another scripts/run.sh is building" in err, "the wait for build/ is said")
        want = os.path.join(cwd, "my run")
        check(rc == 0, f"SIXND_RUN='my run': exit {rc} ({last_line(err)!r})")
        check("--warmup" not in err, "SIXND_STEPS=1: no warning of a --warmup the user never gave "
                                     f"({[line for line in err.splitlines() if '--warmup' in line]})")
        check(os.path.isfile(os.path.join(want, "run.jsonl")) and not os.path.exists(os.path.join(repo, "my run")),
              "SIXND_RUN='my run' is taken from the directory run.sh started in")
        printed = dict(line.split(":", 1) for line in out.splitlines()
                       if line.split(":", 1)[0] in ("run log", "checkpoint"))
        check(printed and all(os.path.exists(v.strip()) and os.path.isabs(v.strip()) for v in printed.values()),
              f"the paths printed at the end are whole and exist ({printed})")
        # The shards come from the files the tokenizer learnt from: not the *.dat indexes, nor a
        # subdirectory (fortunes-off's) the tokenizer never read.
        texts = sorted(n for n in os.listdir(FORTUNES) if "." not in n and os.path.isfile(os.path.join(FORTUNES, n)))
        with open(os.path.join(want, "data", "manifest.json")) as f:
            inputs = sorted(os.path.basename(i["path"]) for i in json.load(f)["inputs"])
        check(inputs == texts, f"the shards' inputs are the tokenizer's {len(texts)} fortune files ({len(inputs)}: "
                               f"{[i for i in inputs if i not in texts][:5]} beyond them)")

        # --- 4. SIGTERM to run.sh alone, 5. Ctrl-C, 6. again afterwards
        run_dir = os.path.join(t, "sig run")
        interrupt(repo, env, t, run_dir, lambda p: os.kill(p.pid, signal.SIGTERM), 143, "SIGTERM to run.sh")
        shutil.rmtree(run_dir, ignore_errors=True)
        interrupt(repo, dict(env, SIXND_CPU_ISA="avx2"), t, run_dir, lambda p: os.killpg(p.pid, signal.SIGINT),
                  130, "Ctrl-C")
        rc, out, err = run(repo, dict(env, SIXND_RUN=run_dir, SIXND_STEPS="1"), t)
        ckpts = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
        check(rc == 0 and ckpts == ["step-00000001"],
              f"run.sh after an interrupted run starts a new one: exit {rc}, checkpoints {ckpts}")

        # --- 10. SIGTERM while training is being started
        if STRACE:
            interrupt_as_training_starts(repo, env, t, run_dir)
        else:
            print(f"note: {SKIP_NOTE}")

        # --- 11. the GPU's compute capability (a cmake that records its flags and fails ends the run)
        cmake_args = os.path.join(t, "cmake_args")
        gpu_tools = tools_dir(os.path.join(t, "gpu_tools"), {
            "nvidia-smi": 'case "$*" in *compute_cap*) printf "$CAPS";; esac\nexit 0\n', "nvcc": "exit 0\n",
            "cmake": f'echo "$@" >> {cmake_args}\nexit 1\n'})
        for caps, cuda, said in (("7.5\n", "OFF", True), ("8.0\n7.0\n", "OFF", True), ("9.0\n", "ON", False)):
            open(cmake_args, "w").close()
            rc, out, err = run(repo, dict(env, PATH=gpu_tools + ":" + env["PATH"], CAPS=caps,
                                          SIXND_RUN=os.path.join(t, "gpu run"), SIXND_STEPS="1"), t, timeout=120)
            args = open(cmake_args).read()
            check(rc != 0 and f"-DSIXND_CUDA={cuda}" in args and ("need 8.0 or newer" in err) == said,
                  f"compute capability {caps.split()}: CUDA {cuda}, {'said' if said else 'nothing said'} "
                  f"(exit {rc}, cmake {args.strip()!r}, {last_line(err)!r})")

        # --- 12. through a link to run.sh, or to its folder: set-up and the build are the checkout's
        fail_tools = tools_dir(os.path.join(t, "fail_tools"), {"cmake": "exit 1\n"})
        os.makedirs(os.path.join(t, "links"))
        os.symlink(os.path.join(repo, "scripts", "run.sh"), os.path.join(t, "links", "run.sh"))
        os.symlink(os.path.join(repo, "scripts"), os.path.join(t, "links", "sixnd_scripts"))
        for link in (os.path.join(t, "links", "run.sh"), os.path.join(t, "links", "sixnd_scripts", "run.sh")):
            if os.path.exists(mark):
                os.remove(mark)
            rc, out, err = run(repo, dict(env, PATH=fail_tools + ":" + env["PATH"], SIXND_RUN=os.path.join(t, "link run"),
                                          SIXND_STEPS="1"), t, timeout=120, script=link)
            check(os.path.exists(mark) and "run.sh: the build (configure) failed" in last_line(err),
                  f"through {link}: set-up and the build of its checkout ran (exit {rc}, {last_line(err)!r})")

        # --- 13. a checkout whose build/ cannot be written (read-only): refused before set-up
        ro = os.path.join(t, "ro")
        ro_repo, ro_env = make_repo(ro)
        with open(os.path.join(ro_repo, "build"), "w") as f:
            f.write("mine\n")
        rc, out, err = run(ro_repo, dict(ro_env, SIXND_RUN=os.path.join(ro, "run"), SIXND_STEPS="1"), t, timeout=60)
        lines = [line for line in err.splitlines() if line.strip()]
        check(rc == 1 and len(lines) == 1 and lines[0].startswith(f"run.sh: {ro_repo}/build: cannot write") and
              not os.path.exists(os.path.join(ro_repo, "setup_ran")),
              f"an unwritable build/ is refused before set-up, in one line: exit {rc}, {lines}")

        # --- 14. SIXND_BF16_MATMUL=fp32 sizes the default run for FP32 FMAs (a stand-in sixnd
        #     records training's flags): 600 steps were a BF16-dot-product CPU's, half again as long
        args = os.path.join(t, "train_args")
        stub = os.path.join(t, "stub_sixnd")
        stand_in.write_script(stub, f'#!/bin/sh\n[ "$1" = train ] && {{ echo "$@" > {args}; exit 3; }}\nexit 0\n')
        stub_tools = tools_dir(os.path.join(t, "stub_tools"), {
            "cmake": f'for a in "$@"; do [ "$a" = --build ] && mkdir -p build && ln -sf {stub} build/sixnd; done\nexit 0\n'})
        stub_repo, stub_env = make_repo(os.path.join(t, "stub"))
        rc, out, err = run(stub_repo, dict(stub_env, PATH=stub_tools + ":" + stub_env["PATH"], SIXND_BF16_MATMUL="fp32",
                                           SIXND_RUN=os.path.join(t, "fp32 run")), t, timeout=120)
        train = open(args).read().split() if os.path.exists(args) else []
        steps = train[train.index("--steps") + 1] if "--steps" in train else None
        want = "400" if " avx512f " in " " + open("/proc/cpuinfo").read().replace("\n", " ") + " " else "300"
        check(steps == want, f"SIXND_BF16_MATMUL=fp32: {steps} steps by default (expected {want}; exit {rc}, {last_line(err)!r})")
    finally:
        for line in processes_under(t):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        shutil.rmtree(t, ignore_errors=True)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
