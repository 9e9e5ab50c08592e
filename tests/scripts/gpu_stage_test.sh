#!/usr/bin/env bash
# scripts/gpu_stage.sh on a copy of the repository's staged files and a made-up build (small ELF
# programs with a .nv_fatbin section, as the gpu preset's binaries have):
# 1. a relative BUILD_DIR is taken from the directory gpu_stage.sh is started in (it used to be
#    taken from the repository root: a build that exists was called missing), the carry path
#    printed is relative to the repository root, as the device tool takes it, and the command
#    printed is the staged gpu_check.sh (scripts/gpu_check.sh looks only in build-gpu/stage: it
#    used to be printed for every stage, and found no binaries in another);
# 2. with no argument it stages build-gpu and prints carry "build-gpu/stage";
# 3. a BUILD_DIR outside the repository (which no device call can carry) is refused in one line;
# 4. with a space in BUILD_DIR the printed command runs as printed (its path was printed unquoted);
# 5. an option (--help) or a second argument gets the usage and exit 2, and nothing is staged (the
#    first was taken for a build folder, the second ignored);
# 6. a binary without CUDA code fails the check, its last line naming it, and the stage is removed
#    (it was left for the next device call to carry);
# 7. outside a git checkout (this copy) the tree's size is said not to be counted (git's "fatal:
#    not a git repository" was printed).
# Skips (77) without gcc and objcopy.
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v gcc >/dev/null || ! command -v objcopy >/dev/null; then
    echo "skipped: needs gcc and objcopy"
    exit 77
fi
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_gpu_stage_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo/scripts" "$T/repo/bench" "$T/elsewhere"
cp "$SRC/scripts/gpu_stage.sh" "$SRC/scripts/gpu_check.sh" "$SRC/scripts/gpu_table.py" "$T/repo/scripts/"
cp "$SRC/bench/torch_attention.py" "$SRC/bench/torch_gpt2.py" "$T/repo/bench/"
printf 'int main(void) { return 0; }\n' >"$T/main.c"
gcc -o "$T/prog" "$T/main.c" || fail "cannot build a program"
head -c 4096 /dev/zero >"$T/fatbin"
objcopy --add-section .nv_fatbin="$T/fatbin" --set-section-flags .nv_fatbin=alloc,load,readonly,data \
    "$T/prog" "$T/prog_gpu" 2>/dev/null || fail "objcopy cannot add a .nv_fatbin section"
make_build() {  # make_build DIR: the seven binaries gpu_stage.sh stages
    local b
    mkdir -p "$1/tests" "$1/bench"
    for b in tests/gpu_ops_test tests/gpu_attention_test tests/gpu_train_test tests/gpu_muon_test \
             tests/gpu_nccl_test bench/attention_bench bench/model_bench; do
        cp "$T/prog_gpu" "$1/$b"
    done
}

# --- 1. a relative BUILD_DIR from another directory
make_build "$T/repo/mybuild"
out=$(cd "$T" && bash repo/scripts/gpu_stage.sh repo/mybuild 2>&1)
rc=$?
echo "relative BUILD_DIR from outside the repository: exit $rc: $(tail -1 <<<"$out")"
((rc == 0)) || fail "gpu_stage.sh refused a build that exists: $out"
[[ -x $T/repo/mybuild/stage/bin/gpu_ops_test && -f $T/repo/mybuild/stage/scripts/gpu_check.sh ]] ||
    fail "nothing staged in repo/mybuild/stage"
[[ $(tail -1 <<<"$out") == 'gpu_stage: carry "mybuild/stage"; run: bash mybuild/stage/scripts/gpu_check.sh' ]] ||
    fail "the carry path is not relative to the repository root, or the command not the staged script"
read -r -a cmd <<<"$(tail -1 <<<"$out" | sed 's/.*; run: //')"
check=$(cd "$T/repo" && OUT="$T/check_out" SIXND_GPU_STEPS=gpu_ops_test timeout 60 "${cmd[@]}" 2>&1)
echo "the printed command: $(grep -m1 '== gpu_ops_test' <<<"$check")"
[[ $check == *"== gpu_ops_test"* && $check != *"gpu_ops_test: skipped (not built"* ]] ||
    fail "the printed command '${cmd[*]}' does not find the staged binaries: $check"

