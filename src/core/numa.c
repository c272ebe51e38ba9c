/* numa.c — a GPU's NUMA node and its CPUs from sysfs, and which of them a
 * loader's threads take (numa.h). Nothing here fails: a file that is
 * missing or says something unexpected leaves the threads where the
 * scheduler puts them. */
#include "core/numa.h"

#include "core/internal.h"
#include "core/testctl.h"
#include "ferry.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ CPU sets */

void fy_cpus_clear(fy_cpus *s) { memset(s, 0, sizeof *s); }

void fy_cpus_add(fy_cpus *s, int cpu) {
  if (cpu >= 0 && cpu < FY_CPUS_MAX)
    s->w[cpu / 64] |= (uint64_t)1 << (cpu % 64);
}

int fy_cpus_has(const fy_cpus *s, int cpu) {
  return cpu >= 0 && cpu < FY_CPUS_MAX && (s->w[cpu / 64] >> (cpu % 64) & 1);
}

int fy_cpus_count(const fy_cpus *s) {
  int n = 0;
  for (int i = 0; i < FY_CPUS_MAX / 64; i++)
    n += __builtin_popcountll(s->w[i]);
  return n;
}

int fy_cpus_equal(const fy_cpus *a, const fy_cpus *b) { return !memcmp(a, b, sizeof *a); }

void fy_cpus_and(fy_cpus *a, const fy_cpus *b) {
  for (int i = 0; i < FY_CPUS_MAX / 64; i++)
    a->w[i] &= b->w[i];
}

int fy_cpus_next(const fy_cpus *s, int cpu) {
  for (int c = cpu < 0 ? 0 : cpu + 1; c < FY_CPUS_MAX; c++) {
    uint64_t rest = s->w[c / 64] >> (c % 64);
    if (!rest) {
      c = (c / 64) * 64 + 63; /* the rest of this word is empty */
      continue;
    }
    return c + __builtin_ctzll(rest);
  }
  return -1;
}

/* A decimal CPU number at *p (blanks first), advanced past it; -1 when
 * there is none or it is out of range. */
static int cpu_number(const char **p) {
  const char *s = *p;
  while (*s == ' ' || *s == '\t')
    s++;
  if (!isdigit((unsigned char)*s))
    return -1;
  long v = 0;
  while (isdigit((unsigned char)*s)) {
    v = v * 10 + (*s++ - '0');
    if (v >= FY_CPUS_MAX)
      return -1;
  }
  while (*s == ' ' || *s == '\t')
    s++;
  *p = s;
  return (int)v;
}

int fy_cpus_parse(const char *text, fy_cpus *s) {
  fy_cpus_clear(s);
  if (!text)
    return -1;
  const char *p = text;
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p == '\0' || (*p == '\n' && p[1] == '\0'))
    return 0; /* none */
  for (;;) {
    int a = cpu_number(&p), b = a;
    if (a < 0)
      break;
    if (*p == '-') {
      p++;
      b = cpu_number(&p);
      if (b < a)
        break;
    }
    for (int c = a; c <= b; c++)
      fy_cpus_add(s, c);
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p == '\n')
      p++;
    if (*p == '\0')
      return 0;
    break;
  }
  fy_cpus_clear(s);
  return -1;
}

void fy_cpus_format(const fy_cpus *s, char *buf, size_t cap) {
  if (!cap)
    return;
  buf[0] = '\0';
  size_t len = 0;
  for (int c = fy_cpus_next(s, -1); c >= 0;) {
    int e = c;
    while (fy_cpus_has(s, e + 1))
      e++;
    char item[32];
    int n = e > c ? snprintf(item, sizeof item, "%s%d-%d", len ? "," : "", c, e)
                  : snprintf(item, sizeof item, "%s%d", len ? "," : "", c);
    if (len + (size_t)n + 1 > cap) {
      if (cap >= 4)
        memcpy(buf + (len + 4 <= cap ? len : cap - 4), "...", 4);
      return;
    }
    memcpy(buf + len, item, (size_t)n + 1);
    len += (size_t)n;
    c = fy_cpus_next(s, e);
  }
}

