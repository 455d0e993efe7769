#ifndef CTSPMD_MODEL_CLUSTER_HPP
#define CTSPMD_MODEL_CLUSTER_HPP
/// \file The devices a step runs on, and every seconds formula: what owns "the time of B bytes
/// over mesh dim m" and "the time of F FLOPs on a device".
///
/// A `cluster` gives, per mesh dim, its links (the bytes a device sends a second, and a
/// collective's latency) and the device's peak FLOP/s, with the fractions of peak that compute
/// and collectives reach. `count` collectives (or point-to-point sends) moving B bytes a device on
/// mesh dim m take count x latency + B / (bandwidth x communication efficiency) (`seconds`); F
/// FLOPs take F / (peak x compute efficiency) (`compute_seconds`). The cost of a step, the
/// pipeline report and the layout search time everything through these.
///
/// `h100_cluster(mesh)` describes 8-GPU H100 nodes: NVLink (450 GB/s, 5 us) for the mesh's last
/// dims as long as their product fits in a node, InfiniBand (50 GB/s per GPU, 10 us) for the
/// others, 989.4 dense bf16 TFLOP/s.

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

  /// Raises `invalid_argument` (under `who`) unless the cluster can time a step: a positive peak
  /// and efficiencies in (0, 1].
  constexpr void check(std::string_view who = "cluster") const {
    if (!(peak_flops > 0)) raise(make_error(error_kind::invalid_argument, who, "a device's peak FLOP/s must be positive"));
    if (!(compute_efficiency > 0 && compute_efficiency <= 1) ||
        !(communication_efficiency > 0 && communication_efficiency <= 1))
      raise(make_error(error_kind::invalid_argument, who, "efficiencies are fractions in (0, 1]"));
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

 private:
  static constexpr double finite(double seconds, std::string_view who) {
    if (!(seconds <= std::numeric_limits<double>::max()))
      raise(make_error(error_kind::invalid_argument, who,
                       "the step's time overflows a double: a peak FLOP/s, bandwidth or efficiency is too small"));
    return seconds;
  }
};

inline constexpr link nvlink_h100{450e9, 5e-6}, infiniband_h100{50e9, 10e-6};
inline constexpr double h100_bf16_flops = 989.4e12;

/// 8-GPU H100 nodes (see the file comment): the mesh's last dims, while their product is at most
/// 8, are inside a node.
constexpr cluster h100_cluster(const process_mesh& mesh) {
  cluster c;
  c.peak_flops = h100_bf16_flops;
  std::int64_t in_node = 1;
  for (std::int64_t m = mesh.ndim(); m-- > 0;) {
    in_node = detail::saturating_product(in_node, mesh.dim_size(m));
    c.links[static_cast<std::size_t>(m)] = in_node <= 8 ? nvlink_h100 : infiniband_h100;
  }
  return c;
}

}  // namespace ctspmd::model

#endif
