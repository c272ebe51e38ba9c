"""NVIDIA DALI pipelines that do what ferry's loader does, for side-by-side runs
(bench/bench_gpu.py, examples/train_imagenet.py --loader dali). DALI is a peer
here, never a dependency of ferry: this module is imported only when asked for.

  val:   files -> decode (mixed: the JPEG engine + CUDA) -> resize to size x size
         -> normalise -> f16/f32 NCHW on the GPU
  train: files -> decode with a RandomResizedCrop window (scale 0.08-1, ratio 3/4-4/3)
         -> resize -> random horizontal flip -> normalise -> NCHW on the GPU

hw_decoder_load is the share of each batch that DALI sends to the JPEG engine (its
default 0.65; the rest is decoded by nvJPEG's CUDA path). decoder="cpu" decodes on the
CPU threads instead (libjpeg-turbo) and resizes on the GPU, as ferry --no-hw-decode does.
"""
import os

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def make_iterator(data_dir, batch_size, size, train, *, hw_decoder_load=0.65, threads=None,
                  seed=0, fp16=True, shard_id=0, num_shards=1, device_id=0, prefetch=2,
                  decoder="mixed"):
    """A DALIGenericIterator yielding [{"images": NCHW tensor, "labels": int64 tensor}]
    per batch (last partial batch dropped), and its number of batches per epoch."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    threads = threads or os.cpu_count() or 4
    if decoder not in ("mixed", "cpu"):
        raise ValueError(f"decoder must be mixed or cpu, not {decoder!r}")
    engine = {"hw_decoder_load": hw_decoder_load} if decoder == "mixed" else {}

    @pipeline_def(batch_size=batch_size, num_threads=threads, device_id=device_id, seed=seed,
                  prefetch_queue_depth=prefetch)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=train,
                                        shard_id=shard_id, num_shards=num_shards,
                                        name="Reader")
        if train:
            images = fn.decoders.image_random_crop(
                jpegs, device=decoder, output_type=types.RGB, random_area=[0.08, 1.0],
                random_aspect_ratio=[0.75, 4.0 / 3.0], num_attempts=10, **engine)
            if decoder == "cpu":
                images = images.gpu()
            images = fn.resize(images, resize_x=size, resize_y=size, antialias=True)
            mirror = fn.random.coin_flip(probability=0.5)
        else:
            images = fn.decoders.image(jpegs, device=decoder, output_type=types.RGB, **engine)
            if decoder == "cpu":
                images = images.gpu()
            images = fn.resize(images, resize_x=size, resize_y=size, antialias=True)
            mirror = False
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT16 if fp16 else types.FLOAT, output_layout="CHW",
            mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD], mirror=mirror)
        return images, labels.gpu()

    p = pipe()
    p.build()
    it = DALIGenericIterator([p], ["images", "labels"], reader_name="Reader",
                             last_batch_policy=LastBatchPolicy.DROP, auto_reset=True)
    return it, len(it)
