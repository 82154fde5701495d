#!/usr/bin/env python3
"""relayd end to end: schedule occurrences - publishing (deduplicated
across daemons, catch-up, durable outbox) and the schedule dispatch path
(obsolete, malformed, retries to the DLQ, exact handler stdin, pinning).

usage: test_schedule.py RELAYD

Real redis-server, real relayd built with -Dtest_hooks=true: the
schedule clock runs on virtual time (RELAY_TEST_SCHEDULE_CLOCK=V:A:R, the
clock reads V at real time A and runs R times faster), so a minute tick
takes a real second; RELAY_TEST_TIME_SCALE scales backoff and reclaim.
"""
import calendar
import json
import os
import sys
import time

from harness import (Env, case, check, eq, free_port, have_metrics,
                     metrics_text,
                     run_cases, wait_for)

SCHED_SH = r"""#!/bin/sh
# Schedule test handler: records "<handler> <stdin>" into $OUT; may edit
# its own template once ($EDIT_SRC -> $EDIT_DST) and fail on purpose.
ev=$(cat)
printf '%s %s\n' "$RELAY_HANDLER" "$ev" >> "$OUT"
if [ -n "${EDIT_SRC:-}" ] && [ ! -e "$EDIT_SRC.done" ]; then
	cp "$EDIT_SRC" "$EDIT_DST.tmp" && mv "$EDIT_DST.tmp" "$EDIT_DST"
	: > "$EDIT_SRC.done"
fi
case " ${FAIL:-} " in
*" $RELAY_HANDLER "*) echo "failing on purpose" >&2; exit 3;;
esac
exit 0
"""


def quiet():
    """A schedule clock at which "0 3 29 2 *" has not fired for > 24 h,
    so the start-up catch-up publishes nothing."""
    return {"RELAY_TEST_SCHEDULE_CLOCK": str(ts("2026-06-01T00:00:00Z"))}


def ts(s):
    """RFC 3339 UTC seconds -> Unix seconds."""
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def rfc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def template(env, schedules, fail="", extra_env=None, rule=True):
    e = {"OUT": env.out, "FAIL": fail}
    e.update(extra_env or {})
    lines = ["runtime: exec", "command: [./sched.sh]", "env:"]
    for k, v in e.items():
        lines.append(f"  {k}: {json.dumps(str(v))}")
    if rule:
        # A rule that would match every schedule envelope as an event:
        # it must never run (schedule occurrences bypass matching).
        lines += ["events:", "  - handler: on_any",
                  '    pattern: {"source": ["relay.schedule"]}']
    lines.append("schedules:")
    for s in schedules:
        lines.append(f"  - name: {s['name']}")
        lines.append(f"    handler: {s['handler']}")
        lines.append(f"    cron: {json.dumps(s['cron'])}")
        for k in ("retries", "timeout", "timezone"):
            if k in s:
                lines.append(f"    {k}: {s[k]}")
    return "\n".join(lines) + "\n"


def sched_app(env, name, schedules, **kw):
    d = os.path.join(env.apps_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "sched.sh"), "w") as f:
        f.write(SCHED_SH)
    os.chmod(os.path.join(d, "sched.sh"), 0o755)
    env.app(name, [], raw=template(env, schedules, **kw))
    return d


def occurrences(env):
    """[(message id, envelope dict)] of the stream, in order."""
    out = []
    for eid, flat in env.r("XRANGE", env.stream, "-", "+"):
        f = dict(zip(flat[::2], flat[1::2]))
        out.append((eid, json.loads(f["event"])))
    return out


def runs(env):
    """[(handler, stdin)] recorded by the handler."""
    out = []
    with open(env.out) as f:
        for line in f:
            h, _, ev = line.rstrip("\n").partition(" ")
            out.append((h, ev))
    return out


def envelope(app, schedule, handler, at):
    return {"source": "relay.schedule", "app": app, "schedule": schedule,
            "handler": handler, "scheduled_at": at,
            "occurrence_id": f"schedule:{app}:{schedule}:{at}"}


def publish(env, ev):
    """Publish an occurrence as relayd does: its marker, then the entry
    (relayd dispatches only occurrences with a publication marker)."""
    e = json.loads(ev) if isinstance(ev, str) else ev
    env.r("SET", f"relay:schedule:{e['occurrence_id']}", "1")
    return env.xadd(ev)


