#ifndef CTSPMD_TOOLS_SIMULATE_STEP_KERNELS_HPP
#define CTSPMD_TOOLS_SIMULATE_STEP_KERNELS_HPP
// The oracle's kernels by rule name, for the step simulator (step_sim.hpp): what each operator
// of a training step computes on one device's local tensors, from the operator's attributes
// (as `runtime::operator_attributes` gives them) and the layouts its operands are held in.
//
// A kernel runs on every device of the mesh at once (it sees every device's local inputs and
// returns every device's local outputs). Most run on each device alone; a kernel that needs the
// device's place (a row-sharded table's first row, a query chunk's first position) reads it from
// the operand's layout, and c_softmax_with_cross_entropy reduces its row statistics across the
// devices holding the other slices of the vocabulary, as its kernel does (its collectives are
// the operator's own, not reshards). The unsharded reference runs the same kernels on a mesh of
// one device with every operand replicated.
//
// `input_domain` says which inputs must hold particular values: indices into another operand
// (ids, labels), positive values (second moments, the learning rate) or powers in (0, 1) (the
// optimizer's beta pows). An operator with no kernel here is `oracle_error("no kernel for rule
// ...")`: the simulator reports it and simulates nothing.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <ctspmd/ctspmd.hpp>
#include <ctspmd/runtime.hpp>

#include "mesh_sim.hpp"
#include "ops.hpp"
#include "ops_attention_contraction.hpp"
#include "ops_elementwise_norms.hpp"
#include "ops_moe.hpp"
#include "ops_optimizer_data_parallel.hpp"
#include "ops_reduction_softmax_grads.hpp"
#include "ops_rope.hpp"
#include "ops_scan_select_index.hpp"
#include "tensor.hpp"

namespace ctspmd_oracle::step {

/// What a kernel is given besides the local tensors: the operator's rule and attributes, and its
/// operands' global shapes and layouts as the devices hold them.
struct kernel_call {
  std::string_view rule;
  const ctspmd::runtime::attribute_map* attrs = nullptr;
  std::vector<ctspmd::tensor_dist_attr> in, out;
  std::vector<shape_t> in_shapes, out_shapes;
  /// (The one-device reference of a mixture-of-experts or attention operator) its inputs' layouts
  /// in the sharded run: whose devices each route their own tokens (the reference routes the same
  /// blocks), or hold the chunks of a load-balanced sequence.
  std::vector<ctspmd::tensor_dist_attr> sharded_in;
  /// The sequence is in the load-balanced order of context parallelism (`step::options`).
  bool load_balanced = false;
  /// The devices a sequence is split over in the load-balanced order (q's dim 1), or 0.
  std::int64_t balanced_devices() const {
    if (!load_balanced) return 0;
    return (sharded_in.empty() ? in.at(0) : sharded_in.at(0)).parts(1);
  }

