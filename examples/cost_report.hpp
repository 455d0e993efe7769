// Prints a training step's cost report (<ctspmd/model/cost.hpp>): memory per device by category
// and its peak, FLOPs, and time on the cluster the report was computed for.
#ifndef CTSPMD_EXAMPLES_COST_REPORT_HPP
#define CTSPMD_EXAMPLES_COST_REPORT_HPP

#include <ctspmd/model/cost.hpp>

#include <cstdio>

namespace example {

template <class Plan>
void print_cost(const char* title, const Plan& step, const ctspmd::model::step_cost& c) {
  using ctspmd::model::phase;
  const double gib = static_cast<double>(ctspmd::model::GiB);
  const auto& m = c.memory();
  const auto peak_op = step.op_at(m.peak_op).name();
  const auto peak_phase = to_string(m.peak_phase);
  std::printf("-- %s\n", title);
  std::printf("memory per device (GiB): parameters %.2f, gradients %.2f, optimizer states %.2f, "
              "activations kept %.2f; peak %.2f at %.*s operator %zu '%.*s'\n",
              static_cast<double>(m.parameters) / gib, static_cast<double>(m.gradients) / gib,
              static_cast<double>(m.optimizer_states) / gib, static_cast<double>(m.activations) / gib,
              static_cast<double>(m.peak) / gib, static_cast<int>(peak_phase.size()), peak_phase.data(), m.peak_op,
              static_cast<int>(peak_op.size()), peak_op.data());
  std::printf("TFLOPs per device: forward %.1f, backward %.1f, recomputed %.1f, optimizer %.3f\n",
              static_cast<double>(c.flops(phase::forward)) / 1e12, static_cast<double>(c.flops(phase::backward)) / 1e12,
              static_cast<double>(c.recompute_flops()) / 1e12, static_cast<double>(c.flops(phase::optimizer)) / 1e12);
  std::printf("time (ms): compute %.1f, communication %.1f (forward %.1f, backward %.1f, optimizer %.1f); "
              "step %.1f without overlap (MFU %.1f%%), %.1f overlapped (MFU %.1f%%)\n\n",
              1e3 * c.compute_seconds(), 1e3 * c.communication_seconds(), 1e3 * c.communication_seconds(phase::forward),
              1e3 * c.communication_seconds(phase::backward), 1e3 * c.communication_seconds(phase::optimizer),
              1e3 * c.step_seconds(), 100 * c.mfu(), 1e3 * c.overlapped_step_seconds(), 100 * c.overlapped_mfu());
}

}  // namespace example

#endif