def outbox(d):
    try:
        with open(os.path.join(d.state_dir, "schedule-outbox.json")) as f:
            return json.load(f)["occurrences"]
    except FileNotFoundError:
        return None


def stat(d, name):
    return d.stats_file()["counters"][name]


def seen_before(d, when, *names):
    """Write relayd @d's first-seen file: schedules @names ("app/name")
    first seen at @when, as if it had run them before."""
    os.makedirs(d.state_dir, exist_ok=True)
    with open(os.path.join(d.state_dir, "schedule-seen.json"), "w") as f:
        json.dump({"version": 1, "seen": {n: when for n in names}}, f)


def seen_file(d):
    with open(os.path.join(d.state_dir, "schedule-seen.json")) as f:
        return json.load(f)


@case
def dedupe_across_three_daemons():
    """Three relayds on one shared virtual clock (a minute per real
    second) publish every occurrence of a per-minute schedule; the stream
    holds exactly one entry per occurrence, each run exactly once."""
    with Env() as env:
        sched_app(env, "a", [{"name": "tick", "handler": "tick",
                              "cron": "* * * * *"}])
        v0 = ts("2026-03-01T08:00:30Z")
        clock = f"{v0}:{int(time.time())}:60"
        ds = [env.relayd(f"r{i}", RELAY_TEST_SCHEDULE_CLOCK=clock)
              for i in range(3)]
        env.wait(lambda: len(occurrences(env)) >= 5, "5 occurrences")
        for d in ds:
            d.stop()
        occ = occurrences(env)
        ids = [e["occurrence_id"] for _, e in occ]
        eq(len(ids), len(set(ids)), "one stream entry per occurrence")
        for _, e in occ:
            eq(e, envelope("a", "tick", "tick", e["scheduled_at"]),
               "envelope")
            eq(ts(e["scheduled_at"]) % 60, 0, "on the minute")
        ats = sorted(ts(e["scheduled_at"]) for _, e in occ)
        eq(ats, list(range(ats[0], ats[0] + 60 * len(ats), 60)),
           "consecutive minutes, none missing")
        check(ats[0] >= v0 - 30, "nothing before the catch-up minute")
        published = sum(stat(d, "schedule_published") for d in ds)
        dup = sum(stat(d, "schedule_duplicate") for d in ds)
        eq(published, len(occ), "published counters sum to the entries")
        check(dup >= 2, f"duplicates seen by the other daemons ({dup})")
        eq(env.pel_count(), 0, "all acknowledged")
        got = sorted(ev for h, ev in runs(env) if h == "tick")
        want = sorted(json.dumps({"source": "relay.schedule",
                                  "scheduled_at": e["scheduled_at"]},
                                 separators=(",", ":")) for _, e in occ)
        eq(got, want, "each occurrence ran once with the exact payload")
        eq([h for h, _ in runs(env) if h != "tick"], [],
           "the catch-all event rule never ran")


@case
def upgrade_window_old_marker():
    """Upgrade on a single node (redis-layout R-7): an occurrence an
    older version published under the pre-cluster marker
    relay:schedule:<occurrence_id> is not published again by the new
    version's catch-up; a new occurrence is published with both marker
    names (an older replica still running sees it)."""
    with Env() as env:
        sched_app(env, "a", [{"name": "hourly", "handler": "tick",
                              "cron": "0 * * * *"}])
        old = "schedule:a:hourly:2026-01-02T10:00:00Z"
        env.r("SET", f"relay:schedule:{old}", "1", "PX", "604800000")
        d = env.relayd("r1", start=False, RELAY_TEST_SCHEDULE_CLOCK=str(
            ts("2026-01-02T10:30:00Z")))
        seen_before(d, ts("2026-01-01T00:00:00Z"), "a/hourly")
        d.start()
        env.wait(lambda: "already published" in d.log(),
                 "catch-up sees the old marker")
        d.stop()
        eq(occurrences(env), [], "not published again")
        eq(env.r("EXISTS", f"relay:events:schedule:{old}"), 0,
           "a duplicate writes nothing")
        d = env.relayd("r2", start=False, RELAY_TEST_SCHEDULE_CLOCK=str(
            ts("2026-01-02T11:30:00Z")))
        seen_before(d, ts("2026-01-01T00:00:00Z"), "a/hourly")
        d.start()
        env.wait(lambda: len(occurrences(env)) == 1 and
                 env.pel_count() == 0 and len(runs(env)) == 1,
                 "the next hour published and run")
        d.stop()
        new = "schedule:a:hourly:2026-01-02T11:00:00Z"
        eq([e["occurrence_id"] for _, e in occurrences(env)], [new],
           "stream")
        for k in (f"relay:events:schedule:{new}", f"relay:schedule:{new}"):
            check(0 < env.r("PTTL", k) <= 604800000, f"{k} with its TTL")


