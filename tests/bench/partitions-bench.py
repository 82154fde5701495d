#!/usr/bin/env python3
"""relayd end to end with 1, 2 and 4 partitions of one stream on one
Redis node, in one run.

usage: partitions-bench.py RELAYD [EVENTS] [ROUNDS]

For each partition count P (1, 2, 4; ROUNDS times, interleaved so machine
noise hits every P alike), a private redis-server and RELAYD reading
REDIS_STREAM=ev (P = 1) or ev{0..P-1} at the default limits
(MAX_CONCURRENCY 8, MAX_BUFFERED_EVENTS 16 per stream) with
RELAY_SANDBOX=none and one app:

  unmatched  EVENTS events that match no rule, XADDed at once (pipelined,
             round robin over the partitions): the engine's own path
             (read, classify, ACK); events/s = EVENTS / time until every
             partition is drained
  exec       EVENTS / 10 events run by an exec handler /bin/true (app
             concurrency 8): the same, with a process per event

RELAYD: a release build (-Dbuildtype=release). Not a test; figures go to
doc/performance.md. The same loads on a local Redis Cluster:
cluster-partitions-bench.py.
"""
import json
import sys

import partitions


def main():
    args = partitions.command_line(sys.argv, __doc__)
    if args is None:
        return 2
    n, rounds = args
    res = {}
    for _ in range(rounds):
        for kind in partitions.KINDS:
            for p in partitions.PARTITIONS:
                m = partitions.events(kind, n)
                r = partitions.one(partitions.Env, p, kind, m)
                res.setdefault((kind, p), []).append(r)
                print(f"{kind:9} partitions={p} events={m:6} "
                      f"{r:9.1f} events/s", flush=True)
    print(json.dumps({f"{k}/{p}": [round(x) for x in v]
                      for (k, p), v in res.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
