#!/usr/bin/env python3
"""Mutation testing driver (see README.md; started by run.sh).

Copies the working tree once into build-mutation/src, configures one build dir in it
(build-mutation/src/build, so that ccache with base_dir=/work finds the objects of the other
trees), then for each mutant of mutants.py: applies it, builds the targets of its suites, runs
the suites in order until one fails, and restores the file. Prints a table and writes
build/reports/mutation.json. Exit status 0 iff every mutant was caught.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import mutants as mutant_list  # noqa: E402

ROOT = HERE.parent.parent  # the repository (worktree) root
SCRATCH = ROOT / "build-mutation"
TREE = SCRATCH / "src"
BUILD = TREE / "build"
REPORTS = SCRATCH / "reports"
ONNX_NODE = SCRATCH / "onnx-node"
LOGS = SCRATCH / "logs"


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------- the mutant list

def check_mutants(mutants):
    """Each search string must occur exactly once in its file (in the working tree)."""
    errors = []
    ids = set()
    for m in mutants:
        for key in ("id", "family", "file", "search", "replace", "description", "suites"):
            if key not in m:
                errors.append(f"{m.get('id', '?')}: missing field '{key}'")
        if m["id"] in ids:
            errors.append(f"{m['id']}: duplicate id")
        ids.add(m["id"])
        path = ROOT / m["file"]
        if not path.is_file():
            errors.append(f"{m['id']}: {m['file']} does not exist")
            continue
        n = path.read_text().count(m["search"])
        if n != 1:
            errors.append(f"{m['id']}: the search text occurs {n} times in {m['file']} (must be exactly once): "
                          f"{m['search']!r}")
        if m["search"] == m["replace"]:
            errors.append(f"{m['id']}: replacement equals the search text")
        if not m["suites"]:
            errors.append(f"{m['id']}: no suites")
    return errors


def target_of(suite):
    return suite["binary"].rsplit("/", 1)[-1]


# ---------------------------------------------------------------- the scratch tree

def tree_files():
    """Tracked and untracked-but-not-ignored files of the working tree (as git sees them)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         check=True, capture_output=True).stdout
    files = [f for f in out.decode().split("\0") if f]
    return [f for f in files if (ROOT / f).is_file() and not (ROOT / f).is_symlink()]


def sync_tree():
    """Makes TREE's sources equal to the working tree's. Only files whose content differs are
    written (with a new mtime), so the build dir stays valid between runs and a file a
    previous (interrupted) run left mutated is restored and rebuilt."""
    files = tree_files()
    wanted = set(files)
    copied = 0
    for f in files:
        src, dst = ROOT / f, TREE / f
        data = src.read_bytes()
        if dst.is_file() and dst.read_bytes() == data:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.exists() or dst.is_symlink():
            dst.unlink()
        dst.write_bytes(data)
        shutil.copymode(src, dst)
        copied += 1
    removed = 0
    for dirpath, dirnames, filenames in os.walk(TREE):
        rel_dir = Path(dirpath).relative_to(TREE)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d != "build"]
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            if rel not in wanted:
                (TREE / rel).unlink()
                removed += 1
    log(f"scratch tree {TREE.relative_to(ROOT)}: {len(files)} files, {copied} written, {removed} removed")


def configure(env):
    if (BUILD / "build.ninja").is_file():
        return
    log("configuring the scratch build dir")
    subprocess.run(["cmake", "--preset", "default"], cwd=TREE, env=env, check=True, stdout=subprocess.DEVNULL)


def build(targets, jobs, env, logfile):
    cmd = ["cmake", "--build", str(BUILD), "-j", str(jobs), "--target", *sorted(targets)]
    with open(logfile, "w") as f:
        r = subprocess.run(cmd, cwd=TREE, env=env, stdout=f, stderr=subprocess.STDOUT)
    return r.returncode == 0


def build_errors(logfile, limit=6):
    lines = Path(logfile).read_text(errors="replace").splitlines()
    errs = [l for l in lines if "error:" in l] or [l for l in lines if "error" in l.lower()]
    return errs[:limit] or lines[-limit:]


# ---------------------------------------------------------------- suites

def suite_command(suite):
    subst = {"{reports}": str(REPORTS), "{onnx_node}": str(ONNX_NODE)}
    args = []
    for a in suite.get("args", []):
        for k, v in subst.items():
            a = a.replace(k, v)
        args.append(a)
    cmd = [str(BUILD / suite["binary"]), *args]
    if suite.get("filter"):
        cmd.append("--gtest_filter=" + suite["filter"])
    return cmd


