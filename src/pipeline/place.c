/* place.c — a GPU loader's threads near its GPU on a host of several NUMA
 * nodes (the `numa` option): which CPUs (core/numa.c reads sysfs and does
 * the arithmetic), the attributes its threads are created with, and the
 * opening thread bound there while the GPU side allocates its pinned
 * staging, so that those pages land on the GPU's node. CPU mode and a
 * host of one node leave every thread where the scheduler puts it. */
#include "pipeline/loader_int.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GPUs whose processes share this host with ours, one rank per GPU
 * (torchrun: LOCAL_WORLD_SIZE processes, rank r on device r): with several
 * visible devices, devices 0 .. LOCAL_WORLD_SIZE - 1; with one (each
 * process given its own by CUDA_VISIBLE_DEVICES), every NVIDIA GPU sysfs
 * lists. None when this process is alone (LOCAL_WORLD_SIZE unset or 1). */
static int peer_gpus(char ids[][FY_PCI_ID_MAX], int max) {
  int local = fy_local_world_size();
  if (local <= 1)
    return 0;
  int count = fy_gpu_count(), n = 0;
  if (count < 2) {
    n = fy_numa_gpus(ids, max);
    return n < max ? n : max;
  }
  for (int d = 0; d < count && d < local && n < max; d++) {
    if (fy_gpu_pci_id(d, ids[n], FY_PCI_ID_MAX) == FERRY_OK)
      n++;
    else
      fy_error_clear();
  }
  return n;
}

void fy_place_begin(ferry_loader *L) {
  fy_numa_plan *p = &L->numa;
  memset(p, 0, sizeof *p);
  p->node = -1;
  if (L->o.device < 0) {
    snprintf(p->why, sizeof p->why, "CPU mode: threads not placed");
    return;
  }
  if (L->o.numa == FERRY_NUMA_OFF) {
    snprintf(p->why, sizeof p->why, "numa off: threads not placed");
    return;
  }
  char id[64];
  fy_cpus allowed;
  if (fy_gpu_pci_id(L->o.device, id, (int)sizeof id) != FERRY_OK) {
    snprintf(p->why, sizeof p->why, "threads not placed: %s", ferry_last_error());
    fy_error_clear();
  } else if (fy_cpus_allowed(&allowed) < 0) {
    snprintf(p->why, sizeof p->why, "threads not placed: sched_getaffinity failed");
  } else {
    char peers[64][FY_PCI_ID_MAX];
    const char *list[64];
    int n = peer_gpus(peers, 64);
    for (int i = 0; i < n; i++)
      list[i] = peers[i];
    fy_numa_plan_make(id, list, n, &allowed, p);
  }
  fy_log(FERRY_LOG_DEBUG, "loader threads: %s", p->why);
  if (!p->placed)
    return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = fy_cpus_next(&p->cpus, -1); c >= 0 && c < CPU_SETSIZE; c = fy_cpus_next(&p->cpus, c))
    CPU_SET(c, &set);
  if (pthread_attr_init(&L->place_attr) != 0) {
    p->placed = 0;
    return;
  }
  L->place_attr_init = 1;
  if (pthread_attr_setaffinity_np(&L->place_attr, sizeof set, &set) != 0) {
    p->placed = 0;
    return;
  }
  /* the opening thread, while the GPU side allocates: pinned pages go to
   * the node of the CPU that faults them in */
  CPU_ZERO(&L->caller_cpus);
  if (pthread_getaffinity_np(pthread_self(), sizeof L->caller_cpus, &L->caller_cpus) == 0 &&
      pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0)
    L->caller_bound = 1;
}

void fy_place_end(ferry_loader *L) {
  if (L->caller_bound)
    pthread_setaffinity_np(pthread_self(), sizeof L->caller_cpus, &L->caller_cpus);
  L->caller_bound = 0;
}

const pthread_attr_t *fy_place_attr(const ferry_loader *L) {
  return L->numa.placed ? &L->place_attr : NULL;
}

void fy_place_free(ferry_loader *L) {
  fy_place_end(L);
  if (L->place_attr_init)
    pthread_attr_destroy(&L->place_attr);
  L->place_attr_init = 0;
}

int ferry_loader_numa(const ferry_loader *L, char *cpus, size_t cap) {
  if (!L)
    return -1;
  if (cpus && cap) {
    if (L->numa.placed)
      fy_cpus_format(&L->numa.cpus, cpus, cap);
    else
      snprintf(cpus, cap, "%s", L->numa.why);
  }
  return L->numa.placed ? L->numa.node : -1;
}
