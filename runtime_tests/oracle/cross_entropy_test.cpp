// The oracle on cross_entropy_with_softmax. With the class axis replicated every device runs
// the operator on its local rows. With the class axis sharded (vocabulary parallelism), the
// rule claims the layout of Paddle's c_softmax_with_cross_entropy: each device holds a slice
// of the classes and the kernel uses collectives across that mesh dim, so every device ends
// with its slice of softmax_out and the complete loss. The simulator runs that kernel.
#include "harness.hpp"

#include <cmath>
#include <limits>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace oracle_cross_entropy_test {

using namespace ctspmd_oracle;
using ctspmd::process_mesh;
using rule = ctspmd::rules::cross_entropy_with_softmax;

/// c_softmax_with_cross_entropy across the devices that differ only on the mesh dims that split
/// the (last) class axis: all-reduce max of the logits, all-reduce sum of their exponentials,
/// and all-reduce sum of the picked logit (held by the device whose classes contain the label;
/// the others contribute 0).
device_tensors vocab_parallel(const ctspmd::spmd_info& info, const device_tensors& in, std::int64_t ignore_index) {
  const auto& mesh = info.inputs[0].process_mesh();
  const auto devices = to_size(mesh.size());
  const auto classes = in[0][0].shape.back();
  const auto rows = in[0][0].size() / to_size(classes);
  const auto class_axis = info.inputs[0].rank() - 1;
  auto group_of = [&](std::size_t dev) {  // the group's first device: coordinate 0 on the class axis' mesh dims
    auto c = device_coords(mesh, to_int(dev));
    for (auto m : info.inputs[0].mesh_dims_of(class_axis)) c[to_size(m)] = 0;
    return to_size(device_index(mesh, c));
  };
  std::vector<std::vector<double>> gmax(devices, std::vector<double>(rows, -std::numeric_limits<double>::infinity()));
  std::vector<std::vector<double>> gsum(devices, std::vector<double>(rows, 0.0));
  std::vector<std::vector<double>> gpick(devices, std::vector<double>(rows, 0.0));
  for (std::size_t dev = 0; dev < devices; ++dev)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < classes; ++k)
        gmax[group_of(dev)][r] = std::max(gmax[group_of(dev)][r], in[dev][0].data[r * to_size(classes) + to_size(k)]);
  for (std::size_t dev = 0; dev < devices; ++dev) {
    const auto offset = block_on(info.inputs[0], class_axis, device_coords(mesh, to_int(dev))).index * classes;
    for (std::size_t r = 0; r < rows; ++r) {
      const auto& x = in[dev][0].data;
      for (std::int64_t k = 0; k < classes; ++k)
        gsum[group_of(dev)][r] += std::exp(x[r * to_size(classes) + to_size(k)] - gmax[group_of(dev)][r]);
      const auto l = ops::as_index(in[dev][1].data[r]) - offset;
      if (l >= 0 && l < classes) gpick[group_of(dev)][r] += x[r * to_size(classes) + to_size(l)];
    }
  }
  device_tensors out;
  for (std::size_t dev = 0; dev < devices; ++dev) {
    const auto g = group_of(dev);
    tensor softmax_out = in[dev][0];
    tensor loss = in[dev][1];
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < classes; ++k) {
        auto& v = softmax_out.data[r * to_size(classes) + to_size(k)];
        v = std::exp(v - gmax[g][r]) / gsum[g][r];
      }
      loss.data[r] = ops::as_index(in[dev][1].data[r]) == ignore_index
                         ? 0.0
                         : std::log(gsum[g][r]) + gmax[g][r] - gpick[g][r];
    }
    out.push_back({softmax_out, loss});
  }
  return out;
}

mesh_kernel cross_entropy_kernel(const rule::attributes& attrs) {
  return [attrs](const ctspmd::spmd_info& info, const device_tensors& in) {
    const auto rank = in[0][0].rank();
    const auto axis = ops::normalize_axis(attrs.axis, rank);
    if (!info.inputs[0].mesh_dims_of(axis).empty()) {
      if (attrs.soft_label || !attrs.use_softmax || to_int(axis) != rank - 1)
        throw oracle_error("the class axis is sharded, but c_softmax_with_cross_entropy needs hard labels, the class "
                           "axis last and use_softmax");
      return vocab_parallel(info, in, attrs.ignore_index);
    }
    device_tensors out;
    for (const auto& local : in) {
      auto r = ops::cross_entropy(local[0], local[1], attrs.axis, attrs.soft_label, attrs.use_softmax,
                                  attrs.ignore_index);
      out.push_back({r.softmax_out, r.loss});
    }
    return out;
  };
}

