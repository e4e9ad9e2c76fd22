// The protocol registry and the codec JSON (`--codec`, reference-impls/README.md): names in
// registration order, every key with its default, and the errors a program reports as usage
// errors (not JSON, not an object, missing "protocol", unknown protocol, unknown key, value of
// the wrong type or range). The testee's lenient mode ignores unknown keys.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace {

fp::AnyProtocol parse(std::string_view text) { return fp::parse_codec(text); }

const fp::LengthField& as_lf(const fp::AnyProtocol& p) { return std::get<fp::LengthField>(p); }

// The message of the CodecError `text` raises (strict).
std::string error_of(std::string_view text) {
  try {
    parse(text);
  } catch (const fp::CodecError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Registry, NamesInRegistrationOrder) {
  const auto names = fp::protocol_names();
  ASSERT_EQ(names.size(), std::variant_size_v<fp::AnyProtocol>);
  EXPECT_EQ(names[0], "standard");
  EXPECT_EQ(names[1], "length-field");
  for (std::string_view n : names) {  // every name parses to the protocol of that name
    const auto p = parse(R"({"protocol": ")" + std::string(n) + "\"}");
    EXPECT_EQ(fp::name_of(p), n);
    EXPECT_FALSE(fp::validate(p)) << n;
    EXPECT_FALSE(fp::unsupported(p)) << n;
  }
}

TEST(Registry, Defaults) {
  const auto s = parse(R"({"protocol": "standard"})");
  ASSERT_TRUE(std::holds_alternative<fp::Standard>(s));
  EXPECT_EQ(std::get<fp::Standard>(s).max_payload(), fp::kDefaultMaxPayload);
  const auto l = parse(R"({"protocol": "length-field"})");
  EXPECT_EQ(as_lf(l).offset(), 0u);  // LF-FMT-2: offset 0, size 2
  EXPECT_EQ(as_lf(l).size(), 2);
  EXPECT_EQ(as_lf(l).max_payload(), 65535u);  // capped by the 2-byte field
  // max_payload 0 is the default; an absent key inside length_field too
  const auto z = parse(R"({"protocol": "length-field", "limits": {"max_payload": 0}, "length_field": {"offset": 3}})");
  EXPECT_EQ(as_lf(z).offset(), 3u);
  EXPECT_EQ(as_lf(z).size(), 2);
  EXPECT_EQ(as_lf(z).limits().max_payload, 0u);
  EXPECT_EQ(as_lf(parse(R"({"protocol": "length-field", "length_field": {}})")).size(), 2);
}

TEST(Registry, EveryKey) {
  const auto p = parse(R"({"protocol": "length-field", "limits": {"max_payload": 1048576},
                           "length_field": {"offset": 2, "size": -4}})");
  EXPECT_EQ(fp::name_of(p), "length-field");
  EXPECT_EQ(as_lf(p).offset(), 2u);
  EXPECT_EQ(as_lf(p).size(), -4);
  EXPECT_EQ(as_lf(p).max_payload(), 1048576u);
  EXPECT_EQ(as_lf(parse(R"({"protocol": "length-field", "length_field": {"size": 0}})")).size(), 0);  // varint
  const auto s = parse(R"({"limits": {"max_payload": 100}, "protocol": "standard"})");  // any key order
  EXPECT_EQ(std::get<fp::Standard>(s).max_payload(), 100u);
  // a size the spec rejects is a configuration, not a JSON error: validate() says LF-FMT-3
  const auto bad = parse(R"({"protocol": "length-field", "length_field": {"size": 3}})");
  ASSERT_TRUE(fp::validate(bad));
  EXPECT_EQ(fp::validate(bad)->requirement, "LF-FMT-3");
  // an offset above 16 MiB is valid but not supported
  EXPECT_TRUE(fp::unsupported(parse(R"({"protocol": "length-field", "length_field": {"offset": 16777217}})")));
  EXPECT_FALSE(fp::unsupported(parse(R"({"protocol": "length-field", "length_field": {"offset": 16777216}})")));
}

