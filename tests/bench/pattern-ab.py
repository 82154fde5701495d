#!/usr/bin/env python3
"""pattern-ab.py - bench-match builds side by side, in the same run.

Runs several bench-match binaries (e.g. a baseline commit's and this
tree's) on the same gen_corpus.py corpus, alternating: every round runs
every set once per binary, the binaries in a rotated order each round,
so that load on a shared machine hits them alike. Prints one line per
run and, at the end, per set the median events/s and rule-load ms of
each binary and the ratio of each to the first binary's median.

Usage: pattern-ab.py CORPUS SECONDS ROUNDS NAME=BENCH_MATCH ... \\
                     [--sets common-10,numeric-1000,...] [--cpu N]

--cpu N runs every binary on CPU N only (taskset): on a small shared VM
an unpinned run's rate depends on where the scheduler puts it, and the
rounds of one binary then disagree by far more than the builds do.

A set a binary cannot load (e.g. `mixed` with a build older than its
operators) is reported as "-" for that binary.
"""
import re
import statistics
import subprocess
import sys

DEFAULT_SETS = ["%s-%d" % (p, n) for p in ("common", "numeric", "full",
					    "mixed")
		for n in (1, 10, 100, 1000)]


def run(binary, corpus, profile, n, secs, cpu=None):
	pin = ["taskset", "-c", cpu] if cpu is not None else []
	r = subprocess.run(pin + [binary, corpus, profile, str(n), str(secs)],
			   capture_output=True, text=True)
	m = re.search(r"add_ms=([0-9.]+) mismatches=(\d+) "
		      r"events_per_s=([0-9.]+)", r.stdout)
	if r.returncode != 0 or not m:
		return None
	return float(m.group(3)), float(m.group(1)), int(m.group(2))


def main():
	args = sys.argv[1:]
	sets = DEFAULT_SETS
	cpu = None
	if "--cpu" in args:
		i = args.index("--cpu")
		cpu = args[i + 1]
		del args[i:i + 2]
	if "--sets" in args:
		i = args.index("--sets")
		sets = args[i + 1].split(",")
		del args[i:i + 2]
	if len(args) < 4:
		sys.exit(__doc__)
	corpus, secs, rounds = args[0], float(args[1]), int(args[2])
	bins = [a.split("=", 1) for a in args[3:]]
	res = {(s, name): [] for s in sets for name, _ in bins}
	for r in range(rounds):
		for s in sets:
			profile, n = s.rsplit("-", 1)
			order = bins[r % len(bins):] + bins[:r % len(bins)]
			for name, binary in order:
				out = run(binary, corpus, profile, int(n), secs,
					  cpu)
				res[(s, name)].append(out)
				print("round=%d set=%s bin=%s %s" % (
					r + 1, s, name,
					"failed" if out is None else
					"events_per_s=%.0f add_ms=%.3f "
					"mismatches=%d" % out), flush=True)
	names = [name for name, _ in bins]
	print("\nmedians of %d rounds x %.1f s, ratio to %s:" % (
		rounds, secs, names[0]))
	print("| set | " + " | ".join("%s ev/s" % x for x in names) + " | " +
	      " | ".join("%s/%s" % (x, names[0]) for x in names[1:]) +
	      " | " + " | ".join("%s add ms" % x for x in names) + " |")
	print("|---" * (1 + 3 * len(names) - 1) + "|")
	for s in sets:
		eps, add = {}, {}
		for name in names:
			ok = [x for x in res[(s, name)] if x is not None]
			if len(ok) == len(res[(s, name)]) and ok:
				eps[name] = statistics.median(x[0] for x in ok)
				add[name] = statistics.median(x[1] for x in ok)
		base = eps.get(names[0])
		cells = ["%.0f" % eps[x] if x in eps else "-" for x in names]
		ratios = ["%.2f" % (eps[x] / base) if x in eps and base else "-"
			  for x in names[1:]]
		adds = ["%.2f" % add[x] if x in add else "-" for x in names]
		print("| %s | %s | %s | %s |" % (s, " | ".join(cells),
						 " | ".join(ratios),
						 " | ".join(adds)))
	return 0


if __name__ == "__main__":
	sys.exit(main())
