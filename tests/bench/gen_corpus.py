#!/usr/bin/env python3
"""gen_corpus.py - a deterministic corpus for the pattern matcher.

Used by tests/bench/bench-match.c (doc/perf/pattern.md) and by the
`test_pattern__corpus` case of tests/pattern/test_pattern_diff.c. Writes
into --out (default ./corpus):

  events.jsonl                  one event object per line: CDC-style row
                                changes (envelope, source, new/old image)
  patterns-<profile>-<N>.jsonl  N rules, one {"id": "appNNN/hK",
                                "pattern": {...}} per line: the JSON form of
                                a template's `pattern:`
  expected-<profile>-<N>.jsonl  for each of the first --expect events, the
                                sorted ids of the rules that match it,
                                computed by the reference matcher below at
                                the manifest's `now`
  manifest.json                 seed, now, event count, the sets and their
                                expected match totals

Profiles: `common` (literal alternatives, prefix, suffix, exists, nested
maps), `numeric` (common + number thresholds), `full` (numeric + now()
cutoffs on RFC 3339 timestamps), `mixed` (full + the EventBridge
operators of doc/patterns.md section 3b: anything-but, equals-ignore-case,
prefix/suffix ignoring case, wildcard, cidr, numeric ranges, $or). Sizes:
--rules (default 1,10,100,1000). The fields only `mixed` rules test
(client_ip, and path and kind in the row images) are drawn from a
generator of their own after the events, so the events and rules of the
older profiles are those of the generator before `mixed` existed, plus
those fields.

The reference matcher is a small, independent Python statement of the
pattern language of doc/patterns.md (doc/behaviour.md B-20 ... B-35); the C
matcher must agree with it on every event. Event timestamps are spread
around --now (default 2026-01-01T12:00:00Z); a consumer comparing with the
expected files must match at that instant.

Usage: gen_corpus.py [--out DIR] [--events M] [--rules 1,10,100,1000]
                     [--expect K] [--seed S] [--now RFC3339]
       gen_corpus.py --selftest
"""
import argparse
import json
import os
import random
import re
import sys
from datetime import datetime, timedelta, timezone

MISSING = object()

TABLES = ["users", "orders", "payments", "invoices", "sessions", "jobs",
	  "accounts", "events"] + ["tbl_%02d" % i for i in range(40)]
RULE_TABLES = TABLES[:36]          # events on the other tables never match
OPS_NAMES = ["INSERT", "UPDATE", "DELETE"]
STATES = ["COMPLETED", "FAILED", "PENDING", "RUNNING", "CANCELLED", "DEGRADED"]
ID_HEADS = ["user_", "org_", "acct_", "job_", "inv_"]
MAIL_TAILS = ["@example.com", "@example.org", "@corp.test", "@mail.test"]
REGIONS = ["eu-west", "eu-central", "us-east", "us-west", "ap-south"]
NAMES = ("amber basil cedar dune ember fern gale heath iris juniper kelp "
	 "lark moss nettle oak pine quill reed sage thyme umber vale "
	 "willow yarrow").split()


# ---------------------------------------------------------------- times

def fmt_time(t, rng=None):
	"""RFC 3339 text of aware datetime t, in a random offset and
	precision when rng is given."""
	if rng is not None:
		off = rng.choice([0, 0, 0, 60, 120, -300, 330, -720])
		t = t.astimezone(timezone(timedelta(minutes=off)))
		frac = rng.choice(["", "", ".%03d" % rng.randrange(1000)])
	else:
		frac = ""
	s = t.strftime("%Y-%m-%dT%H:%M:%S") + frac
	off = t.utcoffset()
	if off == timedelta(0):
		return s + "Z"
	mins = int(off.total_seconds() // 60)
	sign = "+" if mins >= 0 else "-"
	mins = abs(mins)
	return s + "%s%02d:%02d" % (sign, mins // 60, mins % 60)


TIME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})"
		     r"(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")
NOW_RE = re.compile(r"^now\(\)(?:([+-])(\d+h)?(\d+m)?(\d+s)?)?$")


