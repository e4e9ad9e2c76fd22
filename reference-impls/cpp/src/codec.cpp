#include "frameproof/codec.hpp"

#include <cstring>
#include <nlohmann/json.hpp>

namespace fp {

// ---------------------------------------------------------------------------------------------
// FrameBuffer

std::span<std::uint8_t> FrameBuffer::prepare() {
  // Count reads that did not need a big buffer, so that memory a big frame needed is given back
  // once big frames stop coming (and not reallocated for every frame of a run of big ones).
  if (needed_ > chunk_) small_reads_ = 0;
  else if (small_reads_ < kShrinkAfter) ++small_reads_;
  if (start_ == end_) {
    start_ = end_ = 0;
    if (cap_ > 2 * chunk_ && small_reads_ >= kShrinkAfter) {
      buf_.reset();
      cap_ = 0;
    }
  }
  const std::size_t buffered = end_ - start_;
  std::size_t want = std::max<std::size_t>(chunk_, static_cast<std::size_t>(needed_));
  want = std::min(want, std::max(chunk_, max_frame_));
  if (cap_ < want) {
    // Grow to exactly what the pending frame needs (bounded by the largest legal frame).
    std::unique_ptr<std::uint8_t[]> nb(new std::uint8_t[want]);
    if (buffered) std::memcpy(nb.get(), buf_.get() + start_, buffered);
    buf_ = std::move(nb);
    cap_ = want;
    start_ = 0;
    end_ = buffered;
  } else if (start_ > 0 && (cap_ - end_ < chunk_ / 2 || start_ + needed_ > cap_)) {
    // Compact: move the partial frame to the front instead of growing.
    std::memmove(buf_.get(), buf_.get() + start_, buffered);
    start_ = 0;
    end_ = buffered;
  }
  return {buf_.get() + end_, cap_ - end_};
}

// ---------------------------------------------------------------------------------------------
// fp-load payloads

void load_payload(std::uint64_t index, std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n && i < 8; ++i) p[i] = static_cast<std::uint8_t>(index >> (8 * i));
  std::uint64_t x = index * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 8; i < n; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // one LCG step per 8 bytes
    std::memcpy(p + i, &x, std::min<std::size_t>(8, n - i));
  }
}

// ---------------------------------------------------------------------------------------------
// Frames as the testee's JSON

ByteView json_bytes(const nlohmann::ordered_json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  const std::string& s = it->get_ref<const std::string&>();
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::uint64_t json_uint(const nlohmann::ordered_json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  return it->get<std::uint64_t>();
}

nlohmann::ordered_json plain_frame_json(const Frame& f) {
  nlohmann::ordered_json j;
  j["flag"] = f.flag;
  j["sequence"] = f.sequence;
  j["payload"] = std::string(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
  return j;
}

Frame plain_frame_from_json(const nlohmann::ordered_json& j) {
  const std::uint64_t flag = json_uint(j, "flag");
  const std::uint64_t seq = json_uint(j, "sequence");
  if (flag > 0xFF || seq > 0xFF)
    throw Unsupported("flag " + std::to_string(flag) + " / sequence " + std::to_string(seq) + " do not fit a byte");
  return Frame{static_cast<std::uint8_t>(flag), static_cast<std::uint8_t>(seq), json_bytes(j, "payload")};
}

// ---------------------------------------------------------------------------------------------
// JsonParams

JsonParams::JsonParams(const nlohmann::ordered_json& obj, std::string where, bool strict)
    : obj_(&obj), where_(std::move(where)), strict_(strict) {
  if (!obj.is_object()) throw CodecError(where_ + ": expected a JSON object, got " + obj.dump());
}

const nlohmann::ordered_json* JsonParams::find(const std::string& key) {
  auto it = obj_->find(key);
  if (it == obj_->end()) return nullptr;
  taken_.insert(key);
  return &*it;
}

void JsonParams::bad(const std::string& key, const std::string& what) const {
  throw CodecError(where_ + "." + key + ": " + what);
}

std::optional<std::string> JsonParams::take_string(const std::string& key) {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) bad(key, "expected a string, got " + v->dump());
  return v->get<std::string>();
}

std::optional<std::uint64_t> JsonParams::take_uint(const std::string& key, std::uint64_t max) {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<std::int64_t>() < 0))
    bad(key, "expected an unsigned integer, got " + v->dump());
  const auto n = v->get<std::uint64_t>();
  if (n > max) bad(key, std::to_string(n) + " is above " + std::to_string(max));
  return n;
}

std::optional<std::int64_t> JsonParams::take_int(const std::string& key, std::int64_t min, std::int64_t max) {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) bad(key, "expected an integer, got " + v->dump());
  if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    bad(key, v->dump() + " is out of range");
  const auto n = v->get<std::int64_t>();
  if (n < min || n > max) bad(key, std::to_string(n) + " is out of range");
  return n;
}

std::optional<bool> JsonParams::take_bool(const std::string& key) {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) bad(key, "expected true or false, got " + v->dump());
  return v->get<bool>();
}

std::optional<JsonParams> JsonParams::take_object(const std::string& key) {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  return JsonParams(*v, where_ + "." + key, strict_);
}

void JsonParams::finish() const {
  if (!strict_) return;
  for (const auto& [key, value] : obj_->items())
    if (!taken_.count(key)) throw CodecError(where_ + ": unknown key \"" + key + "\"");
}

}  // namespace fp
