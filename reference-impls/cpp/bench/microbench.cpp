// fp-microbench: the codec micro-benchmarks of tools/bench/microbench.md, one case per run:
//   fp-microbench --case NAME --iterations N --json FILE [--samples S] [--warmup W]
//   fp-microbench --list
// Exactly W + S x N iterations are executed (the iteration-count mode callgrind needs). Generic over
// the protocol registry: decode = one read (F requests as fp-load sends them, websocket masked with
// the key 12 34 56 78) copied into the server's decoder buffer (prepare/commit, as a socket read
// lands) and split into frames as fp-server's sessions do (drain_complete, then next()), each
// payload's length and first byte summed; encode = the F echo
// replies (P::echo's header) written into a reused buffer with write_header + the payload copied,
// as the server's reply path does. websocket/mask and websocket/utf8 use the websocket module's
// masking and UTF-8 routines. Allocations: a counting operator new/delete in this program.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "frameproof/registry.hpp"

namespace {
std::atomic<std::uint64_t> g_allocs{0};
std::atomic<std::uint64_t> g_alloc_bytes{0};
}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  g_alloc_bytes.fetch_add(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

constexpr const char* kUsage =
    "usage: fp-microbench --case NAME --iterations N --json FILE [--samples S] [--warmup W]\n"
    "       fp-microbench --list\n"
    "  cases: <protocol>/<decode|encode>/<32|1024|65536>/<1|16>, websocket/mask/1024/1,\n"
    "         websocket/utf8/67/1, websocket/utf8/71/1 (tools/bench/microbench.md)\n";
constexpr std::uint8_t kMaskingKey[4] = {0x12, 0x34, 0x56, 0x78};  // the masked cases' key (tools/bench/microbench.md)
const char* kUtf8Ascii = "Hello World! This is a test message for UTF-8 validation benchmark.";
const char* kUtf8Mixed = "Hello \xe4\xb8\x96\xe7\x95\x8c! \xe8\xbf\x99\xe6\x98\xaf\xe4\xb8\x80\xe4\xb8\xaa\xe7\x94\xa8\xe4\xba\x8e UTF-8 "
                         "\xe9\xaa\x8c\xe8\xaf\x81\xe7\x9a\x84\xe6\xb5\x8b\xe8\xaf\x95\xe6\xb6\x88\xe6\x81\xaf, mixed ok.";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "usage error: %s\n%s", msg.c_str(), kUsage);
  std::exit(2);
}

struct Case {
  std::string name, protocol, op;
  std::size_t payload = 0, frames = 1;
};

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  for (std::string_view p : fp::protocol_names())
    for (const char* op : {"decode", "encode"})
      for (int n : {32, 1024, 65536})
        for (int f : {1, 16}) out.push_back(std::string(p) + "/" + op + "/" + std::to_string(n) + "/" + std::to_string(f));
  for (const char* c : {"websocket/mask/1024/1", "websocket/utf8/67/1", "websocket/utf8/71/1"}) out.emplace_back(c);
  return out;
}

// payload_for(i, n) of the contract: the index as u64 little-endian, repeated.
void payload_for(std::uint64_t index, std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(index >> (8 * (i % 8)));
}

// One prepared case: `one()` runs one iteration and returns its checksum contribution.
struct Prepared {
  std::function<std::uint64_t()> one;
  std::size_t bytes_per_frame = 0;
};