def suite_label(suite):
    label = suite["name"]
    if suite.get("filter"):
        label += f" [{suite['filter']}]"
    elif suite.get("kind") == "onnx_node":
        label += f" [{suite['args'][-1]}]"
    if suite.get("env"):
        label += " " + " ".join(f"{k}={v}" for k, v in suite["env"].items())
    return label


def first_failure(output, kind):
    """The first failing test named in a suite's output, or a description of the crash."""
    if kind == "onnx_node":
        m = re.search(r"^FAILED (\S+?):", output, re.M)
        return m.group(1) if m else None
    m = re.search(r"^\[  FAILED  \] (\S+)", output, re.M)
    if m:
        return m.group(1).rstrip(",")
    # a crash: the last test that started and did not finish
    running = None
    for line in output.splitlines():
        if line.startswith("[ RUN      ] "):
            running = line[13:].strip()
        elif line.startswith("[       OK ] ") or line.startswith("[  FAILED  ] ") or line.startswith("[  SKIPPED ] "):
            running = None
    return f"crashed in {running}" if running else None


def run_suite(suite, env, timeout, logfile):
    """Returns (failed, detail, seconds)."""
    cmd = suite_command(suite)
    senv = dict(env)
    senv.update(suite.get("env", {}))
    t0 = time.time()
    with open(logfile, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.Popen(cmd, cwd=SCRATCH, env=senv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
    dt = time.time() - t0
    output = Path(logfile).read_text(errors="replace")
    kind = suite.get("kind", "gtest")
    if rc is None:
        return True, f"timeout after {timeout} s", dt
    failed_lines = re.search(r"^\[  FAILED  \]", output, re.M) or (kind == "onnx_node" and re.search(r"^FAILED ", output, re.M))
    if rc == 0 and re.search(r"^\[  PASSED  \] 0 tests", output, re.M):
        return False, "ran 0 tests (filter matches nothing)", dt
    if rc != 0 or failed_lines:
        detail = first_failure(output, kind)
        if detail is None:
            detail = f"exit status {rc}" if rc >= 0 else f"killed by signal {-rc}"
        return True, detail, dt
    return False, "", dt


def gen_onnx_node(env):
    if (ONNX_NODE / "node").is_dir() and any((ONNX_NODE / "node").iterdir()):
        return True
    log("generating the ONNX node tests (once)")
    r = subprocess.run([str(TREE / "tests/onnx/node/gen_node_tests.sh"), str(ONNX_NODE)], cwd=TREE, env=env)
    return r.returncode == 0


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], help="run only this mutant id (repeatable, or a comma list)")
    ap.add_argument("--jobs", type=int, default=2, help="build parallelism (default 2)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per suite run before it counts as hung (caught)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip running the suites once on the unmutated tree (they must all pass)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--check", action="store_true", help="only check that every search text occurs exactly once")
    args = ap.parse_args()
    # SIGTERM / SIGHUP unwind like Ctrl-C, so a mutated file is always written back
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))

    mutants = mutant_list.MUTANTS
    errors = check_mutants(mutants)
    if errors:
        for e in errors:
            log("mutant list error: " + e)
        return 2
    if args.list:
        for m in mutants:
            log(f"{m['id']:32} {m['family']:22} {m['file']}: {m['description']}")
        return 0
    if args.check:
        log(f"{len(mutants)} mutants, every search text found exactly once")
        return 0
    only = {i for o in args.only for i in o.split(",") if i}
    unknown = only - {m["id"] for m in mutants}
    if unknown:
        log("unknown mutant id(s): " + ", ".join(sorted(unknown)))
        return 2
    if only:
        mutants = [m for m in mutants if m["id"] in only]

    env = dict(os.environ)
    env.setdefault("CCACHE_DIR", "/work/main/.cache/ccache")
    env.setdefault("CCACHE_BASEDIR", "/work")
    for d in (SCRATCH, TREE, REPORTS, LOGS):
        d.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    sync_tree()
    configure(env)

    targets = {target_of(s) for m in mutants for s in m["suites"]}
    log(f"baseline build: {' '.join(sorted(targets))}")
    if not build(targets, args.jobs, env, LOGS / "build-baseline.log"):
        log("the unmutated tree does not build (build-mutation/logs/build-baseline.log):")
        for l in build_errors(LOGS / "build-baseline.log"):
            log("  " + l)
        return 2
    if any(s.get("kind") == "onnx_node" for m in mutants for s in m["suites"]):
        if not gen_onnx_node(env):
            log("generating the ONNX node tests failed (python3-onnx missing?)")
            return 2

    if not args.no_baseline:
        seen = {}
        for m in mutants:
            for s in m["suites"]:
                key = json.dumps(suite_command(s) + sorted(s.get("env", {}).items()))
                if key in seen:
                    continue
                seen[key] = s
        log(f"baseline: {len(seen)} suite runs on the unmutated tree")
        bad = []
        for i, s in enumerate(seen.values()):
            failed, detail, dt = run_suite(s, env, args.timeout, LOGS / f"baseline-{i}.log")
            log(f"  {'FAIL' if failed or detail else 'ok  '} {dt:6.1f} s  {suite_label(s)}{'  ' + detail if detail else ''}")
            if failed or detail:
                bad.append((s, detail, LOGS / f"baseline-{i}.log"))
        if bad:
            log("suites fail (or run nothing) on the unmutated tree, so a mutant could not be judged:")
            for s, detail, lf in bad:
                log(f"  {suite_label(s)}: {detail} ({lf.relative_to(ROOT)})")
            return 2

    results = []
    for idx, m in enumerate(mutants):
        log(f"[{idx + 1}/{len(mutants)}] {m['id']}: {m['description']}")
        path = TREE / m["file"]
        original = path.read_bytes()
        text = original.decode()
        if text.count(m["search"]) != 1:  # the tree was synced from the checked working tree
            raise RuntimeError(f"{m['id']}: search text not unique in the scratch copy")
        rec = {"id": m["id"], "family": m["family"], "file": m["file"], "description": m["description"],
               "note": m.get("note", ""), "status": None, "suite": None, "test": None, "seconds": 0.0}
        t0 = time.time()
        try:
            path.write_bytes(text.replace(m["search"], m["replace"]).encode())
            blog = LOGS / f"build-{m['id']}.log"
            if not build({target_of(s) for s in m["suites"]}, args.jobs, env, blog):
                rec["status"] = "DOES NOT BUILD"
                rec["test"] = "; ".join(build_errors(blog, 2))
            else:
                for k, s in enumerate(m["suites"]):
                    failed, detail, dt = run_suite(s, env, args.timeout, LOGS / f"{m['id']}-{k}.log")
                    log(f"    {'FAILED' if failed else 'passed'} {dt:6.1f} s  {suite_label(s)}"
                        f"{'  ' + detail if detail else ''}")
                    if failed:
                        rec.update(status="caught", suite=suite_label(s), test=detail)
                        break
                else:
                    rec["status"] = "SURVIVED"
        finally:
            path.write_bytes(original)  # new mtime: the next build recompiles it (a ccache hit)
        rec["seconds"] = round(time.time() - t0, 1)
        log(f"    -> {rec['status']}{': ' + rec['suite'] + ': ' + rec['test'] if rec['status'] == 'caught' else ''}")
        results.append(rec)

    # the table
    log("")
    rows = [("mutant", "family", "file", "caught by")]
    for r in results:
        if r["status"] == "caught":
            by = f"{r['suite']}: {r['test']}"
        elif r["status"] == "DOES NOT BUILD":
            by = f"DOES NOT BUILD ({r['test']})"
        else:
            by = "SURVIVED"
        rows.append((r["id"], r["family"], r["file"], by))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for k, row in enumerate(rows):
        log("  ".join(c.ljust(widths[i]) for i, c in enumerate(row[:3])) + "  " + row[3])
        if k == 0:
            log("  ".join("-" * w for w in widths) + "  " + "-" * 9)
    caught = sum(r["status"] == "caught" for r in results)
    survived = [r["id"] for r in results if r["status"] == "SURVIVED"]
    broken = [r["id"] for r in results if r["status"] == "DOES NOT BUILD"]
    log(f"\n{caught} of {len(results)} mutants caught" +
        (f"; SURVIVED: {', '.join(survived)}" if survived else "") +
        (f"; DOES NOT BUILD (fix the mutant list): {', '.join(broken)}" if broken else "") +
        f" ({time.time() - t_start:.0f} s)")

    out = ROOT / "build/reports/mutation.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout)
    out.write_text(json.dumps({"commit": commit, "dirty": dirty, "mutants": len(results), "caught": caught,
                               "survived": survived, "does_not_build": broken, "results": results}, indent=1) + "\n")
    log(f"report: {out.relative_to(ROOT)}")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
