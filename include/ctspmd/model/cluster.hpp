#ifndef CTSPMD_MODEL_CLUSTER_HPP
#define CTSPMD_MODEL_CLUSTER_HPP
/// \file The devices a step runs on, and every seconds formula: what owns "the time of B bytes
/// over mesh dim m" and "the time of an operator's work on a device".
///
/// A `cluster` gives, per mesh dim, its links (the bytes a device sends a second, and a
/// collective's latency), the device's peak FLOP/s and its memory's bandwidth, with the fractions
/// of peak that matrix compute, memory traffic and collectives reach. `count` collectives (or
/// point-to-point sends) moving B bytes a device on mesh dim m take count x latency + B /
/// (bandwidth x communication efficiency) (`seconds`). F FLOPs take F / (peak x compute
/// efficiency) (`compute_seconds`); a step's kernels (`work_profile`: FLOPs and the bytes read and
/// written, by arithmetic intensity) take, by a roofline, the larger of that and bytes / (memory
/// bandwidth x memory efficiency) for each intensity (`work_seconds`), so that layer norms,
/// element-wise operators, data movement and the optimizer go at the memory's pace and large
/// matmuls at compute's. A cluster without a memory bandwidth (0) times FLOPs alone. The cost of
/// a step, the pipeline report and the layout search time everything through these.
///
/// **Catalogue.** `cluster_of(system, mesh)` lays a mesh on nodes of a `system`: the mesh's last
/// dims, as long as their product fits in a node, use the node's links (NVLink, Infinity Fabric),
/// the others the network (per device: the node's NICs' bandwidth shared by its devices). The
/// systems are the vendors' published figures (dense bf16 peak, memory bandwidth and capacity,
/// per-direction intra-node bandwidth per device, NICs of the vendors' reference nodes: DGX
/// A100 8 x 200 Gb/s, DGX H100 / H200 / B200 and MI300X platforms 8 x 400 Gb/s), with latencies of
/// 5 us inside a node and 10 us across nodes, and efficiencies measured by public
/// micro-benchmarks of each device (see each system's comment): `a100_system`, `h100_system`,
/// `h200_system`, `b200_system`, `mi300x_system`; `a100_cluster(mesh)`, `h100_cluster(mesh)`, ... lay
/// a mesh on them. `system_named("h100")` finds one by name.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/error.hpp>
#include <ctspmd/core/saturating.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd::model {

/// The work of a step's kernels, for a roofline (`cluster::work_seconds`): each operator's FLOPs
/// and the bytes it reads and writes in device memory (its rule's traits, rules/kit/cost_traits.hpp),
/// added up by arithmetic intensity. Bucket b holds the operators whose FLOPs per byte are in
/// [2^(b-1), 2^b) (bucket 0: below 1, data movement among them; the last: the rest), so that
/// operators of one bucket are all compute bound or all memory bound on a device within a
/// factor of 2 of its ridge point.
struct work_profile {
  static constexpr std::size_t buckets = 16;
  std::array<std::int64_t, buckets> flops{}, bytes{};

  /// Adds an operator of `f` FLOPs reading and writing `b` bytes, `times` times.
  constexpr void add(std::int64_t f, std::int64_t b, std::int64_t times = 1) {
    if (f == 0 && b == 0) return;
    std::size_t k = 0;
    while (k + 1 < buckets && (b == 0 || (f >> k) >= b)) ++k;  // f / b >= 2^k
    flops[k] = ctspmd::detail::saturating_sum(flops[k], ctspmd::detail::saturating_product(f, times));
    bytes[k] = ctspmd::detail::saturating_sum(bytes[k], ctspmd::detail::saturating_product(b, times));
  }
  constexpr void add(const work_profile& w) {
    for (std::size_t k = 0; k < buckets; ++k) {
      flops[k] = ctspmd::detail::saturating_sum(flops[k], w.flops[k]);
      bytes[k] = ctspmd::detail::saturating_sum(bytes[k], w.bytes[k]);
    }
  }
};


/// The links of one mesh dim: the bytes a device sends a second, and a collective's latency.
struct link {
  double bandwidth = 0;  ///< bytes per second per device, one direction
  double latency = 0;    ///< seconds
};

/// The devices a step runs on: per mesh dim its links, and the device's peak FLOP/s.
struct cluster {
  std::array<link, max_mesh_ndim> links{};
  double peak_flops = 0;
  double compute_efficiency = 1;        ///< the fraction of peak a device's compute reaches
  double communication_efficiency = 1;  ///< the fraction of bandwidth collectives reach
  double memory_bandwidth = 0;          ///< the device memory's bytes a second; 0: time FLOPs alone
  double memory_efficiency = 1;         ///< the fraction of it streaming kernels reach
  double memory_capacity = 0;           ///< the device memory's bytes; 0: not given