@case
def catchup_after_downtime():
    """At start-up the most recent missed occurrence of each schedule
    within 24 h is published (once, deduplicated); older ones are not,
    and none from before the schedule was first seen: a schedule new to
    this relayd starts with the next occurrence (issue 41)."""
    with Env() as env:
        sched_app(env, "a", [
            {"name": "hourly", "handler": "tick", "cron": "0 * * * *"},
            {"name": "newyear", "handler": "tick", "cron": "0 0 1 1 *"}])
        port = free_port()
        # Without metrics support the /metrics part is left out.
        mvars = {"METRICS_ADDR": f"127.0.0.1:{port}"} if have_metrics() \
            else {}
        # First start at 10:30: the schedules are new, 10:00 is before
        # they were first seen: nothing is published, the instant is kept.
        d = env.relayd("r1", RELAY_TEST_SCHEDULE_CLOCK=str(
            ts("2026-01-02T10:30:00Z")), **mvars)
        env.wait(lambda: "RELAYD-SCHED08" in d.log(), "no catch-up logged")
        check("schedule a/hourly is new: no catch-up of its occurrence "
              "at 2026-01-02T10:00:00Z, before it was first seen"
              in d.log(), f"the log says why:\n{d.log()}")
        eq(seen_file(d), {"version": 1, "seen": {
            "a/hourly": ts("2026-01-02T10:30:00Z"),
            "a/newyear": ts("2026-01-02T10:30:00Z")}}, "first-seen file")
        d.stop()
        eq(occurrences(env), [], "no catch-up of a new schedule")
        eq(stat(d, "schedule_catchup"), 0, "catchup counter 0")
        # Two hours of downtime: only the latest missed hour (12:00); the
        # schedule was seen at 10:30, before it.
        d = env.relayd("r1", RELAY_TEST_SCHEDULE_CLOCK=str(
            ts("2026-01-02T12:30:00Z")), **mvars)
        env.wait(lambda: len(occurrences(env)) == 1 and
                 env.pel_count() == 0 and len(runs(env)) == 1,
                 "catch-up occurrence run")
        want = ["relay_schedule_occurrences_published_total 1",
                "relay_schedule_occurrences_duplicate_total 0",
                "relay_schedule_publish_failures_total 0",
                "relay_schedule_catchup_total 1",
                "# TYPE relay_schedule_catchup_total counter",
                "# HELP relay_schedule_occurrences_published_total "]
        if have_metrics():
            env.wait(lambda: all(w in metrics_text(port) for w in want),
                     "schedule metrics on /metrics")
        d.stop()
        eq([e["occurrence_id"] for _, e in occurrences(env)],
           ["schedule:a:hourly:2026-01-02T12:00:00Z"],
           "only 12:00 (11:00 not, Jan 1 00:00 is 36.5 h old)")
        eq(stat(d, "schedule_catchup"), 1, "catchup counter")
        eq(seen_file(d)["seen"]["a/hourly"], ts("2026-01-02T10:30:00Z"),
           "first seen kept")
        # Another relayd that has seen the schedule before, at the same
        # time: a duplicate, nothing new.
        d = env.relayd("r2", start=False, RELAY_TEST_SCHEDULE_CLOCK=str(
            ts("2026-01-02T12:30:00Z")))
        seen_before(d, ts("2026-01-01T00:00:00Z"), "a/hourly",
                    "a/newyear")
        d.start()
        env.wait(lambda: "already published" in d.log(),
                 "duplicate catch-up logged")
        d.stop()
        eq(len(occurrences(env)), 1, "no new entry")
        eq(stat(d, "schedule_catchup"), 0, "not a catch-up publication")
        eq(stat(d, "schedule_duplicate"), 1, "one duplicate")
        eq(len(runs(env)), 1, "no extra run")


