#ifndef CTSPMD_RULES_KIT_DIM_TRANS_HPP
#define CTSPMD_RULES_KIT_DIM_TRANS_HPP
/// \file Dim transformations: where each output dim of a shape-changing operator (reshape,
/// and through it flatten, squeeze and unsqueeze) comes from, and what sharding survives it.
///
/// Each output dim is one `dim_trans`:
/// - `input_dim(i)`: input dim i, unchanged;
/// - `flatten([i, j, ...])`: input dims i, j, ... merged, row-major (size-1 dims left out);
/// - `split(inputs, shape, id)`: output `id` of splitting one input dim (or the flatten of
///   several) into dims of sizes `shape` (size-1 entries left out);
/// - `singleton()`: a size-1 dim that comes from no input dim.
///
/// `make_reshape_dim_trans` finds them for a reshape by greedy factor matching: walking both
/// shapes left to right, size-1 dims are skipped (dropped from the source, singletons in the
/// target), and otherwise the smallest runs of source and target dims with equal products form
/// a group: one-to-one is an input dim, many-to-one a flatten, one-or-many-to-many a split.
///
/// Dims whose size is unknown (-1) or zero cannot be factor-matched. Such a dim is still
/// matched one-to-one when the caller knows it is the same size on both sides (`same_size`,
/// e.g. a reshape's `0` that copies a source dim), or when both sizes are the same known
/// value; otherwise everything from the current group on becomes one coarse group: a split of
/// the flatten of the remaining source dims into the remaining target dims. A coarser group is
/// always sound (row-major order is kept within it); it only keeps fewer shardings.
///
/// `infer_from_dim_trans` then decides the sharding (Paddle's `InferFromDimTrans`): a sharded
/// input dim keeps its mesh dim only where its slices stay contiguous slices of one output
/// dim, i.e. when it is an input dim, the first input of a flatten, or the (first) input of a
/// split's output 0 whose size is divisible by the mesh dim's size. Any other sharded input
/// dim is resharded to -1. Each output dim then takes the mesh dim of that input dim (a
/// flatten's first input, split output 0's input; other split outputs and singletons -1).
///
/// Two bugs of Paddle's mid-2023 `dim_trans.cc` are not reproduced: its split kept size-1
/// entries in the split shape (it tested the wrong index), and its shardable table for a
/// flatten was indexed by the position inside the flatten instead of the input dim.

#include <cstddef>
#include <cstdint>
#include <limits>

#include <ctspmd/core/config.hpp>
#include <ctspmd/core/static_vector.hpp>
#include <ctspmd/dist/mesh_dim_list.hpp>
#include <ctspmd/dist/process_mesh.hpp>

namespace ctspmd {

/// What an output dim of a shape change is made of.
enum class dim_trans_kind : std::uint8_t { singleton, input_dim, flatten, split };

/// One output dim of a shape change, in terms of input dims (see the file comment).
struct dim_trans {
  dim_trans_kind kind = dim_trans_kind::singleton;
  /// input_dim: the dim; flatten: the merged dims; split: the dims whose flatten is split.
  static_vector<std::int64_t, max_rank> inputs{};
  /// split only: the sizes of the split's outputs (no 1s; -1 for a size unknown until run time).
  static_vector<std::int64_t, max_rank> split_shape{};
  /// split only: which of the split's outputs this dim is.
  std::int64_t split_id = 0;

  /// A size-1 dim from no input dim.
  static constexpr dim_trans singleton() { return {}; }
  /// Input dim `i`, unchanged.
  static constexpr dim_trans input_dim(std::int64_t i) { return {dim_trans_kind::input_dim, {i}, {}, 0}; }
  /// The row-major merge of input dims `dims`.
  static constexpr dim_trans flatten(const static_vector<std::int64_t, max_rank>& dims) {
    return {dim_trans_kind::flatten, dims, {}, 0};
  }
  /// Output `id` of splitting (the flatten of) `dims` into `shape`.
  static constexpr dim_trans split(const static_vector<std::int64_t, max_rank>& dims,
                                   const static_vector<std::int64_t, max_rank>& shape, std::int64_t id) {
    return {dim_trans_kind::split, dims, shape, id};
  }

  /// The input dim whose mesh dim this output dim can carry: an input dim itself, a
  /// flatten's first input, the first input of a split's output 0; -1 for anything else.
  constexpr std::int64_t source_dim() const {
    if (kind == dim_trans_kind::singleton || inputs.empty()) return -1;
    if (kind == dim_trans_kind::split && split_id != 0) return -1;
    return inputs[0];
  }

