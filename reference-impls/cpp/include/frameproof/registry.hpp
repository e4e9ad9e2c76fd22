// The protocol registry: every protocol this implementation has, and the codec JSON
// (`--codec`, reference-impls/README.md) to a configured protocol. The programs (fp-testee,
// fp-server, fp-load) are generic over the protocols: they take an AnyProtocol and std::visit it
// with a template, so every protocol gets the same code, with static dispatch in the hot loops.
//
// Adding a protocol (docs/adding-a-protocol.md): write its module (include/frameproof/<name>.hpp,
// src/<name>.cpp; see codec.hpp for what a protocol type provides), add it to CMakeLists.txt
// (FP_PROTOCOL_SOURCES), and add the two lines marked below.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "frameproof/codec.hpp"
#include "frameproof/length_field.hpp"  // one line per protocol
#include "frameproof/rpc.hpp"
#include "frameproof/standard.hpp"
#include "frameproof/websocket.hpp"

namespace fp {

// A configured protocol. One line per protocol, in registration order.
using AnyProtocol = std::variant<
    Standard,     // spec/standard.md
    LengthField,  // spec/length-field.md
    Rpc,          // spec/rpc.md
    WebSocket>    // spec/websocket.md
    ;

// Registered protocol names, in registration order.
std::vector<std::string_view> protocol_names();

// The codec JSON object to a configured protocol. Throws UnknownProtocol for a name that is not
// registered, CodecError for anything else that is wrong (missing "protocol", a value of the
// wrong type or range, and with `strict` an unknown key). A configuration the protocol's spec
// rejects (e.g. LF-FMT-3) is returned as is: see validate().
AnyProtocol parse_codec(const nlohmann::ordered_json& codec, bool strict = true);
// The same from JSON text (strict); throws CodecError if it is not JSON.
AnyProtocol parse_codec(std::string_view json_text);

std::string_view name_of(const AnyProtocol& p);
std::optional<ProtocolError> validate(const AnyProtocol& p);
std::optional<std::string> unsupported(const AnyProtocol& p);

}  // namespace fp
