#!/usr/bin/env python3
"""The example apps' handlers work when run the way Relay runs them.

usage: test_examples.py [SOURCE_ROOT]

Runs each handler of doc/examples/apps as a one-shot process with the
event JSON on stdin, RELAY_HANDLER set and the template's env only:
python3/node through the runtime's bootstrap scripts (or, if they are
missing, a minimal stand-in that does the same: import
the module named by the text before the last dot from the app directory,
call the function after it with the decoded event), exec apps through
their command. Checks exit codes and output, including the deliberate
failure (billing, amount >= APPROVAL_LIMIT -> exit 3). Output is TAP;
node cases skip when node is not installed.
"""
import json
import os
import shutil
import subprocess
import sys

from clitap import Skip, case, eq, run_cases

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
    "RELAY_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
APPS = os.path.join(ROOT, "doc", "examples", "apps")

PY_BOOT = """
import importlib, json, sys
mod, fn = sys.argv[1].rsplit(".", 1)
sys.path.insert(0, ".")
getattr(importlib.import_module(mod), fn)(json.load(sys.stdin))
"""
NODE_BOOT = """
const path = require('path');
const h = process.argv[process.argv.length - 1];
const i = h.lastIndexOf('.');
const mod = require(path.resolve(h.slice(0, i).split('.').join('/')));
let data = '';
process.stdin.on('data', (c) => { data += c; });
process.stdin.on('end', () => { mod[h.slice(i + 1)](JSON.parse(data)); });
"""

# The runtime's real bootstraps, when present; the stand-ins above
# otherwise (the runtime module is developed in parallel).
BOOT_DIR = os.path.join(ROOT, "librelay", "runtime", "bootstrap")
BOOT_PY = os.path.join(BOOT_DIR, "relay-bootstrap.py")
BOOT_JS = os.path.join(BOOT_DIR, "relay-bootstrap.js")

BILLING_ENV = {"CURRENCY": "EUR", "APPROVAL_LIMIT": "10000"}


def invoke(app, runtime, handler, event, env, command=None):
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
         "PYTHONDONTWRITEBYTECODE": "1", "RELAY_HANDLER": handler, **env}
    if runtime == "python3":
        argv = (["python3", BOOT_PY, handler] if os.path.exists(BOOT_PY)
                else ["python3", "-c", PY_BOOT, handler])
    elif runtime == "node":
        argv = (["node", BOOT_JS, handler] if os.path.exists(BOOT_JS)
                else ["node", "-e", NODE_BOOT, handler])
    else:
        argv = command
    p = subprocess.run(argv, cwd=os.path.join(APPS, app), env=e,
                       input=json.dumps(event), capture_output=True,
                       text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr


@case
def billing_paid_books_small_invoice():
    rc, out, err = invoke("billing", "python3", "invoices.paid.handle",
                          {"type": "invoice.paid",
                           "invoice": {"id": "inv_1", "amount": 250}},
                          BILLING_ENV)
    eq((rc, out, err), (0, "booked invoice inv_1: 250 EUR\n", ""), "run")


@case
def billing_paid_fails_on_large_invoice():
    rc, out, err = invoke("billing", "python3", "invoices.paid.handle",
                          {"type": "invoice.paid",
                           "invoice": {"id": "inv_2", "amount": 10000}},
                          BILLING_ENV)
    eq((rc, out), (3, ""), "exit 3")
    eq(err, "invoice inv_2: 10000 EUR needs approval\n", "stderr")


@case
def billing_large_review():
    rc, out, _ = invoke("billing", "python3", "invoices.large.review",
                        {"invoice": {"id": "inv_3", "amount": 7000},
                         "customer": {"email": "c@example.org"}}, BILLING_ENV)
    eq((rc, out), (0, "review requested for inv_3 (7000) from "
                      "c@example.org\n"), "run")


@case
def billing_daily_report_schedule():
    rc, out, _ = invoke("billing", "python3", "reports.daily.run",
                        {"source": "relay.schedule", "app": "billing",
                         "schedule": "daily-report",
                         "scheduled_at": "2026-01-01T06:00:00Z"},
                        BILLING_ENV)
    eq((rc, out), (0, "daily report for 2026-01-01T06:00:00Z\n"), "run")


@case
def audit_exec_reads_stdin_and_handler():
    ev = {"table_name": "users", "event_name": "UPDATE",
          "new_image": {"email": "bob@example.com"}}
    rc, out, err = invoke("audit", "exec", "user-change", ev,
                          {"AUDIT_LABEL": "production"},
                          command=["./bin/audit.sh"])
    eq((rc, err), (0, ""), "rc")
    eq(out, "[production] user-change: " + json.dumps(ev) + "\n", "stdout")


@case
def notify_node_alerts():
    if not shutil.which("node"):
        raise Skip("node not installed")
    rc, out, err = invoke("notify", "node", "alerts.send",
                          {"service": "db", "result": {"status": "DEGRADED",
                                                       "attempts": 4}}, {})
    eq((rc, out, err), (0, "ALERT db is degraded (4 checks in a row)\n", ""),
       "degraded")
    rc, out, _ = invoke("notify", "node", "alerts.send",
                        {"service": "api", "result": {"status": "FAILED"}},
                        {})
    eq((rc, out), (0, "ALERT api is down\n"), "failed")


if __name__ == "__main__":
    sys.exit(run_cases())
