#ifndef CTSPMD_TOOLS_SIMULATE_MESH_SIM_HPP
#define CTSPMD_TOOLS_SIMULATE_MESH_SIM_HPP
// The mesh simulator: runs an operator the way a rule's answer says it runs on a process
// mesh, and reassembles the result.
//
// Layout of a tensor with dist attr A on a mesh (devices numbered row-major by their mesh
// coordinates):
// - a dim sharded on mesh dim m is cut into mesh.dim_size(m) equal blocks, device c holding
//   block c[m] (DESIGN.md: "split evenly"; an uneven split is an error unless the caller asks
//   for Paddle's uneven chunks, ceil(n / s) per device, the last ones shorter); a dim split over
//   mesh dims m0, m1, ... (a co-shard, major first) is cut into the product of their sizes, device
//   c holding block (c[m0] * size(m1) + c[m1]) * size(m2) + ...;
// - a tensor partial on mesh dims p0 < p1 < ... holds, on each device, a part: the value is
//   reduce_{p0}(reduce_{p1}(... parts)) with each dim's reduce type. `make_parts` cuts a value
//   into parts that combine to it: uneven, sign-varying addends for sum (and avg), one device
//   holding the value and the others strictly less (max) or more (min), random non-zero
//   factors for prod, and 0/1 parts for any / all. A wrong rule therefore cannot pass by
//   accident: parts are never copies of the value;
// - on every other mesh dim the tensor is replicated (each device holds a copy).
//
// `simulate` lays out the unsharded inputs as the rule REQUIRES them (`info.inputs`: when that
// differs from what the rule was given, the difference is a reshard, done here from the
// unsharded value), runs a kernel on every device's local tensors, and reassembles each
// output as `info.outputs` says: it checks every device's local shape, checks that devices
// that should hold the same local values (they differ only on mesh dims where the output is
// replicated) do, combines partial parts with the recorded reduce types and concatenates
// shards. The result must equal the unsharded reference.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <ctspmd/dist/format.hpp>
#include <ctspmd/dist/spmd_info.hpp>
#include <ctspmd/dist/tensor_dist_attr.hpp>

#include "tensor.hpp"

