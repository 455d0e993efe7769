#ifndef CTSPMD_TOOLS_REQUESTS_SVG_REPORT_HPP
#define CTSPMD_TOOLS_REQUESTS_SVG_REPORT_HPP
// A picture of a plan answer (plan_request.cpp): an SVG document with the collectives by phase
// and mesh dim, and, when the answer has a cost, memory per device by category and the step's
// time. Every bar carries its figure exactly, as data attributes (data-bytes, data-count,
// data-seconds) and a <title> tooltip, so a test (or a script) can read the numbers back;
// the labels round them for people.
//
// Collectives come from the cost when the answer has one (which counts a recomputed forward's,
// fused kernels' and ZeRO-3's gathers too), else from the reshard list. Bar lengths are relative
// to the largest bar of their section.
//
// With a pipeline, the memory and time are the stages' (`pipeline_sections`): each stage's memory
// beside the device's capacity, each stage's time (its micro-batches' compute, exposed
// collectives and sends, and its optimizer step) and the pipeline's step time; and its schedule:
// a row per stage, a box per micro-batch's forward and backward pass through it (a chunk's,
// interleaved), each at the time a simulation of the schedule starts it (data-start, data-end).
// Every stage takes the slowest stage's micro-batch time there, as the step time does, split
// 1 : 2 between the forward and backward pass (their FLOPs' ratio) and by the chunks; a pass
// starts when its stage is free and the pass before it in the pipeline has ended.

#include <nlohmann/json.hpp>

#include <ctspmd/model/pipeline.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace ctspmd_requests {

