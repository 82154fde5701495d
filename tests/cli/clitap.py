"""TAP plumbing shared by the CLI test scripts (suite 'cli').

    from clitap import case, check, eq, run_cases

    @case
    def something():
        eq(got, want, "what")   # AssertionError with both values
        return "SKIP reason"    # optional: a string marks the case "# ..."

    if __name__ == "__main__":
        sys.exit(run_cases())

Every case runs even when an earlier one failed; a failure prints its
traceback as TAP comments. run_cases() returns the exit status.
"""
import traceback

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def eq(got, want, what):
    if got != want:
        raise AssertionError(f"{what}:\n  got:  {got!r}\n  want: {want!r}")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def run_cases():
    print("TAP version 13")
    print(f"1..{len(CASES)}", flush=True)
    failed = 0
    for i, fn in enumerate(CASES, 1):
        try:
            r = fn()
        except BaseException:  # report every failure, also SystemExit
            failed += 1
            print(f"not ok {i} - {fn.__name__}")
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
            continue
        skip = f" # {r}" if isinstance(r, str) else ""
        print(f"ok {i} - {fn.__name__}{skip}", flush=True)
    return 1 if failed else 0
