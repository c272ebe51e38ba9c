/* test_numa.c — the loader's threads near its GPU (src/core/numa.c,
 * src/pipeline/place.c) on made-up sysfs trees (FERRY_SYSFS_ROOT): cpulist
 * parsing and formatting, PCI addresses, a GPU's node, the NVIDIA GPUs
 * listed, and the plan: the node's CPUs, a slice per GPU of the node, the
 * process's allowed CPUs, and no placement on a host of one node, for a
 * node sysfs does not know (-1) or with no sysfs at all. With a GPU: a
 * loader on cuda:0 with a made-up second node, its threads on that node's
 * CPUs (/proc/self/task), the opener's own CPUs given back, numa off. */
#include "check.h"
#include "core/numa.h"
#include "core/testctl.h"
#include "cuda/gpu.h"
#include "ferry.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[4096];
static char made[8][4096]; /* the fake sysfs trees, removed at the end */
static int nmade;

/* mkdir -p of the folder that holds `path` */
static void make_parents(const char *path) {
  char tmp[8192];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(tmp, 0755);
      *p = '/';
    }
}

/* writes `text` to ROOT/sys/REL (REL formatted) */
static void put(const char *text, const char *fmt, ...) {
  char rel[1024], path[4096 + 1100];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rel, sizeof rel, fmt, ap);
  va_end(ap);
  snprintf(path, sizeof path, "%s/sys/%s", root, rel);
  make_parents(path);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    exit(2);
  }
  fputs(text, f);
  fclose(f);
}

static void gpu(const char *id, const char *vendor, const char *cls, const char *node,
                const char *local) {
  put(vendor, "bus/pci/devices/%s/vendor", id);
  put(cls, "bus/pci/devices/%s/class", id);
  if (node)
    put(node, "bus/pci/devices/%s/numa_node", id);
  if (local)
    put(local, "bus/pci/devices/%s/local_cpulist", id);
}

/* A two-socket host: node 0 = CPUs 0-15 and their hyperthreads 32-47,
 * node 1 = 16-31 and 48-63, node 2 memory only; GPUs 3b and 5e on node 0,
 * 86 and af on node 1, d8 on no known node; a chipset device on node 0. */
