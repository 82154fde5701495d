"""otlp_npm.py - the OpenTelemetry project's generated protobuf code (npm
package @opentelemetry/otlp-transformer) that the OTLP tests' receiver
(receiver.js) decodes with, installed once into the build tree.

test_otlp.py and test_tracing.py run at the same time under meson and
share the install: it is done under a lock, so one installs and the
other waits and finds it. (Two npm installs into one prefix replace
each other's files while a receiver is loading them: a receiver failed
with "Cannot find module .../generated/root.js" that way.)
"""
import fcntl
import os
import shutil
import subprocess

PKG = "@opentelemetry/otlp-transformer@0.52.1"


def generated(mods):
    return os.path.join(mods, "node_modules", "@opentelemetry",
                        "otlp-transformer", "build", "src", "generated",
                        "root.js")


def install(mods):
    """None when the package is in @mods (installed now if it was not);
    else why it is not."""
    if not shutil.which("node") or not shutil.which("npm"):
        return "node or npm missing"
    os.makedirs(mods, exist_ok=True)
    with open(os.path.join(mods, ".install-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(generated(mods)):
            return None
        try:
            r = subprocess.run(["npm", "install", "--no-save",
                                "--no-package-lock", "--no-audit",
                                "--no-fund", "--ignore-scripts",
                                "--prefix", mods, PKG],
                               capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return "npm install timed out"
        if r.returncode != 0 or not os.path.exists(generated(mods)):
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            return f"npm cannot install {PKG}: {last}"
    return None