  const ctspmd::process_mesh& mesh() const { return in.at(0).process_mesh(); }
  template <class T>
  T get(std::string_view name) const {
    const auto it = attrs->find(name);
    if (it == attrs->end()) throw oracle_error(std::string(rule) + ": no attribute " + std::string(name));
    if (const auto* v = std::get_if<T>(&it->second)) return *v;
    if constexpr (std::is_same_v<T, double>)
      if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
    throw oracle_error(std::string(rule) + ": attribute " + std::string(name) + " of another type");
  }
  /// Attribute `name`, or `fallback` when the rule has none of that name.
  template <class T>
  T get_or(std::string_view name, T fallback) const {
    return attrs->find(name) == attrs->end() ? fallback : get<T>(name);
  }
  /// Output `o`'s local shape on the device at coordinates `c`.
  shape_t local_out(std::size_t o, const shape_t& c) const { return local_shape(out_shapes.at(o), out.at(o), c, true); }
  shape_t local_in(std::size_t i, const shape_t& c) const { return local_shape(in_shapes.at(i), in.at(i), c, true); }
  /// True if input `i` is an absent optional operand (shape []).
  bool absent_in(std::size_t i) const { return i >= in_shapes.size() || in_shapes[i].empty(); }
};

using step_kernel = std::function<device_tensors(const kernel_call&, const device_tensors&)>;

/// A kernel that runs `f(call, coords, local_inputs) -> local_outputs` on each device alone.
template <class F>
step_kernel each_device(F f) {
  return [f](const kernel_call& call, const device_tensors& in) {
    device_tensors out;
    for (std::size_t dev = 0; dev < in.size(); ++dev)
      out.push_back(f(call, device_coords(call.mesh(), to_int(dev)), in[dev]));
    return out;
  };
}
/// A kernel of one output computed by `f(local_inputs)` on each device.
template <class F>
step_kernel simple(F f) {
  return each_device([f](const kernel_call&, const shape_t&, const std::vector<tensor>& in) {
    return std::vector<tensor>{f(in)};
  });
}

/// A kernel of several outputs computed by `f(local_inputs)` on each device.
template <class F>
step_kernel several(F f) {
  return each_device([f](const kernel_call&, const shape_t&, const std::vector<tensor>& in) { return f(in); });
}

/// The first row device `c` holds of a table whose rows (dim 0) `attr` may shard; -1 when not.
inline std::int64_t row_offset(const ctspmd::tensor_dist_attr& attr, const shape_t& c, std::int64_t local_rows) {
  const auto block = block_on(attr, 0, c);
  return block.count == 1 ? -1 : block.index * local_rows;
}
/// The position of the first query device `c` holds (its chunk of the sequence): a causal kernel
/// masks by global positions.
inline std::int64_t query_offset(const ctspmd::tensor_dist_attr& q, const shape_t& c, const tensor& local_q) {
  return block_on(q, 1, c).index * local_q.shape.at(1);
}

/// c_softmax_with_cross_entropy's kernel, with its collectives: the devices that hold the slices
/// of one row (they differ only on the vocabulary's mesh dims) reduce the row's maximum, the sum
/// of exponentials and the label's logit across the slices.
inline device_tensors c_softmax_cross_entropy(const ctspmd::tensor_dist_attr& attr, std::int64_t ignore_index,
                                              const device_tensors& in) {
  const auto& mesh = attr.process_mesh();
  const std::size_t v = attr.rank() - 1;
  const auto vocab = attr.mesh_dims_of(v);
  const auto n = to_size(mesh.size());
  // Each device's row-wise local max, sum of exp(x - local max), and label logit (or nan).
  std::vector<std::vector<double>> mx(n), sum(n), picked(n);
  const auto cols = in[0][0].shape.back();
  const auto rows = to_size(numel(in[0][0].shape) / std::max<std::int64_t>(cols, 1));
  for (std::size_t d = 0; d < n; ++d)
    if (in[d][0].shape != in[0][0].shape || in[d][1].size() != rows)
      throw oracle_error("c_softmax_with_cross_entropy: logits of shape " + shape_string(in[d][0].shape) +
                         " and labels of shape " + shape_string(in[d][1].shape) + " on device " + std::to_string(d));
  for (std::size_t d = 0; d < n; ++d) {
    const auto c = device_coords(mesh, to_int(d));
    const auto offset = block_on(attr, v, c).index * cols;
    for (std::size_t r = 0; r < rows; ++r) {
      double m = -std::numeric_limits<double>::infinity(), s = 0, p = std::numeric_limits<double>::quiet_NaN();
      for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, in[d][0].data[r * to_size(cols) + to_size(j)]);
      for (std::int64_t j = 0; j < cols; ++j) s += std::exp(in[d][0].data[r * to_size(cols) + to_size(j)] - m);
      const std::int64_t l = ops::as_index(in[d][1].data[r]);
      if (l >= offset && l < offset + cols) p = in[d][0].data[r * to_size(cols) + to_size(l - offset)];
      mx[d].push_back(m);
      sum[d].push_back(s);
      picked[d].push_back(p);
    }
  }
  device_tensors out;
  for (std::size_t d = 0; d < n; ++d) {
    const auto c = device_coords(mesh, to_int(d));
    std::vector<std::size_t> group;  // the devices holding the other slices of these rows
    for (std::size_t e = 0; e < n; ++e) {
      const auto ce = device_coords(mesh, to_int(e));
      bool same = true;
      for (std::size_t m = 0; m < c.size(); ++m) {
        bool is_vocab = false;
        for (auto vm : vocab) is_vocab = is_vocab || to_size(vm) == m;
        same = same && (is_vocab || c[m] == ce[m]);
      }
      if (same) group.push_back(e);
    }
    tensor sm(in[d][0].shape), loss(in[d][1].shape);
    for (std::size_t r = 0; r < rows; ++r) {
      double m = -std::numeric_limits<double>::infinity(), p = std::numeric_limits<double>::quiet_NaN();
      for (auto e : group) m = std::max(m, mx[e][r]);
      double s = 0;
      for (auto e : group) {
        s += sum[e][r] * std::exp(mx[e][r] - m);
        if (!std::isnan(picked[e][r])) p = picked[e][r];
      }
      for (std::int64_t j = 0; j < cols; ++j)
        sm.data[r * to_size(cols) + to_size(j)] = std::exp(in[d][0].data[r * to_size(cols) + to_size(j)] - m) / s;
      const std::int64_t l = ops::as_index(in[d][1].data[r]);
      loss.data[r] = l == ignore_index ? 0.0 : std::log(s) + m - p;
    }
    out.push_back({sm, loss});
  }
  return out;
}