# --- 2. the default, from the repository root
make_build "$T/repo/build-gpu"
out=$(cd "$T/repo" && bash scripts/gpu_stage.sh 2>&1)
rc=$?
echo "default BUILD_DIR: exit $rc: $(tail -1 <<<"$out")"
((rc == 0)) || fail "exit $rc for the default build-gpu: $out"
[[ -d $T/repo/build-gpu/stage/bin ]] || fail "the default build-gpu was not staged: $out"
[[ $(tail -1 <<<"$out") == 'gpu_stage: carry "build-gpu/stage"; run: bash build-gpu/stage/scripts/gpu_check.sh' ]] ||
    fail "the default carry path is not build-gpu/stage"

# --- 3. a BUILD_DIR outside the repository
make_build "$T/elsewhere/b"
out=$(cd "$T/repo" && bash scripts/gpu_stage.sh "$T/elsewhere/b" 2>&1)
rc=$?
echo "BUILD_DIR outside the repository: exit $rc: $out"
((rc == 1)) || fail "exit $rc for a build outside the repository (expected 1)"
[[ $(wc -l <<<"$out") == 1 && $out == *"outside the repository"* ]] || fail "not one line saying why"
[[ ! -e $T/elsewhere/b/stage ]] || fail "it staged a folder no call can carry"
# --- 4. a folder with a space: the printed command runs as printed
make_build "$T/repo/my build"
out=$(cd "$T/repo" && bash scripts/gpu_stage.sh "my build" 2>&1)
rc=$?
echo "BUILD_DIR with a space: exit $rc: $(tail -1 <<<"$out")"
((rc == 0)) || fail "exit $rc for 'my build': $out"
cmd=$(tail -1 <<<"$out" | sed 's/.*; run: //')
check=$(cd "$T/repo" && OUT="$T/check_out" SIXND_GPU_STEPS=gpu_ops_test timeout 60 bash -c "$cmd" 2>&1)
[[ $check == *"== gpu_ops_test"* && $check != *"gpu_ops_test: skipped (not built"* ]] ||
    fail "the printed command '$cmd' does not run the staged script in 'my build': $check"

# --- 5. an option or a second argument is refused with the usage, nothing staged
rm -rf "$T/repo/build-gpu/stage"
for args in "--help" "build-gpu extra"; do
    read -r -a a <<<"$args"
    out=$(cd "$T/repo" && bash scripts/gpu_stage.sh "${a[@]}" 2>&1)
    rc=$?
    echo "gpu_stage.sh $args: exit $rc: $out"
    ((rc == 2)) && [[ $(wc -l <<<"$out") == 1 && $out == usage:* ]] || fail "gpu_stage.sh $args: not the usage, exit 2"
done
[[ ! -e $T/repo/build-gpu/stage ]] || fail "a refused call staged build-gpu"

# --- 6. a binary without CUDA code: refused, nothing left staged
make_build "$T/repo/cpu build"
cp "$T/prog" "$T/repo/cpu build/tests/gpu_train_test"
out=$(cd "$T/repo" && bash scripts/gpu_stage.sh "cpu build" 2>&1)
rc=$?
echo "a binary without .nv_fatbin: exit $rc: $(tail -1 <<<"$out")"
((rc == 1)) && [[ $(tail -1 <<<"$out") == *"cpu build/tests/gpu_train_test has no .nv_fatbin section"* ]] ||
    fail "a binary without CUDA code: its last line does not name it, or not exit 1"
[[ ! -e "$T/repo/cpu build/stage" ]] || fail "the failed stage was left for a device call to carry"

# --- 7. outside a git checkout
out=$(cd "$T/repo" && bash scripts/gpu_stage.sh 2>&1)
[[ $out != *fatal* && $out == *"the working tree not counted"* ]] || fail "outside a git checkout: $out"
echo "all passed"