template <class P>
Prepared prepare_codec(const P& proto, const Case& c) {
  using F = typename P::FrameType;
  // the read: F requests as the load client writes them
  auto client_proto = [&] {
    if constexpr (requires { proto.as_client(); }) return proto.as_client();
    else return proto;
  }();
  typename P::Client client(1);
  auto read = std::make_shared<fp::Bytes>();
  std::size_t first_len = 0;
  for (std::size_t i = 0; i < c.frames; ++i) {
    std::optional<F> h;
    if constexpr (P::kSendsFrames) h = client.next(fp::SendKind::Request, nullptr);
    else h = client.next(fp::SendKind::Request);
    if (!h) throw std::runtime_error("the client matcher refused a request");
    client.begin(fp::SendKind::Request, i, 0);
    if constexpr (requires { h->key; }) {  // a masking protocol: the fixed key
      h->masked = true;
      h->key_len = 4;
      std::copy_n(kMaskingKey, 4, h->key.begin());
    }
    const std::size_t at = read->size();
    read->resize(at + client_proto.header_bound(*h) + c.payload);
    const std::size_t hl = client_proto.write_header(read->data() + at, *h, c.payload);
    payload_for(i, read->data() + at + hl, c.payload);
    if constexpr (requires { h->key; }) fp::ws::mask(read->data() + at + hl, c.payload, kMaskingKey);
    read->resize(at + hl + c.payload);
    if (i == 0) first_len = read->size();
  }
  const std::size_t frames = c.frames;
  if (c.op == "decode") {
    auto dec = std::make_shared<typename P::DecoderType>(proto);
    return {[dec, read, frames]() -> std::uint64_t {
              std::uint64_t sum = 0;
              std::size_t got = 0, off = 0;
              F f;
              auto take = [&](const F& g) {
                sum += g.payload.size() + (g.payload.empty() ? 0 : g.payload[0]);
                ++got;
              };
              while (true) {
                // fp-server's path: the whole frames where they lie (drain_complete, where the
                // decoder has it), then next() for any other frame, and so on
                typename P::DecoderType::Status st;
                while (true) {
                  if constexpr (requires { dec->drain_complete(take); }) dec->drain_complete(take);
                  if ((st = dec->next(f)) != P::DecoderType::Status::Frame) break;
                  take(f);
                }
                if (st == P::DecoderType::Status::Error) throw std::runtime_error("decode error: " + dec->error()->message);
                if (off == read->size()) break;
                auto space = dec->prepare();  // the read lands in the decoder's buffer
                const std::size_t n = std::min(space.size(), read->size() - off);
                std::memcpy(space.data(), read->data() + off, n);
                dec->commit(n);
                off += n;
              }
              if (got != frames) throw std::runtime_error("a read did not decode into its frames");
              return sum;
            },
            first_len};
  }
  // encode: the replies to the decoded requests
  struct Reply {
    F header;
    std::size_t payload_off, payload_len;
  };
  auto replies = std::make_shared<std::vector<Reply>>();
  auto payloads = std::make_shared<fp::Bytes>();
  {
    typename P::DecoderType dec(proto);
    if (auto e = dec.feed(*read, [&](const F& f) {
          auto r = proto.echo(f);
          if (!r) return;
          replies->push_back({*r, payloads->size(), f.payload.size()});
          payloads->insert(payloads->end(), f.payload.begin(), f.payload.end());
        }))
      throw std::runtime_error("decode error: " + e->message);
  }
  auto out = std::make_shared<fp::Bytes>();
  std::size_t bound = 0;
  for (const auto& r : *replies) bound += proto.header_bound(r.header) + r.payload_len;
  out->reserve(bound);
  std::uint8_t hdr[64];
  const std::size_t one_len = proto.write_header(hdr, (*replies)[0].header, (*replies)[0].payload_len) + (*replies)[0].payload_len;
  return {[proto, replies, payloads, out]() -> std::uint64_t {
            out->clear();  // keeps its capacity
            for (const Reply& r : *replies) {
              const std::size_t at = out->size();
              out->resize(at + proto.header_bound(r.header));
              const std::size_t h = proto.write_header(out->data() + at, r.header, r.payload_len);
              out->resize(at + h);
              out->insert(out->end(), payloads->data() + r.payload_off, payloads->data() + r.payload_off + r.payload_len);
            }
            return out->size() + out->back();
          },
          one_len};
}

Prepared prepare(const Case& c) {
  if (c.op == "mask") {
    auto buf = std::make_shared<fp::Bytes>(c.payload);
    for (std::size_t i = 0; i < c.payload; ++i) (*buf)[i] = static_cast<std::uint8_t>(i);
    return {[buf]() -> std::uint64_t {
              fp::ws::mask(buf->data(), buf->size(), kMaskingKey);
              return buf->back();
            },
            c.payload};
  }
  if (c.op == "utf8") {
    auto text = std::make_shared<std::string>(c.payload == 67 ? kUtf8Ascii : kUtf8Mixed);
    if (text->size() != c.payload) throw std::runtime_error("utf8 text length");
    return {[text]() -> std::uint64_t {
              const auto* p = reinterpret_cast<const std::uint8_t*>(text->data());
              return fp::ws::utf8_valid(fp::ByteView(p, text->size())) ? 1 : 0;
            },
            c.payload};
  }
  // The codec of a case: Protocol.bench_codec(payload) of the Python protocol packages, i.e. the
  // protocol's default codec, or the profile that carries the payload where the module has one
  // (P::carrying: a 64 KiB length-field payload needs the 4-byte length field).
  const fp::AnyProtocol proto = fp::parse_codec(nlohmann::ordered_json{{"protocol", c.protocol}});
  return std::visit(
      [&](const auto& p) {
        if constexpr (requires { p.carrying(c.payload); }) return prepare_codec(p.carrying(c.payload), c);
        else return prepare_codec(p, c);
      },
      proto);
}