int fy_cpus_allowed(fy_cpus *s) {
  fy_cpus_clear(s);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return -1;
  for (int c = 0; c < FY_CPUS_MAX && c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set))
      fy_cpus_add(s, c);
  return 0;
}

int fy_local_world_size(void) {
  const char *e = getenv("LOCAL_WORLD_SIZE");
  if (!e || !*e)
    return 1;
  char *end;
  errno = 0;
  long v = strtol(e, &end, 10);
  return errno || *end || v < 1 || v > 4096 ? 1 : (int)v;
}

int fy_share_cores(void) {
  fy_cpus s;
  int cores = fy_cpus_allowed(&s) == 0 ? fy_cpus_count(&s) : 0;
  if (cores <= 0)
    cores = fy_num_cores();
  int n = cores / fy_local_world_size();
  return n > 0 ? n : 1;
}

int ferry_default_threads(void) { return fy_share_cores(); }

/* ---------------------------------------------------------------- sysfs */

/* The first cap - 1 bytes of the sysfs file at ROOT/sys/REL, NUL-ended;
 * -1 when it cannot be read. */
static int read_sys(const char *rel, char *buf, size_t cap) {
  const char *root = fy_tc_text(FY_TC_SYSFS_ROOT); /* FERRY_SYSFS_ROOT */
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/sys/%s", root ? root : "", rel);
  if (n < 0 || (size_t)n >= sizeof path)
    return -1;
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t got = fread(buf, 1, cap - 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad)
    return -1;
  buf[got] = '\0';
  return (int)got;
}

/* A cpulist file under sys/; 0, or -1 when missing or malformed. */
static int read_cpulist(const char *rel, fy_cpus *s) {
  char text[8192];
  fy_cpus_clear(s);
  return read_sys(rel, text, sizeof text) < 0 ? -1 : fy_cpus_parse(text, s);
}

/* An integer file ("1\n", "0x10de\n", "-1\n"); 0, or -1. */
static int read_long(const char *rel, long *v) {
  char text[64], *end;
  if (read_sys(rel, text, sizeof text) <= 0)
    return -1;
  errno = 0;
  *v = strtol(text, &end, 0);
  while (*end == '\n' || *end == ' ')
    end++;
  return errno || end == text || *end ? -1 : 0;
}

static DIR *open_sys_dir(const char *rel) {
  const char *root = fy_tc_text(FY_TC_SYSFS_ROOT); /* FERRY_SYSFS_ROOT */
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/sys/%s", root ? root : "", rel);
  return n < 0 || (size_t)n >= sizeof path ? NULL : opendir(path);
}

/* Hex digits at *p (1 .. most of them), advanced past them; -1 when there
 * are none or too many. */
static long hex_field(const char **p, int most) {
  long v = 0;
  int n = 0;
  for (; isxdigit((unsigned char)**p); (*p)++, n++) {
    if (n == most)
      return -1;
    int c = tolower((unsigned char)**p);
    v = v * 16 + (isdigit(c) ? c - '0' : c - 'a' + 10);
  }
  return n ? v : -1;
}

int fy_pci_id_norm(const char *id, char out[FY_PCI_ID_MAX]) {
  out[0] = '\0';
  if (!id)
    return -1;
  const char *p = id;
  long dom = hex_field(&p, 8), bus = -1, dev = -1, fn = -1;
  if (dom >= 0 && *p++ == ':')
    bus = hex_field(&p, 2);
  if (bus >= 0 && *p++ == ':')
    dev = hex_field(&p, 2);
  if (dev >= 0 && *p++ == '.')
    fn = hex_field(&p, 1);
  if (fn < 0 || *p || dev > 0x1f || fn > 7)
    return -1;
  snprintf(out, FY_PCI_ID_MAX, "%04x:%02x:%02x.%x", (unsigned)(dom & 0xffffffff),
           (unsigned)(bus & 0xff), (unsigned)(dev & 0x1f), (unsigned)(fn & 7));
  return 0;
}

