// Thread-block clusters (sm_90+): the CTA's rank and the cluster's size, the cluster-wide barrier,
// and loads from a peer CTA's shared memory (distributed shared memory). A launch without cluster
// dimensions is a cluster of one CTA: rank 0 of 1.
#pragma once
#include "humming/arith/common.cuh"

namespace humming {

HM_DEVICE u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

HM_DEVICE u32 cluster_size() {
  u32 n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}

// Every thread of the cluster arrives (exited threads count as arrived) before any passes the
// wait; shared-memory writes before the arrive are visible to the cluster after the wait.
HM_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
HM_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }

// The shared::cluster address of shared-memory address `addr` (this CTA's) in CTA `rank`.
HM_DEVICE u32 peer_smem(u32 addr, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

HM_DEVICE float ld_peer_f32(u32 cluster_addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(cluster_addr) : "memory");
  return v;
}

HM_DEVICE float4 ld_peer_f4(u32 cluster_addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_addr)
               : "memory");
  return v;
}

}  // namespace humming
