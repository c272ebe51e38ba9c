import time, sys, os, glob
import torch, ferry
torch.cuda.init(); torch.zeros(1, device="cuda")
files = sorted(glob.glob("/tmp/synth/*/*.jpg"))[:2000]
for dev in ("cpu", "cuda"):
    for rep in range(2):
        t0 = time.perf_counter()
        L = ferry.Loader(files, 256, 224, device=dev, dtype="float16", shuffle=False)
        t1 = time.perf_counter()
        it = iter(L); x, y = next(it); 
        if dev == "cuda": torch.cuda.synchronize()
        t2 = time.perf_counter()
        n = len(y)
        for x, y in it: n += len(y)
        if dev == "cuda": torch.cuda.synchronize()
        t3 = time.perf_counter()
        L.close()
        t4 = time.perf_counter()
        print(f"{dev} rep{rep}: open {t1-t0:.3f} first {t2-t1:.3f} rest {t3-t2:.3f} close {t4-t3:.3f} n={n}", flush=True)
for dev in ("cpu", "cuda"):
    t0 = time.perf_counter(); x, y = ferry.load_tensor(files, 224, device=dev, dtype="float16"); 
    torch.cuda.synchronize(); print(dev, "load_tensor", round(time.perf_counter()-t0, 3), x.device)
