//===- Metrics.cpp - Training metrics files ---------------------*- C++ -*-===//
//
// The JSON lines writer, the TensorBoard event writer (records of Event
// protocol buffers, tensorboard_event.proto, through libprotobuf) and the
// SVG curves.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Metrics.h"

#include "tensorboard_event.pb.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace gpipe::rt {

namespace {

std::string errnoText() { return std::strerror(errno); }

/// Writes all of `bytes` and flushes; false on a short write.
bool writeAll(std::FILE *file, const void *bytes, size_t size) {
  return std::fwrite(bytes, 1, size, file) == size;
}

} // namespace

//===----------------------------------------------------------------------===//
// JSON lines
//===----------------------------------------------------------------------===//

Status JsonLinesWriter::open(const std::string &path, bool append,
                             std::unique_ptr<JsonLinesWriter> &out) {
  if (path.empty())
    return Status::error("--metrics is empty; give the file to write");
  std::FILE *file = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file)
    return Status::error("cannot write the metrics file '" + path +
                         "': " + errnoText());
  out.reset(new JsonLinesWriter());
  out->path = path;
  out->file = file;
  return Status::success();
}

JsonLinesWriter::~JsonLinesWriter() {
  if (file)
    std::fclose(file);
}

Status JsonLinesWriter::write(const MetricsRecord &record) {
  nlohmann::ordered_json line;
  line["step"] = record.step;
  if (record.epoch > 0)
    line["epoch"] = record.epoch;
  for (const auto &[name, value] : record.scalars) {
    if (std::isfinite(value))
      line[name] = value;
    else
      line[name] = nullptr;
  }
  if (!record.busy.empty())
    line["busy"] = record.busy;
  line["time"] = record.wallTime;
  std::string text = line.dump() + "\n";
  if (!writeAll(file, text.data(), text.size()) || std::fflush(file) != 0)
    return Status::error("writing the metrics file '" + path +
                         "' failed: " + errnoText());
  return Status::success();
}

//===----------------------------------------------------------------------===//
// TensorBoard
//===----------------------------------------------------------------------===//