TEST(Registry, BadJson) {
  EXPECT_NE(error_of("").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol": "standard")").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of("standard").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"(["standard"])").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{}").find("\"protocol\" is required"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol": 1})").find("codec.protocol: expected a string"), std::string::npos);
  EXPECT_NE(error_of(R"({"protocol": "standard", "limits": 5})").find("codec.limits: expected a JSON object"),
            std::string::npos);
}

TEST(Registry, UnknownProtocol) {
  EXPECT_THROW(parse(R"({"protocol": "mqtt"})"), fp::UnknownProtocol);
  EXPECT_THROW(parse(R"({"protocol": "Standard"})"), fp::UnknownProtocol);  // names are exact
  EXPECT_THROW(parse(R"({"protocol": ""})"), fp::UnknownProtocol);
  EXPECT_THROW(fp::parse_codec(nlohmann::ordered_json{{"protocol", "http2"}}, false), fp::UnknownProtocol);
  EXPECT_EQ(error_of(R"({"protocol": "mqtt"})"), "unknown protocol \"mqtt\"");
}

TEST(Registry, UnknownKeys) {
  EXPECT_EQ(error_of(R"({"protocol": "standard", "max_payload": 5})"), "codec: unknown key \"max_payload\"");
  EXPECT_EQ(error_of(R"({"protocol": "standard", "limits": {"max_payload": 5, "max_frames": 1}})"),
            "codec.limits: unknown key \"max_frames\"");
  // another protocol's parameters are unknown keys too
  EXPECT_EQ(error_of(R"({"protocol": "standard", "length_field": {"offset": 1}})"),
            "codec: unknown key \"length_field\"");
  EXPECT_EQ(error_of(R"({"protocol": "length-field", "length_field": {"offset": 1, "width": 2}})"),
            "codec.length_field: unknown key \"width\"");
  // the testee's lenient mode ignores them (fields of a newer schema), at every level
  const auto j = nlohmann::ordered_json::parse(
      R"({"protocol": "length-field", "future": true, "length_field": {"offset": 1, "size": 4, "width": 2}})");
  const auto p = fp::parse_codec(j, false);
  EXPECT_EQ(as_lf(p).offset(), 1u);
  EXPECT_EQ(as_lf(p).size(), 4);
  EXPECT_THROW(fp::parse_codec(j, true), fp::CodecError);
}

TEST(Registry, ValueTypesAndRanges) {
  EXPECT_EQ(error_of(R"({"protocol": "standard", "limits": {"max_payload": -1}})"),
            "codec.limits.max_payload: expected an unsigned integer, got -1");
  EXPECT_EQ(error_of(R"({"protocol": "standard", "limits": {"max_payload": 1.5}})"),
            "codec.limits.max_payload: expected an unsigned integer, got 1.5");
  EXPECT_EQ(error_of(R"({"protocol": "standard", "limits": {"max_payload": "16"}})"),
            "codec.limits.max_payload: expected an unsigned integer, got \"16\"");
  EXPECT_EQ(error_of(R"({"protocol": "length-field", "length_field": {"offset": 4294967296}})"),
            "codec.length_field.offset: 4294967296 is above 4294967295");
  EXPECT_EQ(error_of(R"({"protocol": "length-field", "length_field": {"size": 2147483648}})"),
            "codec.length_field.size: 2147483648 is out of range");
  EXPECT_EQ(error_of(R"({"protocol": "length-field", "length_field": {"size": -2147483649}})"),
            "codec.length_field.size: -2147483649 is out of range");
  EXPECT_EQ(error_of(R"({"protocol": "length-field", "length_field": {"size": true}})"),
            "codec.length_field.size: expected an integer, got true");
  EXPECT_EQ(error_of(R"({"protocol": "length-field", "length_field": [2]})"),
            "codec.length_field: expected a JSON object, got [2]");
  EXPECT_EQ(as_lf(parse(R"({"protocol": "length-field", "length_field": {"size": -2}})")).size(), -2);
  EXPECT_EQ(std::get<fp::Standard>(parse(R"({"protocol": "standard", "limits": {"max_payload": 18446744073709551615}})"))
                .max_payload(),
            fp::kInt31Max);
}
