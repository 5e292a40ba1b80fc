#!/usr/bin/python3
"""Reference values for tests/train/metrics_test.cpp, computed from the definitions with numpy
(no scikit-learn): accuracy, top-k accuracy, confusion matrix, precision/recall/F1 (micro, macro over
the classes present in targets or predictions, 0 for an empty denominator), and AUROC as the
probability that a positive outscores a negative (ties count half), one-vs-rest macro for several
classes. Run: /usr/bin/python3 tests/train/gen_metric_cases.py > tests/train/cases/metrics.json"""
import json

import numpy as np


def softmax(z):
    z = z.astype(np.float64)
    if z.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def pairwise_auroc(scores, labels):
    pos = scores[labels]
    neg = scores[~labels]
    if len(pos) == 0 or len(neg) == 0:
        return None
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def case(name, logits, targets, ks):
    n, c = logits.shape
    keep = targets >= 0
    lg, tg = logits[keep], targets[keep]
    if c == 1:
        pred = (lg[:, 0] > 0).astype(np.int64)
        classes = 2
    else:
        pred = lg.argmax(axis=1)  # first index on ties
        classes = c
    cm = np.zeros((classes, classes), dtype=np.int64)
    for t, p in zip(tg, pred):
        cm[t, p] += 1
    acc = float((pred == tg).mean())
    topk = {}
    for k in ks:
        if c == 1:
            topk[str(k)] = acc if k == 1 else 1.0
        else:
            higher = (lg > lg[np.arange(len(tg)), tg][:, None]).sum(axis=1)
            topk[str(k)] = float((higher < k).mean())
    present = [k for k in range(classes) if cm[k, :].sum() + cm[:, k].sum() > 0]
    prec, rec, f1 = [], [], []
    for k in present:
        tp = cm[k, k]
        p = tp / cm[:, k].sum() if cm[:, k].sum() else 0.0
        r = tp / cm[k, :].sum() if cm[k, :].sum() else 0.0
        prec.append(p)
        rec.append(r)
        f1.append(2 * p * r / (p + r) if p + r > 0 else 0.0)
    prob = softmax(lg)
    if c == 1:
        auc = pairwise_auroc(prob[:, 0], tg == 1)
    else:
        per = [pairwise_auroc(prob[:, k], tg == k) for k in range(c)]
        per = [a for a in per if a is not None]
        auc = float(np.mean(per)) if per else None
    return {
        "name": name,
        "num_classes": c,
        "logits": [float(x) for x in logits.reshape(-1)],
        "targets": [int(t) for t in targets],
        "accuracy": acc,
        "top_k": topk,
        "confusion": [int(x) for x in cm.reshape(-1)],
        "precision_macro": float(np.mean(prec)),
        "recall_macro": float(np.mean(rec)),
        "f1_macro": float(np.mean(f1)),
        "micro": acc,
        "auroc": auc,
    }


rng = np.random.default_rng(1234)
cases = []
# Four classes; rows drawn from a pool of 12, so that identical rows give tied scores (exactly
# tied in any implementation), plus rows with tied logits within the row (argmax, top-k ties).
pool = rng.normal(size=(12, 4)).astype(np.float32)
pool[0] = [0.5, 0.5, -1.0, 0.0]
pool[1] = [1.0, 0.0, 1.0, 1.0]
pick = rng.integers(0, 12, size=60)
lg = pool[pick]
tg = (pick + rng.integers(0, 2, size=60)) % 4
cases.append(case("four_classes_ties", lg, tg, [1, 2, 3]))
# Ten classes, continuous logits, one class never a target, some ignored targets (-100).
lg = rng.normal(size=(80, 10)).astype(np.float32)
tg = rng.choice([0, 1, 2, 3, 4, 5, 6, 8, 9], size=80)
lg[np.arange(80), tg] += 1.0
tg[[3, 17, 42]] = -100
cases.append(case("ten_classes_ignore", lg, tg, [1, 5]))
# Binary logits (one column).
lg = rng.normal(size=(50, 1)).astype(np.float32)
tg = (rng.random(50) < 0.4).astype(np.int64)
lg[tg == 1] += 0.8
cases.append(case("binary_one_column", lg, tg, [1]))
# Two columns.
lg = rng.normal(size=(40, 2)).astype(np.float32)
tg = rng.integers(0, 2, size=40)
lg[np.arange(40), tg] += 0.7
cases.append(case("two_columns", lg, tg, [1]))
print('{"generator": "gen_metric_cases.py (numpy %s)",\n "cases": [\n' % np.__version__ +
      ",\n".join("  " + json.dumps(c) for c in cases) + "\n]}")
