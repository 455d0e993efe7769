// Einsum rules at run time: einsum<"..."> and dynamic_einsum (the notation as an attribute), the
// notation's errors, and the forward -> backward round trip.
#include <ctspmd/ctspmd.hpp>
#include <ctspmd/rules/einsum.hpp>

#include <doctest/doctest.h>

#include "../static_tests/test_support.hpp"
#include "check_error.hpp"
#include "roundtrip.hpp"

#include <string>
#include <vector>

// Named for this file: the runtime tests are compiled as unity builds (runtime_tests/CMakeLists.txt).
namespace einsum_test {

using namespace ctspmd;
using ctspmd_test::check_error;
using rules::dynamic_einsum;

const process_mesh mesh({2, 3});
const ctspmd_test::on_mesh spec{mesh};

TEST_CASE("einsum forward and backward") {
  using proj = rules::einsum<"bsh,hd->bsd">;
  const auto row_par = proj::infer_forward({spec({4, 16, 32}, {0, -1, 1}), spec({32, 64}, {-1, -1})});
  CHECK(row_par.inputs[1].dims_mapping() == dims_mapping{1, -1});
  CHECK(row_par.outputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(row_par.outputs[0].partial_dims() == mesh_dims{1});

  // The same notation given at run time gives the same answer.
  const std::string notation = "bsh,hd->bsd";
  CHECK(dynamic_einsum::infer_forward({spec({4, 16, 32}, {0, -1, 1}), spec({32, 64}, {-1, -1})}, {.notation = notation}) ==
        row_par);

  const auto back = proj::infer_backward({spec({4, 16, 32}, {-1, -1, 1}), spec({32, 64}, {0, -1})},
                                         {spec({4, 16, 64}, {0, -1, 1})});
  CHECK(back.inputs[0].dims_mapping() == dims_mapping{0, -1, -1});
  CHECK(back.inputs[1].dims_mapping() == dims_mapping{-1, 1});
}

TEST_CASE("einsum errors") {
  const auto x = spec({4, 8}, {-1, -1});
  const auto y = spec({8, 6}, {-1, -1});
  auto fwd = [&](std::string notation) { (void)dynamic_einsum::infer_forward({x, y}, {.notation = notation}); };
  check_error([&] { fwd("mk,kn-.mn"); }, error_kind::invalid_argument,
              "einsum: notation position 5: '-' is not an axis label (a-z, A-Z, '1'), ',' before the '->', or '->'");
  check_error([&] { fwd("mk,kn"); }, error_kind::invalid_argument, "notation position 5: no '->' before the output");
  check_error([&] { fwd("mk,kn->mn->"); }, error_kind::invalid_argument, "notation position 9: a second '->'");
  check_error([&] { fwd("mk,kn->mz"); }, error_kind::invalid_argument, "position 8: output label 'z' occurs in no input");
  check_error([&] { fwd("mm,kn->mn"); }, error_kind::invalid_argument, "position 1: label 'm' appears twice in one operand");
  check_error([&] { fwd("abcdefghij,a->a"); }, error_kind::invalid_argument, "more than max_rank = 9 labels");
  check_error([&] { fwd("mkj,kn->mn"); }, error_kind::invalid_argument,
              "einsum: input 0 has rank 2 but the notation gives it 3 labels");
  check_error([&] { fwd("mk->m"); }, error_kind::invalid_argument, "einsum: expects 1 input, got 2");
  check_error([&] { (void)dynamic_einsum::infer_forward({spec({4, 8}, {-1, 0}), spec({8, 6}, {1, -1})}, {.notation = "mk,kn->mn"}); },
              error_kind::unimplemented, "tensor axis 'k' is sharded by two different mesh dims");
  check_error([&] { (void)dynamic_einsum::infer_backward({x, y}, {spec({4}, {-1})}, {.notation = "mk,kn->mn"}); },
              error_kind::invalid_argument, "output 0 has rank 1 but the notation gives it 2 labels");
}

TEST_CASE("einsum forward -> backward round trip") {
  // Generated notations over the letters a-f: two or three inputs of rank 1-4, the output a
  // subset of the inputs' letters; sizes 4, sometimes 1.
  ctspmd_test::rng r(5);
  int checked = 0;
  constexpr int cases = 600;
  for (int n = 0; n < cases; ++n) {
    const auto mesh_ndim = r.uniform(1, 3);
    const process_mesh m(tensor_shape(static_cast<std::size_t>(mesh_ndim), 2));
    std::int64_t size[6];
    for (auto& s : size) s = r.uniform(0, 4) == 0 ? 1 : 4;
    const auto n_inputs = r.uniform(2, 3);
    std::string notation, used;
    std::vector<dist_tensor_spec> in;
    for (std::int64_t i = 0; i < n_inputs; ++i) {
      std::string labels;
      const auto rank = r.uniform(1, 4);
      for (std::int64_t d = 0; d < rank; ++d) {
        const char c = static_cast<char>('a' + r.uniform(0, 5));
        if (labels.find(c) == std::string::npos) labels.push_back(c);
      }
      tensor_shape shape;
      for (char c : labels) shape.push_back(size[c - 'a']);
      in.push_back({shape, {m, ctspmd_test::random_dims_mapping(r, labels.size(), mesh_ndim)}});
      notation += (i ? "," : "") + labels;
      used += labels;
    }
    std::string out;
    tensor_shape out_shape;
    for (char c = 'a'; c <= 'f'; ++c)
      if (used.find(c) != std::string::npos && r.coin() && out.size() < max_rank) {
        out.push_back(c);
        out_shape.push_back(size[c - 'a']);
      }
    notation += "->" + out;
    const std::vector<tensor_shape> outs{out_shape};
    if (ctspmd_test::check_roundtrip<dynamic_einsum>(in, outs, {.notation = notation})) ++checked;
  }
  MESSAGE("einsum round trip: ", checked, " accepted cases of ", cases);
  CHECK(checked > cases / 3);
}

}  // namespace einsum_test
