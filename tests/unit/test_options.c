/* test_options.c — the loader's option registry (ferry_loader_option*):
 * the defaults it gives equal the ones ferry had before it, every row is
 * sound (its default parses, reads back as text, lies in range or is the
 * "unset" value), options set from text and by `ferry load` flags, the
 * messages name the option, the range and the value, and ferry_loader_open
 * checks what a C caller wrote into the struct. */
#include "check.h"
#include "core/internal.h"
#include "ferry.h"

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What ferry_loader_options_default() set before the registry, field by
 * field (src/pipeline/loader.c at issue 18 step 3). */
static void old_defaults(ferry_loader_options *o) {
  memset(o, 0, sizeof *o);
  o->batch_size = 256;
  o->width = o->height = 224;
  o->prefetch = 0;
  o->crop = FERRY_CROP_CENTER;
  o->crop_ratio = 0.875f;
  o->scale_min = 0.08f;
  o->scale_max = 1.0f;
  o->ratio_min = 3.0f / 4.0f;
  o->ratio_max = 4.0f / 3.0f;
  o->filter = FERRY_FILTER_TRIANGLE;
  const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
  memcpy(o->mean, mean, sizeof mean);
  memcpy(o->std, std, sizeof std);
  o->layout = FERRY_LAYOUT_CHW;
  o->dtype = FERRY_U8;
  o->shuffle = 1;
  o->world_size = 1;
  o->max_pixels = FERRY_DEFAULT_MAX_PIXELS;
  o->allow_dct_scaling = 1;
  o->device = -1;
  o->hw_decode = 1;
  o->device_memory = 2ull << 30;
}

/* The fields there were then (later ones have their defaults in their rows). */
#define OLD_FIELDS (offsetof(ferry_loader_options, stall_timeout_ms) + sizeof(int))

static void test_defaults_unchanged(void) {
  ferry_loader_options a, b;
  memset(&a, 0x5a, sizeof a); /* every byte must be written */
  ferry_loader_options_default(&a);
  old_defaults(&b);
  CHECK(memcmp(&a, &b, OLD_FIELDS) == 0);
  CHECK(a.ratio_max == 4.0f / 3.0f && a.mean[0] == 0.485f && a.std[2] == 0.225f);
}

static void test_rows(void) {
  int n = ferry_loader_option_count();
  CHECK(n >= 33);
  CHECK(ferry_loader_option(-1) == NULL && ferry_loader_option(n) == NULL);
  for (int i = 0; i < n; i++) {
    const ferry_option *opt = ferry_loader_option(i);
    CHECK_MSG(opt && opt->name && opt->help && opt->default_value, "row %d", i);
    CHECK_MSG(ferry_loader_option_find(opt->name) == opt, "%s", opt->name);
    CHECK_MSG(!opt->flag ||
                  (ferry_loader_option_find(opt->flag) == opt && !strncmp(opt->flag, "--", 2)),
              "%s", opt->name);
    size_t size = opt->type == FERRY_OPTION_U64     ? 8
                  : opt->type == FERRY_OPTION_FLOAT ? 4 * (size_t)opt->count
                                                    : sizeof(int);
    CHECK_MSG(opt->offset + size <= sizeof(ferry_loader_options), "%s", opt->name);
    CHECK_MSG(opt->count == 1 || opt->type == FERRY_OPTION_FLOAT, "%s", opt->name);
    CHECK_MSG(!(opt->flags & FERRY_OPTION_ORDERED) || opt->count == 2, "%s", opt->name);
    CHECK_MSG(!(opt->flags & FERRY_OPTION_MIB) || (opt->type == FERRY_OPTION_U64 && opt->flag),
              "%s", opt->name);
    CHECK_MSG((opt->type == FERRY_OPTION_CHOICE) == (opt->choices != NULL), "%s", opt->name);
    /* the default reads back as itself, and a struct holding it passes */
    ferry_loader_options o;
    ferry_loader_options_default(&o);
    char text[128];
    CHECK_MSG(ferry_loader_options_get(&o, opt->name, text, sizeof text) == FERRY_OK &&
                  !strcmp(text, opt->default_value),
              "%s: default '%s' reads back as '%s'", opt->name, opt->default_value, text);
    /* any value read back sets the same value */
    ferry_loader_options p;
    memset(&p, 0, sizeof p);
    int rc = ferry_loader_options_set(&p, opt->name, text);
    int in_range = rc == FERRY_OK;
    CHECK_MSG(!in_range || !memcmp((char *)&p + opt->offset, (char *)&o + opt->offset, size), "%s",
              opt->name);
    /* only "unset" defaults lie out of range (prefetch 0: ferry's choice) */
    if (!in_range)
      CHECK_MSG(!strcmp(opt->name, "prefetch"), "%s: default %s out of range: %s", opt->name,
                opt->default_value, ferry_last_error());
  }
}