def instant_ns(s):
	"""Nanoseconds since the epoch of an RFC 3339 string, or None."""
	if not isinstance(s, str):
		return None
	m = TIME_RE.match(s)
	if not m:
		return None
	y, mo, d, h, mi, se = (int(x) for x in m.groups()[:6])
	try:
		base = datetime(y, mo, d, h, mi, se, tzinfo=timezone.utc)
	except ValueError:
		return None
	if h > 23 or mi > 59 or se > 59:
		return None
	frac = m.group(7)
	ns = int((frac[1:] + "000000000")[:9]) if frac else 0
	zone = m.group(8)
	shift = 0
	if zone != "Z":
		oh, om = int(zone[1:3]), int(zone[4:6])
		if oh > 23 or om > 59:
			return None
		shift = (oh * 60 + om) * 60 * (1 if zone[0] == "+" else -1)
	secs = int(base.timestamp()) - shift
	return secs * 1000000000 + ns


def cutoff_ns(expr, now_ns):
	"""The instant a now() expression stands for, or None."""
	m = NOW_RE.match(expr)
	if not m or (m.group(1) and not any(m.groups()[1:])):
		return None
	secs = 0
	for part, mult in ((m.group(2), 3600), (m.group(3), 60), (m.group(4), 1)):
		if part:
			secs += int(part[:-1]) * mult
	if m.group(1) == "-":
		secs = -secs
	return now_ns + secs * 1000000000


# ------------------------------------------------- the reference matcher

def is_number(v):
	return isinstance(v, (int, float)) and not isinstance(v, bool)


def equal(value, lit):
	"""Equality of a JSON value and a scalar literal (B-24)."""
	if lit is None:
		return value is None
	if isinstance(lit, bool):
		return isinstance(value, bool) and value == lit
	if is_number(lit):
		return is_number(value) and value == lit
	if isinstance(lit, str):
		return isinstance(value, str) and value == lit
	return False


ASCII_LOWER = {c: c + 32 for c in range(65, 91)}
IPV4_RE = re.compile(r"^(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}$")


def alower(s):
	"""ASCII-only lower case (doc/patterns.md: case folding)."""
	return s.translate(ASCII_LOWER)


def wildcard_matches(w, value):
	"""`*` is any run (none too); the corpus writes no backslashes."""
	rx = ".*".join(re.escape(part) for part in w.split("*"))
	return re.fullmatch(rx, value, re.DOTALL) is not None


def ipv4(s):
	if not IPV4_RE.match(s):
		return None
	parts = [int(x) for x in s.split(".")]
	if any(x > 255 for x in parts):
		return None
	return (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]


def cidr_matches(net, value):
	"""IPv4 networks only in the corpus; families never cross."""
	if not isinstance(value, str):
		return False
	addr, bits = net.split("/")
	a, v = ipv4(addr), ipv4(value)
	if v is None:
		return False
	mask = (0xffffffff << (32 - int(bits))) & 0xffffffff
	return (v & mask) == a


def numeric_matches(spec, value):
	if not is_number(value):
		return False
	ok = True
	for i in range(0, len(spec), 2):
		op, n = spec[i], spec[i + 1]
		ok = ok and {">": value > n, ">=": value >= n, "<": value < n,
			     "<=": value <= n, "=": value == n}[op]
	return ok


def inner_matches(arg, value):
	"""One test inside anything-but."""
	if isinstance(arg, list):
		return any(equal(value, x) for x in arg)
	if isinstance(arg, dict):
		(k, v), = arg.items()
		if not isinstance(value, str):
			return False
		vs = v if isinstance(v, list) else [v]
		if k == "prefix":
			return any(value.startswith(x) for x in vs)
		if k == "suffix":
			return any(value.endswith(x) for x in vs)
		if k == "wildcard":
			return any(wildcard_matches(x, value) for x in vs)
		return any(alower(value) == alower(x) for x in vs)
	return equal(value, arg)


def new_op_matches(op, arg, value):
	"""The EventBridge operators (doc/patterns.md section 3b)."""
	if op == "anything-but":
		if value is MISSING or isinstance(value, (list, dict)):
			return False
		return not inner_matches(arg, value)
	if op == "numeric":
		return numeric_matches(arg, value)
	if not isinstance(value, str):
		return False
	if op == "equals-ignore-case":
		return alower(value) == alower(arg)
	if op in ("prefix", "suffix"):       # {equals-ignore-case: s}
		a, v = alower(arg["equals-ignore-case"]), alower(value)
		return v.startswith(a) if op == "prefix" else v.endswith(a)
	if op == "wildcard":
		return wildcard_matches(arg, value)
	return cidr_matches(arg, value)


