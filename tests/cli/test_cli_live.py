#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_cli_live.py QMDB -- inspecting a live database with the qmdb tool.

A writer process (`qmdb apply DIR -`, fed one block at a time through a pipe) commits blocks
with compaction every block and pruning (a 3-block history, 64 KiB entry segments), while this
process runs `qmdb root`, `get`, `stat` and `prove` + `verify` in a loop against the same
directory. Every answer names its height, and is checked against a model of every height:
the root against the root a reference database gave for that height, a value or its absence
against the model, the live count, and the proof against the root of the height it states.
Heights never go backwards. The blocks are fed in groups: after each group the writer's
roots are awaited and then one whole round of the reader, so the reader sees at least one
height per group however slow the machine is. Exit 0 if every check passed.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

QMDB = os.path.abspath(sys.argv[1])
KEYS = 1000
BLOCKS = 120
OPS = 300
GROUPS = 6  # BLOCKS / GROUPS blocks per group; at least one height seen per group
INIT = ["--compact-thres", "1", "--utilization", "1/1", "--history-blocks", "3",
        "--entry-segment-bytes", "65536"]

failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL: " + what, file=sys.stderr)


def qmdb(*args):
    p = subprocess.run([QMDB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def key_hex(k):
    return ("key-%04d" % k).encode().hex()


def make_blocks():
    """The blocks (as script text) and the model: a dict of key -> value hex per height."""
    rng = random.Random(20261201)
    state, models, scripts = {}, [{}], []
    for h in range(1, BLOCKS + 1):
        lines = ["block %d" % h]
        for k in rng.sample(range(KEYS), OPS):
            kh = key_hex(k)
            if kh in state and rng.random() < 0.2:
                lines.append("del " + kh)
                del state[kh]
            else:
                v = bytes(rng.randrange(256) for _ in range(rng.randrange(4, 24))).hex()
                lines.append("put %s %s" % (kh, v))
                state[kh] = v
        lines.append("commit")
        scripts.append("\n".join(lines) + "\n")
        models.append(dict(state))
    return scripts, models


def main():
    tmp = tempfile.mkdtemp(prefix="qmdb-clilive-")
    try:
        return run(tmp)
    finally:
        if failures == 0:
            shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    scripts, models = make_blocks()
    ref, live = os.path.join(tmp, "ref"), os.path.join(tmp, "live")
    for d in (ref, live):
        rc, _, err = qmdb("init", d, *INIT)
        check(rc == 0, "init %s: %s" % (d, err))
    script = os.path.join(tmp, "all.ops")
    with open(script, "w") as f:
        f.write("".join(scripts))
    rc, out, err = qmdb("apply", ref, script, "--quiet")
    check(rc == 0, "reference apply: " + err)
    roots = {0: qmdb("root", ref, "--height", "0")[1].split()[1]}
    for line in out.split("\n"):
        if line:
            h, r = line.split()
            roots[int(h)] = r
    check(len(roots) == BLOCKS + 1, "reference roots: %d" % len(roots))

    writer = subprocess.Popen([QMDB, "apply", live, "-", "--quiet"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = threading.Event()
    writer_out = []
    # Rounds of the reader: begun and completed (a round is complete once all its checks ran).
    cv = threading.Condition()
    progress = {"begun": 0, "completed": 0}

    def feed():
        per = BLOCKS // GROUPS
        lines = []
        for g in range(GROUPS):
            for s in scripts[g * per:(g + 1) * per]:
                writer.stdin.write(s)
                writer.stdin.flush()
                time.sleep(0.01)
            # The group's roots are printed as its blocks commit; then one reader round that
            # begins after them (a round that misses it by a block or two still sees a height
            # of this group, never one of the last).
            for _ in range(per):
                line = writer.stdout.readline()
                if not line:
                    break
                lines.append(line)
            with cv:
                want = progress["begun"] + 1
                cv.wait_for(lambda: progress["completed"] >= want, timeout=120)
        writer.stdin.close()
        lines.append(writer.stdout.read())
        writer_out.append("".join(lines))
        writer.wait()
        done.set()

    t = threading.Thread(target=feed)
    t.start()
    rng = random.Random(7)
    last, heights, rounds = 0, set(), 0
    proof = os.path.join(tmp, "proof")
    while True:
        final = done.is_set()
        with cv:
            progress["begun"] += 1
            this_round = progress["begun"]
        rc, out, err = qmdb("root", live, "--json")
        check(rc == 0, "root: rc %d: %s" % (rc, err))
        if rc != 0:
            with cv:
                progress["completed"] = 1 << 30
                cv.notify_all()
            break
        d = json.loads(out)
        h = d["height"]
        check(h >= last, "root: height went back from %d to %d" % (last, h))
        check(d["root"] == roots[h], "root at height %d" % h)
        last = h
        heights.add(h)

        kh = key_hex(rng.randrange(KEYS))
        rc, out, err = qmdb("get", live, kh, "--json")
        if rc == 0:
            d = json.loads(out)
            gh = d["height"]
            check(models[gh].get(kh) == d["value"], "get %s at %d: %s" % (kh, gh, d["value"]))
        else:
            check(rc == 1 and "not found at height " in err, "get %s: rc %d: %s" % (kh, rc, err))
            gh = int(err.split("not found at height ")[1].split()[0]) if rc == 1 else 0
            check(kh not in models[gh], "get %s at %d: not found but the model has it" % (kh, gh))
        check(gh >= last, "get: height %d below the root's %d" % (gh, last))

        rc, out, err = qmdb("stat", live, "--json")
        check(rc == 0, "stat: rc %d: %s" % (rc, err))
        if rc == 0:
            d = json.loads(out)
            check(d["live_entries"] == len(models[d["height"]]),
                  "stat: live entries at %d: %d" % (d["height"], d["live_entries"]))

        kh = key_hex(rng.randrange(KEYS))
        rc, out, err = qmdb("prove", live, kh, "-o", proof, "--json")
        check(rc == 0, "prove %s: rc %d: %s" % (kh, rc, err))
        if rc == 0:
            d = json.loads(out)
            ph = d["height"]
            claim = ["--value", models[ph][kh]] if kh in models[ph] else ["--absent"]
            check(d["kind"] == ("inclusion" if kh in models[ph] else "exclusion"),
                  "prove %s at %d: kind %s" % (kh, ph, d["kind"]))
            rc, out, err = qmdb("verify", "--root", roots[ph], "--key", kh, "--height", str(ph),
                                *claim, proof)
            check(rc == 0 and out.strip() == "valid",
                  "verify %s at %d: rc %d: %s%s" % (kh, ph, rc, out, err))
        rounds += 1
        with cv:
            progress["completed"] = this_round
            cv.notify_all()
        if final:
            check(last == BLOCKS, "the last round sees height %d, not %d" % (last, BLOCKS))
            break
    t.join()
    check(writer.returncode == 0, "writer: rc %s: %s" % (writer.returncode,
                                                         writer.stderr.read()))
    lines = [x for x in writer_out[0].split("\n") if x]
    check(len(lines) == BLOCKS and all(roots[int(x.split()[0])] == x.split()[1] for x in lines),
          "writer: the roots it printed")
    rc, out, _ = qmdb("stat", live, "--json")
    check(rc == 0 and json.loads(out)["pruned_twigs"] > 0, "the writer pruned")
    check(len(heights) >= 5, "heights seen while the writer ran: %d" % len(heights))
    print("test_cli_live: %d rounds, %d heights seen, %d checks, %d failed"
          % (rounds, len(heights), checks, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
