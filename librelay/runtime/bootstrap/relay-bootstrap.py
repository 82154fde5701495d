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
import asyncio
import importlib
import inspect
import json
import os
import sys
import traceback


def main():
    if len(sys.argv) != 2 or "." not in sys.argv[1].strip("."):
        print("usage: relay-bootstrap.py MODULE.FUNCTION", file=sys.stderr)
        return 2
    module_name, _, func_name = sys.argv[1].rpartition(".")
    # Import from the app directory, not from where this script lives.
    sys.path[0] = os.getcwd()
    raw = sys.stdin.buffer.read()
    try:
        event = json.loads(raw) if raw.strip() else None
    except ValueError as e:
        print("relay-bootstrap: event is not valid JSON: %s" % e,
              file=sys.stderr)
        return 1
    try:
        module = importlib.import_module(module_name)
        func = getattr(module, func_name)
        result = func(event)
        if inspect.isawaitable(result):
            async def wait():
                return await result
            asyncio.run(wait())
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.exit(code)
