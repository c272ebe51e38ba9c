/* cmd_demo.c — `ferry demo`: the README's main job on the bundled sample:
 * an ImageNet-style training pipeline (random-resized-crop, flip,
 * normalize, f16 NCHW batches), a few epochs, speed per stage, and a
 * contact sheet of the first batch to look at. */
#include "cli.h"

#include <string.h>
#include <sys/stat.h>

#ifndef FERRY_SAMPLE_DIR
#define FERRY_SAMPLE_DIR "data/sample"
#endif

static const char help[] =
    "usage: ferry demo [--sample DIR] [--grid OUT.png] [--epochs N]\n"
    "\n"
    "Runs a training-style pipeline over the bundled sample (" FERRY_SAMPLE_DIR ")\n"
    "— random-resized-crop 224, flip, normalize, float16 NCHW batches of 32 —\n"
    "for 3 epochs, prints each epoch's images/s and per-stage time (each epoch's\n"
    "own work: the next epoch is not made ahead here), and writes the first\n"
    "batch as a contact sheet (default demo_batch.png) after the timed epochs. The sample holds "
    "one\n"
    "truncated file on purpose: ferry reports it once and carries on.\n";

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

int cmd_demo(int argc, char **argv) {
  const char *sample = exists("data/sample") ? "data/sample" : FERRY_SAMPLE_DIR;
  cli_load_args a;
  memset(&a, 0, sizeof a);
  ferry_loader_options_default(&a.o);
  a.epochs = 3;
  a.save_grid = "demo_batch.png";
  for (int k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
      fputs(help, stdout);
      return CLI_OK;
    } else if (!strcmp(argv[k], "--sample") && k + 1 < argc) {
      sample = argv[++k];
    } else if (!strcmp(argv[k], "--grid") && k + 1 < argc) {
      a.save_grid = argv[++k];
    } else if (!strcmp(argv[k], "--epochs") && k + 1 < argc) {
      if (cli_int("demo", "--epochs", argv[++k], 1, 1000, &a.epochs))
        return CLI_USAGE;
    } else {
      return cli_usage_error("demo", "unknown argument '%s'", argv[k]);
    }
  }
  a.o.source = sample;
  a.o.batch_size = 32;
  a.o.crop = FERRY_CROP_RANDOM;
  a.o.flip_prob = 0.5f;
  a.o.normalize = 1;
  a.o.dtype = FERRY_F16;
  a.o.layout = FERRY_LAYOUT_CHW;
  a.o.seed = 42;
  /* Each epoch's figures are that epoch's own work: nothing of the next epoch is made
   * while this one is timed (epoch_ahead, a training loop's default, would credit
   * epoch 1 with work done during epoch 0), and the contact sheet is written after
   * the timed epochs (cli_run.c). */
  a.o.epoch_ahead = 0;
  printf("ferry demo: %s -> random-resized-crop 224x224, flip, normalize, f16 NCHW, "
         "batches of 32\n",
         sample);
  int rc = cli_run_loader("demo", &a);
  /* The sample's bad file is expected: skipping it is the point. */
  return rc == CLI_PARTIAL ? CLI_OK : rc;
}
