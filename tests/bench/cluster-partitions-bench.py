#!/usr/bin/env python3
"""relayd with 1, 2 and 4 partitions of one stream on a local Redis
Cluster versus one Redis node, in the same run.

usage: cluster-partitions-bench.py RELAYD [EVENTS] [ROUNDS]

For each load (partitions.py: unmatched, EVENTS events; exec /bin/true,
EVENTS / 10), each partition count P (1, 2, 4) and each backend, ROUNDS
times, interleaved so machine noise hits every cell alike, a fresh
backend and RELAYD at the default limits with RELAY_SANDBOX=none:

  node     one private redis-server (unix socket)
  cluster  a local cluster (tests/cluster/cluster.py: 6 redis-servers on
           loopback TCP, 3 masters + 3 replicas, fresh per run), relayd
           given a seed list (first seed down, second not owning the
           stream's slot)

Both read the same stream names: {ev} for P = 1 (a stream on a cluster
needs a hash tag) and REDIS_STREAM=ev{0..P-1} (ev:{p0} ... ev:{pP-1})
otherwise. Prints events/s per cell and the ratio cluster / node per P
(median over the rounds).

RELAYD: a release build (-Dbuildtype=release). Not a test; figures go to
doc/perf/partitions.md. Takes about 3 minutes at EVENTS=20000 ROUNDS=1 on
2 cores (the cluster's start-up is most of it).
"""
import json
import os
import statistics
import sys

import partitions

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cluster"))
from cluster import ClusterEnv, key_slot  # noqa: E402

SINGLE = "{ev}"
BACKENDS = (("node", partitions.Env), ("cluster", ClusterEnv))


def main():
    args = partitions.command_line(sys.argv, __doc__)
    if args is None:
        return 2
    n, rounds = args
    slots = {s: key_slot(s) for p in partitions.PARTITIONS
             for s in partitions.streams(p, SINGLE)}
    print(f"# hash slots: {slots}", flush=True)
    res = {}
    for _ in range(rounds):
        for kind in partitions.KINDS:
            for p in partitions.PARTITIONS:
                for name, make_env in BACKENDS:
                    m = partitions.events(kind, n)
                    r = partitions.one(make_env, p, kind, m, SINGLE)
                    res.setdefault((kind, p, name), []).append(r)
                    print(f"{kind:9} partitions={p} {name:7} events={m:6} "
                          f"{r:9.1f} events/s", flush=True)
    print("# median events/s; ratio cluster / node")
    for kind in partitions.KINDS:
        for p in partitions.PARTITIONS:
            node = statistics.median(res[(kind, p, "node")])
            clu = statistics.median(res[(kind, p, "cluster")])
            print(f"{kind:9} partitions={p} node {node:9.1f} cluster "
                  f"{clu:9.1f} ratio {clu / node:5.2f}", flush=True)
    print(json.dumps({f"{k}/{p}/{b}": [round(x) for x in v]
                      for (k, p, b), v in res.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