namespace detail {

inline double gelu(double x, bool approximate) {
  if (!approximate) return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

inline ops::rope_options rope_of(const kernel_call& c) {
  return {c.get<bool>("use_neox_rotary_style"), c.get<bool>("time_major"), c.get<double>("rotary_emb_base")};
}

inline std::vector<std::size_t> perm_of(const kernel_call& c) {
  std::vector<std::size_t> perm;
  for (auto p : c.get<std::vector<std::int64_t>>("perm")) perm.push_back(ops::normalize_axis(p, to_int(c.in_shapes[0].size())));
  return perm;
}

/// Adam's kernel for adam / adamw: inputs param, grad, learning_rate, moment1, moment2,
/// moment2_max (absent unless amsgrad), beta1_pow, beta2_pow, master_param (optional); outputs
/// param_out, moment1_out, moment2_out, moment2_max_out, beta1_pow_out, beta2_pow_out,
/// master_param_out (absent where their input is). adamw's decay applies with `with_decay`.
inline step_kernel adam(bool decoupled) {
  return each_device([decoupled](const kernel_call& c, const shape_t&, const std::vector<tensor>& in) {
    const bool amsgrad = !c.absent_in(5);
    const bool master = in.size() > 8 && !c.absent_in(8);
    const double coeff = decoupled && c.get<bool>("with_decay") ? c.get<double>("coeff") : 0.0;
    const double ratio = decoupled ? c.get<double>("lr_ratio") : 1.0;
    const auto r = ops::adam(in[0], in[1], in[2], in[3], in[4], amsgrad ? std::optional<tensor>(in[5]) : std::nullopt,
                             in[6], in[7], master ? std::optional<tensor>(in[8]) : std::nullopt, c.get<double>("beta1"),
                             c.get<double>("beta2"), c.get<double>("epsilon"), coeff, ratio);
    std::vector<tensor> out{r.param, r.moment1, r.moment2, r.moment2_max.value_or(tensor(shape_t{})),
                            r.beta1_pow, r.beta2_pow, r.master.value_or(tensor(shape_t{}))};
    out.resize(c.out_shapes.size());
    return out;
  });
}

/// A reduction over `axis` of each device's local part (a sharded reduced dim leaves partial
/// results, as the rule says).
inline step_kernel reduction(ops::reduce_kind kind) {
  return each_device([kind](const kernel_call& c, const shape_t&, const std::vector<tensor>& in) {
    return std::vector<tensor>{ops::reduce(in[0], c.get<std::vector<std::int64_t>>("axis"), c.get<bool>("keep_dim"), kind)};
  });
}
/// A reduction's gradient (inputs x, out_grad; max and min: x, out, out_grad), broadcast to x's
/// local part; a mean's divided by the reduced elements of the whole tensor, not of the part.
inline step_kernel reduction_grad(ops::reduction_grad_kind kind) {
  return each_device([kind](const kernel_call& c, const shape_t&, const std::vector<tensor>& in) {
    const auto axis = c.get<std::vector<std::int64_t>>("axis");
    const bool keep = c.get<bool>("keepdim");
    const auto& g = in.back();
    if (kind != ops::reduction_grad_kind::mean)
      return std::vector<tensor>{ops::reduction_grad(kind, in[0], in.size() > 2 ? in[1] : g, g, axis, keep)};
    auto out = ops::reduction_grad(ops::reduction_grad_kind::sum, in[0], g, g, axis, keep);
    const auto mask = ops::reduced_mask(axis, to_int(c.in_shapes[0].size()));
    double count = 1;
    for (std::size_t d = 0; d < mask.size(); ++d)
      if (mask[d]) count *= static_cast<double>(c.in_shapes[0][d]);
    for (auto& x : out.data) x /= count;
    return std::vector<tensor>{out};
  });
}

/// A mixture-of-experts kernel: each device routes its own tokens into its own slots (a capacity
/// dim is split like the tokens). `f(call, inputs, blocks)` runs on each of the `blocks` blocks
/// of a device's tokens (the reference: as many as the sharded run's devices split them into,
/// input `by`'s dim `cut[by]` in `kernel_call::sharded_in`; a device of the sharded run: 1), on
/// each input cut along `cut[i]` (-1: whole); the outputs are put back in block order along
/// `glue[o]` (-1: summed). Index outputs (scatter_index) hold each block's own indices.
template <class F>
step_kernel by_token_blocks(std::size_t by, std::vector<int> cut, std::vector<int> glue, F f) {
  return each_device([=](const kernel_call& c, const shape_t&, const std::vector<tensor>& in) {
    const auto blocks = c.sharded_in.empty() ? 1 : c.sharded_in.at(by).parts(to_size(cut.at(by)));
    std::vector<std::vector<tensor>> parts(glue.size());
    for (std::int64_t b = 0; b < blocks; ++b) {
      std::vector<tensor> block;
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (cut.at(i) < 0) {
          block.push_back(in[i]);
          continue;
        }
        const auto d = to_size(cut[i]);
        if (in[i].shape.at(d) % blocks != 0)
          throw oracle_error(std::string(c.rule) + ": input " + std::to_string(i) + " does not split into the token blocks");
        const auto len = in[i].shape[d] / blocks;
        block.push_back(slice(in[i], d, b * len, len));
      }
      auto out = f(c, block, blocks);
      for (std::size_t o = 0; o < glue.size(); ++o) parts[o].push_back(std::move(out.at(o)));
    }
    return join_blocks(std::move(parts), glue);
  });
}

/// Dropout's keep mask (1 kept, 0 dropped) of the local part device `c` holds of a tensor of
/// `global` shape laid out as `attr`: each element drawn by its global index from the operator's
/// seed and drop probability, so that the devices, and the one-device reference, draw the mask
/// one device would (a real kernel draws per device: only the distribution matches). The grad
/// kernels draw the same mask again, as a kernel does from its seed and offset.
inline tensor dropout_mask(const kernel_call& call, const ctspmd::tensor_dist_attr& attr, const shape_t& global,
                           const shape_t& c) {
  const double p = call.get<double>("p");
  const auto seed = static_cast<std::uint64_t>(call.get<std::int64_t>("seed"));
  tensor mask(local_shape(global, attr, c, true));
  std::vector<std::int64_t> start(global.size());
  for (std::size_t d = 0; d < global.size(); ++d) start[d] = chunk_on(attr, d, global[d], c, true).start;
  std::size_t k = 0;
  for_each_index(mask.shape, [&](const shape_t& idx) {
    std::uint64_t flat = 0;
    for (std::size_t d = 0; d < idx.size(); ++d)
      flat = flat * static_cast<std::uint64_t>(global[d]) + static_cast<std::uint64_t>(start[d] + idx[d]);
    rng g(seed * 0x9E3779B97F4A7C15ULL + flat);
    const double u = static_cast<double>(g.next() >> 11) * 0x1.0p-53;  // uniform in [0, 1)
    mask.data[k++] = u >= p ? 1.0 : 0.0;
  });
  return mask;
}
/// What dropout multiplies a kept element by in training: 1 / (1 - p) ("upscale_in_train"; 0
/// when p is 1) or 1 ("downscale_in_infer"); at inference (`is_test`), what it multiplies every
/// element by: 1, or 1 - p.
inline double dropout_scale(const kernel_call& call) {
  const double p = call.get<double>("p");
  const bool upscale = call.get<std::string>("mode") == "upscale_in_train";
  if (call.get<bool>("is_test")) return upscale ? 1.0 : 1.0 - p;
  return !upscale ? 1.0 : p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
}
/// x times the mask (ones at inference) and dropout's scale.
inline tensor dropped(const kernel_call& call, const tensor& x, const tensor& mask) {
  const double scale = dropout_scale(call);
  const bool test = call.get<bool>("is_test");
  return ops::elementwise({x, mask}, [=](const std::vector<double>& a) { return a[0] * (test ? 1.0 : a[1]) * scale; });
}

inline step_kernel binary(double (*f)(double, double)) {
  return simple([f](const std::vector<tensor>& in) {
    return ops::elementwise({in[0], in[1]}, [f](const std::vector<double>& a) { return f(a[0], a[1]); });
  });
}

/// The table of kernels by rule name.
inline const std::map<std::string, step_kernel, std::less<>>& table() {
  using v = std::vector<tensor>;
  static const std::map<std::string, step_kernel, std::less<>> t = {
      {"assign", simple([](const v& in) { return in[0]; })},
      {"add", simple([](const v& in) { return ops::add(in[0], in[1]); })},
      {"subtract", binary([](double a, double b) { return a - b; })},
      {"multiply", simple([](const v& in) { return ops::multiply(in[0], in[1]); })},
      {"divide", binary([](double a, double b) { return a / b; })},
      {"add_n", simple([](const v& in) { return ops_a::add_n(in); })},
      {"relu", simple([](const v& in) { return ops::relu(in[0]); })},
      {"silu", simple([](const v& in) {
         return ops::elementwise({in[0]}, [](const std::vector<double>& a) { return ops_a::silu(a[0]); });
       })},
      {"gelu", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         const bool approximate = c.get_or("approximate", false);
         return v{ops::elementwise({in[0]}, [=](const std::vector<double>& a) { return gelu(a[0], approximate); })};
       })},
      // dropout(x) -> out, mask; dropout_grad(mask, out_grad) -> x_grad
      {"dropout", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         const auto mask = c.get<bool>("is_test") ? tensor(in[0].shape, 1.0) : dropout_mask(c, c.out.at(1), c.in_shapes[0], at);
         return v{dropped(c, in[0], mask), mask};
       })},
      {"dropout_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{dropped(c, in[1], in[0])};
       })},
      // fused_dropout_add(x, y) -> dropout(x) + y, seed_offset; its grad (seed_offset, out_grad)
      // -> x_grad, y_grad, the mask drawn again
      {"fused_dropout_add", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         const auto mask = c.get<bool>("is_test") ? tensor(in[0].shape, 1.0) : dropout_mask(c, c.out.at(0), c.in_shapes[0], at);
         tensor seed_offset({2});
         seed_offset.data = {static_cast<double>(c.get<std::int64_t>("seed")), 0.0};
         return v{ops::add(dropped(c, in[0], mask), in[1]), seed_offset};
       })},
      {"fused_dropout_add_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         const auto mask = c.get<bool>("is_test") ? tensor(in[1].shape, 1.0) : dropout_mask(c, c.out.at(0), c.out_shapes[0], at);
         return v{dropped(c, in[1], mask), in[1]};
       })},
      {"scale", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops_a::scale(in[0], c.get<double>("scale"), c.get<double>("bias"), c.get<bool>("bias_after_scale"))};
       })},
      {"softmax", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::softmax(in[0], c.get<std::int64_t>("axis"))};
       })},
      {"softmax_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::softmax_grad(in[0], in[1], c.get<std::int64_t>("axis"), false)};
       })},
      {"transpose", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::transpose(in[0], perm_of(c))};
       })},
      {"transpose_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::transpose(in[0], ops::inverse_perm(perm_of(c)))};
       })},
      {"reshape", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::reshape(in[0], c.local_out(0, at))};
       })},
      {"reshape_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::reshape(in[1], c.local_out(0, at))};
       })},
      {"split", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         const auto axis = c.get<std::int64_t>("axis");
         const auto a = ops::normalize_axis(axis, in[0].rank());
         std::vector<std::int64_t> sizes;
         for (std::size_t o = 0; o < c.out_shapes.size(); ++o) sizes.push_back(c.local_out(o, at).at(a));
         return ops::split(in[0], sizes, axis);
       })},
      {"concat", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::concat(in, c.get<std::int64_t>("axis"))};
       })},
      {"matmul", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::matmul(in[0], in[1], c.get<bool>("trans_x"), c.get<bool>("trans_y"))};
       })},
      {"matmul_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         const auto g = ops::matmul_grad(in[0], in[1], in[2], c.get<bool>("trans_x"), c.get<bool>("trans_y"));
         return v{g.dx, g.dy};
       })},
      {"layer_norm", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         const auto r = ops::layer_norm(in[0], in[1], in[2], c.get<std::int64_t>("begin_norm_axis"), c.get<double>("epsilon"));
         return v{r.out, r.mean, r.variance};
       })},
      {"layer_norm_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         const auto bna = ops::normalize_axis(c.get<std::int64_t>("begin_norm_axis"), in[0].rank());
         return ops_a::layer_norm_grad(in[0], in[1], in[3], in[4], in[5], bna, c.get<double>("epsilon"));
       })},
      {"rms_norm", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         const auto r = ops_a::rms_norm(in[0], in[1], c.get<double>("epsilon"));
         return v{r.out, r.invvar};
       })},
      {"rms_norm_grad", several([](const v& in) { return ops_a::rms_norm_grad(in[0], in[1], in[2], in[3]); })},
      {"gelu_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         if (c.get_or("approximate", false)) throw oracle_error("gelu_grad: the tanh approximation has no kernel");
         return v{ops_a::gelu_grad(in[0], in[1])};
       })},
      {"relu_grad", simple([](const v& in) { return ops_a::relu_grad(in[0], in[1]); })},
      {"silu_grad", simple([](const v& in) { return ops_a::silu_grad(in[0], in[0], in[1]); })},
      {"sigmoid", simple([](const v& in) {
         return ops::elementwise({in[0]}, [](const std::vector<double>& a) { return ops_a::sigmoid(a[0]); });
       })},
      {"sigmoid_grad", simple([](const v& in) {
         return ops::elementwise({in[0], in[1]}, [](const std::vector<double>& a) { return a[1] * a[0] * (1 - a[0]); });
       })},
      {"subtract_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         const auto dy = ops::elementwise({in[2]}, [](const std::vector<double>& a) { return -a[0]; });
         return v{ops_a::sum_to(in[2], c.local_in(0, at)), ops_a::sum_to(dy, c.local_in(1, at))};
       })},
      {"divide_grad", several([](const v& in) {
         const auto out = ops::elementwise({in[0], in[1]}, [](const std::vector<double>& a) { return a[0] / a[1]; });
         return ops_a::divide_grad(in[0], in[1], out, in[2]);
       })},
      {"sum", reduction(ops::reduce_kind::sum)},
      {"mean", reduction(ops::reduce_kind::mean)},
      {"max", reduction(ops::reduce_kind::max)},
      {"min", reduction(ops::reduce_kind::min)},
      {"sum_grad", reduction_grad(ops::reduction_grad_kind::sum)},
      {"mean_grad", reduction_grad(ops::reduction_grad_kind::mean)},
      {"max_grad", reduction_grad(ops::reduction_grad_kind::max)},
      {"min_grad", reduction_grad(ops::reduction_grad_kind::max)},
      {"squeeze", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::reshape(in[0], c.local_out(0, at))};
       })},
      {"unsqueeze", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::reshape(in[0], c.local_out(0, at))};
       })},
      {"squeeze_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::reshape(in[1], c.local_out(0, at))};
       })},
      {"unsqueeze_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::reshape(in[1], c.local_out(0, at))};
       })},
      {"cumsum", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::cumsum(in[0], c.get<std::int64_t>("axis"), c.get<bool>("flatten"), c.get<bool>("exclusive"),
                              c.get<bool>("reverse"))};
       })},
      {"cumsum_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         return v{ops::cumsum_grad(in[0], in[1], c.get<std::int64_t>("axis"), c.get<bool>("flatten"),
                                   c.get<bool>("exclusive"), c.get<bool>("reverse"))};
       })},
      {"add_grad", several([](const v& in) { return ops_a::add_grad(in[0], in[1], in[2]); })},
      {"multiply_grad", several([](const v& in) { return ops_a::multiply_grad(in[0], in[1], in[2]); })},
      {"swiglu_grad", several([](const v& in) {
         if (in[1].rank() == 0) return v{ops_a::swiglu_grad(in[0], in[2]), tensor(shape_t{})};
         const auto dx = ops::elementwise({in[0], in[1], in[2]}, [](const std::vector<double>& a) {
           const double s = ops_a::sigmoid(a[0]);
           return s * (1 + a[0] * (1 - s)) * a[1] * a[2];
         });
         const auto dy = ops::elementwise({in[0], in[2]}, [](const std::vector<double>& a) { return ops_a::silu(a[0]) * a[1]; });
         return v{dx, dy};
       })},
      {"fused_rope", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         const auto o = rope_of(c);
         return v{ops::rope(in[0], in[3], in[4], in[5], o), ops::rope(in[1], in[3], in[4], in[5], o),
                  ops::rope(in[2], in[3], in[4], in[5], o)};
       })},
      {"fused_rope_grad", each_device([](const kernel_call& c, const shape_t&, const v& in) {
         const auto o = rope_of(c);
         return v{ops::rope_grad(in[3], in[0], in[1], in[2], o), ops::rope_grad(in[4], in[0], in[1], in[2], o),
                  ops::rope_grad(in[5], in[0], in[1], in[2], o)};
       })},
      {"swiglu", simple([](const v& in) { return in.size() > 1 && in[1].rank() > 0 ? ops_a::swiglu(in[0], in[1]) : ops_a::swiglu(in[0]); })},
      {"flash_attention", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         if (c.get<double>("dropout") != 0.0) throw oracle_error("flash_attention: dropout has no kernel");
         const tensor mask = in.size() > 4 ? in[4] : tensor(shape_t{});
         const auto r = ops::attention(in[0], in[1], in[2], mask, c.get<bool>("causal"), query_offset(c.in[0], at, in[0]),
                                       c.balanced_devices());
         v out{r.out, r.softmax, r.lse, tensor(c.local_out(3, at))};
         if (out[1].shape != c.local_out(1, at)) out[1] = tensor(c.local_out(1, at));  // not returned
         return out;
       })},
      {"flash_attention_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         if (c.get<double>("dropout") != 0.0) throw oracle_error("flash_attention_grad: dropout has no kernel");
         const auto r = ops::attention_grad(in[0], in[1], in[2], in[6], in[7], c.get<bool>("causal"),
                                            query_offset(c.in[0], at, in[0]), c.balanced_devices());
         return v{r.dq, r.dk, r.dv};
       })},
      {"embedding", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::embedding(in[0], in[1], c.get<std::int64_t>("padding_idx"), row_offset(c.in[1], at, in[1].shape.at(0)))};
       })},
      {"embedding_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::embedding_grad(in[0], in[2], in[1].shape.at(0), c.get<std::int64_t>("padding_idx"),
                                      row_offset(c.in[1], at, in[1].shape.at(0)))};
       })},
      {"c_embedding", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::embedding(in[1], in[0], -1, row_offset(c.in[0], at, in[0].shape.at(0)))};
       })},
      {"c_embedding_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         return v{ops::embedding_grad(in[1], in[2], in[0].shape.at(0), -1, row_offset(c.in[0], at, in[0].shape.at(0)))};
       })},
      // Mixture of experts (ops_moe.hpp): x, gate_logits -> y [E, C, H], combine_weights, scatter_index
      // [k, S], expert_offset (summed over blocks), expert_id; each block of tokens its own
      // capacity / (its devices' blocks) slots.
      {"moe_gate_dispatch", by_token_blocks(0, {0, 0}, {1, 0, 1, -1, 0}, [](const kernel_call& c, const v& in, std::int64_t blocks) {
         const auto capacity = c.get<std::int64_t>("capacity") / (c.in.at(0).parts(0) * blocks);
         const auto r = ops::moe_gate_dispatch(in[0], in[1], c.get<std::int64_t>("k"), capacity);
         return v{r.y, r.combine_weights, r.scatter_index, r.expert_offset, r.expert_id};
       })},
      {"moe_gate_dispatch_grad", by_token_blocks(0, {0, 1, 0, 1, 0}, {0, 0}, [](const kernel_call&, const v& in, std::int64_t) {
         return ops::moe_gate_dispatch_grad(in[0], in[1], in[2], in[3], in[4]);
       })},
      {"moe_combine", by_token_blocks(1, {0, 0, 0}, {0}, [](const kernel_call&, const v& in, std::int64_t) {
         return v{ops::moe_combine(in[0], in[1], in[2])};
       })},
      {"moe_combine_grad", by_token_blocks(1, {0, 0, 0, 0}, {0, 0, 0}, [](const kernel_call&, const v& in, std::int64_t) {
         return ops::moe_combine_grad(in[0], in[1], in[2], in[3]);
       })},
      {"c_softmax_with_cross_entropy", [](const kernel_call& c, const device_tensors& in) {
         return c_softmax_cross_entropy(c.in[0], c.get<std::int64_t>("ignore_index"), in);
       }},
      {"c_softmax_with_cross_entropy_grad", each_device([](const kernel_call& c, const shape_t& at, const v& in) {
         const auto last = c.in[0].rank() - 1;
         const auto offset = block_on(c.in[0], last, at).index * in[0].shape.back();
         return v{ops::cross_entropy_grad(in[1], in[0], in[2], -1, false, true, c.get<std::int64_t>("ignore_index"), offset)};
       })},
      {"adam", adam(false)},
      {"adamw", adam(true)},
  };
  return t;
}

}  // namespace detail