static void test_set_and_messages(void) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  CHECK(ferry_loader_options_set(&o, "batch_size", "32") == FERRY_OK && o.batch_size == 32);
  CHECK(ferry_loader_options_set(&o, "--batch", "64") == FERRY_OK && o.batch_size == 64);
  /* the message names the option as the caller did, the range and the text */
  CHECK(ferry_loader_options_set(&o, "--batch", "0") == FERRY_EINVAL && o.batch_size == 64);
  CHECK_MSG(strstr(ferry_last_error(), "--batch needs an integer in 1..1048576") &&
                strstr(ferry_last_error(), "got '0'"),
            "%s", ferry_last_error());
  CHECK(ferry_loader_options_set(&o, "batch_size", "x") == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "batch_size needs an integer in 1..1048576"), "%s",
            ferry_last_error());
  CHECK(ferry_loader_options_set(&o, "nonsense", "1") == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "nonsense") != NULL);
  /* prefetch: 0 (ferry's choice) only by leaving it unset */
  CHECK(ferry_loader_options_set(&o, "prefetch", "0") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "prefetch", "64") == FERRY_OK && o.prefetch == 64);
  /* floats: ranges, open bounds, pairs, NaN */
  CHECK(ferry_loader_options_set(&o, "flip_prob", "nan") == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "flip probability"), "%s", ferry_last_error());
  CHECK(ferry_loader_options_set(&o, "--flip", NULL) == FERRY_OK && o.flip_prob == 0.5f);
  CHECK(ferry_loader_options_set(&o, "--flip", "0.25") == FERRY_OK && o.flip_prob == 0.25f);
  CHECK(ferry_loader_options_set(&o, "crop_ratio", "0") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "crop_ratio", "1") == FERRY_OK);
  CHECK(ferry_loader_options_set(&o, "--scale", "0.5,0.1") == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "--scale needs two numbers MIN,MAX") &&
                strstr(ferry_last_error(), "MIN <= MAX"),
            "%s", ferry_last_error());
  CHECK(ferry_loader_options_set(&o, "scale", "0.25,0.5") == FERRY_OK && o.scale_min == 0.25f &&
        o.scale_max == 0.5f);
  CHECK(ferry_loader_options_set(&o, "scale", "0.25") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "ratio", "inf,inf") == FERRY_EINVAL);
  /* the range holds for the float stored (fuzz_options): 1e39 is inf, 1e-50 is 0 */
  CHECK(ferry_loader_options_set(&o, "ratio", "1,1e39") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "crop_ratio", "1e-50") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "mean", "0.5,0.5,0.5") == FERRY_OK && o.mean[2] == 0.5f);
  CHECK(ferry_loader_options_set(&o, "mean", "0.5,0.5") == FERRY_EINVAL);
  /* mean and std: any number here; ferry_loader_open checks them with normalize */
  CHECK(ferry_loader_options_set(&o, "std", "nan,0,1") == FERRY_OK && isnan(o.std[0]));
  /* BOOL flags take no value and turn the default round */
  CHECK(ferry_loader_options_set(&o, "--no-shuffle", NULL) == FERRY_OK && o.shuffle == 0);
  CHECK(ferry_loader_options_set(&o, "--normalize", NULL) == FERRY_OK && o.normalize == 1);
  CHECK(ferry_loader_options_set(&o, "--normalize", "1") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "shuffle", "yes") == FERRY_OK && o.shuffle == 1);
  CHECK(ferry_loader_options_set(&o, "shuffle", "maybe") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "shuffle", NULL) == FERRY_EINVAL);
  /* choices, their aliases, any case; the CLI's message */
  CHECK(ferry_loader_options_set(&o, "dtype", "half") == FERRY_OK && o.dtype == FERRY_F16);
  CHECK(ferry_loader_options_set(&o, "--crop", "Centre") == FERRY_OK &&
        o.crop == FERRY_CROP_CENTER);
  CHECK(ferry_loader_options_set(&o, "layout", "nhwc") == FERRY_OK && o.layout == FERRY_LAYOUT_HWC);
  CHECK(ferry_loader_options_set(&o, "--dtype", "f64") == FERRY_EINVAL);
  CHECK_MSG(!strcmp(ferry_last_error(), "--dtype must be u8, f16 or f32, not 'f64'"), "%s",
            ferry_last_error());
  /* the device */
  CHECK(ferry_loader_options_set(&o, "device", "cuda:3") == FERRY_OK && o.device == 3);
  CHECK(ferry_loader_options_set(&o, "device", "cpu") == FERRY_OK && o.device == -1);
  CHECK(ferry_loader_options_set(&o, "device", "2") == FERRY_OK && o.device == 2);
  CHECK(ferry_loader_options_set(&o, "--device", "tpu") == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "--device must be cpu") != NULL);
  CHECK(ferry_loader_options_set(&o, "device", "cuda:256") == FERRY_EINVAL);
  /* u64, and MiB by the flag */
  CHECK(ferry_loader_options_set(&o, "seed", "18446744073709551615") == FERRY_OK &&
        o.seed == UINT64_MAX);
  CHECK(ferry_loader_options_set(&o, "seed", "-1") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "seed", "18446744073709551616") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "--cache-mb", "3") == FERRY_OK && o.cache_bytes == 3u << 20);
  CHECK(ferry_loader_options_set(&o, "cache_bytes", "3") == FERRY_OK && o.cache_bytes == 3);
  char text[64];
  CHECK(ferry_loader_options_get(&o, "--cache-mb", text, sizeof text) == FERRY_OK &&
        !strcmp(text, "3"));
  CHECK(ferry_loader_options_get(&o, "device", text, 4) == FERRY_EINVAL);
  /* ints: the whole int range where C takes any (time-outs) */
  CHECK(ferry_loader_options_set(&o, "read_timeout_ms", "-1") == FERRY_OK &&
        o.read_timeout_ms == -1);
  CHECK(ferry_loader_options_set(&o, "read_timeout_ms", "2147483648") == FERRY_EINVAL);
}