namespace ctspmd_oracle {

using ctspmd::reduce_type;

/// The reduce type of `attr`'s partial mesh dim `m`. (The range check also keeps GCC 12's
/// -Warray-bounds from assuming m may be -1 inside partial_reduce_type.)
inline reduce_type partial_type(const ctspmd::tensor_dist_attr& attr, std::int64_t m) {
  if (m < 0 || m >= to_int(ctspmd::max_mesh_ndim) || !attr.is_partial(m))
    throw oracle_error("mesh dim " + std::to_string(m) + " is not partial");
  return attr.partial_reduce_type(m);
}

/// The coordinates of device `dev` (row-major) on a mesh of `shape`.
inline shape_t device_coords(const ctspmd::process_mesh& mesh, std::int64_t dev) {
  shape_t c(to_size(mesh.ndim()));
  for (std::size_t m = c.size(); m-- > 0;) {
    const auto s = mesh.dim_size(to_int(m));
    c[m] = dev % s;
    dev /= s;
  }
  return c;
}

/// The device at coordinates `c`.
inline std::int64_t device_index(const ctspmd::process_mesh& mesh, const shape_t& c) {
  std::int64_t dev = 0;
  for (std::size_t m = 0; m < c.size(); ++m) dev = dev * mesh.dim_size(to_int(m)) + c[m];
  return dev;
}

struct chunk {
  std::int64_t start = 0;
  std::int64_t len = 0;
};

/// Block `j` of a dim of size `n` split over `s` devices: equal blocks (`even`; an uneven
/// split throws) or Paddle's ceil(n / s) chunks.
inline chunk shard_of(std::int64_t n, std::int64_t s, std::int64_t j, bool even) {
  if (even) {
    if (n % s != 0)
      throw oracle_error("uneven shard: a dim of size " + std::to_string(n) + " split over " + std::to_string(s) +
                         " devices");
    return {j * (n / s), n / s};
  }
  const std::int64_t c = (n + s - 1) / s;
  const std::int64_t start = std::min(n, j * c);
  return {start, std::min(n, start + c) - start};
}

/// `n` parts of `v` that combine to `v` under `r` (see the file comment).
inline std::vector<tensor> make_parts(const tensor& v, std::int64_t n, reduce_type r, rng& g) {
  std::vector<tensor> parts(to_size(n), tensor(v.shape));
  const auto last = to_size(n - 1);
  for (std::size_t e = 0; e < v.size(); ++e) {
    const double x = v.data[e];
    const auto holder = to_size(g.uniform(0, n - 1));
    switch (r) {
      case reduce_type::sum:
      case reduce_type::avg: {
        double rest = r == reduce_type::sum ? x : x * static_cast<double>(n);
        for (std::size_t p = 0; p < last; ++p) {
          parts[p].data[e] = g.real(-3.0, 3.0) * (1.0 + std::abs(x));
          rest -= parts[p].data[e];
        }
        parts[last].data[e] = rest;
        break;
      }
      case reduce_type::max:
      case reduce_type::min:
        for (std::size_t p = 0; p < parts.size(); ++p) {
          const double d = g.real(0.1, 2.0);
          parts[p].data[e] = p == holder ? x : (r == reduce_type::max ? x - d : x + d);
        }
        break;
      case reduce_type::prod: {
        double rest = x;
        for (std::size_t p = 0; p < last; ++p) {
          const double f = g.real(0.5, 2.0) * (g.coin() ? -1.0 : 1.0);
          parts[p].data[e] = f;
          rest /= f;
        }
        parts[last].data[e] = rest;
        break;
      }
      case reduce_type::any:
      case reduce_type::all: {
        // any: a true value is true on one device at least; all: a false one false on one.
        const bool truth = x != 0;
        const bool neutral = r == reduce_type::all;  // the value every device may hold
        for (std::size_t p = 0; p < parts.size(); ++p) {
          bool b = truth == neutral ? neutral : (p == holder ? truth : g.coin());
          parts[p].data[e] = b ? 1.0 : 0.0;
        }
        break;
      }
    }
  }
  return parts;
}

/// The combination of `parts` under `r`.
inline tensor combine(const std::vector<tensor>& parts, reduce_type r) {
  tensor out = parts.at(0);
  for (std::size_t p = 1; p < parts.size(); ++p) {
    if (parts[p].shape != out.shape) throw oracle_error("partial parts of different shapes");
    for (std::size_t e = 0; e < out.size(); ++e) {
      double& a = out.data[e];
      const double b = parts[p].data[e];
      switch (r) {
        case reduce_type::sum:
        case reduce_type::avg: a += b; break;
        case reduce_type::max: a = std::max(a, b); break;
        case reduce_type::min: a = std::min(a, b); break;
        case reduce_type::prod: a *= b; break;
        case reduce_type::any: a = (a != 0 || b != 0) ? 1 : 0; break;
        case reduce_type::all: a = (a != 0 && b != 0) ? 1 : 0; break;
      }
    }
  }
  if (r == reduce_type::avg)
    for (auto& a : out.data) a /= static_cast<double>(parts.size());
  return out;
}

/// Which block of tensor dim `d` the device at coordinates `c` holds under `attr`, and of how
/// many: its mesh dims' coordinates read major first (block 0 of 1 when `d` is replicated).
struct block_of_dim {
  std::int64_t index = 0;
  std::int64_t count = 1;
};
inline block_of_dim block_on(const ctspmd::tensor_dist_attr& attr, std::size_t d, const shape_t& c) {
  block_of_dim b;
  for (const auto m : attr.mesh_dims_of(d)) {
    b.index = b.index * attr.process_mesh().dim_size(m) + c[to_size(m)];
    b.count *= attr.process_mesh().dim_size(m);
  }
  return b;
}

/// The chunk of dim `d` (of global size `n`) that device `c` holds under `attr`.
inline chunk chunk_on(const ctspmd::tensor_dist_attr& attr, std::size_t d, std::int64_t n, const shape_t& c, bool even) {
  const auto b = block_on(attr, d, c);
  return shard_of(n, b.count, b.index, even);
}

inline void check_rank(const ctspmd::tensor_dist_attr& attr, const shape_t& global) {
  if (attr.rank() != global.size())
    throw oracle_error("a dims mapping of " + std::to_string(attr.rank()) + " entries for a tensor of shape " +
                       shape_string(global));
}

/// The local shape on device coordinates `c` of a tensor of `global` shape laid out as `attr`.
inline shape_t local_shape(const shape_t& global, const ctspmd::tensor_dist_attr& attr, const shape_t& c, bool even) {
  check_rank(attr, global);
  shape_t s = global;
  for (std::size_t d = 0; d < s.size(); ++d) s[d] = chunk_on(attr, d, global[d], c, even).len;
  return s;
}

/// Each device's local tensor of `value` laid out as `attr` (see the file comment).
inline std::vector<tensor> distribute(const tensor& value, const ctspmd::tensor_dist_attr& attr, rng& g,
                                      bool even = true) {
  const auto& mesh = attr.process_mesh();
  check_rank(attr, value.shape);
  const auto pd = attr.partial_dims();
  // leaves[(j0 * s1 + j1) * s2 + ...]: the part held at partial coordinates (j0, j1, ...).
  std::vector<tensor> leaves{value};
  for (auto m : pd) {
    std::vector<tensor> next;
    for (const auto& leaf : leaves)
      for (auto& p : make_parts(leaf, mesh.dim_size(m), partial_type(attr, m), g)) next.push_back(std::move(p));
    leaves = std::move(next);
  }
  std::vector<tensor> out;
  for (std::int64_t dev = 0; dev < mesh.size(); ++dev) {
    const auto c = device_coords(mesh, dev);
    std::size_t leaf = 0;
    for (auto m : pd) leaf = leaf * to_size(mesh.dim_size(m)) + to_size(c[to_size(m)]);
    tensor t = leaves[leaf];
    for (std::size_t d = 0; d < attr.rank(); ++d) {
      const auto ch = chunk_on(attr, d, value.shape[d], c, even);
      if (ch.len != value.shape[d]) t = slice(t, d, ch.start, ch.len);
    }
    out.push_back(std::move(t));
  }
  return out;
}

/// The global tensor of `global` shape that the devices' `locals` hold under `attr`; throws
/// `oracle_error` when a local shape is wrong or devices that must agree do not.
inline tensor assemble(const std::vector<tensor>& locals, const ctspmd::tensor_dist_attr& attr, const shape_t& global,
                       bool even = true) {
  const auto& mesh = attr.process_mesh();
  if (to_int(locals.size()) != mesh.size()) throw oracle_error("a local tensor per device expected");
  const auto pd = attr.partial_dims();
  std::vector<bool> used(to_size(mesh.ndim()), false);  // sharding or partial
  for (std::int64_t m = 0; m < mesh.ndim(); ++m) used[to_size(m)] = attr.shards(m) || attr.is_partial(m);

  for (std::int64_t dev = 0; dev < mesh.size(); ++dev) {
    const auto c = device_coords(mesh, dev);
    const auto want = local_shape(global, attr, c, even);
    if (locals[to_size(dev)].shape != want)
      throw oracle_error("device " + shape_string(c) + " holds a local tensor of shape " +
                         shape_string(locals[to_size(dev)].shape) + ", but " + ctspmd::to_string(attr) +
                         " gives it " + shape_string(want));
    // Devices that differ only on mesh dims where the tensor is replicated hold the same values.
    shape_t rep = c;
    for (std::size_t m = 0; m < rep.size(); ++m)
      if (!used[m]) rep[m] = 0;
    const auto diff = compare(locals[to_size(dev)], locals[to_size(device_index(mesh, rep))]);
    if (!diff.empty())
      throw oracle_error("devices " + shape_string(c) + " and " + shape_string(rep) + " must hold the same values (" +
                         ctspmd::to_string(attr) + " replicates the tensor across the mesh dims where they differ), "
                         "but " + diff);
  }

  tensor out(global);
  // Combines the parts over partial dims pd[k], pd[k + 1], ... at coordinates `c`.
  std::function<tensor(std::size_t, shape_t&)> combined = [&](std::size_t k, shape_t& c) -> tensor {
    if (k == pd.size()) return locals[to_size(device_index(mesh, c))];
    const auto m = to_size(pd[k]);
    std::vector<tensor> parts;
    for (c[m] = 0; c[m] < mesh.dim_size(pd[k]); ++c[m]) parts.push_back(combined(k + 1, c));
    c[m] = 0;
    return combine(parts, partial_type(attr, pd[k]));
  };
  for (std::int64_t dev = 0; dev < mesh.size(); ++dev) {
    shape_t c = device_coords(mesh, dev);
    bool shard_owner = true;  // one device per shard: 0 on every replicated and partial mesh dim
    for (std::size_t m = 0; m < c.size(); ++m)
      shard_owner = shard_owner && (c[m] == 0 || (used[m] && !attr.is_partial(to_int(m))));
    if (!shard_owner) continue;
    const tensor block = combined(0, c);
    shape_t start(global.size(), 0);
    for (std::size_t d = 0; d < attr.rank(); ++d) start[d] = chunk_on(attr, d, global[d], c, even).start;
    shape_t gi(global.size());
    std::size_t o = 0;
    for_each_index(block.shape, [&](const shape_t& idx) {
      for (std::size_t d = 0; d < idx.size(); ++d) gi[d] = idx[d] + start[d];
      out[gi] = block.data[o++];
    });
  }
  return out;
}

/// Per device (row-major), the local tensors of the operator's inputs / outputs.
using device_tensors = std::vector<std::vector<tensor>>;

/// Runs an operator on every device: from the rule's answer and each device's local inputs,
/// each device's local outputs. A kernel may use collectives across devices (it sees them all).
using mesh_kernel = std::function<device_tensors(const ctspmd::spmd_info&, const device_tensors&)>;

/// A kernel that runs `f(coords, info, local_inputs) -> local_outputs` on each device alone.
template <class F>
mesh_kernel per_device(F f) {
  return [f](const ctspmd::spmd_info& info, const device_tensors& in) {
    device_tensors out;
    const auto& mesh = info.inputs[0].process_mesh();
    for (std::size_t dev = 0; dev < in.size(); ++dev) out.push_back(f(device_coords(mesh, to_int(dev)), info, in[dev]));
    return out;
  };
}

/// Runs the operator as `info` says on `inputs` (unsharded values) and compares every output
/// that has an expected value (nullopt: not compared). Empty on success, else what failed.
inline std::string simulate(const ctspmd::spmd_info& info, const std::vector<tensor>& inputs,
                            const std::vector<std::optional<tensor>>& expected, const mesh_kernel& kernel, rng& g,
                            bool even = true) {
  try {
    if (info.inputs.size() != inputs.size()) return "the rule returned " + std::to_string(info.inputs.size()) + " inputs";
    if (info.outputs.size() != expected.size())
      return "the rule returned " + std::to_string(info.outputs.size()) + " outputs, the operator has " +
             std::to_string(expected.size());
    const auto& mesh = info.inputs[0].process_mesh();
    device_tensors local_in(to_size(mesh.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto parts = distribute(inputs[i], info.inputs[i], g, even);
      for (std::size_t dev = 0; dev < parts.size(); ++dev) local_in[dev].push_back(std::move(parts[dev]));
    }
    const auto local_out = kernel(info, local_in);
    for (std::size_t o = 0; o < expected.size(); ++o) {
      if (!expected[o]) continue;
      std::vector<tensor> locals;
      for (const auto& dev : local_out) locals.push_back(dev.at(o));
      const auto got = assemble(locals, info.outputs[o], expected[o]->shape, even);
      const auto diff = compare(got, *expected[o]);
      if (!diff.empty()) return "output " + std::to_string(o) + " (" + ctspmd::to_string(info.outputs[o]) + "): " + diff;
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace ctspmd_oracle

#endif