  /// Raises `invalid_argument` (under `who`) unless the cluster can time a step: a positive peak
  /// and efficiencies in (0, 1].
  constexpr void check(std::string_view who = "cluster") const {
    if (!(peak_flops > 0)) raise(make_error(error_kind::invalid_argument, who, "a device's peak FLOP/s must be positive"));
    if (!(compute_efficiency > 0 && compute_efficiency <= 1) ||
        !(communication_efficiency > 0 && communication_efficiency <= 1) ||
        !(memory_efficiency > 0 && memory_efficiency <= 1))
      raise(make_error(error_kind::invalid_argument, who, "efficiencies are fractions in (0, 1]"));
    if (!(memory_bandwidth >= 0 && memory_bandwidth <= std::numeric_limits<double>::max()) ||
        !(memory_capacity >= 0 && memory_capacity <= std::numeric_limits<double>::max()))
      raise(make_error(error_kind::invalid_argument, who,
                       "a memory bandwidth or capacity is finite and not negative (0: not given)"));
  }
  /// True if mesh dim m's link can carry data (a positive bandwidth, a latency not negative).
  constexpr bool can_send(std::int64_t m) const {
    const link& l = links[static_cast<std::size_t>(m)];
    return l.bandwidth > 0 && l.latency >= 0;
  }
  /// The seconds `count` collectives (or sends) moving `bytes` a device (all of them) take on
  /// mesh dim m; raises (under `who`) if its link cannot carry data.
  constexpr double seconds(std::int64_t m, double count, double bytes, std::string_view who = "cluster") const {
    if (m < 0 || m >= static_cast<std::int64_t>(max_mesh_ndim))
      raise(make_error(error_kind::invalid_argument, who, "mesh dim {} is out of range", m));
    if (!can_send(m))
      raise(make_error(error_kind::invalid_argument, who,
                       "mesh dim {} sends collectives, but its link has no bandwidth (or a negative latency)", m));
    const link& l = links[static_cast<std::size_t>(m)];
    return finite(count * l.latency + bytes / (l.bandwidth * communication_efficiency), who);
  }
  /// The seconds a device takes for `flops`.
  constexpr double compute_seconds(double flops, std::string_view who = "cluster") const {
    return finite(flops / (peak_flops * compute_efficiency), who);
  }
  /// The seconds a device takes for a kernel of `flops` reading and writing `bytes`: the
  /// roofline with a memory bandwidth, else the FLOPs alone.
  constexpr double kernel_seconds(double flops, double bytes, std::string_view who = "cluster") const {
    if (!(memory_bandwidth > 0)) return compute_seconds(flops, who);
    const double compute = flops / (peak_flops * compute_efficiency), memory = bytes / (memory_bandwidth * memory_efficiency);
    return finite(compute > memory ? compute : memory, who);
  }
  /// The seconds a device takes for the kernels of `w`: each intensity's by `kernel_seconds`.
  constexpr double work_seconds(const work_profile& w, std::string_view who = "cluster") const {
    if (!(memory_bandwidth > 0)) {  // the FLOPs' sum, exactly
      std::int64_t flops = 0;
      for (auto f : w.flops) flops = ctspmd::detail::saturating_sum(flops, f);
      return compute_seconds(static_cast<double>(flops), who);
    }
    double s = 0;
    for (std::size_t k = 0; k < work_profile::buckets; ++k)
      s += kernel_seconds(static_cast<double>(w.flops[k]), static_cast<double>(w.bytes[k]), who);
    return finite(s, who);
  }

 private:
  static constexpr double finite(double seconds, std::string_view who) {
    if (!(seconds <= std::numeric_limits<double>::max()))
      raise(make_error(error_kind::invalid_argument, who,
                       "the step's time overflows a double: a peak FLOP/s, bandwidth or efficiency is too small"));
    return seconds;
  }
};

/// A system of nodes: one device's figures, a node's devices and links (see the file comment).
struct system {
  std::string_view name;
  double peak_flops = 0;        ///< dense bf16 FLOP/s of a device
  double memory_bandwidth = 0;  ///< bytes a second
  double memory_capacity = 0;   ///< bytes
  std::int64_t devices_per_node = 8;
  link node_link{};     ///< between the devices of a node, per device and direction
  link network_link{};  ///< across nodes, per device: the node's NICs over its devices
  double compute_efficiency = 1, memory_efficiency = 1, communication_efficiency = 1;
};