namespace svg {

inline std::string escape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    // Nor U+FFFE and U+FFFF (UTF-8 EF BF BE, EF BF BF).
    if (static_cast<unsigned char>(c) == 0xef && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0xbf &&
        (static_cast<unsigned char>(text[i + 2]) == 0xbe || static_cast<unsigned char>(text[i + 2]) == 0xbf)) {
      out += '?';
      i += 2;
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 admits no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

/// `bytes` for people: "512 B", "1.50 KiB", ..., "2.25 GiB".
inline std::string bytes_text(std::int64_t bytes) {
  if (bytes < 0) return "unknown size";
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buffer;
}
inline std::string seconds_text(double s) {
  char buffer[48];
  if (s >= 1)
    std::snprintf(buffer, sizeof buffer, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buffer, sizeof buffer, "%.3f ms", s * 1e3);
  else
    std::snprintf(buffer, sizeof buffer, "%.3f us", s * 1e6);
  return buffer;
}
/// A number exactly as JSON writes it (integers as integers, doubles round-tripping).
inline std::string exact(const nlohmann::json& v) { return v.dump(); }

struct bar {
  std::string label;       ///< the text beside the bar
  std::string attributes;  ///< data-* attributes, already formatted
  std::string tooltip;
  double value = 0;        ///< its length's measure
  std::string color;
};

/// The document being written: sections of bars, one under the other.
class document {
 public:
  void title(const std::string& text) {
    body_ += "<text x=\"16\" y=\"" + std::to_string(y_ + 20) + "\" class=\"title\">" + escape(text) + "</text>\n";
    y_ += 32;
  }
  void line(const std::string& text) {
    body_ += "<text x=\"16\" y=\"" + std::to_string(y_ + 14) + "\">" + escape(text) + "</text>\n";
    y_ += 20;
  }
  void heading(const std::string& text) {
    y_ += 8;
    body_ += "<text x=\"16\" y=\"" + std::to_string(y_ + 16) + "\" class=\"heading\">" + escape(text) + "</text>\n";
    y_ += 26;
  }
  /// A group of bars, lengths relative to the largest.
  void bars(const std::string& group, const std::vector<bar>& list) {
    double most = 0;
    for (const auto& b : list) most = std::max(most, b.value);
    body_ += "<g class=\"" + escape(group) + "\">\n";
    for (const auto& b : list) {
      const double length = most > 0 ? 1 + (bar_width - 1) * b.value / most : 1;
      char geometry[96];
      std::snprintf(geometry, sizeof geometry, "x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\"", bar_x, y_, length);
      body_ += "<rect " + std::string(geometry) + " fill=\"" + b.color + "\" " + b.attributes + "><title>" +
               escape(b.tooltip) + "</title></rect>\n";
      body_ += "<text x=\"16\" y=\"" + std::to_string(y_ + 13) + "\">" + escape(b.label) + "</text>\n";
      y_ += 22;
    }
    body_ += "</g>\n";
  }
  /// SVG elements `height` pixels tall, drawn at the current height (`y()`).
  void raw(const std::string& elements, int height) {
    body_ += elements;
    y_ += height;
  }
  int y() const { return y_; }
  std::string finish() const {
    const int height = y_ + 16;
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
           std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
           "\" font-family=\"sans-serif\" font-size=\"12\">\n"
           "<style>.title { font-size: 16px; font-weight: bold; } .heading { font-size: 14px; font-weight: bold; }</style>\n"
           "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
           body_ + "</svg>\n";
  }

 private:
  static constexpr int width = 960, bar_x = 430, bar_width = 510;
  std::string body_;
  int y_ = 8;
};

inline constexpr const char* phase_colors[] = {"#4e79a7", "#f28e2b", "#59a14f"};

/// One pass of a micro-batch through a stage, as the schedule simulation places it.
struct pipeline_pass {
  std::int64_t stage = 0, micro_batch = 0, chunk = 0;
  bool backward = false;
  double start = 0, end = 0;
};

/// The passes of `m` micro-batches through `stage_seconds.size()` stages under `schedule`
/// ("gpipe", "1f1b" or "interleaved" with `v` chunks), each stage's micro-batch taking its
/// `stage_seconds` (see the file comment). The request was checked by `pipeline`: m is a
/// multiple of the stages when interleaved.
inline std::vector<pipeline_pass> simulate_pipeline(const std::string& schedule, std::int64_t m, std::int64_t v,
                                                    const std::vector<double>& stage_seconds) {
  const auto p = static_cast<std::int64_t>(stage_seconds.size());
  if (schedule != "interleaved") v = 1;
  const std::int64_t units = m * v;  // passes of each kind a stage runs
  // The k-th forward (or backward) unit of a stage: its micro-batch and chunk, Megatron's order
  // (p micro-batches through one chunk, then the next chunk; backward from the last chunk).
  const auto unit = [&](std::int64_t k, bool backward) {
    return std::pair{ctspmd::model::detail::pass_micro_batch(k, p, v), ctspmd::model::detail::pass_chunk(k, backward, p, v)};
  };
  struct order_item {
    std::int64_t k;
    bool backward;
  };
  std::vector<std::vector<order_item>> order(static_cast<std::size_t>(p));
  for (std::int64_t s = 0; s < p; ++s) {
    auto& list = order[static_cast<std::size_t>(s)];
    const auto kind = schedule == "gpipe"         ? ctspmd::model::pipeline_schedule::gpipe
                      : schedule == "interleaved" ? ctspmd::model::pipeline_schedule::interleaved
                                                  : ctspmd::model::pipeline_schedule::one_f_one_b;
    const std::int64_t warmup = ctspmd::model::detail::warmup_passes(kind, p, s, m, v);
    for (std::int64_t k = 0; k < warmup; ++k) list.push_back({k, false});
    for (std::int64_t k = 0; k < units - warmup; ++k) {
      list.push_back({warmup + k, false});
      list.push_back({k, true});
    }
    for (std::int64_t k = units - warmup; k < units; ++k) list.push_back({k, true});
  }
  // End times by (pass, micro-batch, virtual stage chunk·p + stage); -1 until run.
  const std::int64_t virtual_stages = p * v;
  std::vector<double> done(static_cast<std::size_t>(2 * m * virtual_stages), -1);
  const auto at = [&](bool backward, std::int64_t mb, std::int64_t vs) -> double& {
    return done[static_cast<std::size_t>(((backward ? 1 : 0) * m + mb) * virtual_stages + vs)];
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> free(static_cast<std::size_t>(p), 0);
  std::vector<pipeline_pass> passes;
  for (bool progress = true; progress;) {
    progress = false;
    for (std::int64_t s = 0; s < p; ++s) {
      const auto i = static_cast<std::size_t>(s);
      while (next[i] < order[i].size()) {
        const auto [k, backward] = order[i][next[i]];
        const auto [mb, chunk] = unit(k, backward);
        const std::int64_t vs = chunk * p + s;
        // The pass it waits for: the previous virtual stage's forward, the next one's backward
        // (the last virtual stage's backward follows its own forward).
        const double ready = !backward ? (vs == 0 ? 0 : at(false, mb, vs - 1))
                                       : (vs + 1 == virtual_stages ? at(false, mb, vs) : at(true, mb, vs + 1));
        if (ready < 0) break;
        const double seconds = stage_seconds[i] / static_cast<double>(v) * (backward ? 2.0 / 3 : 1.0 / 3);
        const double start = std::max(free[i], ready);
        free[i] = at(backward, mb, vs) = start + seconds;
        passes.push_back({s, mb, chunk, backward, start, start + seconds});
        ++next[i];
        progress = true;
      }
    }
  }
  return passes;
}

}  // namespace svg

/// The sections of a pipelined step's picture (`svg_report`): each stage's memory against the
/// device's capacity, where each stage's time goes, and the schedule at the pipeline's step time
/// (the one the report computes).
inline std::string pipeline_sections(svg::document& doc, const nlohmann::json& plan, const nlohmann::json& pipe) {
  using nlohmann::json;
  const json& stages = pipe.at("stages");
  const auto p = static_cast<std::int64_t>(stages.size());
  const auto m = pipe.at("micro_batches").get<std::int64_t>();
  const double capacity = pipe.value("memory_capacity", 0.0);

  // ---- memory of each stage ----
  doc.heading("Memory per device of each stage");
  std::vector<svg::bar> bars;
  if (capacity > 0) {
    svg::bar b;
    b.label = "device capacity: " + svg::bytes_text(static_cast<std::int64_t>(capacity));
    b.attributes = "data-capacity=\"" + svg::exact(json(capacity)) + "\"";
    b.tooltip = b.label;
    b.value = capacity;
    b.color = "#bab0ac";
    bars.push_back(b);
  }
  for (std::int64_t s = 0; s < p; ++s) {
    const json& st = stages.at(static_cast<std::size_t>(s));
    const auto bytes = st.at("memory").get<std::int64_t>();
    char in_flight[32];
    std::snprintf(in_flight, sizeof in_flight, "%g", st.at("in_flight").get<double>());
    svg::bar b;
    b.label = "stage " + std::to_string(s) + ": " + svg::bytes_text(bytes) + " (parameters " +
              svg::bytes_text(st.at("parameters").get<std::int64_t>()) + ", gradients " +
              svg::bytes_text(st.at("gradients").get<std::int64_t>()) + ", optimizer states " +
              svg::bytes_text(st.at("optimizer_states").get<std::int64_t>()) + ", activations " +
              svg::bytes_text(st.at("activations").get<std::int64_t>()) + " a micro-batch, " + in_flight + " in flight)";
    if (capacity > 0 && static_cast<double>(bytes) > capacity) b.label += ": over capacity";
    b.attributes = "data-stage=\"" + std::to_string(s) + "\" data-bytes=\"" + std::to_string(bytes) + "\"";
    b.tooltip = b.label;
    b.value = static_cast<double>(bytes);
    b.color = "#4e79a7";
    bars.push_back(b);
  }
  doc.bars("stage-memory", bars);

  // ---- where each stage's time goes ----
  const double step = pipe.at("step_seconds").get<double>();
  char heading[200];
  std::snprintf(heading, sizeof heading, "Step time %s (bubble %.1f%% of the ideal, MFU %.1f%%): each stage's time",
                svg::seconds_text(step).c_str(), 100 * pipe.at("bubble_fraction").get<double>(),
                100 * pipe.at("mfu").get<double>());
  doc.heading(heading);
  bars.clear();
  std::vector<double> stage_seconds;
  for (std::int64_t s = 0; s < p; ++s) {
    const json& st = stages.at(static_cast<std::size_t>(s));
    const double compute = st.at("compute_seconds").get<double>(), sends = st.at("send_seconds").get<double>();
    const double exposed = st.at("exposed_communication_seconds").get<double>();
    const double optimizer = st.at("optimizer_seconds").get<double>();
    stage_seconds.push_back(compute + exposed + sends);
    const double busy = static_cast<double>(m) * stage_seconds.back() + optimizer;
    svg::bar b;
    b.label = "stage " + std::to_string(s) + ": " + std::to_string(m) + " micro-batches x (compute " +
              svg::seconds_text(compute) + ", collectives " + svg::seconds_text(exposed) + ", sends " +
              svg::seconds_text(sends) + ") + optimizer " + svg::seconds_text(optimizer) + " = " + svg::seconds_text(busy);
    b.attributes = "data-stage=\"" + std::to_string(s) + "\" data-seconds=\"" + svg::exact(json(busy)) + "\"";
    b.tooltip = b.label;
    b.value = busy;
    b.color = svg::phase_colors[0];
    bars.push_back(b);
  }
  svg::bar total;
  total.label = "step: " + svg::seconds_text(step) + " (the slowest stage's micro-batches, the bubble, the slowest optimizer step)";
  total.attributes = "data-time=\"step_seconds\" data-seconds=\"" + svg::exact(pipe.at("step_seconds")) + "\"";
  total.tooltip = total.label;
  total.value = step;
  total.color = "#9c755f";
  bars.push_back(total);
  doc.bars("stage-time", bars);

  // ---- the schedule, every stage at the slowest stage's pace (as the step time takes it) ----
  const json& options = plan.at("pipeline");
  const std::string schedule = options.value("schedule", std::string("1f1b"));
  const std::int64_t chunks = options.value("chunks", std::int64_t{1});
  double slowest = 0, slowest_optimizer = 0;
  for (std::size_t s = 0; s < stage_seconds.size(); ++s) {
    slowest = std::max(slowest, stage_seconds[s]);
    slowest_optimizer = std::max(slowest_optimizer, stages.at(s).at("optimizer_seconds").get<double>());
  }
  doc.heading("Pipeline schedule (" + schedule + ", " + std::to_string(m) + " micro-batches)");
  // 2·m·v·p passes, each factor checked first (a request's m or v may be huge: no overflow)
  constexpr std::int64_t most_passes = 4096;
  const std::int64_t v = schedule == "interleaved" ? chunks : 1;
  if (m > most_passes || v > most_passes || 2 * m * v * p > most_passes) {
    doc.line("not drawn: more than " + std::to_string(most_passes) + " passes");
    return doc.finish();
  }
  const auto passes = svg::simulate_pipeline(schedule, m, chunks, std::vector<double>(stage_seconds.size(), slowest));
  double makespan = 0;
  for (const auto& q : passes) makespan = std::max(makespan, q.end);
  constexpr int left = 90, span = 850, row = 20;
  std::string elements = "<g class=\"pipeline\">\n";
  for (const auto& q : passes) {
    const double x = left + (makespan > 0 ? span * q.start / makespan : 0);
    const double w = std::max(1.0, makespan > 0 ? span * (q.end - q.start) / makespan : 1.0);
    const int y = doc.y() + static_cast<int>(q.stage) * row;
    const std::string what = std::string(q.backward ? "backward" : "forward") + " of micro-batch " +
                             std::to_string(q.micro_batch) +
                             (schedule == "interleaved" ? ", chunk " + std::to_string(q.chunk) : std::string()) +
                             " on stage " + std::to_string(q.stage) + ": " + svg::seconds_text(q.start) + " to " +
                             svg::seconds_text(q.end);
    char geometry[128];
    std::snprintf(geometry, sizeof geometry, "x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\"", x, y, w, row - 4);
    elements += std::string("<rect ") + geometry + " fill=\"" + svg::phase_colors[q.backward ? 1 : 0] +
                "\" stroke=\"white\" data-stage=\"" + std::to_string(q.stage) + "\" data-micro-batch=\"" +
                std::to_string(q.micro_batch) + "\" data-chunk=\"" + std::to_string(q.chunk) + "\" data-pass=\"" +
                (q.backward ? "backward" : "forward") + "\" data-start=\"" + svg::exact(q.start) +
                "\" data-end=\"" + svg::exact(q.end) + "\"><title>" + svg::escape(what) + "</title></rect>\n";
  }
  elements += "</g>\n";
  for (std::size_t s = 0; s < stage_seconds.size(); ++s)
    elements += "<text x=\"16\" y=\"" + std::to_string(doc.y() + static_cast<int>(s) * row + 12) + "\">stage " +
                std::to_string(s) + "</text>\n";
  doc.raw(elements, static_cast<int>(stage_seconds.size()) * row + 4);
  doc.line("forward passes blue, backward orange, each stage at the slowest stage's pace: the passes end at " +
           svg::seconds_text(makespan) + ", and the slowest optimizer step (" + svg::seconds_text(slowest_optimizer) +
           ") makes the step " + svg::seconds_text(makespan + slowest_optimizer));
  return doc.finish();
}

/// The picture of plan answer `answer` to plan `plan` (the request's "plan" value, already read
/// by `verify_plan`, so its mesh is valid).
inline std::string svg_report(const nlohmann::json& plan, const nlohmann::json& answer) {
  using nlohmann::json;
  std::vector<std::int64_t> mesh;
  for (const auto& s : plan.at("mesh")) mesh.push_back(s.get<std::int64_t>());
  const auto mesh_dim_name = [&](std::int64_t m) {
    if (plan.contains("mesh_names")) return plan.at("mesh_names").at(static_cast<std::size_t>(m)).get<std::string>();
    return "mesh dim " + std::to_string(m);
  };
  std::string mesh_text = "[";
  for (std::size_t m = 0; m < mesh.size(); ++m) {
    if (m > 0) mesh_text += ", ";
    if (plan.contains("mesh_names")) mesh_text += plan.at("mesh_names").at(m).get<std::string>() + " ";
    mesh_text += std::to_string(mesh[m]);
  }
  mesh_text += "]";

  svg::document doc;
  const bool has_cost = answer.contains("cost");
  const auto counted = [](std::size_t n, const std::string& what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  doc.title(std::string(plan.contains("training") ? "Training step" : "Plan") + " on mesh " + mesh_text + ": " +
            counted(answer.at("tensors").size(), "tensor") + ", " + counted(answer.at("reshards").size(), "reshard"));

  // ---- collectives: (phase, collective, mesh dim) -> count, bytes, seconds ----
  struct total {
    std::string phase, collective;
    std::int64_t mesh_dim = 0, count = 0, bytes = 0;
    json seconds;  ///< null without a cost
  };
  std::vector<total> totals;
  constexpr std::string_view phases[] = {"forward", "backward", "optimizer"};
  if (has_cost) {
    for (const auto& [ph, by_kind] : answer.at("cost").at("collectives").items())
      for (const auto& [kind, t] : by_kind.items())
        for (const auto& d : t.at("mesh_dims")) {
          if (kind.starts_with("local")) continue;  // sends nothing
          totals.push_back({ph, kind, d.at("mesh_dim").get<std::int64_t>(), d.at("count").get<std::int64_t>(),
                            d.at("bytes").get<std::int64_t>(), d.at("seconds")});
        }
  } else {
    for (const auto& s : answer.at("reshards")) {
      const auto& ph = s.at("phase").get_ref<const std::string&>();
      const auto& kind = s.at("collective").get_ref<const std::string&>();
      if (kind.starts_with("local")) continue;  // sends nothing
      const auto m = s.at("mesh_dim").get<std::int64_t>();
      const auto times = s.at("times").get<std::int64_t>(), bytes = s.at("bytes").get<std::int64_t>();
      auto it = std::find_if(totals.begin(), totals.end(),
                             [&](const total& t) { return t.phase == ph && t.collective == kind && t.mesh_dim == m; });
      if (it == totals.end()) it = totals.insert(totals.end(), total{ph, kind, m, 0, 0, json()});
      it->count += times;
      it->bytes = it->bytes < 0 || bytes < 0 ? -1 : it->bytes + bytes * times;
    }
  }
  doc.heading(!has_cost ? "Reshards a device sends, by phase and mesh dim (bytes per step)"
              : answer.contains("pipeline")
                  ? "Collectives of the layers and the optimizer, by phase and mesh dim (one micro-batch's, the stages' together)"
                  : "Collectives a device sends, by phase and mesh dim (bytes per step)");
  std::vector<svg::bar> bars;
  for (std::size_t p = 0; p < std::size(phases); ++p)
    for (const auto& t : totals) {
      if (t.phase != phases[p]) continue;
      svg::bar b;
      b.label = t.phase + " " + t.collective + " on " + mesh_dim_name(t.mesh_dim) + ": x" + std::to_string(t.count) +
                ", " + svg::bytes_text(t.bytes);
      if (!t.seconds.is_null()) b.label += ", " + svg::seconds_text(t.seconds.get<double>());
      b.attributes = "data-phase=\"" + svg::escape(t.phase) + "\" data-collective=\"" + svg::escape(t.collective) +
                     "\" data-mesh-dim=\"" + std::to_string(t.mesh_dim) + "\" data-count=\"" +
                     std::to_string(t.count) + "\" data-bytes=\"" + std::to_string(t.bytes) + "\"";
      if (!t.seconds.is_null()) b.attributes += " data-seconds=\"" + svg::exact(t.seconds) + "\"";
      b.tooltip = b.label;
      b.value = static_cast<double>(std::max<std::int64_t>(t.bytes, 0));
      b.color = svg::phase_colors[p];
      bars.push_back(b);
    }
  if (bars.empty())
    doc.line("none");
  else
    doc.bars("collectives", bars);
  if (!has_cost) return doc.finish();

  if (answer.contains("pipeline")) return pipeline_sections(doc, plan, answer.at("pipeline"));
  const json& cost = answer.at("cost");

  // ---- memory per device ----
  const json& memory = cost.at("memory");
  doc.heading("Memory per device");
  bars.clear();
  constexpr const char* categories[] = {"parameters", "gradients", "optimizer_states", "activations", "peak"};
  constexpr const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#9c755f"};
  for (std::size_t k = 0; k < std::size(categories); ++k) {
    const auto bytes = memory.at(categories[k]).get<std::int64_t>();
    svg::bar b;
    b.label = std::string(categories[k]) + ": " + svg::bytes_text(bytes);
    if (k + 1 == std::size(categories))
      b.label += " at operator " + std::to_string(memory.at("peak_op").get<std::int64_t>()) + " '" +
                 memory.at("peak_op_name").get<std::string>() + "' (" + memory.at("peak_phase").get<std::string>() + ")";
    b.attributes = std::string("data-category=\"") + categories[k] + "\" data-bytes=\"" + std::to_string(bytes) + "\"";
    b.tooltip = b.label;
    b.value = static_cast<double>(bytes);
    b.color = colors[k];
    bars.push_back(b);
  }
  doc.bars("memory", bars);

  // ---- time ----
  doc.heading("Step time");
  bars.clear();
  constexpr const char* times[] = {"compute_seconds", "communication_seconds", "step_seconds", "overlapped_step_seconds"};
  constexpr const char* time_names[] = {"compute", "communication", "step (no overlap)", "step (overlapped)"};
  for (std::size_t k = 0; k < std::size(times); ++k) {
    const json& s = cost.at(times[k]);
    svg::bar b;
    b.label = std::string(time_names[k]) + ": " + svg::seconds_text(s.get<double>());
    b.attributes = std::string("data-time=\"") + times[k] + "\" data-seconds=\"" + svg::exact(s) + "\"";
    b.tooltip = b.label;
    b.value = s.get<double>();
    b.color = k < 2 ? svg::phase_colors[k] : "#9c755f";
    bars.push_back(b);
  }
  doc.bars("time", bars);
  char mfu[96];
  std::snprintf(mfu, sizeof mfu, "MFU %.1f%% (overlapped %.1f%%), model FLOPs per device %.4g",
                100 * cost.at("mfu").get<double>(), 100 * cost.at("overlapped_mfu").get<double>(),
                cost.at("flops").at("model").get<double>());
  doc.line(mfu);

  return doc.finish();
}

}  // namespace ctspmd_requests

#endif
