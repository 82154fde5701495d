#!/usr/bin/env python3
"""test_layering.py SRCDIR - tests/check-layering.py catches what it must.

Each case copies the checked trees (include/, librelay/, relayd/,
relayctl/, sandbox/ and doc/architecture.md) into a temporary directory (not a git
work tree, so the checker walks it), breaks one rule, and asserts that the
checker fails naming it; the untouched copy must pass.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import case, check, eq, run_cases  # noqa: E402

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
CHECKER = os.path.join(SRC, "tests", "check-layering.py")


def tree():
	d = tempfile.mkdtemp(prefix="relay-layering-")
	for sub in ("include", "librelay", "relayd", "relayctl", "sandbox"):
		shutil.copytree(os.path.join(SRC, sub), os.path.join(d, sub),
				ignore=shutil.ignore_patterns("build*"))
	os.makedirs(os.path.join(d, "doc"))
	shutil.copy(os.path.join(SRC, "doc", "architecture.md"),
		    os.path.join(d, "doc", "architecture.md"))
	return d


def run(d):
	p = subprocess.run([sys.executable, CHECKER, d], capture_output=True,
			   text=True)
	return p.returncode, p.stdout + p.stderr


def prepend(path, line):
	with open(path, encoding="utf-8") as f:
		text = f.read()
	with open(path, "w", encoding="utf-8") as f:
		f.write(line + "\n" + text)


def include_fails(rel, include, *expected):
	"""@rel (a path in the tree) gets @include as its first line: the
	checker must fail, its output holding each of @expected."""
	d = tree()
	try:
		prepend(os.path.join(d, rel), include)
		rc, out = run(d)
		eq(rc, 1, "exit status")
		for e in expected:
			check(e in out, out)
	finally:
		shutil.rmtree(d)


@case
def untouched_tree_passes():
	d = tree()
	try:
		rc, out = run(d)
		eq(rc, 0, "exit status on the untouched tree:\n" + out)
	finally:
		shutil.rmtree(d)


@case
def relayd_including_a_private_header_fails():
	include_fails("relayd/stats.c", '#include "redis/backend.h"',
		      "relayd/stats.c:1: includes the private header "
		      "librelay/redis/backend.h")


@case
def relayctl_including_a_private_header_of_an_allowed_module_fails():
	# relayctl may include the app module, but only its public header.
	include_fails("relayctl/fmt.c", '#include "app/app.h"',
		      "relayctl/fmt.c:1: includes the private header "
		      "librelay/app/app.h")


@case
def the_map_cannot_grant_a_private_header():
	d = tree()
	try:
		arch = os.path.join(d, "doc", "architecture.md")
		with open(arch, encoding="utf-8") as f:
			text = f.read()
		row = "| `relayd` | `relayd/` |"
		check(row in text, "relayd row in the map")
		lines = text.split("\n")
		for i, line in enumerate(lines):
			if line.startswith(row):
				cells = line.split(" | ")
				cells[3] += ", `librelay/common.h`"
				lines[i] = " | ".join(cells)
		with open(arch, "w", encoding="utf-8") as f:
			f.write("\n".join(lines))
		prepend(os.path.join(d, "relayd", "stats.c"), '#include "common.h"')
		rc, out = run(d)
		eq(rc, 1, "exit status")
		check("names the header `librelay/common.h`" in out, out)
		check("includes the private header librelay/common.h" in out, out)
	finally:
		shutil.rmtree(d)


@case
def public_header_of_a_module_the_row_does_not_list_fails():
	include_fails("relayd/stats.c", '#include "relay/pattern.h"',
		      "an arrow relayd -> pattern the map does not allow")


def append_fails(rel, text, *expected):
	"""@rel gets @text at its end: the checker must fail, its output
	holding each of @expected."""
	d = tree()
	try:
		with open(os.path.join(d, rel), "a", encoding="utf-8") as f:
			f.write(text)
		rc, out = run(d)
		eq(rc, 1, "exit status")
		for e in expected:
			check(e in out, out)
	finally:
		shutil.rmtree(d)


@case
def runtime_core_including_the_run_layer_fails():
	include_fails("librelay/runtime/spawn.c", '#include "run.h"',
		      "an arrow runtime -> runtime-run the map does not allow")


@case
def runtime_run_including_the_warm_layer_fails():
	include_fails("librelay/runtime/run_libev.c", '#include "warm/warm.h"',
		      "an arrow runtime-run -> runtime-warm the map does not "
		      "allow")


@case
def runtime_core_calling_up_fails():
	# A call by name, with no include: the core frees a runtime (the
	# top stair) and cancels its runs (the run's).
	append_fails("librelay/runtime/runtime.c",
		     "\nvoid relay__probe(relay_runtime *rt);\n"
		     "void relay__probe(relay_runtime *rt)\n{\n"
		     "\trelay__runtime_cancel_all(rt);\n"
		     "\trelay_runtime_free(rt);\n}\n",
		     "calls relay__runtime_cancel_all() of "
		     "librelay/runtime/run_libev.c (runtime-run), an arrow "
		     "runtime -> runtime-run",
		     "calls relay_runtime_free() of librelay/runtime/"
		     "runtime_life.c (runtime-life), an arrow runtime -> "
		     "runtime-life")


@case
def runtime_run_calling_the_warm_layer_by_name_fails():
	append_fails("librelay/runtime/run_libev.c",
		     "\nvoid relay__probe(relay_runtime *rt);\n"
		     "void relay__probe(relay_runtime *rt)\n{\n"
		     "\t(void)relay__warm_new(rt, NULL, NULL);\n}\n",
		     "calls relay__warm_new() of librelay/runtime/warm/warm.c "
		     "(runtime-warm), an arrow runtime-run -> runtime-warm")


@case
def consumer_file_including_a_header_its_row_does_not_list_fails():
	include_fails("librelay/consumer/consumer_read.c",
		      '#include "consumer_inv.h"',
		      'includes "consumer_inv.h", which the consumer map does '
		      'not list for `consumer_read.c`')


@case
def consumer_file_calling_another_row_unlisted_fails():
	append_fails("librelay/consumer/consumer_health.c",
		     "\nvoid relay__probe(relay_consumer *c);\n"
		     "void relay__probe(relay_consumer *c)\n{\n"
		     "\t(void)relay__msg_find(c, \"0-1\");\n}\n",
		     "calls relay__msg_find() of librelay/consumer/consumer_msg.c, "
		     "which the consumer map does not list for "
		     "`consumer_health.c`")


@case
def invocation_writing_a_message_field_fails():
	# consumer_inv.c may read a message, never write it: the message's
	# own functions (relay__msg_inv_done(), ...) do.
	append_fails("librelay/consumer/consumer_inv.c",
		     "\nvoid relay__probe(relay__msg *m);\n"
		     "void relay__probe(relay__msg *m)\n{\n"
		     "\tm->cur++;\n\tm->c->nmsgs = 0;\n}\n",
		     "consumer_inv.c:",
		     "writes m->cur, a field consumer_msg.c owns",
		     "writes m->c->nmsgs, a field consumer_msg.c owns")


@case
def message_writing_an_invocation_field_fails():
	append_fails("librelay/consumer/consumer_msg.c",
		     "\nvoid relay__probe(relay__cinv *inv);\n"
		     "void relay__probe(relay__cinv *inv)\n{\n"
		     "\tinv->attempt = 2;\n\tinv->wait.next = NULL;\n}\n",
		     "writes inv->attempt, a field consumer_inv.c owns",
		     "writes inv->wait.next, a field slots.c owns")


@case
def consumer_file_off_the_map_fails():
	d = tree()
	try:
		with open(os.path.join(d, "librelay/consumer/consumer_new.c"), "w",
			  encoding="utf-8") as f:
			f.write("/* new */\n")
		rc, out = run(d)
		eq(rc, 1, "exit status")
		check("librelay/consumer/consumer_new.c is on no row of the "
		      "consumer map" in out, out)
	finally:
		shutil.rmtree(d)


@case
def invocation_calling_its_message_by_name_fails():
	# The message's header is the invocation's to read; the way back up
	# is the relay__cinv_up callbacks.
	append_fails("librelay/consumer/consumer_inv.c",
		     "\nvoid relay__probe(relay__msg *m);\n"
		     "void relay__probe(relay__msg *m)\n{\n"
		     "\trelay__msg_next(m);\n}\n",
		     "calls relay__msg_next() of librelay/consumer/consumer_msg.c, "
		     "whose header the consumer map lists as read only for "
		     "`consumer_inv.c`")


@case
def reading_including_the_message_header_fails():
	include_fails("librelay/consumer/consumer_read.c",
		      '#include "consumer_msg.h"',
		      'includes "consumer_msg.h", which the consumer map does '
		      'not list for `consumer_read.c`')


# Rule 8: the handler kinds. A switch over the kinds outside the drivers
# fails, by its case labels; so does an if on one kind (a comparison),
# also through the RELAY_APP_RUNTIME_ names of relay/app.h; inside a
# driver file both are allowed.
KIND_SWITCH = ("static int k(relay_runtime_kind k) { switch (k) { "
	       "case RELAY_RUNTIME_NODE: return 1; default: return 0; } }")


@case
def switch_on_the_kind_outside_the_drivers_fails():
	include_fails("relayd/commands.c", KIND_SWITCH,
		      "relayd/commands.c:1: a case label on the handler kind "
		      "RELAY_RUNTIME_NODE outside the drivers",
		      "not ok", "handler kinds")


@case
def comparison_with_an_app_kind_outside_the_drivers_fails():
	include_fails("librelay/runtime/warm/warm.c",
		      "static int k(const relay_exec_spec *s) { return "
		      "s->runtime != RELAY_APP_RUNTIME_EXEC; }",
		      "librelay/runtime/warm/warm.c:1: a comparison on the "
		      "handler kind RELAY_APP_RUNTIME_EXEC outside the drivers")


@case
def switch_on_the_kind_inside_a_driver_passes():
	d = tree()
	try:
		prepend(os.path.join(d, "librelay/runtime/kind_node.c"),
			KIND_SWITCH)
		rc, out = run(d)
		eq(rc, 0, "exit status with a switch in a driver:\n" + out)
	finally:
		shutil.rmtree(d)


if __name__ == "__main__":
	sys.exit(run_cases())