  friend constexpr bool operator==(const dim_trans&, const dim_trans&) = default;
};

/// The transformation of every output dim, in output order.
using dim_trans_list = static_vector<dim_trans, max_rank>;

namespace detail {

/// p *= f if f is a positive size and the product fits in int64; false otherwise.
constexpr bool multiply_size(std::int64_t& p, std::int64_t f) noexcept {
  if (f <= 0 || p > std::numeric_limits<std::int64_t>::max() / f) return false;
  p *= f;
  return true;
}

/// Appends the output dims of one group: source dims [s0, s1) regrouped as target dims [t0, t1).
constexpr void emit_reshape_group(dim_trans_list& out, const tensor_shape& src, std::size_t s0, std::size_t s1,
                                  const tensor_shape& tgt, std::size_t t0, std::size_t t1) {
  static_vector<std::int64_t, max_rank> inputs;
  static_vector<std::int64_t, max_rank> sizes;
  for (std::size_t i = s0; i < s1; ++i)
    if (src[i] != 1) inputs.push_back(static_cast<std::int64_t>(i));
  for (std::size_t j = t0; j < t1; ++j)
    if (tgt[j] != 1) sizes.push_back(tgt[j]);
  std::int64_t id = 0;
  for (std::size_t j = t0; j < t1; ++j) {
    if (tgt[j] == 1 || inputs.empty())
      out.push_back(dim_trans::singleton());
    else if (sizes.size() > 1)
      out.push_back(dim_trans::split(inputs, sizes, id++));
    else if (inputs.size() == 1)
      out.push_back(dim_trans::input_dim(inputs[0]));
    else
      out.push_back(dim_trans::flatten(inputs));
  }
}

}  // namespace detail

/// The dim transformation of reshaping `src` into `tgt` (both with the same element count;
/// -1 = a size unknown until run time), one entry per target dim. `same_size[j]`, where
/// given and not -1, is a source dim known to have target dim j's size (used for dims of
/// unknown size; see the file comment).
constexpr dim_trans_list make_reshape_dim_trans(const tensor_shape& src, const tensor_shape& tgt,
                                                const static_vector<std::int64_t, max_rank>& same_size = {}) {
  dim_trans_list out;
  const std::size_t n = src.size();
  const std::size_t k = tgt.size();
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < n || j < k) {
    if (i < n && src[i] == 1) {  // a size-1 source dim goes nowhere
      ++i;
      continue;
    }
    if (j < k && tgt[j] == 1) {  // a size-1 target dim comes from nowhere
      out.push_back(dim_trans::singleton());
      ++j;
      continue;
    }
    if (i == n || j == k) break;  // one side is used up: the rest is one group (below)
    const bool same = j < same_size.size() && same_size[j] == static_cast<std::int64_t>(i);
    if (same || (src[i] == tgt[j] && src[i] >= 0)) {
      out.push_back(dim_trans::input_dim(static_cast<std::int64_t>(i)));
      ++i;
      ++j;
      continue;
    }
    // The smallest runs src[i, si) and tgt[j, tj) with equal products.
    std::size_t si = i + 1;
    std::size_t tj = j + 1;
    std::int64_t ps = src[i];
    std::int64_t pt = tgt[j];
    bool matched = ps > 0 && pt > 0;
    while (matched && ps != pt) {
      if (ps < pt)
        matched = si < n && detail::multiply_size(ps, src[si++]);
      else
        matched = tj < k && detail::multiply_size(pt, tgt[tj++]);
    }
    if (!matched) break;  // an unknown or zero size: the rest is one group (below)
    detail::emit_reshape_group(out, src, i, si, tgt, j, tj);
    i = si;
    j = tj;
  }
  if (i < n || j < k) detail::emit_reshape_group(out, src, i, n, tgt, j, k);
  return out;
}

/// The input's dims mapping as the transformation needs it, and the output's.
struct dim_trans_sharding {
  dims_mapping input;
  dims_mapping output;
  friend constexpr bool operator==(const dim_trans_sharding&, const dim_trans_sharding&) = default;
};
/// The same for co-shard mappings.
struct dim_trans_multi_sharding {
  multi_dims_mapping input;
  multi_dims_mapping output;
  friend constexpr bool operator==(const dim_trans_multi_sharding&, const dim_trans_multi_sharding&) = default;
};

/// Per tensor dim, the mesh dims that split it.
using dim_lists = static_vector<mesh_dim_list, max_rank>;

namespace detail {
/// True if a dim of `size` (-1: unknown) splits evenly into `shards` parts.
constexpr bool divisible(std::int64_t size, std::int64_t shards) noexcept {
  return shards == 1 || (size >= 0 && size % shards == 0);
}
}  // namespace detail

