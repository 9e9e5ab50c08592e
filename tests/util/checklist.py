"""A script test's list of checks: each printed as it is made, and one closing verdict."""
failures = []


def check(ok, what):
    """Prints WHAT as ok or FAIL; a failure is remembered for verdict()."""
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def verdict():
    """The exit status: 1 (and the count) when a check failed, else 0."""
    if failures:
        print(f"{len(failures)} FAILED")
        return 1
    print("all passed")
    return 0
