"""One rank of tests/python/test_distributed.py, started the way torchrun
starts it: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
MASTER_PORT in the environment, nothing on the command line but the job.

    python dist_worker.py SOURCE EPOCHS BATCH DROP_LAST OUT.json [gloo]

With `gloo`, torch.distributed is initialised (CPU, gloo) and ferry takes
rank and world size from it; every rank gathers every rank's indices and
rank 0 writes them all. Without, ferry reads RANK/WORLD_SIZE and each rank
writes its own file."""
import json
import sys

import ferry


def main():
    source, epochs, batch, drop_last, out = sys.argv[1:6]
    use_gloo = len(sys.argv) > 6 and sys.argv[6] == "gloo"
    dist = None
    if use_gloo:
        import torch.distributed as dist
        dist.init_process_group("gloo")  # env:// from the torchrun variables
    loader = ferry.Loader(source, int(batch), 16, output="numpy", seed=11,
                          drop_last=drop_last == "1")
    result = {"rank": loader.rank, "world_size": loader.world_size, "len": len(loader),
              "epochs": []}
    for epoch in range(int(epochs)):
        loader.set_epoch(epoch)
        indices, sizes = [], []
        for b in loader.batches():
            indices += b.indices.tolist()
            sizes.append(len(b.indices))
        result["epochs"].append({"indices": indices, "sizes": sizes})
    if dist is not None:
        everyone = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, result)
        dist.barrier()
        if dist.get_rank() == 0:
            with open(out, "w") as f:
                json.dump(everyone, f)
        dist.destroy_process_group()
    else:
        with open(out, "w") as f:
            json.dump([result], f)


if __name__ == "__main__":
    main()
