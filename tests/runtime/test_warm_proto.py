#!/usr/bin/env python3
"""test_warm_proto.py - the python3 warm server follows warm_proto.h and
refuses a slot loop of another protocol version; the node bootstrap states
the same version.

Environment: RELAY_SOURCE_ROOT, RELAY_BUILD_ROOT, RELAY_BOOTSTRAP_DIR (as
the runtime tests get them).
"""
import ctypes
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from tap import case, check, eq, run_cases  # noqa: E402

sys.path.insert(0, os.environ["RELAY_BOOTSTRAP_DIR"])
import relay_warm_server as server  # noqa: E402

SRC = os.environ["RELAY_SOURCE_ROOT"]
BUILD = os.environ["RELAY_BUILD_ROOT"]


class _Fn:
    """A stand-in for a ctypes function returning @value."""

    def __init__(self, value):
        self.value = value
        self.argtypes = self.restype = None

    def __call__(self):
        return self.value


class _Lib:
    """A stand-in slot library: @version and @size, None for a library
    without that function."""

    def __init__(self, version, size):
        if version is not None:
            self.relay_warm_slot_proto_version = _Fn(version)
        if size is not None:
            self.relay_warm_slot_args_size = _Fn(size)


def refused(lib, *expected):
    try:
        server.check_proto(lib)
    except server.ProtocolMismatch as e:
        for x in expected:
            check(x in str(e), str(e))
        return
    check(False, "the slot loop was not refused")


@case
def the_header_and_the_server_state_one_version():
    with open(os.path.join(SRC, "sandbox", "warm_proto.h"),
              encoding="utf-8") as f:
        m = re.search(r"#define RELAY_WARM_PROTO_VERSION (\d+)", f.read())
    check(m is not None, "RELAY_WARM_PROTO_VERSION in warm_proto.h")
    eq(int(m.group(1)), server.WARM_PROTO_VERSION, "protocol version")


@case
def the_built_slot_loop_is_accepted():
    path = os.path.join(BUILD, "sandbox", "relay-warm-slot.so")
    lib = ctypes.CDLL(path)
    server.check_proto(lib)
    eq(lib.relay_warm_slot_args_size(), ctypes.sizeof(server._SlotArgs),
       "struct relay_warm_slot and _SlotArgs")


@case
def another_version_is_refused():
    size = ctypes.sizeof(server._SlotArgs)
    refused(_Lib(server.WARM_PROTO_VERSION + 1, size),
            "speaks warm protocol version %d, this server %d"
            % (server.WARM_PROTO_VERSION + 1, server.WARM_PROTO_VERSION))
    refused(_Lib(0, size), "version 0")


@case
def a_slot_loop_without_a_version_is_refused():
    refused(_Lib(None, None), "states no warm protocol version")


@case
def another_argument_block_is_refused():
    size = ctypes.sizeof(server._SlotArgs)
    refused(_Lib(server.WARM_PROTO_VERSION, size + 8),
            "argument block has %d bytes, this server's %d"
            % (size + 8, size))


@case
def the_node_bootstrap_states_the_same_version():
    # relay-bootstrap.js --serve refuses a node fork server (warm_node.c,
    # built from warm_proto.h) of another version: its constant must be
    # the header's.
    path = os.path.join(os.environ["RELAY_BOOTSTRAP_DIR"],
                        "relay-bootstrap.js")
    with open(path, encoding="utf-8") as f:
        m = re.search(r"const WARM_PROTO_VERSION = (\d+);", f.read())
    check(m is not None, "WARM_PROTO_VERSION in relay-bootstrap.js")
    eq(int(m.group(1)), server.WARM_PROTO_VERSION, "protocol version")


if __name__ == "__main__":
    sys.exit(run_cases())