NEW_OPS = ("anything-but", "numeric", "equals-ignore-case", "wildcard",
	   "cidr")


def op_matches(op, arg, value, now_ns):
	if op == "exists":
		return (value is not MISSING) == arg
	if op == "prefix":
		return isinstance(value, str) and value.startswith(arg)
	if op == "suffix":
		return isinstance(value, str) and value.endswith(arg)
	if is_number(arg):
		if not is_number(value):
			return False
		a, b = value, arg
	else:
		b = cutoff_ns(arg, now_ns)
		a = instant_ns(value)
		if a is None or b is None:
			return False
	return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]


def alternative_matches(alt, value, now_ns):
	if not isinstance(alt, dict):
		return value is not MISSING and equal(value, alt)
	if len(alt) == 1:
		(k, v), = alt.items()
		if k in NEW_OPS or (k in ("prefix", "suffix") and
				    isinstance(v, dict)):
			return new_op_matches(k, v, value)
		if k in ("exists", "prefix", "suffix", "gt", "gte", "lt", "lte"):
			return op_matches(k, v, value, now_ns)
	# a nested pattern: a value that is not a map is seen as absent
	return pattern_matches(alt, value if isinstance(value, dict) else None,
			       now_ns)


def pattern_matches(pattern, obj, now_ns):
	"""Does the map pattern match obj (a dict, or None when absent)?"""
	for field, cond in pattern.items():
		if field == "$or":
			if not any(pattern_matches(b, obj, now_ns) for b in cond):
				return False
			continue
		alts = cond if isinstance(cond, list) else [cond]
		value = obj.get(field, MISSING) if isinstance(obj, dict) else MISSING
		if not any(alternative_matches(a, value, now_ns) for a in alts):
			return False
	return True


# -------------------------------------------------------------- events

def make_row(rng, now, table):
	row = {
		"id": rng.choice(ID_HEADS) + str(rng.randrange(100000)),
		"status": rng.choice(STATES),
		"email": rng.choice(NAMES) + str(rng.randrange(100)) +
			 rng.choice(MAIL_TAILS),
		"amount": rng.choice([rng.randrange(0, 5000),
				      rng.randrange(0, 20000) / 4]),
		"score": rng.randrange(0, 101),
		"created_at": fmt_time(now - timedelta(seconds=rng.randrange(0, 7200)), rng),
		"updated_at": fmt_time(now - timedelta(seconds=rng.randrange(-600, 600)), rng),
		"tags": rng.sample(NAMES, rng.randrange(0, 4)),
		"owner": {"name": rng.choice(NAMES), "region": rng.choice(REGIONS),
			  "level": rng.randrange(1, 6)},
	}
	if rng.random() < 0.3:
		row["deleted_at"] = rng.choice([None, fmt_time(now, rng)])
	if rng.random() < 0.2:
		row["note"] = rng.choice(["", "renewal", "ünïcode ✓", "yesterday"])
	if rng.random() < 0.1:
		del row["owner"]
	return row


def make_event(rng, now, i):
	table = rng.choice(TABLES)
	op = rng.choice(OPS_NAMES)
	ev = {
		"event_name": op,
		"table_name": table,
		"event_id": "evt-%08d" % i,
		"source": {"db": "main", "schema": "public",
			   "region": rng.choice(REGIONS), "lsn": rng.randrange(1 << 40)},
		"emitted_at": fmt_time(now - timedelta(seconds=rng.randrange(0, 900)), rng),
	}
	if op != "DELETE":
		ev["new_image"] = make_row(rng, now, table)
	if op != "INSERT":
		ev["old_image"] = make_row(rng, now, table)
	return ev


