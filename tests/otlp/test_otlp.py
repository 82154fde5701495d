#!/usr/bin/env python3
"""test_otlp.py OTLP_PUSH RECEIVER_JS - relayd's OTLP exporter end to end.

A local OTLP/HTTP receiver (receiver.js) decodes every body the exporter
posts with the OpenTelemetry project's own generated protobuf code (npm
package @opentelemetry/otlp-transformer, pinned, installed into the build
tree on first use; the test skips, saying why, when npm cannot install
it). otlp_push drives the real exporter in a libev loop. Cases: decoded
fields, batching, a secret header never in the log, collector down, 500,
503 with Retry-After, a hanging and a slow collector, a full queue. The
loop's longest gap outside its poll stays small in every case.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import otlp_npm

SECRET = "s3cr3t-T0KEN-42"
MAX_GAP_MS = 250.0
push, receiver = sys.argv[1], sys.argv[2]
build = os.environ.get("RELAY_BUILD_ROOT", tempfile.gettempdir())
mods = os.path.join(build, "tests", "otlp", "npm")
mult = float(os.environ.get("RELAY_TEST_TIMEOUT_MULTIPLIER", "1"))
results = []


def install():
	return otlp_npm.install(mods)


def check(ok, name, detail=""):
	results.append((ok, name, detail))


def run(mode, n, seconds, env_extra, endpoint=None):
	"""Returns (counters, records, stderr)."""
	tmp = tempfile.mkdtemp(prefix="relay-otlp-")
	port_file = os.path.join(tmp, "port")
	out_file = os.path.join(tmp, "out")
	open(out_file, "w").close()
	rp = None
	try:
		if endpoint is None:
			rp = subprocess.Popen(["node", receiver, mods, mode,
					       port_file, out_file])
			t = time.time() + 20 * mult
			while not os.path.exists(port_file) or \
			      not open(port_file).read():
				if time.time() > t or rp.poll() is not None:
					raise RuntimeError("receiver did not start")
				time.sleep(0.05)
			endpoint = "http://127.0.0.1:%s" % \
				open(port_file).read()
		env = {k: v for k, v in os.environ.items()
		       if not k.startswith("OTEL_")}
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
		env.update(env_extra)
		p = subprocess.run([push, str(n), str(seconds)], env=env,
				   capture_output=True, text=True,
				   timeout=60 * mult + seconds)
		if p.returncode != 0:
			raise RuntimeError("otlp_push: %d %s" %
					   (p.returncode, p.stderr))
		counters = json.loads(p.stdout.strip().splitlines()[-1])
		time.sleep(0.1)
		recs = [json.loads(l) for l in open(out_file) if l.strip()]
		return counters, recs, p.stderr
	finally:
		if rp:
			rp.kill()
			rp.wait()
		shutil.rmtree(tmp, ignore_errors=True)


def spans_of(recs):
	out = []
	for r in recs:
		for rs in (r.get("request") or {}).get("resourceSpans", []):
			for ss in rs.get("scopeSpans", []):
				out += ss.get("spans", [])
	return out


def attrs(lst):
	d = {}
	for kv in lst or []:
		v = kv.get("value", {})
		d[kv["key"]] = v.get("stringValue", v.get("intValue",
			       v.get("boolValue")))
	return d


def case_decoded():
	c, recs, err = run("ok", 10, 10 * mult, {
		"OTEL_EXPORTER_OTLP_HEADERS":
			"authorization=Bearer%20" + SECRET + ",x-tenant=t1",
		"OTEL_SERVICE_NAME": "relay-test",
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,"
					    "service.name=ignored"})
	name = "decoded by the OpenTelemetry protobuf definitions"
	if c.get("unavailable"):
		check(False, name, "exporter unavailable in this build")
		return
	check(c["exported"] == 10 and c["dropped"] == 0 and
	      c["failed"] == 0, "10 spans exported", json.dumps(c))
	check(recs and all(r["path"] == "/v1/traces" and
			   r["method"] == "POST" and
			   r["content_type"] == "application/x-protobuf" and
			   "error" not in r for r in recs), name,
	      json.dumps(recs)[:2000])
	check(all(r["auth"] == "Bearer " + SECRET for r in recs),
	      "OTEL_EXPORTER_OTLP_HEADERS sent, %-decoded")
	check(SECRET not in err and SECRET not in json.dumps(c),
	      "the header value is not in the log or the counters")
	rs = recs[0]["request"]["resourceSpans"][0]
	ra = attrs(rs["resource"]["attributes"])
	check(ra.get("service.name") == "relay-test" and
	      ra.get("deployment.environment") == "ci",
	      "resource: service.name and OTEL_RESOURCE_ATTRIBUTES",
	      json.dumps(ra))
	check(rs["scopeSpans"][0]["scope"]["name"] == "relayd", "scope name")
	spans = spans_of(recs)
	root = [s for s in spans if s["spanId"] == c["root_span"]]
	child = [s for s in spans if s["spanId"] == c["child_span"]]
	ok = len(spans) == 10 and len(root) == 1 and len(child) == 1
	check(ok, "every span once, ids as generated", json.dumps(spans)[:800])
	if not ok:
		return
	r, ch = root[0], child[0]
	check(r["name"] == "event" and r["kind"] == 5 and
	      r["traceId"] == c["trace_id"] and not r.get("parentSpanId") and
	      r["traceState"] == "rojo=00f067aa0ba902b7" and
	      r["status"].get("code") == 1 and
	      int(r["endTimeUnixNano"]) - int(r["startTimeUnixNano"]) == 1000,
	      "root span: name, kind, ids, tracestate, status, times",
	      json.dumps(r))
	a = attrs(ch.get("attributes"))
	link = (ch.get("links") or [{}])[0]
	check(ch["name"] == "attempt" and ch["kind"] == 1 and
	      ch["traceId"] == c["trace_id"] and
	      ch["parentSpanId"] == c["root_span"] and
	      a == {"relay.app": "demo", "relay.attempt": "1",
		    "relay.final": True, "relay.empty": ""} and
	      ch["status"] == {"code": 2, "message": "exit status 3"} and
	      link.get("traceId") == c["trace_id"] and
	      link.get("spanId") == c["root_span"] and
	      link.get("traceState") == "k=v" and
	      attrs(link.get("attributes")) == {"relay.app": "demo"},
	      "child span: parent, attributes, status, link", json.dumps(ch))
	check(c["max_gap_ms"] < MAX_GAP_MS, "loop never blocked (ok)",
	      str(c["max_gap_ms"]))


def case_batches():
	c, recs, _ = run("ok", 1000, 10 * mult,
			 {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "300"})
	check(c["exported"] == 1000 and len(recs) == 4 and
	      len(spans_of(recs)) == 1000 and
	      max(len(spans_of([r])) for r in recs) == 300,
	      "1000 spans in batches of at most 300", json.dumps(c))


def free_port():
	s = socket.socket()
	s.bind(("127.0.0.1", 0))
	port = s.getsockname()[1]
	s.close()
	return port


def case_down_and_full():
	c, _, err = run("ok", 20, 2, {"OTEL_BSP_MAX_QUEUE_SIZE": "4",
				      "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2"},
			endpoint="http://127.0.0.1:%d" % free_port())
	check(c["exported"] == 0 and c["failed"] >= 1 and
	      c["dropped"] >= 16 and "RELAYD-OTLP01" in err,
	      "collector down: failures and a full queue counted",
	      json.dumps(c) + err[-300:])
	check(c["max_gap_ms"] < MAX_GAP_MS, "loop never blocked (down)",
	      str(c["max_gap_ms"]))


def case_queue_bound():
	# 20 spans submitted before the loop runs, a queue of 5 in batches
	# of 3: 5 wait (a full batch and an open one), 15 are dropped; the
	# first batch is then in flight to a closed port and waits for its
	# retry (1 s and more), so 2 still wait at the end.
	c, _, _ = run("ok", 20, 2, {"OTEL_BSP_MAX_QUEUE_SIZE": "5",
				    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "3"},
		      endpoint="http://127.0.0.1:%d" % free_port())
	check(c["exported"] == 0 and c["dropped"] == 15 and
	      c["queued"] == 2, "queue bound exact with a batch that does "
	      "not divide it", json.dumps(c))


def case_big():
	c, recs, _ = run("ok", 4, 10 * mult, {"OTLP_PUSH_BIG": "1"})
	spans = spans_of(recs)
	check(c["exported"] == 4 and c["dropped"] == 1 and len(spans) == 4
	      and all(s["name"] != "big" for s in spans),
	      "a span over the per-span bound is dropped and counted, the "
	      "rest exported", json.dumps(c))


def case_500():
	c, recs, _ = run("500", 4, 10 * mult, {})
	check(c["exported"] == 0 and c["failed"] == 1 and c["dropped"] == 4
	      and len(recs) == 1, "500: not retried, batch dropped",
	      json.dumps(c))


def case_503():
	c, recs, _ = run("503", 4, 10 * mult, {})
	check(c["exported"] == 4 and c["failed"] == 1 and len(recs) == 2,
	      "503 with Retry-After: retried once, then exported",
	      json.dumps(c))


def case_hang():
	t = time.time()
	c, _, _ = run("hang", 4, 2, {"OTEL_EXPORTER_OTLP_TIMEOUT": "300"})
	check(c["failed"] >= 1 and c["exported"] == 0 and
	      c["max_gap_ms"] < MAX_GAP_MS,
	      "hanging collector: request timeout, loop free", json.dumps(c))
	c, _, _ = run("slow", 4, 2, {"OTEL_BSP_EXPORT_TIMEOUT": "500"})
	check(c["failed"] >= 1 and c["exported"] == 0 and
	      c["max_gap_ms"] < MAX_GAP_MS,
	      "slow collector: export timeout, loop free", json.dumps(c))
	check(time.time() - t < 30 * mult, "bounded in time")


def main():
	why = install()
	if why:
		print("1..0 # SKIP " + why)
		return 0
	for f in (case_decoded, case_batches, case_down_and_full,
		  case_queue_bound, case_big, case_500, case_503, case_hang):
		try:
			f()
		except Exception as e:  # one broken case is one failure
			check(False, f.__name__, repr(e))
	print("TAP version 13")
	print("1..%d" % len(results))
	bad = 0
	for i, (ok, name, detail) in enumerate(results, 1):
		print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
		if not ok:
			bad += 1
			for l in detail.splitlines()[:20]:
				print("# " + l)
	return 1 if bad else 0


sys.exit(main())