std::uint64_t parse_count(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || v[0] == '-' || n < 1) usage_error(flag + ": expected a positive integer, got '" + v + "'");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string case_name, json;
  std::uint64_t iterations = 0, samples = 11;
  std::optional<std::uint64_t> warmup;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--list") {
      list = true;
      continue;
    }
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    const std::string v = argv[++i];
    if (flag == "--case") case_name = v;
    else if (flag == "--iterations") iterations = parse_count(flag, v);
    else if (flag == "--samples") samples = parse_count(flag, v);
    else if (flag == "--warmup") {
      char* end = nullptr;
      const unsigned long long w = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end || v[0] == '-') usage_error("--warmup: expected an integer >= 0, got '" + v + "'");
      warmup = w;
    } else if (flag == "--json") json = v;
    else usage_error("unknown option " + flag);
  }
  const auto names = case_names();
  if (list) {
    for (const auto& n : names) std::printf("%s\n", n.c_str());
    return 0;
  }
  if (case_name.empty() || !iterations || json.empty()) usage_error("--case, --iterations and --json are required");
  if (std::find(names.begin(), names.end(), case_name) == names.end()) {
    std::fprintf(stderr, "fp-microbench: case '%s' is not implemented here\n", case_name.c_str());
    return 3;
  }
  Case c;
  c.name = case_name;
  {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t k; (k = case_name.find('/', start)) != std::string::npos; start = k + 1)
      parts.push_back(case_name.substr(start, k - start));
    parts.push_back(case_name.substr(start));
    c.protocol = parts[0];
    c.op = parts[1];
    c.payload = std::stoul(parts[2]);
    c.frames = std::stoul(parts[3]);
  }
  const std::uint64_t warm = warmup ? *warmup : std::max<std::uint64_t>(1, iterations / 10);
  Prepared prep;
  std::uint64_t check = 0;
  std::vector<double> per;
  std::uint64_t allocs = 0, alloc_bytes = 0;
  try {
    prep = prepare(c);
    for (std::uint64_t i = 0; i < warm; ++i) check += prep.one();
    for (std::uint64_t s = 0; s < samples; ++s) {
      const std::uint64_t a0 = g_allocs.load(), b0 = g_alloc_bytes.load();
      const auto t0 = std::chrono::steady_clock::now();
      for (std::uint64_t i = 0; i < iterations; ++i) check += prep.one();
      const auto t1 = std::chrono::steady_clock::now();
      if (s == 0) {
        allocs = g_allocs.load() - a0;
        alloc_bytes = g_alloc_bytes.load() - b0;
      }
      per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                    static_cast<double>(iterations * c.frames));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp-microbench: %s: %s\n", case_name.c_str(), e.what());
    return 1;
  }
  std::vector<double> sorted = per;
  std::sort(sorted.begin(), sorted.end());
  const double frames = static_cast<double>(iterations * c.frames);
  auto r2 = [](double x) { return std::max(0.01, std::round(x * 100) / 100); };
  FILE* f = std::fopen(json.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "fp-microbench: cannot write %s\n", json.c_str());
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"frameproof-microbench/1\", \"implementation\": \"cpp\", \"case\": \"%s\", \"protocol\": \"%s\", "
               "\"op\": \"%s\", \"payload\": %zu, \"frames_per_read\": %zu, \"iterations\": %llu, \"samples\": %llu, "
               "\"warmup_iterations\": %llu, \"ns_per_frame\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, \"n\": %zu}, "
               "\"bytes_per_frame\": %zu, \"allocs_per_frame\": %.6f, \"bytes_alloc_per_frame\": %.6f, "
               "\"allocation_counter\": \"counting operator new/delete (fp-microbench)\", \"instructions_per_frame\": null, "
               "\"checksum\": %llu}\n",
               c.name.c_str(), c.protocol.c_str(), c.op.c_str(), c.payload, c.frames,
               static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(samples),
               static_cast<unsigned long long>(warm), r2(sorted[sorted.size() / 2]), r2(sorted.front()), r2(sorted.back()),
               sorted.size(), prep.bytes_per_frame, static_cast<double>(allocs) / frames,
               static_cast<double>(alloc_bytes) / frames, static_cast<unsigned long long>(check & ((1ull << 62) - 1)));
  std::fclose(f);
  return 0;
}