@case
def outbox_survives_restart_with_redis_down():
    """Publications that fail while Redis is down go to the durable
    outbox, survive a restart and are published once Redis is back."""
    with Env() as env:
        sched_app(env, "a", [{"name": "tick", "handler": "tick",
                              "cron": "* * * * *"}])
        env.r.close()
        env.redis.stop()
        v0 = ts("2026-05-05T05:05:30Z")
        d = env.relayd("r1", start=False, RELAY_TEST_SCHEDULE_CLOCK=(
            f"{v0}:{int(time.time())}:60"))
        d.start(wait_ready=False)
        env.wait(lambda: (outbox(d) or []).__len__() >= 3,
                 "3 occurrences in the outbox")
        d.stop()
        pending = outbox(d)
        check(len(pending) >= 3, f"outbox kept at stop: {pending}")
        check(stat(d, "schedule_publish_failures") >= 3,
              "failures counted")
        want = {f"schedule:a:tick:{rfc(o['scheduled_at'])}"
                for o in pending}
        env.redis.start()
        # A day later: the catch-up is another minute; the outbox holds
        # the old ones.
        d = env.relayd("r1", RELAY_TEST_SCHEDULE_CLOCK=str(v0 + 86400))
        env.wait(lambda: want <= {e["occurrence_id"]
                                  for _, e in occurrences(env)},
                 "outbox occurrences published")
        env.wait(lambda: outbox(d) == [], "outbox emptied")
        d.stop()
        ids = [e["occurrence_id"] for _, e in occurrences(env)]
        eq(len(ids), len(set(ids)), "no duplicates")
        eq(len(ids), len(want) + 1, "outbox + the new catch-up")


@case
def corrupt_outbox_is_ignored():
    """A corrupt outbox file is logged and ignored; relayd runs."""
    with Env() as env:
        sched_app(env, "a", [{"name": "tick", "handler": "tick",
                              "cron": "0 3 29 2 *"}])
        d = env.relayd("r1", start=False, **quiet())
        os.makedirs(d.state_dir, exist_ok=True)
        with open(os.path.join(d.state_dir, "schedule-outbox.json"),
                  "w") as f:
            f.write('{"version":1,"occurrences":[{"app":')
        d.start()
        check("schedule outbox" in d.log() and "corrupt" in d.log(),
              "corruption logged")
        d.stop()


@case
def obsolete_schedule_acked():
    """An occurrence of a schedule no longer configured: ACK, no run, no
    DLQ entry; the state hash is retained."""
    with Env() as env:
        sched_app(env, "a", [{"name": "tick", "handler": "tick",
                              "cron": "0 3 29 2 *"}])
        d = env.relayd("r1", **quiet())
        mid = env.xadd(envelope("a", "removed", "tick",
                                "2026-01-01T00:00:00Z"))
        env.wait(lambda: env.pel_count() == 0 and
                 "obsolete" in d.log(), "acked as obsolete")
        d.stop()
        eq(runs(env), [], "no run")
        eq(env.dlq(), [], "no DLQ entry")
        eq(env.inv(mid).get("__terminal"), "1", "retained")
        check(int(env.r("PTTL", env.inv_key(mid))) > 0, "with a TTL")
        eq(stat(d, "schedule_obsolete"), 1, "obsolete counted")
        eq(stat(d, "events_received"), 0, "not an external event")


@case
def malformed_envelope_dlq_placeholder():
    """A schedule envelope whose occurrence_id is not derived from its
    fields is a DLQ placeholder, never matched as an event."""
    with Env() as env:
        sched_app(env, "a", [{"name": "tick", "handler": "tick",
                              "cron": "0 3 29 2 *"}])
        d = env.relayd("r1", **quiet())
        bad = envelope("a", "tick", "tick", "2026-01-01T00:00:00Z")
        bad["occurrence_id"] = "schedule:a:tick:2026-01-01T00:00:01Z"
        raw = json.dumps(bad, separators=(",", ":"))
        mid = env.xadd(raw)
        env.wait(lambda: env.pel_count() == 0 and len(env.dlq()) == 1,
                 "dead-lettered")
        d.stop()
        e = env.dlq()[0]
        eq((e["app"], e["handler"], e["handler_attempts"]),
           ("-", "-", "0"), "placeholder")
        eq(e["original_id"], mid, "original id")
        eq(e["event"], raw, "envelope verbatim")
        eq(e["reason"], 'malformed schedule occurrence: "occurrence_id" '
           'is not schedule:<app>:<schedule>:<scheduled_at>', "reason")
        eq(runs(env), [], "nothing ran (the catch-all rule neither)")
        eq(stat(d, "events_received"), 0, "not an external event")