/* What a C caller writes into the struct is checked at open, by the same
 * rows: the option, the value, the range. */
static void test_open_checks(void) {
  ferry_loader_options o;
  ferry_loader *L = NULL;
  ferry_loader_options_default(&o);
  o.source = "data/sample";
  o.width = 0;
  CHECK(ferry_loader_open(&o, &L) == FERRY_EINVAL && L == NULL);
  CHECK_MSG(strstr(ferry_last_error(), "loader: width 0 out of range: an integer in 1..16384"),
            "%s", ferry_last_error());
  ferry_loader_options_default(&o);
  o.source = "data/sample";
  o.dtype = (ferry_dtype)7;
  CHECK(ferry_loader_open(&o, &L) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "dtype 7 out of range: one of u8, f16 or f32"), "%s",
            ferry_last_error());
  ferry_loader_options_default(&o);
  o.source = "data/sample";
  o.scale_min = 0.9f;
  o.scale_max = 0.1f;
  CHECK(ferry_loader_open(&o, &L) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "loader: scale 0.9,0.1 out of range"), "%s",
            ferry_last_error());
  ferry_loader_options_default(&o);
  o.source = "data/sample";
  o.prefetch = 65;
  CHECK(ferry_loader_open(&o, &L) == FERRY_EINVAL);
  CHECK_MSG(strstr(ferry_last_error(), "prefetch 65 out of range: an integer in 1..64, or 0: "
                                       "the default"),
            "%s", ferry_last_error());
  ferry_loader_options_default(&o);
  o.source = "data/sample";
  o.device = -2;
  CHECK(ferry_loader_open(&o, &L) == FERRY_EINVAL);
  CHECK(strstr(ferry_last_error(), "device -2") != NULL);
}