def add_mixed_fields(rng, ev):
	"""The fields only `mixed` rules test, from their own generator."""
	r = rng.random()
	if r < 0.7:
		ev["client_ip"] = "10.%d.%d.%d" % (rng.randrange(8),
						   rng.randrange(256),
						   rng.randrange(1, 255))
	elif r < 0.8:
		ev["client_ip"] = "192.168.%d.%d" % (rng.randrange(4),
						     rng.randrange(1, 255))
	elif r < 0.9:
		ev["client_ip"] = "2001:db8::%x" % rng.randrange(1, 65535)
	for image in ("new_image", "old_image"):
		row = ev.get(image)
		if row is None:
			continue
		row["path"] = "/srv/%s/%s/%d.%s" % (
			rng.choice(NAMES), rng.choice(["logs", "data", "tmp"]),
			rng.randrange(100), rng.choice(["log", "json", "gz"]))
		kind = rng.choice(STATES)
		row["kind"] = rng.choice([kind, kind.lower(), kind.title()])


# --------------------------------------------------------------- rules

def leaf_alternatives(rng, profile):
	"""One field condition on a row field: (field, list of alternatives)."""
	kinds = ["status", "id", "email", "exists", "owner"]
	if profile in ("numeric", "full", "mixed"):
		kinds += ["amount", "score"]
	if profile in ("full", "mixed"):
		kinds += ["created_at", "updated_at"]
	kind = rng.choice(kinds)
	if kind == "status":
		return "status", rng.sample(STATES, rng.randrange(1, 4))
	if kind == "id":
		return "id", [{"prefix": h} for h in rng.sample(ID_HEADS, rng.randrange(1, 3))]
	if kind == "email":
		return "email", [{"suffix": rng.choice(MAIL_TAILS)}]
	if kind == "exists":
		return rng.choice(["deleted_at", "note", "owner"]), [{"exists": rng.random() < 0.5}]
	if kind == "owner":
		sub = {"region": rng.sample(REGIONS, rng.randrange(1, 3))}
		if profile != "common" and rng.random() < 0.5:
			sub["level"] = [{"gte": rng.randrange(1, 6)}]
		return "owner", [sub]
	if kind in ("amount", "score"):
		top = 5000 if kind == "amount" else 100
		alts = [{rng.choice(["gt", "gte"]): rng.randrange(0, top)}]
		if rng.random() < 0.4:
			alts.append({rng.choice(["lt", "lte"]): rng.randrange(0, top) / 2})
		return kind, alts
	span = rng.choice(["5m", "30m", "1h", "1h30m", "10s"])
	op = rng.choice(["gt", "gte", "lt", "lte"])
	return kind, [{op: "now()-" + span}]


def new_operator(rng):
	"""One field condition with an EventBridge operator."""
	kind = rng.choice(["ab", "ab_prefix", "eic", "iprefix", "isuffix",
			   "wildcard", "range", "numeric", "numeric_eq"])
	if kind == "ab":
		return "status", [{"anything-but": rng.sample(STATES, rng.randrange(1, 4))}]
	if kind == "ab_prefix":
		return "id", [{"anything-but": {"prefix": rng.choice(ID_HEADS)}}]
	if kind == "eic":
		return "kind", [{"equals-ignore-case": s.lower()}
				for s in rng.sample(STATES, rng.randrange(1, 3))]
	if kind == "iprefix":
		return "id", [{"prefix": {"equals-ignore-case": rng.choice(ID_HEADS).upper()}}]
	if kind == "isuffix":
		return "email", [{"suffix": {"equals-ignore-case": rng.choice(MAIL_TAILS).upper()}}]
	if kind == "wildcard":
		w = rng.choice(["/srv/*/logs/*", "/srv/%s/*" % rng.choice(NAMES),
				"*.json", "/srv/*/data/*.gz", "*/tmp/*"])
		return "path", [{"wildcard": w}]
	if kind == "range":
		lo = rng.randrange(0, 4000)
		return "amount", [{"numeric": [rng.choice([">", ">="]), lo,
					       rng.choice(["<", "<="]),
					       lo + rng.randrange(1, 2000)]}]
	if kind == "numeric":
		return "score", [{"numeric": [rng.choice([">", ">=", "<", "<="]),
					      rng.randrange(0, 101)]}]
	return "score", [{"numeric": ["=", rng.randrange(0, 101)]}]


