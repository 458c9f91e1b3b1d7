#!/usr/bin/env python3
"""check_flight.py: the flight recorder's documents against what mpi_flight did.

  check_flight.py exit NP MPIRUN... mpi_flight
      HV_FLIGHT_RECORDER=DIR: every rank's dump at hv_shutdown parses and holds the
      contract's fields (tools/hvrun/FLIGHT_RECORDER.md) with the right ranks, names,
      collectives, counts, algorithms, sequence numbers and done states.
  check_flight.py hang NP MPIRUN... mpi_flight
      While rank 1 sleeps in user code before 'late': every rank's status socket
      answers (rank 1 in user code, the others negotiating 'late', rank 0's coordinator
      naming rank 1 as missing), and SIGUSR1 makes rank 1 dump into $HV_RUN_DIR/flight
      while the program runs. Afterwards the sockets are gone.
  check_flight.py stall NP MPIRUN... mpi_flight
      HV_STALL_CHECK_TIME=1 while rank 1 sleeps: the first stall report makes every
      rank dump (reason stall) into $HV_RUN_DIR/flight; rank 0's names rank 1.
  check_flight.py lost NP MPIRUN... mpi_flight
      rank 1 is killed while it sleeps: every survivor dumps (reason peer_lost) with
      'late' still submitted and its engine stopped naming rank 1.
  check_flight.py baddir NP MPIRUN... mpi_flight
      HV_FLIGHT_RECORDER names a regular file: every rank says in one warning line
      that its dump was not written, and the program still succeeds.
Exit status 0 when every check passed."""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

mode, nprocs, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
tmp = tempfile.mkdtemp(prefix="hv-flight-")
job = "flighttest-%d" % os.getpid()
env = dict(os.environ, HV_JOB_ID=job, HV_STATUS_DIR=os.path.join(tmp, "status"))
env.pop("HV_FLIGHT_RECORDER", None)
failures = []
ALGOS = {"shm", "ring", "rd", "rab", "hier", "hier_shm", "2d", "mpi"}


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, flush=True)


def check_top(doc, rank, reason):
    for key in ("format", "version", "hv_version", "job", "world_rank", "world_size", "host", "pid", "reason",
                "reason_detail", "time", "comms"):
        check(key in doc, "rank %d: no '%s'" % (rank, key))
    check(doc.get("format") == "hv-flight-recorder" and doc.get("version") == 1, "rank %d: format/version" % rank)
    check(doc.get("job") == job, "rank %d: job %r" % (rank, doc.get("job")))
    check(doc.get("world_rank") == rank and doc.get("world_size") == nprocs,
          "rank %d: world_rank/size %r/%r" % (rank, doc.get("world_rank"), doc.get("world_size")))
    check(doc.get("reason") == reason, "rank %d: reason %r, expected %r" % (rank, doc.get("reason"), reason))
    check(abs(doc.get("time", 0) - time.time()) < 600, "rank %d: time is not CLOCK_REALTIME" % rank)
    comms = doc.get("comms", [])
    check(len(comms) == 1, "rank %d: %d comms" % (rank, len(comms)))
    c = comms[0] if comms else {}
    for key in ("index", "rank", "size", "recorder_size", "phase", "since", "pending", "waiting", "waiting_peer",
                "error", "submitted", "completed", "last_completed", "coordinator", "events"):
        check(key in c, "rank %d: comm has no '%s'" % (rank, key))
    check(c.get("index") == 0 and c.get("rank") == rank and c.get("size") == nprocs,
          "rank %d: comm index/rank/size %r/%r/%r" % (rank, c.get("index"), c.get("rank"), c.get("size")))
    check((c.get("coordinator") is not None) == (rank == 0), "rank %d: coordinator only on rank 0" % rank)
    return c