/* A host in a locale whose decimal mark is a comma (setlocale(LC_ALL, "")
 * in Germany): the defaults, the text and the messages stay "0.875". The
 * locale is made with localedef where the machine has none installed. */
static void test_host_locale(void) {
  char dir[] = "/tmp/ferry_locale_XXXXXX", cmd[256];
  int made = 0;
  if (!setlocale(LC_ALL, "de_DE.UTF-8") && mkdtemp(dir)) {
    made = 1;
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir);
    if (system(cmd) == 0) { /* LOCPATH is read when a locale is loaded */
      setenv("LOCPATH", dir, 1);
      setlocale(LC_ALL, "de_DE.UTF-8");
    }
  }
  char probe[16];
  snprintf(probe, sizeof probe, "%g", 0.5);
  if (strcmp(probe, "0,5")) {
    SKIP("no locale with a decimal comma (de_DE.UTF-8, or localedef to make one)");
  } else {
    ferry_loader_options o;
    ferry_loader_options_default(&o);
    CHECK(o.crop_ratio == 0.875f && o.mean[0] == 0.485f && o.ratio_max == 4.0f / 3.0f);
    CHECK(ferry_loader_options_set(&o, "crop_ratio", "0.5") == FERRY_OK && o.crop_ratio == 0.5f);
    char text[64];
    CHECK(ferry_loader_options_get(&o, "scale", text, sizeof text) == FERRY_OK &&
          !strcmp(text, "0.08,1"));
    CHECK(ferry_loader_options_set(&o, "flip_prob", "1.5") == FERRY_EINVAL);
    CHECK_MSG(strstr(ferry_last_error(), "in 0..1, got '1.5'"), "%s", ferry_last_error());
    snprintf(probe, sizeof probe, "%g", 0.5);
    CHECK(!strcmp(probe, "0,5")); /* the host's locale is left as it was */
  }
  setlocale(LC_ALL, "C");
  if (made) {
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
  }
}

/* park_workers (once FERRY_WORKER_PARK=1 in the environment): an option of
 * the table, off by default, set by name and by its flag, 0 or 1 only. */
static void test_park_workers(void) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  CHECK(o.park_workers == 0);
  const ferry_option *opt = ferry_loader_option_find("park_workers");
  CHECK(opt && opt->type == FERRY_OPTION_BOOL && !strcmp(opt->flag, "--park-workers"));
  CHECK(ferry_loader_options_set(&o, "--park-workers", NULL) == FERRY_OK && o.park_workers == 1);
  CHECK(ferry_loader_options_set(&o, "park_workers", "0") == FERRY_OK && o.park_workers == 0);
  CHECK(ferry_loader_options_set(&o, "park_workers", "2") == FERRY_EINVAL && o.park_workers == 0);
  CHECK_MSG(strstr(ferry_last_error(), "park_workers") != NULL, "%s", ferry_last_error());
  char text[8];
  o.park_workers = 1;
  CHECK(ferry_loader_options_get(&o, "park_workers", text, sizeof text) == FERRY_OK &&
        !strcmp(text, "1"));
}

int main(void) {
  test_park_workers();
  test_defaults_unchanged();
  test_rows();
  test_set_and_messages();
  test_open_checks();
  test_host_locale();
  return check_done();
}
