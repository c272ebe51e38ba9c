/* numa.h — where a GPU sits among the host's NUMA nodes, read from sysfs,
 * and the CPU-set arithmetic of placing a loader's threads near it
 * (numa.c). Plain C with no CUDA: tests/unit/test_numa.c runs it on a
 * made-up sysfs tree.
 *
 * FERRY_SYSFS_ROOT (for tests) prefixes every sysfs path read here: a
 * folder holding sys/bus/pci/devices/..., sys/devices/system/node/... and
 * sys/devices/system/cpu/.... Unset or empty: the real /sys. */
#ifndef FY_NUMA_H
#define FY_NUMA_H

#include <stddef.h>
#include <stdint.h>

/* A set of CPU numbers 0 .. FY_CPUS_MAX - 1 (cpu_set_t's default size). */
#define FY_CPUS_MAX 1024
typedef struct fy_cpus {
  uint64_t w[FY_CPUS_MAX / 64];
} fy_cpus;

void fy_cpus_clear(fy_cpus *s);
void fy_cpus_add(fy_cpus *s, int cpu); /* out of range: ignored */
int fy_cpus_has(const fy_cpus *s, int cpu);
int fy_cpus_count(const fy_cpus *s);
int fy_cpus_equal(const fy_cpus *a, const fy_cpus *b);
void fy_cpus_and(fy_cpus *a, const fy_cpus *b); /* a &= b */
/* The CPU after `cpu` in s (-1 to start), or -1 at the end. */
int fy_cpus_next(const fy_cpus *s, int cpu);

/* Linux's cpulist syntax, as sysfs writes it: "0-7,16-23", "3", "" or a
 * lone newline for none; blanks around items and a trailing newline are
 * accepted. 0, or -1 with s cleared: anything else (a range backwards, a
 * stray character, a CPU >= FY_CPUS_MAX). */
int fy_cpus_parse(const char *text, fy_cpus *s);
/* s as a cpulist ("0-7,16-23"; "" when empty), cut with "..." when it does
 * not fit in cap bytes. */
void fy_cpus_format(const fy_cpus *s, char *buf, size_t cap);

/* The CPUs the calling thread may run on (sched_getaffinity); 0, or -1
 * (s cleared) when it cannot tell. */
int fy_cpus_allowed(fy_cpus *s);

/* The processes of this node that share its cores and GPUs: torchrun's
 * LOCAL_WORLD_SIZE, 1 when unset, empty or not a number in 1..4096. */
int fy_local_world_size(void);
/* The default number of threads of a job of this process: the CPUs it may
 * run on (sched_getaffinity; else the online ones), divided among the
 * fy_local_world_size() processes of the node; at least 1. */
int fy_share_cores(void);

/* A PCI address as sysfs names its folder ("0000:3b:00.0", lower case, a
 * domain of at least 4 digits) from CUDA's "0000:3B:00.0" or nvidia-smi's
 * "00000000:3B:00.0". 0, or -1 when id is not one. */
#define FY_PCI_ID_MAX 32
int fy_pci_id_norm(const char *id, char out[FY_PCI_ID_MAX]);

/* The NUMA node of a PCI device (sys/bus/pci/devices/ID/numa_node), or -1
 * when unknown (no such file, or the platform says -1). */
int fy_numa_pci_node(const char *pci_id);
/* How many NUMA nodes have CPUs (sys/devices/system/node/nodeN/cpulist not
 * empty); 0 when sysfs says nothing. */
int fy_numa_node_count(void);
/* The NVIDIA GPUs sysfs lists (PCI vendor 0x10de, class display or 3D
 * controller), their normalised addresses sorted into ids[0..max). Returns
 * how many there are (more than max: only max written). */
int fy_numa_gpus(char ids[][FY_PCI_ID_MAX], int max);

/* Where a loader's threads go for the GPU at `pci_id`. */
typedef struct fy_numa_plan {
  int placed;        /* 1: the threads go to `cpus` */
  int node;          /* the GPU's NUMA node; -1 unknown */
  int nodes;         /* NUMA nodes with CPUs */
  int slice, slices; /* this GPU's share of the node's CPUs (0 of 1: all of them) */
  fy_cpus cpus;
  char why[512]; /* placed: "GPU 0000:3b:00.0 on NUMA node 1 of 2: CPUs 16-23 (...)";
                    else why not */
} fy_numa_plan;

/* The plan for the GPU at pci_id, whose process may run on `allowed`:
 *  - unplaced when the GPU's node is unknown (-1, no sysfs entry), when
 *    the host has fewer than two NUMA nodes with CPUs, or when `allowed`
 *    holds none of the node's CPUs;
 *  - the node's CPUs (the device's local_cpulist, else the node's
 *    cpulist) that `allowed` holds;
 *  - shared out between the GPUs of `peers` (the PCI addresses of the GPUs
 *    whose processes run beside this one: one rank per GPU; pci_id is
 *    counted among them even when absent) that sit on the same node: each
 *    gets a contiguous slice in the order of their addresses, whole cores
 *    (the hyperthreads of a core together: cpuN/topology/
 *    thread_siblings_list) where there are as many cores as GPUs. When
 *    `allowed` holds only part of the node's CPUs (a launcher bound the
 *    process already) that part is taken whole, never sliced again.
 * Never fails: what it could not read leaves the threads unplaced, and
 * `why` says so. */
void fy_numa_plan_make(const char *pci_id, const char *const *peers, int npeers,
                       const fy_cpus *allowed, fy_numa_plan *plan);

#endif
