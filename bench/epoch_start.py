#!/usr/bin/env python3
"""How long a consumer waits for the first batch of each epoch, with the next epoch started
ahead (epoch_ahead, the default) and without, side by side on the same loader settings.

A consumer slower than the loader (it naps NAP seconds per batch, a training step) takes every
batch of EPOCHS epochs; the first batch of epoch 0 always waits for a whole batch to be made,
and without epoch_ahead so does the first batch of every later epoch.

    python3 bench/epoch_start.py DIR [--batch 64] [--size 224] [--workers 2] [--nap 0.25]
        [--epochs 4] [--device cpu|cuda] [--rounds 2]

One JSON line per (round, setting) on stdout: the median of the later epochs' first waits and
of all other batches' waits, in ms.

Claims it proves (bench/CLAIMS.md): C29.
"""
import argparse
import json
import statistics
import sys
import time

import ferry


def run(args, ahead):
    L = ferry.Loader(args.dir, args.batch, args.size, output="tensor", device=args.device,
                     prefetch=4, drop_last=True, shuffle=True, workers=args.workers,
                     crop="random", flip=True, epoch_ahead=ahead)
    firsts, others = [], []
    for e in range(args.epochs):
        L.set_epoch(e)
        it = iter(L)
        k = 0
        while True:
            t = time.perf_counter()
            try:
                b = next(it)
            except StopIteration:
                break
            (firsts if k == 0 else others).append(1e3 * (time.perf_counter() - t))
            del b
            k += 1
            time.sleep(args.nap)
    L.close()
    return firsts, others


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--nap", type=float, default=0.25)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--device", default="cpu")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    if args.epochs < 2:
        sys.exit("epoch_start.py: --epochs must be 2 or more (the later epochs' starts are measured)")
    for r in range(args.rounds):
        for ahead in (True, False):
            firsts, others = run(args, ahead)
            print(json.dumps({"round": r, "epoch_ahead": ahead, "epochs": args.epochs,
                              "batch": args.batch, "workers": args.workers, "nap_s": args.nap,
                              "epoch0_first_ms": round(firsts[0], 2),
                              "later_first_ms_median": round(statistics.median(firsts[1:]), 2),
                              "later_first_ms": [round(x, 2) for x in firsts[1:]],
                              "other_ms_median": round(statistics.median(others), 3)}),
                  flush=True)


if __name__ == "__main__":
    main()
