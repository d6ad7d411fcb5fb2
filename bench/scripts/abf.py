#!/usr/bin/env python3
"""Paired rounds like ab.py, but for any JSON fields: abf.py bin1,bin2 ROUNDS "case" field1,field2
prints per binary each field's median [min-max] and the median per-round ratio to bin1."""
import subprocess, json, sys, statistics
bins = sys.argv[1].split(',')
rounds = int(sys.argv[2])
case = sys.argv[3].split()
fields = sys.argv[4].split(',')
res = {b: {f: [] for f in fields} for b in bins}
for r in range(rounds):
    k = r % len(bins)
    for b in bins[k:] + bins[:k]:
        out = subprocess.run([b] + case, capture_output=True, text=True, timeout=900)
        line = [l for l in out.stdout.splitlines() if l.startswith('{')][-1]
        j = json.loads(line)
        if j.get('check') != 'ok':
            print('CHECK', b, j.get('check'))
        for f in fields:
            v = j.get(f)
            if v is None and f == 'ms': v = j['seconds'] * 1000
            res[b][f].append(v)
print(' '.join(case))
for b in bins:
    name = b.split('/')[-1]
    parts = []
    for f in fields:
        xs = [x for x in res[b][f] if x is not None]
        if not xs:
            continue
        s = f"{f} {statistics.median(xs):.4g} [{min(xs):.4g}-{max(xs):.4g}]"
        if b != bins[0]:
            rs = [x / y for x, y in zip(xs, res[bins[0]][f]) if x is not None and y]
            if rs:
                s += f" x{statistics.median(rs):.2f}"
        parts.append(s)
    print(f"  {name}: " + '; '.join(parts))
