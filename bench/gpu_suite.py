#!/usr/bin/env python3
"""Run the gpu test suite on a machine without Meson (the GPU machine).

    bench/gpu_suite.py [--build build] [--shared DIR] [--suite gpu] [--sanitize memcheck|racecheck]
                       [--only NAME,...]

Reads the test list Meson wrote when the build was configured here
(BUILD/meson-info/intro-tests.json), maps the source and build paths recorded there onto
this checkout, and runs each test of the suite with its environment. Prints one line per
test and a total line; exits 1 if any test failed. Exit code 77 of a test counts as skipped."""
import argparse
import json
import os
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--shared", default=None, help="the shared/ folder (models, data)")
    ap.add_argument("--suite", default="gpu")
    ap.add_argument("--only", default="", help="comma-separated test names")
    ap.add_argument("--sanitize", choices=["memcheck", "racecheck"], default=None,
                    help="run each compiled test under compute-sanitizer")
    a = ap.parse_args()

    root = os.getcwd()
    build = os.path.abspath(a.build)
    info = json.load(open(os.path.join(build, "meson-info", "intro-tests.json")))
    # The source root recorded at configure time is the parent of every 'tests/' path.
    old_root = None
    for t in info:
        env = t.get("env", {})
        if "BNN_SOURCE_ROOT" in env:
            old_root = env["BNN_SOURCE_ROOT"]
            old_buildroot = env["BNN_BUILD_ROOT"]
            break
    if old_root is None:
        sys.exit("gpu_suite: no BNN_SOURCE_ROOT in the recorded tests")

    def remap(s):
        # Meson records the tests' scripts as BUILD/../tests/...: the source's, wherever the
        # build folder now is (a copy outside the checkout too). The build root may lie inside
        # the source root: mark it first so that it is not rewritten twice.
        mark = "\0build\0"
        s = s.replace(old_buildroot + "/../", old_root + "/")
        return s.replace(old_buildroot, mark).replace(old_root, root).replace(mark, build)

    only = set(x for x in a.only.split(",") if x)
    results = []
    for t in info:
        if a.suite not in [s.split(":")[-1] for s in t["suite"]]:
            continue
        if only and t["name"] not in only:
            continue
        cmd = [remap(c) for c in t["cmd"]]
        if not os.path.exists(cmd[0]) and os.path.basename(cmd[0]).startswith("python"):
            cmd[0] = sys.executable  # the python recorded at configure time is not here
        env = dict(os.environ)
        env.update({k: remap(v) for k, v in t.get("env", {}).items()})
        if a.shared:
            env["BNN_SHARED"] = os.path.abspath(a.shared)
        if a.sanitize and cmd[0] != sys.executable:
            cmd = ["compute-sanitizer", "--tool", a.sanitize, "--error-exitcode", "3"] + cmd
        t0 = time.time()
        try:
            p = subprocess.run(cmd, cwd=remap(t["workdir"]) if t.get("workdir") else build, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=t.get("timeout", 600))
            rc, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc, out = -1, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        dt = time.time() - t0
        verdict = "ok" if rc == 0 else "skipped" if rc == 77 else "FAILED"
        print(f"--- {t['name']}: {verdict} (exit {rc}, {dt:.1f} s)")
        lines = out.splitlines()
        if verdict == "FAILED":  # its failure lines first, wherever they are in a long output
            print("\n".join(l for l in lines[:-25] if "FAIL" in l or "error" in l.lower()))
        print("\n".join(lines[-25:]))
        results.append((t["name"], verdict, dt))

    print("\n| test | result | seconds |\n|---|---|---|")
    for name, verdict, dt in results:
        print(f"| {name} | {verdict} | {dt:.1f} |")
    n_ok = sum(v == "ok" for _, v, _ in results)
    n_fail = sum(v == "FAILED" for _, v, _ in results)
    n_skip = sum(v == "skipped" for _, v, _ in results)
    print(f"{n_ok} passed, {n_fail} failed, {n_skip} skipped")
    sys.exit(1 if n_fail else 0)


if __name__ == "__main__":
    main()