/// The kernel of rule `rule`; `oracle_error` if there is none.
inline const step_kernel& kernel_of(std::string_view rule) {
  const auto& t = detail::table();
  const auto it = t.find(rule);
  if (it == t.end()) throw oracle_error("no kernel for rule " + std::string(rule));
  return it->second;
}

/// The values an input must hold.
struct domain {
  enum kind_t { any, index, positive, power } kind = any;
  std::int64_t bound = 0;  ///< (index) the values are in [0, bound)
};

/// The domain of input `k` of an operator of rule `rule` whose inputs have global shapes `shapes`.
inline domain input_domain(std::string_view rule, std::size_t k, const std::vector<shape_t>& shapes) {
  const auto rows = [&](std::size_t i) { return shapes.at(i).empty() ? 0 : shapes[i][0]; };
  const auto last = [&](std::size_t i) { return shapes.at(i).empty() ? 0 : shapes[i].back(); };
  if ((rule == "embedding" || rule == "embedding_grad") && k == 0) return {domain::index, rows(1)};
  if ((rule == "c_embedding" || rule == "c_embedding_grad") && k == 1) return {domain::index, rows(0)};
  if ((rule == "c_softmax_with_cross_entropy" || rule == "c_softmax_with_cross_entropy_grad") && k == 1)
    return {domain::index, last(0)};
  // sin / cos tables: [rows, d] or [1, rows, 1, d]
  const auto table_rows = [&](std::size_t i) { return shapes.at(i).size() == 4 ? shapes[i][1] : rows(i); };
  if (rule == "fused_rope" && k == 5) return {domain::index, table_rows(3)};
  if (rule == "fused_rope_grad" && k == 2) return {domain::index, table_rows(0)};
  if (rule == "adam" || rule == "adamw") {
    if (k == 2 || k == 4 || k == 5) return {domain::positive, 0};
    if (k == 6 || k == 7) return {domain::power, 0};
  }
  return {};
}

}  // namespace ctspmd_oracle::step

#endif
