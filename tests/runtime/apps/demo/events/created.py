# Python handlers used by tests/runtime (module "events.created").
import asyncio
import sys


def handler(event):
    print("name=%s" % event["name"])


def fail(event):
    raise ValueError("boom")


def exit3(event):
    sys.exit(3)


async def later(event):
    await asyncio.sleep(0.01)
    print("async %d" % event["n"])