def make_rule(rng, profile):
	p = {"table_name": [rng.choice(RULE_TABLES)]}
	if rng.random() < 0.7:
		p["event_name"] = rng.sample(OPS_NAMES, rng.randrange(1, 3))
	image = {}
	for _ in range(rng.randrange(1, 4)):
		if profile == "mixed" and rng.random() < 0.5:
			f, alts = new_operator(rng)
		else:
			f, alts = leaf_alternatives(rng, profile)
		image[f] = alts
	if profile == "mixed" and rng.random() < 0.3:
		image["$or"] = [dict([new_operator(rng)]),
				dict([leaf_alternatives(rng, "full")])]
	if profile == "mixed" and rng.random() < 0.2:
		p["client_ip"] = [{"cidr": "10.%d.0.0/16" % rng.randrange(8)},
				  {"cidr": "192.168.%d.0/24" % rng.randrange(4)}]
	which = rng.choice(["new_image", "new_image", "old_image"])
	p[which] = image
	if rng.random() < 0.2:
		p["source"] = {"region": [{"prefix": rng.choice(["eu-", "us-"])}]}
	return p


# -------------------------------------------------------------- selftest

def selftest():
	now = instant_ns("2026-01-01T12:00:00Z")
	ok = True
	cases = [
		({"status": ["COMPLETED", "FAILED"]}, {"status": "FAILED"}, True),
		({"status": ["COMPLETED"]}, {}, False),
		({"id": [{"prefix": "user_"}]}, {"id": "user_123"}, True),
		({"id": [{"prefix": "user_"}]}, {"id": 123}, False),
		({"d": [{"exists": True}]}, {"d": None}, True),
		({"a": {"b": [{"exists": False}]}}, {}, True),
		({"a": {"b": [{"exists": True}]}}, {}, False),
		({"n": [70]}, {"n": 70.0}, True),
		({"n": [1]}, {"n": True}, False),
		({"n": [{"gt": 10}]}, {"n": "11"}, False),
		({"t": [{"gt": "now()-5m"}]}, {"t": "2026-01-01T11:58:00Z"}, True),
		({"t": [{"gt": "now()-5m"}]}, {"t": "2026-01-01T13:58:00+02:00"}, True),
		({"t": [{"gt": "now()-5m"}]}, {"t": "2026-01-01T11:50:00Z"}, False),
		({"t": [{"gt": "now()-5m"}]}, {"t": "yesterday"}, False),
		({"r": [{"s": ["OK"]}, {"s": ["DEGRADED"]}]}, {"r": {"s": "DEGRADED"}}, True),
		({"a": [{"prefix": "x"}]}, {"a": ["x"]}, False),
		({"s": [{"anything-but": ["A", "B"]}]}, {"s": "C"}, True),
		({"s": [{"anything-but": ["A", "B"]}]}, {"s": "A"}, False),
		({"s": [{"anything-but": ["A"]}]}, {"s": None}, True),
		({"s": [{"anything-but": ["A"]}]}, {"s": ["C"]}, False),
		({"s": [{"anything-but": ["A"]}]}, {}, False),
		({"s": [{"anything-but": {"prefix": "us"}}]}, {"s": "user"}, False),
		({"s": [{"anything-but": {"prefix": "us"}}]}, {"s": 5}, True),
		({"s": [{"equals-ignore-case": "failed"}]}, {"s": "FaILed"}, True),
		({"s": [{"equals-ignore-case": "\u00e9t\u00e9"}]}, {"s": "\u00c9T\u00c9"}, False),
		({"s": [{"prefix": {"equals-ignore-case": "USER_"}}]}, {"s": "user_1"}, True),
		({"s": [{"suffix": {"equals-ignore-case": "@X.COM"}}]}, {"s": "a@x.com"}, True),
		({"p": [{"wildcard": "/srv/*/logs/*"}]}, {"p": "/srv/a/logs/"}, True),
		({"p": [{"wildcard": "/srv/*/logs/*"}]}, {"p": "/srv/a/data/x"}, False),
		({"p": [{"wildcard": "*.json"}]}, {"p": "a.json.gz"}, False),
		({"ip": [{"cidr": "10.1.0.0/16"}]}, {"ip": "10.1.200.3"}, True),
		({"ip": [{"cidr": "10.1.0.0/16"}]}, {"ip": "10.2.0.1"}, False),
		({"ip": [{"cidr": "10.1.0.0/16"}]}, {"ip": "010.1.0.1"}, False),
		({"ip": [{"cidr": "10.1.0.0/16"}]}, {"ip": "2001:db8::1"}, False),
		({"n": [{"numeric": [">", 10, "<=", 100]}]}, {"n": 100}, True),
		({"n": [{"numeric": [">", 10, "<=", 100]}]}, {"n": 10}, False),
		({"n": [{"numeric": ["=", 5]}]}, {"n": 5.0}, True),
		({"k": ["a"], "$or": [{"x": [1]}, {"y": [2]}]}, {"k": "a", "y": 2}, True),
		({"k": ["a"], "$or": [{"x": [1]}, {"y": [2]}]}, {"k": "a", "y": 3}, False),
		({"k": ["a"], "$or": [{"x": [1]}, {"y": [2]}]}, {"k": "b", "x": 1}, False),
	]
	for i, (p, ev, want) in enumerate(cases):
		if pattern_matches(p, ev, now) != want:
			print("selftest case %d: want %s" % (i, want))
			ok = False
	print("selftest", "ok" if ok else "FAILED")
	return 0 if ok else 1