int fy_numa_pci_node(const char *pci_id) {
  char id[FY_PCI_ID_MAX], rel[128];
  long v;
  if (fy_pci_id_norm(pci_id, id) < 0)
    return -1;
  snprintf(rel, sizeof rel, "bus/pci/devices/%s/numa_node", id);
  return read_long(rel, &v) < 0 || v < 0 || v > 4095 ? -1 : (int)v;
}

/* The number N of a "nodeN" name, or -1. */
static int node_number(const char *name) {
  if (strncmp(name, "node", 4) || !isdigit((unsigned char)name[4]))
    return -1;
  char *end;
  long v = strtol(name + 4, &end, 10);
  return *end || v > 4095 ? -1 : (int)v;
}

int fy_numa_node_count(void) {
  DIR *d = open_sys_dir("devices/system/node");
  if (!d)
    return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    int node = node_number(e->d_name);
    char rel[64];
    fy_cpus s;
    if (node < 0)
      continue;
    snprintf(rel, sizeof rel, "devices/system/node/node%d/cpulist", node);
    if (read_cpulist(rel, &s) == 0 && fy_cpus_count(&s) > 0)
      n++;
  }
  closedir(d);
  return n;
}

static int cmp_id(const void *a, const void *b) { return strcmp(a, b); }

int fy_numa_gpus(char ids[][FY_PCI_ID_MAX], int max) {
  DIR *d = open_sys_dir("bus/pci/devices");
  if (!d)
    return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    char id[FY_PCI_ID_MAX], rel[320];
    long vendor, cls;
    if (e->d_name[0] == '.' || fy_pci_id_norm(e->d_name, id) < 0)
      continue;
    snprintf(rel, sizeof rel, "bus/pci/devices/%s/vendor", e->d_name);
    if (read_long(rel, &vendor) < 0 || vendor != 0x10de)
      continue;
    snprintf(rel, sizeof rel, "bus/pci/devices/%s/class", e->d_name);
    /* 0x0300xx: VGA-compatible, 0x0302xx: 3D controller (the data-centre GPUs) */
    if (read_long(rel, &cls) < 0 || ((cls >> 8) != 0x0300 && (cls >> 8) != 0x0302))
      continue;
    if (n < max)
      memcpy(ids[n], id, FY_PCI_ID_MAX);
    n++;
  }
  closedir(d);
  qsort(ids, (size_t)(n < max ? n : max), FY_PCI_ID_MAX, cmp_id);
  return n;
}

/* ----------------------------------------------------------------- plan */

/* s's CPUs in an order that keeps each core's hyperthreads together (a
 * CPU, then its siblings in s): order[0..n), and where each core starts,
 * core_at[0..cores], core_at[cores] == n. */
static int order_by_core(const fy_cpus *s, int *order, int *core_at, int *cores) {
  fy_cpus taken;
  fy_cpus_clear(&taken);
  int n = 0, k = 0;
  for (int c = fy_cpus_next(s, -1); c >= 0; c = fy_cpus_next(s, c)) {
    if (fy_cpus_has(&taken, c))
      continue;
    core_at[k++] = n;
    order[n++] = c;
    fy_cpus_add(&taken, c);
    char rel[96];
    fy_cpus sib;
    snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
    if (read_cpulist(rel, &sib) < 0)
      continue; /* unknown: the CPU alone */
    for (int t = fy_cpus_next(&sib, -1); t >= 0; t = fy_cpus_next(&sib, t))
      if (fy_cpus_has(s, t) && !fy_cpus_has(&taken, t)) {
        order[n++] = t;
        fy_cpus_add(&taken, t);
      }
  }
  core_at[k] = n;
  *cores = k;
  return n;
}

/* Slice `slice` of `slices` of s, into out: whole cores when there are at
 * least as many cores as slices, else single CPUs (one each, in turn,
 * where even those are fewer). */
