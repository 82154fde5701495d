#!/usr/bin/env python3
# relay-bootstrap.py - run one Relay python3 handler.
#
# Usage: python3 relay-bootstrap.py MODULE.FUNCTION
# Run with the app directory as working directory and the event JSON on
# stdin. Imports MODULE (text before the last dot, e.g. "events.created"
# from "events.created.handler") from the app directory and calls FUNCTION
# (text after the last dot) with the decoded event; a coroutine result is
# awaited. Exit 0 when it returns, 1 with the traceback on stderr when it
# raises; sys.exit(N) inside the handler exits N. Exit 2 on bad usage.
# When MODULE cannot be imported (or raises while imported) or has no
# callable FUNCTION, the traceback is followed by one line
# "relay-bootstrap: cannot load handler: <Error>: <message>" and the exit
# status is 1: relayd records "<Error>: <message>" as the reason.
#
# Only what every call needs is imported up front (json, importlib):
# asyncio is imported only for a coroutine handler and traceback only on
# failure, so a cold start pays for the interpreter and json alone.
#
# Usage: python3 relay-bootstrap.py --serve [-- CMD ARGS...]
# The warm fork server (doc/sandbox.md, "Warm sandboxes"); see
# relay_warm_server.py beside this file. Each invocation it forks runs
# run() below exactly as a cold start would.
import importlib
import json
import os
import sys


# The last stderr line when the handler cannot be loaded (the runtime
# makes the rest of it the invocation's failure reason: RELAY__LOAD_ERROR_
# MARK in librelay/runtime/runtime.h).
LOAD_ERROR_MARK = "relay-bootstrap: cannot load handler: "


def load_failed(e):
    """The traceback, then the mark and the error's first line."""
    import traceback
    traceback.print_exc()
    text = str(e).strip()
    first = type(e).__name__ + (": " + text.splitlines()[0] if text else "")
    print(LOAD_ERROR_MARK + first, file=sys.stderr)


def run(target, raw):
    """Import and call target ("MODULE.FUNCTION") with raw (bytes) decoded
    as JSON; return the exit code. SystemExit propagates."""
    if "." not in target.strip("."):
        print("usage: relay-bootstrap.py MODULE.FUNCTION", file=sys.stderr)
        return 2
    module_name, _, func_name = target.rpartition(".")
    try:
        event = json.loads(raw) if raw.strip() else None
    except ValueError as e:
        print("relay-bootstrap: event is not valid JSON: %s" % e,
              file=sys.stderr)
        return 1
    try:
        module = importlib.import_module(module_name)
        func = getattr(module, func_name)
        if not callable(func):
            raise TypeError("%s.%s is not a function" % (module_name,
                                                        func_name))
    except SystemExit:
        raise
    except BaseException as e:
        load_failed(e)
        return 1
    try:
        result = func(event)
        if hasattr(result, "__await__"):
            import asyncio

            async def wait():
                return await result
            asyncio.run(wait())
    except SystemExit:
        raise
    except BaseException:
        import traceback
        traceback.print_exc()
        return 1
    return 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--serve":
        sys.path[0] = os.path.dirname(os.path.abspath(__file__))
        import relay_warm_server
        # --serve -- CMD ARGS...: a warm parent of an exec app.
        command = sys.argv[3:] if sys.argv[2:3] == ["--"] else None
        return relay_warm_server.serve(run, command)
    if len(sys.argv) != 2:
        print("usage: relay-bootstrap.py MODULE.FUNCTION", file=sys.stderr)
        return 2
    # Import from the app directory, not from where this script lives.
    sys.path[0] = os.getcwd()
    return run(sys.argv[1], sys.stdin.buffer.read())


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.exit(code)
