// A project that uses an installed ctspmd through find_package(ctspmd).
#include <ctspmd/ctspmd.hpp>

#include <cstdio>

namespace {
constexpr ctspmd::process_mesh mesh({2, 4});
constexpr ctspmd::dist_tensor_spec x({8, 16}, {mesh, {0, -1}});
constexpr ctspmd::dist_tensor_spec w({1000, 64}, {mesh, {-1, 1}});
constexpr auto info = ctspmd::rules::embedding::infer_forward({x, w});
static_assert(info.outputs[0].dims_mapping() == ctspmd::dims_mapping{0, -1, 1});
}  // namespace

int main() {
  const auto runtime = ctspmd::rules::embedding::infer_forward({x, w});
  std::printf("consumer: out dims mapping [%lld, %lld, %lld]\n",
              static_cast<long long>(runtime.outputs[0].dims_mapping()[0]),
              static_cast<long long>(runtime.outputs[0].dims_mapping()[1]),
              static_cast<long long>(runtime.outputs[0].dims_mapping()[2]));
  return runtime == info ? 0 : 1;
}