static void two_sockets(void) {
  put("0-15,32-47\n", "devices/system/node/node0/cpulist");
  put("16-31,48-63\n", "devices/system/node/node1/cpulist");
  put("\n", "devices/system/node/node2/cpulist");
  put("0-1\n", "devices/system/node/online"); /* not a node: left alone */
  for (int c = 0; c < 64; c++) {
    char sib[32];
    snprintf(sib, sizeof sib, "%d,%d\n", c % 32, c % 32 + 32);
    put(sib, "devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
  }
  gpu("0000:3b:00.0", "0x10de\n", "0x030200\n", "0\n", "0-15,32-47\n");
  gpu("0000:5e:00.0", "0x10de\n", "0x030200\n", "0\n", "0-15,32-47\n");
  gpu("0000:86:00.0", "0x10de\n", "0x030000\n", "1\n", NULL); /* node's cpulist instead */
  gpu("0000:af:00.0", "0x10de\n", "0x030200\n", "1\n", "16-31,48-63\n");
  gpu("0000:d8:00.0", "0x10de\n", "0x030200\n", "-1\n", "0-63\n");
  gpu("0000:00:1f.0", "0x8086\n", "0x060100\n", "0\n", "0-15,32-47\n");
  gpu("0000:17:00.0", "0x10de\n", "0x040300\n", "0\n", "0-15,32-47\n"); /* its audio */
}

static void use_root(const char *name) {
  char *base = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/ferry-numa-%d-%s", base && *base ? base : "/tmp", (int)getpid(),
           name);
  mkdir(root, 0755);
  CHECK(fy_tc_set(FY_TC_SYSFS_ROOT, root) == FERRY_OK); /* the test control FERRY_SYSFS_ROOT */
  int known = 0;
  for (int i = 0; i < nmade; i++)
    known |= !strcmp(made[i], root);
  if (!known && nmade < 8)
    snprintf(made[nmade++], sizeof made[0], "%s", root);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* The trees use_root made, gone (nothing of the test left in TMPDIR). */
static void remove_roots(void) {
  for (int i = 0; i < nmade; i++)
    CHECK_MSG(nftw(made[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0, "removing %s", made[i]);
}

static int cpus_are(const fy_cpus *s, const char *want) {
  char got[512];
  fy_cpus_format(s, got, sizeof got);
  if (strcmp(got, want)) {
    fprintf(stderr, "CPUs %s, expected %s\n", got, want);
    return 0;
  }
  return 1;
}

static void cpulists(void) {
  fy_cpus s;
  CHECK(fy_cpus_parse("0-7,16-23\n", &s) == 0 && fy_cpus_count(&s) == 16 &&
        cpus_are(&s, "0-7,16-23"));
  CHECK(fy_cpus_parse("3", &s) == 0 && fy_cpus_count(&s) == 1 && fy_cpus_has(&s, 3));
  CHECK(fy_cpus_parse("", &s) == 0 && fy_cpus_count(&s) == 0);
  CHECK(fy_cpus_parse("\n", &s) == 0 && fy_cpus_count(&s) == 0);
  CHECK(fy_cpus_parse(" 1 - 2 , 5\n", &s) == 0 && cpus_are(&s, "1-2,5"));
  CHECK(fy_cpus_parse("5,1-2,2", &s) == 0 && cpus_are(&s, "1-2,5")); /* any order, overlaps */
  CHECK(fy_cpus_parse("0-1023", &s) == 0 && fy_cpus_count(&s) == 1024);
  const char *bad[] = {"0-",     "-3", "a",  "3-1",   "1,,2", "1;2", "1024", "99999999999",
                       "1\n2\n", "1,", ",1", "1-2-3", "0x3",  "1 2", NULL};
  for (int i = 0; bad[i]; i++) {
    fy_cpus_add(&s, 7);
    CHECK_MSG(fy_cpus_parse(bad[i], &s) == -1 && fy_cpus_count(&s) == 0, "'%s'", bad[i]);
  }
  CHECK(fy_cpus_parse(NULL, &s) == -1);
  /* formatting: ranges, single CPUs, the empty set, a cut */
  fy_cpus_clear(&s);
  char text[16];
  fy_cpus_format(&s, text, sizeof text);
  CHECK(!strcmp(text, ""));
  fy_cpus_parse("0,2-3,5-9,11,13-20", &s);
  fy_cpus_format(&s, text, sizeof text);
  CHECK_MSG(!strcmp(text, "0,2-3,5-9,11...") || !strcmp(text, "0,2-3,5-9,..."), "'%s'", text);
  CHECK(strlen(text) < sizeof text);
  CHECK(fy_cpus_next(&s, -1) == 0 && fy_cpus_next(&s, 0) == 2 && fy_cpus_next(&s, 20) == -1);
  fy_cpus t;
  fy_cpus_parse("3-6,100,700-701", &t);
  fy_cpus_and(&t, &s);
  CHECK(cpus_are(&t, "3,5-6"));
  fy_cpus_parse("1000-1023", &t);
  CHECK(fy_cpus_next(&t, 999) == 1000 && fy_cpus_next(&t, 1023) == -1);
}

static void pci_ids(void) {
  char id[FY_PCI_ID_MAX];
  CHECK(fy_pci_id_norm("0000:3B:00.0", id) == 0 && !strcmp(id, "0000:3b:00.0"));
  CHECK(fy_pci_id_norm("00000000:3B:00.0", id) == 0 && !strcmp(id, "0000:3b:00.0"));
  CHECK(fy_pci_id_norm("10000:01:00.1", id) == 0 && !strcmp(id, "10000:01:00.1"));
  CHECK(fy_pci_id_norm("0000:3b:00.8", id) == -1 && id[0] == '\0');
  CHECK(fy_pci_id_norm("0000:3b:00", id) == -1);
  CHECK(fy_pci_id_norm("0000:3b:00.0x", id) == -1);
  CHECK(fy_pci_id_norm("gpu0", id) == -1);
  CHECK(fy_pci_id_norm(NULL, id) == -1);
}

static void sysfs_reads(void) {
  use_root("two");
  two_sockets();
  CHECK(fy_numa_pci_node("0000:3B:00.0") == 0);
  CHECK(fy_numa_pci_node("0000:af:00.0") == 1);
  CHECK(fy_numa_pci_node("0000:d8:00.0") == -1); /* the platform does not say */
  CHECK(fy_numa_pci_node("0000:99:00.0") == -1); /* no such device */
  CHECK(fy_numa_pci_node("junk") == -1);
  CHECK(fy_numa_node_count() == 2); /* node2 has no CPUs */
  char ids[8][FY_PCI_ID_MAX];
  CHECK(fy_numa_gpus(ids, 8) == 5);
  CHECK(!strcmp(ids[0], "0000:3b:00.0") && !strcmp(ids[1], "0000:5e:00.0") &&
        !strcmp(ids[2], "0000:86:00.0") && !strcmp(ids[3], "0000:af:00.0") &&
        !strcmp(ids[4], "0000:d8:00.0"));
  CHECK(fy_numa_gpus(ids, 2) == 5); /* only two written */
}

static void plans(void) {
  use_root("two");
  fy_cpus all, some;
  fy_cpus_parse("0-63", &all);
  fy_numa_plan p;
  /* alone on the host: the whole node */
  fy_numa_plan_make("0000:3B:00.0", NULL, 0, &all, &p);
  CHECK_MSG(p.placed && p.node == 0 && p.nodes == 2 && p.slices == 1, "%s", p.why);
  CHECK(cpus_are(&p.cpus, "0-15,32-47"));
  CHECK_MSG(strstr(p.why, "node 0 of 2") && strstr(p.why, "0-15,32-47"), "%s", p.why);
  /* a rank per GPU: two GPUs on each node, each a slice of whole cores */
  const char *four[] = {"0000:3b:00.0", "0000:5e:00.0", "0000:86:00.0", "0000:af:00.0"};
  const char *want[] = {"0-7,32-39", "8-15,40-47", "16-23,48-55", "24-31,56-63"};
  for (int i = 0; i < 4; i++) {
    fy_numa_plan_make(four[i], four, 4, &all, &p);
    CHECK_MSG(p.placed && p.node == i / 2 && p.slice == i % 2 && p.slices == 2, "%d: %s", i, p.why);
    CHECK_MSG(cpus_are(&p.cpus, want[i]), "GPU %s", four[i]);
  }
  CHECK_MSG(strstr(p.why, "slice 1 of 2"), "%s", p.why);
  /* the peers as CUDA writes them, named twice, ours absent: the same */
  const char *cuda[] = {"00000000:5E:00.0", "0000:5E:00.0", "0000:86:00.0", "not a gpu"};
  fy_numa_plan_make("0000:3b:00.0", cuda, 4, &all, &p);
  CHECK(p.placed && p.slice == 0 && p.slices == 2 && cpus_are(&p.cpus, "0-7,32-39"));
  /* the process allowed part of the node (a launcher bound it): that part,
   * not sliced again */
  fy_cpus_parse("2-5,34-37,20", &some);
  fy_numa_plan_make("0000:5e:00.0", four, 4, &some, &p);
  CHECK_MSG(p.placed && p.slices == 1 && cpus_are(&p.cpus, "2-5,34-37"), "%s", p.why);
  CHECK_MSG(strstr(p.why, "bound"), "%s", p.why);
  /* allowed none of the node's CPUs: left alone */
  fy_cpus_parse("16-31", &some);
  fy_numa_plan_make("0000:3b:00.0", NULL, 0, &some, &p);
  CHECK_MSG(!p.placed && p.node == 0 && strstr(p.why, "may not run"), "%s", p.why);
  /* the node from its cpulist where the device has no local_cpulist */
  fy_numa_plan_make("0000:86:00.0", NULL, 0, &all, &p);
  CHECK(p.placed && p.node == 1 && cpus_are(&p.cpus, "16-31,48-63"));
  /* node unknown (-1), no such device, no address: left alone */
  fy_numa_plan_make("0000:d8:00.0", four, 4, &all, &p);
  CHECK_MSG(!p.placed && p.node == -1 && strstr(p.why, "unknown"), "%s", p.why);
  fy_numa_plan_make("0000:99:00.0", NULL, 0, &all, &p);
  CHECK(!p.placed && p.node == -1);
  fy_numa_plan_make(NULL, NULL, 0, &all, &p);
  CHECK(!p.placed && p.node == -1 && fy_cpus_count(&p.cpus) == 0);
  fy_numa_plan_make("", NULL, 0, &all, &p);
  CHECK(!p.placed);

  /* no sibling information: slices of single CPUs in order */
  use_root("nosib");
  put("0-5\n", "devices/system/node/node0/cpulist");
  put("6-11\n", "devices/system/node/node1/cpulist");
  gpu("0000:01:00.0", "0x10de\n", "0x030200\n", "1\n", "6-11\n");
  gpu("0000:02:00.0", "0x10de\n", "0x030200\n", "1\n", "6-11\n");
  gpu("0000:03:00.0", "0x10de\n", "0x030200\n", "1\n", "6-11\n");
  const char *three[] = {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0"};
  const char *want3[] = {"6-7", "8-9", "10-11"};
  for (int i = 0; i < 3; i++) {
    fy_numa_plan_make(three[i], three, 3, &all, &p);
    CHECK_MSG(p.placed && p.slices == 3 && cpus_are(&p.cpus, want3[i]), "%s", p.why);
  }
  /* more GPUs than CPUs: one CPU each, in turn */
  put("6-7\n", "bus/pci/devices/0000:01:00.0/local_cpulist");
  put("6-7\n", "bus/pci/devices/0000:02:00.0/local_cpulist");
  put("6-7\n", "bus/pci/devices/0000:03:00.0/local_cpulist");
  const char *want1[] = {"6", "7", "6"};
  for (int i = 0; i < 3; i++) {
    fy_numa_plan_make(three[i], three, 3, &all, &p);
    CHECK_MSG(p.placed && cpus_are(&p.cpus, want1[i]), "%s", p.why);
  }
  /* a damaged cpulist: that node has no CPUs */
  put("6-x\n", "devices/system/node/node1/cpulist");
  CHECK(fy_numa_node_count() == 1);
  fy_numa_plan_make("0000:01:00.0", NULL, 0, &all, &p);
  CHECK_MSG(!p.placed && strstr(p.why, "one NUMA node"), "%s", p.why);

  /* one node: nothing to place */
  use_root("one");
  put("0-63\n", "devices/system/node/node0/cpulist");
  gpu("0000:3b:00.0", "0x10de\n", "0x030200\n", "0\n", "0-63\n");
  fy_numa_plan_make("0000:3b:00.0", NULL, 0, &all, &p);
  CHECK_MSG(!p.placed && p.node == 0 && p.nodes == 1 && strstr(p.why, "one NUMA node"), "%s",
            p.why);
  /* no sysfs at all */
  fy_tc_set(FY_TC_SYSFS_ROOT, "/nonexistent/ferry-sysfs");
  fy_numa_plan_make("0000:3b:00.0", NULL, 0, &all, &p);
  CHECK(!p.placed && p.node == -1 && p.nodes == 0);
  char ids[2][FY_PCI_ID_MAX];
  CHECK(fy_numa_gpus(ids, 2) == 0 && fy_numa_node_count() == 0);
  fy_tc_set(FY_TC_SYSFS_ROOT, NULL);
  /* the calling thread's CPUs */
  CHECK(fy_cpus_allowed(&some) == 0 && fy_cpus_count(&some) >= 1);
}

static const char *sample_dir(void) {
  const char *s = getenv("FERRY_SAMPLE");
  return s ? s : "data/sample";
}

/* CPU mode never places: ferry_loader_numa says so; the option's names */
static void loader_cpu(void) {
  ferry_loader_options o;
  ferry_loader_options_default(&o);
  CHECK(o.numa == FERRY_NUMA_AUTO);
  CHECK(ferry_loader_options_set(&o, "numa", "off") == FERRY_OK && o.numa == FERRY_NUMA_OFF);
  CHECK(ferry_loader_options_set(&o, "numa", "on") == FERRY_EINVAL);
  CHECK(ferry_loader_options_set(&o, "numa", "auto") == FERRY_OK && o.numa == FERRY_NUMA_AUTO);
  o.source = sample_dir();
  o.batch_size = 8;
  o.width = o.height = 32;
  o.workers = 2;
  ferry_loader *L = NULL;
  if (ferry_loader_open(&o, &L) != FERRY_OK) {
    SKIP("CPU loader: %s", ferry_last_error());
    return;
  }
  char why[256];
  CHECK(ferry_loader_numa(L, why, sizeof why) == -1);
  CHECK_MSG(strstr(why, "CPU mode"), "%s", why);
  CHECK(ferry_loader_numa(L, NULL, 0) == -1);
  CHECK(ferry_loader_numa(NULL, why, sizeof why) == -1);
  ferry_loader_close(L);
}

/* How many of this process's threads may run exactly on `want` (a cpulist). */
static int threads_on(const char *want) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[512], line[512];
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
      if (!strncmp(line, "Cpus_allowed_list:", 18)) {
        fy_cpus s, w;
        fy_cpus_parse(line + 18, &s);
        fy_cpus_parse(want, &w);
        n += fy_cpus_equal(&s, &w);
      }
    if (f)
      fclose(f);
  }
  if (d)
    closedir(d);
  return n;
}

/* With a GPU: its real PCI address in a made-up host of two nodes, the
 * GPU on the second; the process's CPUs split between them. */
static void loader_gpu(void) {
  fy_gpu_probe probe;
  fy_gpu_probe_run(&probe);
  if (!probe.built_with_cuda || probe.device_count == 0) {
    SKIP("placement of a GPU loader: %s",
         probe.built_with_cuda ? probe.error : "built without CUDA");
    return;
  }
  char id[64];
  CHECK(fy_gpu_pci_id(0, id, sizeof id) == FERRY_OK);
  char norm[FY_PCI_ID_MAX];
  CHECK_MSG(fy_pci_id_norm(id, norm) == 0, "%s", id);
  printf("cuda:0 at %s (doctor: %s, NUMA node %d, %d node(s))\n", id, probe.dev[0].pci,
         probe.dev[0].numa_node, probe.numa_nodes);
  CHECK(!strcmp(probe.dev[0].pci, norm));
  fy_cpus mine;
  fy_cpus_allowed(&mine);
  int n = fy_cpus_count(&mine);
  if (n < 2) {
    SKIP("placement of a GPU loader: one CPU allowed");
    return;
  }
  /* the first half of the allowed CPUs node 0, the rest node 1 */
  fy_cpus n0, n1;
  fy_cpus_clear(&n0);
  fy_cpus_clear(&n1);
  int k = 0;
  for (int c = fy_cpus_next(&mine, -1); c >= 0; c = fy_cpus_next(&mine, c), k++)
    fy_cpus_add(k < n / 2 ? &n0 : &n1, c);
  char t0[512], t1[512], line[600];
  fy_cpus_format(&n0, t0, sizeof t0);
  fy_cpus_format(&n1, t1, sizeof t1);
  use_root("gpu");
  snprintf(line, sizeof line, "%s\n", t0);
  put(line, "devices/system/node/node0/cpulist");
  snprintf(line, sizeof line, "%s\n", t1);
  put(line, "devices/system/node/node1/cpulist");
  gpu(norm, "0x10de\n", "0x030200\n", "1\n", line);

  ferry_loader_options o;
  ferry_loader_options_default(&o);
  o.source = sample_dir();
  o.batch_size = 8;
  o.width = o.height = 32;
  o.device = 0;
  o.workers = 3;
  ferry_loader *L = NULL;
  int rc = ferry_loader_open(&o, &L);
  CHECK_MSG(rc == FERRY_OK, "%s", ferry_last_error());
  if (rc == FERRY_OK) {
    char cpus[512];
    CHECK_MSG(ferry_loader_numa(L, cpus, sizeof cpus) == 1, "%s", cpus);
    CHECK_MSG(!strcmp(cpus, t1), "%s, expected %s", cpus, t1);
    /* the workers, and the engine's threads, on node 1's CPUs */
    int on = threads_on(t1);
    CHECK_MSG(on >= 3, "%d threads on %s", on, t1);
    /* the opener has its own CPUs back */
    fy_cpus now;
    fy_cpus_allowed(&now);
    CHECK(fy_cpus_equal(&now, &mine));
    /* and the batches are right */
    ferry_batch *b;
    CHECK(ferry_loader_start_epoch(L, 0) == FERRY_OK);
    int batches = 0;
    while ((rc = ferry_loader_next(L, &b)) == FERRY_OK) {
      batches++;
      ferry_loader_release(L, b);
    }
    CHECK_MSG(rc == FERRY_END && batches > 0, "rc %d after %d batches", rc, batches);
    ferry_loader_close(L);
  }
  /* workers = 0: one per placed CPU (less the GPU mode's allowance) */
  o.workers = 0;
  if (ferry_loader_open(&o, &L) == FERRY_OK) {
    int w = ferry_loader_num_workers(L), c = fy_cpus_count(&n1);
    CHECK_MSG(w <= c && w >= 1, "%d workers on %d CPUs", w, c);
    ferry_loader_close(L);
  }
  /* numa off: nothing placed */
  o.workers = 3;
  o.numa = FERRY_NUMA_OFF;
  if (ferry_loader_open(&o, &L) == FERRY_OK) {
    char why[256];
    CHECK(ferry_loader_numa(L, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "numa off"), "%s", why);
    ferry_loader_close(L);
  }
  /* the GPU's node unknown: nothing placed, the loader runs */
  o.numa = FERRY_NUMA_AUTO;
  put("-1\n", "bus/pci/devices/%s/numa_node", norm);
  if (ferry_loader_open(&o, &L) == FERRY_OK) {
    char why[512];
    CHECK(ferry_loader_numa(L, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "unknown"), "%s", why);
    ferry_loader_close(L);
  }
  fy_tc_set(FY_TC_SYSFS_ROOT, NULL);
}

/* ferry_default_threads: the CPUs this process may run on, shared among
 * LOCAL_WORLD_SIZE processes (torchrun); a bad value counts as 1. */
static void default_threads(void) {
  fy_cpus allowed;
  CHECK(fy_cpus_allowed(&allowed) == 0);
  int cores = fy_cpus_count(&allowed);
  CHECK(cores >= 1);
  unsetenv("LOCAL_WORLD_SIZE");
  CHECK(fy_local_world_size() == 1 && ferry_default_threads() == cores);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  CHECK(fy_local_world_size() == 2 && ferry_default_threads() == (cores / 2 > 0 ? cores / 2 : 1));
  setenv("LOCAL_WORLD_SIZE", "100000", 1); /* past 4096: not a number of processes */
  CHECK(fy_local_world_size() == 1);
  setenv("LOCAL_WORLD_SIZE", "4096", 1); /* more processes than cores: still 1 each */
  CHECK(fy_local_world_size() == 4096 && ferry_default_threads() == 1);
  const char *bad[] = {"", "x", "2x", "0", "-3"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("LOCAL_WORLD_SIZE", bad[i], 1);
    CHECK(fy_local_world_size() == 1 && ferry_default_threads() == cores);
  }
  unsetenv("LOCAL_WORLD_SIZE");
  printf("  default threads: %d (this process's CPUs), shared by LOCAL_WORLD_SIZE\n", cores);
}

int main(void) {
  default_threads();
  cpulists();
  pci_ids();
  sysfs_reads();
  plans();
  loader_cpu();
  loader_gpu();
  remove_roots();
  return check_done();
}