static void slice_cpus(const fy_cpus *s, int slice, int slices, fy_cpus *out) {
  int order[FY_CPUS_MAX], core_at[FY_CPUS_MAX + 1];
  int cores, n = order_by_core(s, order, core_at, &cores);
  fy_cpus_clear(out);
  if (n == 0)
    return;
  int a, b;
  if (cores >= slices) {
    a = core_at[(int64_t)slice * cores / slices];
    b = core_at[(int64_t)(slice + 1) * cores / slices];
  } else if (n >= slices) {
    a = (int)((int64_t)slice * n / slices);
    b = (int)((int64_t)(slice + 1) * n / slices);
  } else {
    a = slice % n;
    b = a + 1;
  }
  for (int i = a; i < b; i++)
    fy_cpus_add(out, order[i]);
}

void fy_numa_plan_make(const char *pci_id, const char *const *peers, int npeers,
                       const fy_cpus *allowed, fy_numa_plan *p) {
  memset(p, 0, sizeof *p);
  p->node = -1;
  p->slices = 1;
  char id[FY_PCI_ID_MAX], rel[160];
  if (fy_pci_id_norm(pci_id, id) < 0) {
    snprintf(p->why, sizeof p->why, "the GPU's PCI address is unknown (%s)",
             pci_id ? pci_id : "none");
    return;
  }
  p->node = fy_numa_pci_node(id);
  p->nodes = fy_numa_node_count();
  if (p->node < 0) {
    snprintf(p->why, sizeof p->why, "GPU %s: its NUMA node is unknown (sysfs numa_node)", id);
    return;
  }
  if (p->nodes < 2) {
    snprintf(p->why, sizeof p->why, "GPU %s: the host has %s NUMA node with CPUs", id,
             p->nodes ? "one" : "no known");
    return;
  }
  fy_cpus node;
  snprintf(rel, sizeof rel, "bus/pci/devices/%s/local_cpulist", id);
  if (read_cpulist(rel, &node) < 0 || !fy_cpus_count(&node)) {
    snprintf(rel, sizeof rel, "devices/system/node/node%d/cpulist", p->node);
    if (read_cpulist(rel, &node) < 0 || !fy_cpus_count(&node)) {
      snprintf(p->why, sizeof p->why, "GPU %s: NUMA node %d lists no CPUs", id, p->node);
      return;
    }
  }
  fy_cpus avail = node;
  fy_cpus_and(&avail, allowed);
  char text[96];
  if (!fy_cpus_count(&avail)) {
    fy_cpus_format(&node, text, sizeof text);
    snprintf(p->why, sizeof p->why,
             "GPU %s on NUMA node %d: this process may not run on its CPUs (%s)", id, p->node,
             text);
    return;
  }
  /* the GPUs beside ours on its node, ours counted once */
  int bound = !fy_cpus_equal(&avail, &node);
  for (int i = 0; !bound && peers && i < npeers; i++) {
    char other[FY_PCI_ID_MAX];
    if (fy_pci_id_norm(peers[i], other) < 0 || !strcmp(other, id))
      continue;
    int dup = 0; /* a peer named twice counts once */
    for (int j = 0; j < i && !dup; j++) {
      char seen[FY_PCI_ID_MAX];
      dup = fy_pci_id_norm(peers[j], seen) == 0 && !strcmp(seen, other);
    }
    if (dup || fy_numa_pci_node(other) != p->node)
      continue;
    p->slices++;
    p->slice += strcmp(other, id) < 0;
  }
  slice_cpus(&avail, p->slice, p->slices, &p->cpus);
  p->placed = 1;
  char cpus[96];
  fy_cpus_format(&p->cpus, cpus, sizeof cpus);
  fy_cpus_format(&avail, text, sizeof text);
  if (bound)
    snprintf(p->why, sizeof p->why,
             "GPU %s on NUMA node %d of %d: CPUs %s (the part of the node this process is "
             "bound to)",
             id, p->node, p->nodes, cpus);
  else if (p->slices > 1)
    snprintf(p->why, sizeof p->why,
             "GPU %s on NUMA node %d of %d: CPUs %s (slice %d of %d of the node's %s, one per "
             "GPU there)",
             id, p->node, p->nodes, cpus, p->slice, p->slices, text);
  else
    snprintf(p->why, sizeof p->why, "GPU %s on NUMA node %d of %d: CPUs %s", id, p->node, p->nodes,
             cpus);
}