@case
def failing_handler_retries_then_dlq():
    """A failing scheduled handler retries (scaled backoff), then one DLQ
    entry with app/handler set; its stdin is the occurrence payload."""
    with Env() as env:
        sched_app(env, "a", [{"name": "nightly", "handler": "tick",
                              "cron": "0 3 29 2 *", "retries": 2}],
                  fail="tick")
        d = env.relayd("r1", **quiet())
        raw = json.dumps(envelope("a", "nightly", "tick",
                                  "2024-02-29T03:00:00Z"),
                         separators=(",", ":"))
        mid = publish(env, raw)
        env.wait(lambda: env.pel_count() == 0 and len(env.dlq()) == 1,
                 "dead-lettered after 3 attempts")
        # dlq replay runs the schedule's handler with the occurrence
        # payload (it still fails: the entry stays).
        rep = d.control({"cmd": "dlq replay", "id": env.dlq()[0]["_id"]})
        eq((rep.get("ok"), rep.get("success"), rep.get("removed")),
           (True, False, False), f"replay answer {rep}")
        eq(rep["results"][0]["handler"], "tick", "replayed handler")
        d.stop()
        eq(runs(env), [("tick", '{"source":"relay.schedule",'
                        '"scheduled_at":"2024-02-29T03:00:00Z"}')] * 4,
           "three attempts and the replay, exact stdin")
        e = env.dlq()[0]
        eq((e["app"], e["handler"], e["handler_attempts"]),
           ("a", "tick", "3"), "attributed")
        eq(e["original_id"], mid, "original id")
        eq(e["event"], raw, "the envelope")
        check(e["reason"].startswith('invocation exhausted: app "a" handler '
                                     '"tick" exhausted after 3 handler '
                                     'attempts: '), e["reason"])
        check(env.inv(mid)["a/tick"].startswith("exhausted:3:"), "state")


@case
def pinned_across_template_edit():
    """The handler, timeout and retries admitted first stay pinned: a
    template edit while the occurrence is retrying (new handler, no
    retries) does not change it; the next occurrence uses the edit."""
    with Env() as env:
        d_app = os.path.join(env.apps_dir, "a")
        os.makedirs(d_app, exist_ok=True)
        edited = os.path.join(env.dir, "edited.yaml")
        with open(edited, "w") as f:
            f.write(template(env, [{"name": "nightly", "handler": "tock",
                                    "cron": "0 3 29 2 *", "retries": 0}],
                             fail="tick"))
        sched_app(env, "a", [{"name": "nightly", "handler": "tick",
                              "cron": "0 3 29 2 *", "retries": 2}],
                  fail="tick", extra_env={
                      "EDIT_SRC": edited,
                      "EDIT_DST": os.path.join(d_app, "template.yaml")})
        # Backoff 1 s: time for the reload to land between attempts.
        d = env.relayd("r1", RELAY_TEST_TIME_SCALE="60", **quiet())
        mid = publish(env, envelope("a", "nightly", "tick",
                                "2024-02-29T03:00:00Z"))
        env.wait(lambda: env.pel_count() == 0 and len(env.dlq()) == 1,
                 "dead-lettered", timeout=60)
        eq([h for h, _ in runs(env)], ["tick"] * 3,
           "tick ran 3 times (pinned), tock never")
        e = env.dlq()[0]
        eq((e["handler"], e["handler_attempts"]), ("tick", "3"), "DLQ")
        eq(env.inv(mid)["__schedule"], "6000:2:tick", "pin")
        log = d.log()
        reload_at = log.find("app reloaded app=a")
        second = log.find("handler=tick message_id=" + mid + " attempt=2")
        check(0 <= reload_at < second,
              "the edit was loaded before the second attempt")
        publish(env, envelope("a", "nightly", "tick",
                               "2028-02-29T03:00:00Z"))
        env.wait(lambda: env.pel_count() == 0 and len(runs(env)) == 4,
                 "next occurrence")
        eq(runs(env)[3][0], "tock", "a new occurrence runs the edit")
        d.stop()


if __name__ == "__main__":
    sys.exit(run_cases())
