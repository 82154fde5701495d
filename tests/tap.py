"""tap.py - the one TAP runner of the Python test scripts.

Used by the CLI scripts (tests/cli/, through clitap.py) and the relayd
end-to-end scripts (tests/daemon/, through harness.py):

    from tap import Skip, case, check, eq, run_cases

    @case
    def something():
        eq(got, want, "what")      # AssertionError showing both values
        check(cond, "what")        # AssertionError with the message
        raise Skip("node not installed")   # the only way to skip

    if __name__ == "__main__":
        sys.exit(run_cases())

Rules, the same for every script:
* every case runs, also after an earlier one failed;
* a case passes when it returns; a return value other than None is a
  failure (skipping is raising Skip, never returning a string);
* Skip(reason) prints "ok N - name # SKIP reason";
* any other exception (also SystemExit and KeyboardInterrupt) prints
  "not ok N - name" and the traceback as "# " comment lines;
* RELAY_TEST_ONLY=SUBSTRING runs only the cases whose name contains it;
* each passing line carries the case's duration, "(1.2s)".
run_cases() returns the exit status: 1 when any case failed, else 0.
"""
import os
import time
import traceback


class Skip(Exception):
    """Raised by a case that cannot run here; the reason is reported."""


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
    only = os.environ.get("RELAY_TEST_ONLY")
    cases = [c for c in CASES if not only or only in c.__name__]
    print("TAP version 13")
    print(f"1..{len(cases)}", flush=True)
    failed = 0
    for i, fn in enumerate(cases, 1):
        t0 = time.monotonic()
        try:
            r = fn()
            if r is not None:
                raise AssertionError(f"case returned {r!r}; "
                                     "raise tap.Skip to skip")
        except Skip as e:
            print(f"ok {i} - {fn.__name__} # SKIP {e}", flush=True)
            continue
        except BaseException:  # report every failure, also SystemExit
            failed += 1
            print(f"not ok {i} - {fn.__name__}", flush=True)
            for line in traceback.format_exc().splitlines():
                print(f"# {line}", flush=True)
            continue
        print(f"ok {i} - {fn.__name__} ({time.monotonic() - t0:.1f}s)",
              flush=True)
    return 1 if failed else 0