inline constexpr double GBps = 1e9;  // bytes a second
inline constexpr double GB = 1e9;
inline constexpr double us = 1e-6;

// The efficiencies are the fractions of the published peaks that public micro-benchmarks measure:
// large bf16 GEMMs (cuBLAS / hipBLASLt), a streaming copy through device memory, NCCL's (RCCL's)
// bus bandwidth of large all-reduces. They are one set per device, never fitted to a step.

/// NVIDIA A100 SXM 80 GB (A100 datasheet): 312 TFLOP/s, 2,039 GB/s, NVLink 3 600 GB/s both ways;
/// DGX A100: 8 x 200 Gb/s HDR InfiniBand.
inline constexpr system a100_system{"a100", 312e12, 2039 * GBps, 80 * GB, 8, {300 * GBps, 5 * us},
                                    {25 * GBps, 10 * us}, 0.85, 0.85, 0.8};
/// NVIDIA H100 SXM 80 GB (H100 datasheet): 989.4 TFLOP/s, 3,350 GB/s, NVLink 4 900 GB/s both
/// ways; DGX H100: 8 x 400 Gb/s NDR InfiniBand.
inline constexpr system h100_system{"h100", 989.4e12, 3350 * GBps, 80 * GB, 8, {450 * GBps, 5 * us},
                                    {50 * GBps, 10 * us}, 0.75, 0.85, 0.8};
/// NVIDIA H200 SXM 141 GB (H200 datasheet): the H100's compute and links, 4,800 GB/s.
inline constexpr system h200_system{"h200", 989.4e12, 4800 * GBps, 141 * GB, 8, {450 * GBps, 5 * us},
                                    {50 * GBps, 10 * us}, 0.75, 0.85, 0.8};
/// NVIDIA B200 180 GB (DGX B200 datasheet): 2,250 TFLOP/s, 8,000 GB/s, NVLink 5 1,800 GB/s both
/// ways, 8 x 400 Gb/s.
inline constexpr system b200_system{"b200", 2250e12, 8000 * GBps, 180 * GB, 8, {900 * GBps, 5 * us},
                                    {50 * GBps, 10 * us}, 0.75, 0.85, 0.8};
/// AMD Instinct MI300X 192 GB (MI300X datasheet): 1,307.4 TFLOP/s, 5,300 GB/s, 7 Infinity Fabric
/// links of 64 GB/s a direction to the node's other devices, 8 x 400 Gb/s.
inline constexpr system mi300x_system{"mi300x", 1307.4e12, 5300 * GBps, 192 * GB, 8, {448 * GBps, 5 * us},
                                      {50 * GBps, 10 * us}, 0.6, 0.8, 0.7};

/// The systems of the catalogue.
inline constexpr std::array<const system*, 5> systems{&a100_system, &h100_system, &h200_system, &b200_system,
                                                      &mi300x_system};

/// Mesh `mesh` laid on nodes of system `s` (see the file comment).
constexpr cluster cluster_of(const system& s, const process_mesh& mesh) {
  cluster c;
  c.peak_flops = s.peak_flops;
  c.memory_bandwidth = s.memory_bandwidth;
  c.memory_capacity = s.memory_capacity;
  c.compute_efficiency = s.compute_efficiency;
  c.memory_efficiency = s.memory_efficiency;
  c.communication_efficiency = s.communication_efficiency;
  std::int64_t in_node = 1;
  for (std::int64_t m = mesh.ndim(); m-- > 0;) {
    in_node = ctspmd::detail::saturating_product(in_node, mesh.dim_size(m));
    c.links[static_cast<std::size_t>(m)] = in_node <= s.devices_per_node ? s.node_link : s.network_link;
  }
  return c;
}
constexpr cluster a100_cluster(const process_mesh& mesh) { return cluster_of(a100_system, mesh); }
constexpr cluster h100_cluster(const process_mesh& mesh) { return cluster_of(h100_system, mesh); }
constexpr cluster h200_cluster(const process_mesh& mesh) { return cluster_of(h200_system, mesh); }
constexpr cluster b200_cluster(const process_mesh& mesh) { return cluster_of(b200_system, mesh); }
constexpr cluster mi300x_cluster(const process_mesh& mesh) { return cluster_of(mi300x_system, mesh); }

/// The catalogue's system named `name` ("a100", "h100", "h200", "b200", "mi300x"), or null.
constexpr const system* system_named(std::string_view name) noexcept {
  for (const system* s : systems)
    if (s->name == name) return s;
  return nullptr;
}

}  // namespace ctspmd::model

#endif