def check_exit():
    out = os.path.join(tmp, "dumps")
    run = subprocess.run(cmd + ["exit"], env=dict(env, HV_FLIGHT_RECORDER=out), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace", timeout=150)
    print(run.stdout, end="")
    check(run.returncode == 0, "mpi_flight exit: status %d" % run.returncode)
    check(stat.S_IMODE(os.stat(out).st_mode) == 0o700, "dump directory not 0700")
    for r in range(nprocs):
        path = os.path.join(out, "hv-flight.%s.rank%d.json" % (job, r))
        check("hv: rank %d: flight recorder dump (exit) written to %s" % (r, path) in run.stdout,
              "rank %d: no stderr line for its dump" % r)
        if not os.path.exists(path):
            check(False, "rank %d: no dump %s" % (r, path))
            continue
        check(stat.S_IMODE(os.stat(path).st_mode) == 0o600, "rank %d: dump not 0600" % r)
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        c = check_top(doc, r, "exit")
        check(c.get("phase") == "stopped" and c.get("error") == "" and c.get("pending") == [],
              "rank %d: phase %r error %r pending %r" % (r, c.get("phase"), c.get("error"), c.get("pending")))
        check(c.get("snapshot") == "full", "rank %d: snapshot %r" % (r, c.get("snapshot")))
        ev = c.get("events", [])
        check(c.get("submitted") == c.get("completed") == len(ev) == 30,
              "rank %d: submitted %r completed %r events %d (30 expected)" % (r, c.get("submitted"), c.get("completed"),
                                                                               len(ev)))
        if len(ev) != 30:
            continue
        for e in ev:
            check(e["state"] == "done" and e["error"] == "", "rank %d: %s state %s" % (r, e["name"], e["state"]))
            times = [e["t_submit"], e["t_negotiated"], e["t_started"], e["t_finished"]]
            check(None not in times and times == sorted(times), "rank %d: %s times %r" % (r, e["name"], times))
        for k in range(24):
            e, i = ev[k], k % 8
            check(e["name"] == "grad/%d" % i and e["coll"] == "allreduce" and e["dtype"] == "float32" and
                  e["count"] == 1024 + i and e["bytes"] == 4 * (1024 + i) and e["seq"] == k + 1 and
                  not e["ordered"] and e["algo"] in ALGOS, "rank %d: event %d: %r" % (r, k, e))
        expect = [("ag", "allgather", "int32", 16, "ring"), ("bc", "broadcast", "float64", 8, "mpi"),
                  ('we"ird\\name\x01 \u00e9 \u00ff', "allreduce", "int32", 1, None),
                  ("hv.barrier.0", "barrier", "uint8", 0, "none")]
        for k, (name, coll, dtype, count, algo) in enumerate(expect):
            e = ev[24 + k]
            check(e["name"] == name and e["coll"] == coll and e["dtype"] == dtype and e["count"] == count and
                  e["seq"] == 25 + k and (e["algo"] == algo if algo else e["algo"] in ALGOS),
                  "rank %d: event %d: %r" % (r, 24 + k, e))
        for k, (name, coll, dtype, count) in enumerate([("hv_allreduce_cuda", "allreduce", "float32", 100),
                                                        ("hv_allgather_cuda", "allgather", "int32", 10)]):
            e = ev[28 + k]
            check(e["ordered"] and e["name"] == name and e["coll"] == coll and e["dtype"] == dtype and
                  e["count"] == count and e["seq"] == k + 1 and e["device"] == -1,
                  "rank %d: ordered event %d: %r" % (r, k, e))
        check(c.get("last_completed") == ev[-1], "rank %d: last_completed %r" % (r, c.get("last_completed")))
        if r == 0:
            check(c["coordinator"] == {"waiting": []}, "rank 0: coordinator %r" % c["coordinator"])


def ask(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data.decode("utf-8"))


def check_hang():
    sockdir = os.path.join(tmp, "status", job)
    rundir = os.path.join(tmp, "run")
    os.makedirs(rundir)
    log = open(os.path.join(tmp, "log"), "w+")
    proc = subprocess.Popen(cmd + ["hang", "8"], env=dict(env, HV_RUN_DIR=rundir), stdout=log,
                            stderr=subprocess.STDOUT)
    socks = [os.path.join(sockdir, "rank%d.sock" % r) for r in range(nprocs)]
    deadline = time.time() + 60
    while time.time() < deadline and not all(os.path.exists(p) for p in socks) and proc.poll() is None:
        time.sleep(0.05)
    check(all(os.path.exists(p) for p in socks), "status sockets missing: %r" % os.listdir(sockdir)
          if os.path.isdir(sockdir) else "no status directory")
    if not failures:
        check(stat.S_IMODE(os.stat(sockdir).st_mode) == 0o700, "socket directory not 0700")
        # Wait until every rank but 1 has submitted 'late' (rank 1 sleeps), and rank 0's
        # coordinator has heard of it from each of them: a rank lists 'late' as pending
        # when it submits it, the coordinator at the rank's next negotiation round (on a
        # loaded machine, later).
        docs = None
        others = [r for r in range(nprocs) if r != 1]
        while time.time() < deadline:
            docs = [ask(p) for p in socks]
            waiting = (docs[0]["comms"][0].get("coordinator") or {}).get("waiting", [])
            if (all([x["name"] for x in d["comms"][0]["pending"]] == ["late"] for r, d in enumerate(docs) if r != 1)
                    and [w.get("submitted_by") for w in waiting] == [others]):
                break
            time.sleep(0.1)
        for r, d in enumerate(docs):
            c = check_top(d, r, "status")
            names = [x["name"] for x in c.get("pending", [])]
            if r == 1:
                check(c.get("phase") == "user" and names == [], "rank 1: phase %r pending %r" % (c.get("phase"), names))
                check(c["last_completed"] and c["last_completed"]["name"] == "warmup", "rank 1: last_completed %r" %
                      c["last_completed"])
            else:
                check(c.get("phase") == "negotiating" and names == ["late"],
                      "rank %d: phase %r pending %r" % (r, c.get("phase"), names))
            check(c.get("snapshot") == "full", "rank %d: snapshot %r" % (r, c.get("snapshot")))
            check(c.get("error") == "", "rank %d: error %r" % (r, c.get("error")))
        coord = docs[0]["comms"][0]["coordinator"]
        check(coord and [(w["name"], w["coll"], w["submitted_by"], w["missing"]) for w in coord["waiting"]] ==
              [("late", "allreduce", others, [1])], "rank 0: coordinator %r" % coord)
        with open(os.path.join(sockdir, "rank1.pid")) as f:
            pid1 = int(f.read())
        check(docs[1]["pid"] == pid1, "rank1.pid %d, document's pid %d" % (pid1, docs[1]["pid"]))
        os.kill(pid1, signal.SIGUSR1)
        dump = os.path.join(rundir, "flight", "hv-flight.%s.rank1.json" % job)
        until = time.time() + 10
        while not os.path.exists(dump) and time.time() < until:
            time.sleep(0.05)
        check(os.path.exists(dump), "no SIGUSR1 dump at %s" % dump)
        check(proc.poll() is None, "the program ended before the SIGUSR1 dump was checked: lengthen its sleep")
        if os.path.exists(dump):
            with open(dump, encoding="utf-8") as f:
                d = json.load(f)
            c = check_top(d, 1, "signal")
            check(c.get("phase") == "user", "rank 1 SIGUSR1 dump: phase %r" % c.get("phase"))
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -1
    log.seek(0)
    print(log.read(), end="")
    check(rc == 0, "mpi_flight hang: status %d" % rc)
    check(not any(os.path.exists(p) for p in socks), "status sockets left after exit")


def check_trigger(kind):
    rundir = os.path.join(tmp, "run")
    os.makedirs(rundir)
    extra = {"HV_RUN_DIR": rundir}
    if kind == "stall":
        extra["HV_STALL_CHECK_TIME"] = "1"
    log = open(os.path.join(tmp, "log"), "w+")
    proc = subprocess.Popen(cmd + ["hang", "4" if kind == "stall" else "30"], env=dict(env, **extra), stdout=log,
                            stderr=subprocess.STDOUT)
    if kind == "lost":
        pidfile = os.path.join(tmp, "status", job, "rank1.pid")
        deadline = time.time() + 60
        while time.time() < deadline and not os.path.exists(pidfile):
            time.sleep(0.05)
        time.sleep(1)  # rank 1 is in its sleep by now
        with open(pidfile) as f:
            os.kill(int(f.read()), signal.SIGKILL)
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = -1
    log.seek(0)
    print(log.read(), end="")
    check(rc == 0 if kind == "stall" else rc != 0, "mpi_flight: status %d" % rc)
    reason = "stall" if kind == "stall" else "peer_lost"
    for r in range(nprocs):
        path = os.path.join(rundir, "flight", "hv-flight.%s.rank%d.json" % (job, r))
        if kind == "lost" and r == 1:
            continue
        if not os.path.exists(path):
            check(False, "rank %d: no %s dump" % (r, reason))
            continue
        with open(path, encoding="utf-8") as f:
            c = check_top(json.load(f), r, reason)
        names = [x["name"] for x in c.get("pending", [])]
        if kind == "stall":
            check(c["phase"] == ("user" if r == 1 else "negotiating") and names == ([] if r == 1 else ["late"]),
                  "rank %d: phase %r pending %r" % (r, c["phase"], names))
            if r == 0:
                check([(w["name"], w["missing"]) for w in c["coordinator"]["waiting"]] == [("late", [1])],
                      "rank 0: coordinator %r" % c["coordinator"])
        else:
            last = c["events"][-1] if c.get("events") else {}
            check(c["phase"] == "stopped" and "rank 1 " in c["error"] and names == ["late"] and
                  last.get("name") == "late" and last.get("state") == "submitted",
                  "rank %d: phase %r error %r pending %r last event %r" % (r, c["phase"], c["error"], names, last))


def check_baddir():
    bad = os.path.join(tmp, "a-file")
    open(bad, "w").close()
    run = subprocess.run(cmd + ["exit"], env=dict(env, HV_FLIGHT_RECORDER=bad), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace", timeout=150)
    print(run.stdout, end="")
    check(run.returncode == 0, "mpi_flight exit: status %d" % run.returncode)
    for r in range(nprocs):
        lines = [l for l in run.stdout.splitlines() if l.startswith("hv: rank %d: warning: flight recorder dump (exit) "
                                                                    "not written" % r)]
        check(len(lines) == 1, "rank %d: %d warning lines for the failed dump" % (r, len(lines)))


if mode == "exit":
    check_exit()
elif mode == "baddir":
    check_baddir()
elif mode == "hang":
    check_hang()
else:
    check_trigger(mode)
if failures:
    print("check_flight.py %s: %d check(s) failed (files in %s)" % (mode, len(failures), tmp))
    sys.exit(1)
subprocess.run(["rm", "-rf", tmp])
print("check_flight.py %s: all checks passed" % mode)