/// Logits (use_softmax) or probabilities along `axis`; hard labels (class indices, the
/// ignore index now and then) or soft ones (distributions).
std::vector<tensor> cross_entropy_inputs(const shape_t& xs, const shape_t& ls, const rule::attributes& attrs, rng& g) {
  tensor x = random_tensor(xs, g, -3.0, 3.0);
  if (!attrs.use_softmax) x = ops::softmax(x, attrs.axis);
  tensor label(ls);
  if (attrs.soft_label) {
    label = ops::softmax(random_tensor(ls, g), attrs.axis);
  } else {
    const auto classes = xs[ops::normalize_axis(attrs.axis, to_int(xs.size()))];
    for (auto& v : label.data)
      v = static_cast<double>(attrs.ignore_index >= 0 && g.one_in(5) ? attrs.ignore_index : g.uniform(0, classes - 1));
  }
  return {x, label};
}

TEST_CASE("oracle: cross_entropy_with_softmax") {
  rule_stats st{"cross_entropy_with_softmax"};
  rng g(0x63726f7373ULL);
  const std::string letters = "abc";
  for (const auto& ms : meshes()) {
    const process_mesh mesh = make_mesh(ms);
    for (std::size_t rank = 1; rank <= 3; ++rank)
      for (std::size_t a = 0; a < rank; ++a)
        for (int flags = 0; flags < 8; ++flags) {
          rule::attributes attrs;
          attrs.axis = g.coin() ? to_int(a) : to_int(a) - to_int(rank);
          attrs.soft_label = (flags & 1) != 0;
          attrs.use_softmax = (flags & 2) == 0;
          attrs.ignore_index = (flags & 4) != 0 ? 1 : -100;
          if (attrs.soft_label && attrs.ignore_index != -100) continue;  // ignore_index is for hard labels
          std::string xl = letters.substr(0, rank);
          xl[a] = 'k';
          std::string ll = xl;
          if (!attrs.soft_label) ll[a] = '1';
          std::string loss_l = xl;
          loss_l[a] = '1';
          const std::string sm_l = attrs.use_softmax ? xl : "";
          const std::string what = "cross_entropy_with_softmax " + mesh_string(mesh) + " axis " +
                                   std::to_string(attrs.axis) + " soft_label " + std::to_string(attrs.soft_label) +
                                   " use_softmax " + std::to_string(attrs.use_softmax) + " ignore_index " +
                                   std::to_string(attrs.ignore_index);
          auto make_case = [&](const std::map<char, std::int64_t>& sizes_in) {
            auto sizes = sizes_in;
            if (sizes['k'] < 2) sizes['k'] = 2;  // classes 0 and 1 (the ignore index)
            const shape_t xs = shape_of(xl, sizes), ls = shape_of(ll, sizes);
            op_case c{cross_entropy_inputs(xs, ls, attrs, g), {}, cross_entropy_kernel(attrs), what};
            auto r = ops::cross_entropy(c.values[0], c.values[1], attrs.axis, attrs.soft_label, attrs.use_softmax,
                                        attrs.ignore_index);
            // Without use_softmax, softmax_out is a 0-d placeholder: not compared.
            if (attrs.use_softmax)
              c.expected.emplace_back(r.softmax_out);
            else
              c.expected.emplace_back(std::nullopt);
            c.expected.emplace_back(r.loss);
            return c;
          };
          for (const auto& ls : layouts(mesh.ndim(), {rank, rank}, {reduce_type::sum, reduce_type::max}, 20, g)) {
            const auto c = make_case(label_sizes(mesh, {xl, ll}, ls, g));
            check_forward<rule>(st, make_specs(mesh, {c.values[0].shape, c.values[1].shape}, ls), attrs, c, g);
          }
          for (const auto& ls : layouts(mesh.ndim(), {sm_l.size(), rank}, {}, 10, g)) {
            const auto c = make_case(label_sizes(mesh, {sm_l, loss_l, xl, ll}, ls, g));
            const shape_t sm_shape = attrs.use_softmax ? c.values[0].shape : shape_t{};
            const shape_t loss_shape = c.expected[1]->shape;
            const auto in = replicated_specs(mesh, {c.values[0].shape, c.values[1].shape});
            const auto out = make_specs(mesh, {sm_shape, loss_shape}, ls);
            check_backward<rule>(st, in, out, attrs, c, g);
          }
        }
  }
  st.report();
}

}  // namespace oracle_cross_entropy_test
