#!/usr/bin/env python3
"""Where Strata's worker threads wait, from a scheduler trace.

usage: perf script -i TRACE | scripts/worker-waits.py WORKER_TIDS

TRACE is a `perf sched record -a -g` recording; WORKER_TIDS is a comma-separated list of
the worker threads' ids. Prints:

- the CPU time each thread (or kind of thread) had;
- run delays: from a worker's wake-up to when it runs, counted over 0.2, 0.5 and 1 ms, and
  what ran on the CPUs meanwhile (a worker waiting behind the load generator, the other
  worker, the snapshot thread, or an idle CPU); and for the delays over 1 ms, what ran on
  the CPU the wake-up chose and on the other CPUs at that moment, and whether the worker
  moved before it ran;
- off-CPU periods by why the worker slept, from the stack it slept on: a lock (futex),
  its event loop (epoll), or something else, counted over 0.2 and 0.5 ms.
"""
import collections
import re
import sys

EVENT = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def read_events(lines):
    """(event, pid, cpu, time, fields, stack) per event; stack is the frames' symbols."""
    events = []
    for line in lines:
        m = EVENT.match(line)
        if m:
            fields = dict(FIELD.findall(m.group(6).replace(" ==> ", " ")))
            events.append((m.group(5), int(m.group(2)), int(m.group(3)), float(m.group(4)), fields, []))
        elif events and line.strip():
            events[-1][5].append(line.strip().split(None, 1)[-1])
    return events


def kind(pid, comm, workers):
    if pid in workers:
        return "worker %d" % pid
    if pid == 0:
        return "idle"
    return comm


def sleep_reason(stack):
    s = " ".join(stack)
    if "futex" in s:
        return "lock (futex)"
    if "epoll" in s or "ep_poll" in s:
        return "event loop (epoll)"
    return "other"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    workers = {int(t) for t in sys.argv[1].split(",") if t}
    events = read_events(sys.stdin)
    running = {}  # cpu -> (kind, since)
    segments = collections.defaultdict(list)  # cpu -> [(start, end, kind)]
    woken = {}  # worker -> (wake-up time, where it was placed: a description)
    asleep = {}  # worker -> (since, reason)
    delays = []  # (delay, woken at, ran at)
    sleeps = collections.defaultdict(list)  # reason -> [duration]
    for ev, pid, cpu, t, f, stack in events:
        if ev == "sched:sched_switch":
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            if cpu in running:
                k, since = running[cpu]
                segments[cpu].append((since, t, k))
            running[cpu] = (kind(nxt, f["next_comm"], workers), t)
            # A wake-up that reached a worker still on its CPU (it had not slept yet)
            # does not count as a wait.
            woken.pop(prev, None)
            if prev in workers and f["prev_state"][0] in "SD":
                asleep[prev] = (t, sleep_reason(stack))
            if nxt in woken:
                at, placed = woken.pop(nxt)
                delays.append((t - at, at, t, placed))
        elif ev == "sched:sched_migrate_task" and int(f["pid"]) in woken:
            at, placed = woken[int(f["pid"])]
            if not placed.endswith("(moved)"):
                woken[int(f["pid"])] = (at, placed + " (moved)")
        elif ev in ("sched:sched_waking", "sched:sched_wakeup"):
            p = int(f["pid"])
            if p in workers:
                if p not in woken:
                    target = int(f["target_cpu"])
                    others = sorted(running[c][0] for c in running if c != target)
                    placed = "onto a CPU running %s, the others running %s" % (
                        running.get(target, ("?",))[0], ", ".join(others) or "?")
                    woken[p] = (t, placed)
                if p in asleep:
                    since, reason = asleep.pop(p)
                    sleeps[reason].append(t - since)

    total = collections.Counter()
    for segs in segments.values():
        for s, e, k in segs:
            total[k] += e - s
    print("CPU time, s:", ", ".join("%s %.3f" % (k, v) for k, v in total.most_common(8)))

    print("worker run delays: %d wake-ups" % len(delays), end="")
    for limit in (0.2, 0.5, 1.0):
        print(", %d over %.1f ms" % (sum(d > limit / 1e3 for d, _, _, _ in delays), limit), end="")
    print()
    during = collections.Counter()
    span = 0.0
    for d, a, b, _ in delays:
        if d <= 0.5e-3:
            continue
        span += d
        for segs in segments.values():
            for s, e, k in segs:
                if e > a and s < b:
                    during[k] += min(e, b) - max(s, a)
    print("  while the delays over 0.5 ms lasted (%.1f ms), the CPUs ran (ms): %s" % (
        span * 1e3, ", ".join("%s %.1f" % (k, v * 1e3) for k, v in during.most_common(6))))

    placements = collections.Counter(p for d, _, _, p in delays if d > 1e-3)
    print("  the delays over 1 ms, by where the wake-up put the worker:")
    for p, n in placements.most_common(5):
        print("    %5d %s" % (n, p))

    print("worker sleeps by reason:")
    for reason, v in sorted(sleeps.items(), key=lambda x: -len(x[1])):
        long = [d for d in v if d > 0.2e-3]
        print("  %-20s %6d, %5d over 0.2 ms (%.1f ms in all), %5d over 0.5 ms" % (
            reason, len(v), len(long), sum(long) * 1e3, sum(d > 0.5e-3 for d in v)))


if __name__ == "__main__":
    main()
