#!/usr/bin/env python3
"""The test list must not need this machine's CMake at ctest time.

The device machine runs another CMake, installed elsewhere. If the files ctest reads include
anything under this CMake's module folder (GoogleTest's PRE_TEST discovery does), ctest there
stops with rc 8 and runs nothing. This test copies the files ctest reads out of the build folder,
points every reference to CMAKE_ROOT at a folder that does not exist (the device's view of it),
and checks that ctest on the copy lists exactly the tests of the original and runs the core
GoogleTest cases from it (or those matching argv[1], e.g. '^gpu\.' on the gpu preset's build)."""
import os
import re
import subprocess
import sys
import tempfile

MISSING_ROOT = "/nonexistent/cmake-modules"


def fail(msg):
    print(f"FAILED: {msg}")
    sys.exit(1)


def cache_value(build, key):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(rf"{key}:[A-Z]+=(.*)", line.rstrip("\n"))
            if m:
                return m.group(1)
    fail(f"{build}/CMakeCache.txt has no {key}")


def ctest_files(build):
    """Paths (relative to build) of the files ctest reads: CTestTestfile.cmake in every folder and the
    GoogleTest include/test lists they include."""
    out = []
    for d, dirs, files in os.walk(build):
        dirs[:] = [x for x in dirs if x != "CMakeFiles"]
        for f in files:
            if f == "CTestTestfile.cmake" or f.endswith("_include.cmake") or f.endswith("_tests.cmake"):
                out.append(os.path.relpath(os.path.join(d, f), build))
    return out


def listed(test_dir, regex=None):
    cmd = ["ctest", "--test-dir", test_dir, "-N"] + (["-R", regex] if regex else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    names = re.findall(r"^\s*Test\s+#\d+: (\S+)", r.stdout, re.M)
    return r.returncode, names, r.stdout + r.stderr


def main():
    build = os.environ.get("SIXND_BUILD")
    if not build:
        print("skipped: SIXND_BUILD is not set (run through ctest)")
        return 77
    build = os.path.realpath(build)
    root = cache_value(build, "CMAKE_ROOT")
    files = ctest_files(build)

    readers = [f for f in files if root in open(os.path.join(build, f)).read()]
    if readers:
        fail(f"ctest would read this machine's CMake modules ({root}) through: {', '.join(readers[:3])}")

    with tempfile.TemporaryDirectory(prefix="sixnd_ctest_copy_") as tmp:
        # Binaries stay where they are; only the .cmake files ctest reads move to the copy, and
        # each reference to one of them (or to CMake's modules) is pointed at its new place.
        ref = re.compile(re.escape(build) + r'(/[^"\n]*?\.cmake)"')
        for f in files:
            dst = os.path.join(tmp, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            text = open(os.path.join(build, f)).read()
            text = ref.sub(lambda m: tmp + m.group(1) + '"', text).replace(root, MISSING_ROOT)
            open(dst, "w").write(text)

        rc0, original, _ = listed(build)
        rc1, copied, log = listed(tmp)
        if rc1 != 0 or copied != original:
            fail(f"ctest with CMake's modules out of reach listed {len(copied)} tests (rc {rc1}), "
                 f"the build folder {len(original)} (rc {rc0}):\n{log[-2000:]}")
        regex = sys.argv[1] if len(sys.argv) > 1 else r"^core\."
        cases = [n for n in copied if re.search(regex, n)]
        if not cases:
            fail(f"no test matching {regex} is in the list")
        r = subprocess.run(["ctest", "--test-dir", tmp, "-R", regex, "--output-on-failure"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or f"0 tests failed out of {len(cases)}" not in r.stdout:
            fail(f"ctest from the copy did not run the {len(cases)} cases matching {regex} cleanly "
                 f"(rc {r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")
    print(f"PASSED: {len(copied)} tests listed and the {len(cases)} matching {regex} run with {root} out of reach")
    return 0


if __name__ == "__main__":
    sys.exit(main())
