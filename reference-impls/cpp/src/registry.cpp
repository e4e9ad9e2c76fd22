// The protocol registry (see registry.hpp): the name -> protocol table is the AnyProtocol
// variant; nothing here needs a line of its own for a new protocol.
#include "frameproof/registry.hpp"

#include <nlohmann/json.hpp>

namespace fp {

namespace {

// The registered protocol named `name`, configured from the rest of the codec object.
template <std::size_t I = 0>
AnyProtocol configure(const std::string& name, Limits limits, JsonParams& params) {
  if constexpr (I == std::variant_size_v<AnyProtocol>) {
    throw UnknownProtocol("unknown protocol \"" + name + "\"");
  } else {
    using P = std::variant_alternative_t<I, AnyProtocol>;
    if (name == P::kName) return P::configure(limits, params);
    return configure<I + 1>(name, limits, params);
  }
}

template <std::size_t... I>
std::vector<std::string_view> names(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, AnyProtocol>::kName...};
}

}  // namespace

std::vector<std::string_view> protocol_names() {
  return names(std::make_index_sequence<std::variant_size_v<AnyProtocol>>());
}

AnyProtocol parse_codec(const nlohmann::ordered_json& codec, bool strict) {
  JsonParams params(codec, "codec", strict);
  const auto name = params.take_string("protocol");
  if (!name) throw CodecError("codec: \"protocol\" is required");
  Limits limits;
  if (auto l = params.take_object("limits")) {
    limits.max_payload = l->take_uint("max_payload", UINT64_MAX).value_or(0);
    l->finish();
  }
  AnyProtocol p = configure(*name, limits, params);
  params.finish();
  return p;
}

AnyProtocol parse_codec(std::string_view json_text) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw CodecError(std::string("codec: not JSON: ") + e.what());
  }
  return parse_codec(j, true);
}

std::string_view name_of(const AnyProtocol& p) {
  return std::visit([](const auto& proto) { return std::decay_t<decltype(proto)>::kName; }, p);
}

std::optional<ProtocolError> validate(const AnyProtocol& p) {
  return std::visit([](const auto& proto) { return proto.validate(); }, p);
}

std::optional<std::string> unsupported(const AnyProtocol& p) {
  return std::visit([](const auto& proto) { return proto.unsupported(); }, p);
}

}  // namespace fp