uint32_t crc32c(const void *data, size_t size) {
  // CRC-32C: the Castagnoli polynomial 0x1EDC6F41, reflected (0x82F63B78),
  // as RFC 3720 (iSCSI), appendix B.4, defines it; one table of 256.
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  const auto *bytes = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t maskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

Status TensorBoardWriter::open(const std::string &directory,
                               std::unique_ptr<TensorBoardWriter> &out) {
  if (directory.empty())
    return Status::error("--tensorboard is empty; give the directory to "
                         "write event files to");
  if (::mkdir(directory.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::error("cannot create the TensorBoard directory '" +
                         directory + "': " + errnoText());
  struct stat info;
  if (::stat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return Status::error("--tensorboard '" + directory +
                         "' is not a directory");
  char host[256] = "localhost";
  (void)::gethostname(host, sizeof host - 1);
  std::string path =
      directory + "/events.out.tfevents." +
      std::to_string(static_cast<long long>(std::time(nullptr))) + "." + host +
      ".gpipe";
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return Status::error("cannot write the TensorBoard event file '" + path +
                         "': " + errnoText());
  out.reset(new TensorBoardWriter());
  out->path = path;
  out->file = file;
  tensorboard::Event first;
  first.set_wall_time(double(std::time(nullptr)));
  first.set_file_version("brain.Event:2");
  return out->writeEvent(first.SerializeAsString());
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file)
    std::fclose(file);
}

Status TensorBoardWriter::writeEvent(const std::string &bytes) {
  uint8_t header[12];
  uint64_t length = bytes.size();
  for (int i = 0; i < 8; ++i)
    header[i] = uint8_t(length >> (8 * i));
  uint32_t lengthCrc = maskCrc32c(crc32c(header, 8));
  for (int i = 0; i < 4; ++i)
    header[8 + i] = uint8_t(lengthCrc >> (8 * i));
  uint32_t dataCrc = maskCrc32c(crc32c(bytes.data(), bytes.size()));
  uint8_t footer[4];
  for (int i = 0; i < 4; ++i)
    footer[i] = uint8_t(dataCrc >> (8 * i));
  if (!writeAll(file, header, sizeof header) ||
      !writeAll(file, bytes.data(), bytes.size()) ||
      !writeAll(file, footer, sizeof footer) || std::fflush(file) != 0)
    return Status::error("writing the TensorBoard event file '" + path +
                         "' failed: " + errnoText());
  return Status::success();
}

Status TensorBoardWriter::write(const MetricsRecord &record) {
  tensorboard::Event event;
  event.set_wall_time(record.wallTime);
  event.set_step(record.step);
  tensorboard::Summary *summary = event.mutable_summary();
  if (record.epoch > 0) {
    tensorboard::SummaryValue *v = summary->add_value();
    v->set_tag("train/epoch");
    v->set_simple_value(float(record.epoch));
  }
  for (const auto &[name, value] : record.scalars) {
    if (!std::isfinite(value))
      continue;
    tensorboard::SummaryValue *v = summary->add_value();
    // Evaluation scalars ("eval_loss") under eval/, the rest under train/.
    v->set_tag(name.rfind("eval_", 0) == 0 ? "eval/" + name.substr(5)
                                           : "train/" + name);
    v->set_simple_value(float(value));
  }
  for (size_t w = 0; w < record.busy.size(); ++w) {
    tensorboard::SummaryValue *v = summary->add_value();
    v->set_tag("busy/worker_" + std::to_string(w));
    v->set_simple_value(float(record.busy[w]));
  }
  return writeEvent(event.SerializeAsString());
}

//===----------------------------------------------------------------------===//
// SVG curves
//===----------------------------------------------------------------------===//

std::string escapeXml(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

} // namespace

Status writeCurvesSvg(const std::string &path, const std::string &title,
                      const std::vector<MetricsRecord> &records,
                      const std::vector<std::string> &curves) {
  // Panels: each curve of `curves`, then "lr"; x is the step.
  std::vector<std::string> panels = curves;
  panels.push_back("lr");
  const double width = 720, panelHeight = 200, left = 70, right = 20, top = 40,
               gap = 50;
  const double plotWidth = width - left - right;
  const double height = top + panels.size() * (panelHeight + gap);
  int64_t firstStep = records.empty() ? 0 : records.front().step;
  int64_t lastStep = records.empty() ? 1 : records.back().step;
  if (lastStep <= firstStep)
    lastStep = firstStep + 1;
  static const char *colors[] = {"#4e79a7", "#e15759", "#59a14f", "#b07aa1"};
  std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) +
      "\" height=\"" + number(height) +
      "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" "
      "height=\"100%\" fill=\"white\"/>\n<text x=\"" +
      number(left) + "\" y=\"22\" font-size=\"15\">" + escapeXml(title) +
      "</text>\n";
  for (size_t p = 0; p < panels.size(); ++p) {
    const std::string &name = panels[p];
    double y0 = top + p * (panelHeight + gap) + 10;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const MetricsRecord &r : records)
      for (const auto &[n, v] : r.scalars)
        if (n == name && std::isfinite(v)) {
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
    svg += "<rect x=\"" + number(left) + "\" y=\"" + number(y0) +
           "\" width=\"" + number(plotWidth) + "\" height=\"" +
           number(panelHeight) + "\" fill=\"none\" stroke=\"#999\"/>\n";
    svg += "<text x=\"" + number(left) + "\" y=\"" + number(y0 - 4) + "\">" +
           escapeXml(name) + "</text>\n";
    svg += "<text x=\"" + number(left + plotWidth) + "\" y=\"" +
           number(y0 + panelHeight + 16) + "\" text-anchor=\"end\">step " +
           std::to_string(lastStep) + "</text>\n<text x=\"" + number(left) +
           "\" y=\"" + number(y0 + panelHeight + 16) + "\">step " +
           std::to_string(firstStep) + "</text>\n";
    if (!(lo <= hi)) {
      svg += "<text x=\"" + number(left + 10) + "\" y=\"" +
             number(y0 + panelHeight / 2) + "\">no values</text>\n";
      continue;
    }
    if (hi == lo) {
      hi += std::max(std::abs(hi) * 0.05, 1e-12);
      lo -= std::max(std::abs(lo) * 0.05, 1e-12);
    }
    svg += "<text x=\"" + number(left - 6) + "\" y=\"" + number(y0 + 12) +
           "\" text-anchor=\"end\">" + number(hi) + "</text>\n<text x=\"" +
           number(left - 6) + "\" y=\"" + number(y0 + panelHeight) +
           "\" text-anchor=\"end\">" + number(lo) + "</text>\n";
    std::string points;
    for (const MetricsRecord &r : records)
      for (const auto &[n, v] : r.scalars)
        if (n == name && std::isfinite(v)) {
          double x = left + plotWidth * double(r.step - firstStep) /
                                double(lastStep - firstStep);
          double y = y0 + panelHeight * (hi - v) / (hi - lo);
          points += number(x) + "," + number(y) + " ";
        }
    svg += "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" +
           std::string(colors[p % 4]) + "\" points=\"" + points + "\"/>\n";
  }
  svg += "</svg>\n";
  std::FILE *file = std::fopen(path.c_str(), "w");
  if (!file)
    return Status::error("cannot write the plot '" + path +
                         "': " + errnoText());
  bool ok = writeAll(file, svg.data(), svg.size());
  ok = std::fclose(file) == 0 && ok;
  if (!ok)
    return Status::error("writing the plot '" + path +
                         "' failed: " + errnoText());
  return Status::success();
}

} // namespace gpipe::rt
