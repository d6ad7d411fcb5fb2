#!/usr/bin/env python3
"""Paired rounds: each round runs every binary once (order rotated); reports per binary the
median ns_per_op [min-max] and the median [min-max] of the per-round ratio to the first."""
import subprocess, json, sys, statistics
bins = sys.argv[1].split(',')
rounds = int(sys.argv[2])
cases = [c.split() for c in sys.argv[3].split(';')]
names = [b.split('/')[-1].replace('otter-bench-', '') for b in bins]
for case in cases:
    res = {b: [] for b in bins}
    ratios = {b: [] for b in bins[1:]}
    for r in range(rounds):
        k = r % len(bins)
        order = bins[k:] + bins[:k]
        got = {}
        for b in order:
            out = subprocess.run([b] + case, capture_output=True, text=True, timeout=600)
            line = [l for l in out.stdout.splitlines() if l.startswith('{')][-1]
            j = json.loads(line)
            assert j.get('check') == 'ok', j
            got[b] = j['ns_per_op']
            res[b].append(j['ns_per_op'])
        for b in bins[1:]:
            ratios[b].append(got[b] / got[bins[0]])
    parts = []
    for b, n in zip(bins, names):
        s = f"{n} {statistics.median(res[b]):.1f} [{min(res[b]):.1f}-{max(res[b]):.1f}]"
        if b in ratios:
            rs = ratios[b]
            s += f" x{statistics.median(rs):.2f} [{min(rs):.2f}-{max(rs):.2f}]"
        parts.append(s)
    print(f"{' '.join(case):38s} | " + " | ".join(parts), flush=True)