/// The sharding through `trans` of an input whose dims are split by `input` (one list per dim)
/// on `mesh`: sharded input dims that cannot keep their mesh dims become replicated, and each
/// output dim takes its source dim's mesh dims (see the file comment). A co-sharded dim keeps
/// or loses its list as a whole; a split's output 0 must then be divisible by the product of
/// the list's sizes.
constexpr void infer_from_dim_trans(const dim_lists& input, const dim_trans_list& trans, const process_mesh& mesh,
                                    dim_lists& required, dim_lists& output) {
  required = input;
  for (std::size_t d = 0; d < input.size(); ++d) {
    if (input[d].empty()) continue;
    const std::int64_t shards = input[d].shards(mesh);
    bool keeps = false;
    for (const auto& t : trans)
      if (t.source_dim() == static_cast<std::int64_t>(d))
        keeps = keeps || t.kind != dim_trans_kind::split || detail::divisible(t.split_shape[0], shards);
    if (!keeps) required[d] = {};
  }
  output.clear();
  for (const auto& t : trans) {
    const std::int64_t s = t.source_dim();
    output.push_back(s >= 0 && static_cast<std::size_t>(s) < input.size() ? required[static_cast<std::size_t>(s)]
                                                                         : mesh_dim_list{});
  }
}

/// The co-shard form of `infer_from_dim_trans` (phi): the first input dim of each group carries
/// the group's sharding, and the mesh dims of the group's later dims move onto it, in order,
/// while the first dim's size stays divisible by their shard count, and for a split also the
/// size of output 0 (whose first dim's list must itself divide it, or nothing is carried).
/// (phi checks only output 0's size for a split, so it can move a mesh dim onto a first dim
/// too small for it, as in `[2, 4]` split `[[1], [0]]` on `[2, 2]` reshaped to `[4, 2]`; here
/// the first dim keeps `[1]`.) The first later dim that is replicated, or whose mesh dims
/// would break divisibility, stops the move; the dims not moved become replicated. An input dim
/// keeps its whole list. So `[4, 6, 8]` split `[[0], [1], []]` on a `[2, 2]` mesh flattened to
/// `[192]` requires `[[0, 1], [], []]` and gives `[[0, 1]]` (fluid gives `[[0]]` and drops mesh
/// dim 1). `input_shape` is the input's shape (-1: unknown, divisible by anything).
constexpr void infer_from_dim_trans_co_shard(const dim_lists& input, const tensor_shape& input_shape,
                                             const dim_trans_list& trans, const process_mesh& mesh,
                                             dim_lists& required, dim_lists& output) {
  required = dim_lists(input.size(), mesh_dim_list{});
  output.clear();
  for (const auto& t : trans) {
    if (t.kind == dim_trans_kind::singleton || t.inputs.empty() || (t.kind == dim_trans_kind::split && t.split_id != 0)) {
      output.push_back({});
      continue;
    }
    const auto d0 = static_cast<std::size_t>(t.inputs[0]);
    if (t.kind == dim_trans_kind::input_dim) {
      required[d0] = input[d0];
      output.push_back(input[d0]);
      continue;
    }
    const std::int64_t piece = t.kind == dim_trans_kind::split ? t.split_shape[0] : input_shape[d0];
    mesh_dim_list carried;
    for (std::size_t k = 0; k < t.inputs.size(); ++k) {
      const mesh_dim_list l = input[static_cast<std::size_t>(t.inputs[k])];
      if (l.empty()) break;
      mesh_dim_list candidate = carried;
      for (std::size_t j = 0; j < l.size(); ++j) candidate.push_back(l[j]);
      if (k == 0 && t.kind == dim_trans_kind::flatten) {  // a flatten's first dim keeps its own list
        carried = candidate;
        continue;
      }
      const std::int64_t shards = candidate.shards(mesh);
      if (!detail::divisible(piece, shards) || !detail::divisible(input_shape[d0], shards)) break;
      carried = candidate;
    }
    required[d0] = carried;
    output.push_back(carried);
  }
}

/// `infer_from_dim_trans` for a flat dims mapping.
constexpr dim_trans_sharding infer_from_dim_trans(const dims_mapping& input, const dim_trans_list& trans,
                                                  const process_mesh& mesh) {
  dim_lists in, required, output;
  for (const auto m : input) in.push_back(mesh_dim_list::single(m));
  infer_from_dim_trans(in, trans, mesh, required, output);
  dim_trans_sharding r;
  for (const auto& l : required) r.input.push_back(l.major());
  for (const auto& l : output) r.output.push_back(l.major());
  return r;
}
/// `infer_from_dim_trans` for a co-shard mapping.
constexpr dim_trans_multi_sharding infer_from_dim_trans(const multi_dims_mapping& input, const dim_trans_list& trans,
                                                        const process_mesh& mesh) {
  dim_lists in, required, output;
  for (const auto& l : input) in.push_back(mesh_dim_list::of(l));
  infer_from_dim_trans(in, trans, mesh, required, output);
  dim_trans_multi_sharding r;
  for (const auto& l : required) r.input.push_back(l.to_mesh_dims());
  for (const auto& l : output) r.output.push_back(l.to_mesh_dims());
  return r;
}

}  // namespace ctspmd

#endif
