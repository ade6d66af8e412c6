import json, glob, itertools, sys
sys.path.insert(0, "benchmarks")
from points import Point
import humming_cuda.kernels.wna16_wgmma.heuristics as H
from humming_cuda.caps import caps_for_arch
caps = caps_for_arch("sm_90a")
rows = []
for f in glob.glob('/tmp/d39/d*.json'):
    rows += json.load(open(f))['rows']
data = []  # (point, problem, bm, split, us, chosen_us)
for r in rows:
    p = Point.parse(r['point'])
    for v in r['variants']:
        data.append((r['point'], p.problem, v['rs_block_m'], v['split_k'], v['us']))
def model(problem, bm, split, step, fixed, alone, splitrow=H.SPLIT_ROW_STEPS/2):
    steps = -(-problem.k // H.BLOCK_K)
    tiles = -(-problem.m // bm) * -(-problem.n // H.RS_NARROW_BLOCK_N)
    cta = H.cta_cost(steps, bm, split, step, fixed, splitrow)
    full, rest = divmod(tiles * split, 2 * 132)
    rounds = full + (0 if rest == 0 else alone if rest <= 132 else 1)
    return rounds * cta
def evaluate(step, fixed, alone, splits, show=False):
    # per point: unit = least squares us/model; report mean rel err and pick quality
    import math
    pts = sorted({d[0] for d in data})
    errs = []; picks = []
    # global unit fit
    num = sum(d[4] * model(d[1], d[2], d[3], step, fixed, alone) for d in data if d[3] in splits)
    den = sum(model(d[1], d[2], d[3], step, fixed, alone) ** 2 for d in data if d[3] in splits)
    unit = num / den
    for pt in pts:
        ds = [d for d in data if d[0] == pt and d[3] in splits and (d[3] == 1 or -(-d[1].k // 64) // d[3] >= H.MIN_STEPS_PER_SPLIT)]
        for d in ds:
            errs.append(abs(model(d[1], d[2], d[3], step, fixed, alone) * unit / d[4] - 1))
        pick = min(ds, key=lambda d: model(d[1], d[2], d[3], step, fixed, alone))
        best = min(ds, key=lambda d: d[4])
        picks.append(pick[4] / best[4])
        if show:
            print(f"  {pt:28} pick bm{pick[2]} s{pick[3]} {pick[4]:7.1f}  best bm{best[2]} s{best[3]} {best[4]:7.1f}  {pick[4]/best[4]:.3f}")
    return sum(errs) / len(errs), max(picks), sum(picks) / len(picks), unit
print("current", evaluate(H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE, (1, 2, 4), True))
print("current, splits 1-8", evaluate(H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE, (1, 2, 3, 4, 5, 6, 8), True))
best = None
for s128, fixed, alone in itertools.product([1.4, 1.5, 1.6, 1.7, 1.8], [4, 6, 8, 10, 12, 14, 16, 20], [0.6, 0.7, 0.8, 0.9, 1.0]):
    for splits in [(1, 2, 4), (1, 2, 3, 4), (1, 2, 4, 8), (1, 2, 3, 4, 6, 8), (1, 2, 3, 4, 5, 6, 8)]:
        e = evaluate({64: 1.0, 128: s128}, fixed, alone, splits)
        key = (e[2], e[1])
        if best is None or key < best[0]:
            best = (key, s128, fixed, alone, splits, e)
print("best by mean pick loss:", best)
_, s128, fixed, alone, splits, _ = best
print(evaluate({64: 1.0, 128: s128}, fixed, alone, splits, True))

def routing(step, fixed, alone, splits, margin=H.N128_MARGIN, show=False):
    saved = (H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE, H.N128_SPLITS, H.N128_MARGIN)
    H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE, H.N128_SPLITS, H.N128_MARGIN = step, fixed, alone, splits, margin
    tot = []
    try:
        for r in sorted(rows, key=lambda r: r['point']):
            p = Point.parse(r['point'])
            chosen_us = r.get('chosen_us')
            if chosen_us is None:
                continue
            plan = H.best_plan(p.problem, caps, narrow_n=p.spec.weight.dtype.bits == 4)
            if plan.block_n == 128:
                got = next(v['us'] for v in r['variants'] if v['rs_block_m'] == plan.block_m and v['split_k'] == plan.split_k)
                what = f"n128 bm{plan.block_m} s{plan.split_k}"
            else:
                got, what = chosen_us, "256 plan"
            best = min([chosen_us] + [v['us'] for v in r['variants']])
            tot.append(got / chosen_us)
            if show:
                print(f"  {r['point']:28} {what:18} {got:7.1f}  vs 256-plan {chosen_us:7.1f} ({got/chosen_us:.3f})  best {best:7.1f} ({got/best:.3f})")
    finally:
        H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE, H.N128_SPLITS, H.N128_MARGIN = saved
    return sum(tot) / len(tot), max(tot)
print("routing current:", routing(H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE, H.N128_SPLITS, show=True))
print("routing refit:", routing({64: 1.0, 128: s128}, fixed, alone, splits, show=True))
print("---- one-at-a-time")
for alone in (0.5, 0.6, 0.7, 0.8):
    for splits in ((1, 2, 4), (1, 2, 4, 8), (1, 2, 3, 4, 6, 8)):
        print(alone, splits, routing(H.N128_STEP_COST, H.N128_FIXED_STEPS, alone, splits))
print("---- splits 1,2,4,8")
routing(H.N128_STEP_COST, H.N128_FIXED_STEPS, H.N128_ALONE, (1, 2, 4, 8), show=True)