# ------------------------------------------------------------------ main

def main():
	ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
	ap.add_argument("--out", default="corpus")
	ap.add_argument("--events", type=int, default=20000)
	ap.add_argument("--rules", default="1,10,100,1000")
	ap.add_argument("--expect", type=int, default=2000)
	ap.add_argument("--seed", type=int, default=20261201)
	ap.add_argument("--now", default="2026-01-01T12:00:00Z")
	ap.add_argument("--selftest", action="store_true")
	a = ap.parse_args()
	if a.selftest:
		return selftest()
	now_ns = instant_ns(a.now)
	if now_ns is None or not a.now.endswith("Z"):
		sys.exit("gen_corpus.py: --now must be RFC 3339 UTC (…Z)")
	now = datetime.fromtimestamp(now_ns // 1000000000, tz=timezone.utc)
	os.makedirs(a.out, exist_ok=True)
	rng = random.Random(a.seed)
	events = [make_event(rng, now, i) for i in range(a.events)]
	xrng = random.Random("%d/mixed-fields" % a.seed)
	for ev in events:
		add_mixed_fields(xrng, ev)
	with open(os.path.join(a.out, "events.jsonl"), "w", encoding="utf-8") as fh:
		for ev in events:
			fh.write(json.dumps(ev, ensure_ascii=False,
					    separators=(",", ":")) + "\n")
	manifest = {"seed": a.seed, "now": a.now, "events": a.events,
		    "expect": min(a.expect, a.events), "sets": []}
	sizes = [int(x) for x in a.rules.split(",") if x]
	for profile in ("common", "numeric", "full", "mixed"):
		for n in sizes:
			rrng = random.Random("%d/%s/%d" % (a.seed, profile, n))
			rules = [("app%03d/h%d" % (i // 4, i % 4), make_rule(rrng, profile))
				 for i in range(n)]
			name = "%s-%d" % (profile, n)
			with open(os.path.join(a.out, "patterns-%s.jsonl" % name), "w") as fh:
				for rid, p in rules:
					fh.write(json.dumps({"id": rid, "pattern": p},
							    separators=(",", ":")) + "\n")
			total = 0
			with open(os.path.join(a.out, "expected-%s.jsonl" % name), "w") as fh:
				for ev in events[:manifest["expect"]]:
					ids = sorted(rid for rid, p in rules
						     if pattern_matches(p, ev, now_ns))
					total += len(ids)
					fh.write(json.dumps(ids, separators=(",", ":")) + "\n")
			manifest["sets"].append({"profile": profile, "rules": n,
						 "expected_matches": total})
	with open(os.path.join(a.out, "manifest.json"), "w") as fh:
		json.dump(manifest, fh, indent=1)
		fh.write("\n")
	return 0


if __name__ == "__main__":
	sys.exit(main())
