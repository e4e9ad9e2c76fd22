// The codec JSON (--codec, reference-impls/README.md "The profile syntax") and the small strict JSON
// reader it needs.
//
// Why a hand-written reader: the code must compile with Mono's mcs (no NuGet here) and with a modern
// .NET SDK. Mono's System.Runtime.Serialization.Json (DataContractJsonSerializer) silently ignores
// unknown members, which the contract makes a usage error; System.Web.Script.Serialization
// (JavaScriptSerializer) takes the last of duplicate keys and does not exist in modern .NET;
// System.Text.Json is not in Mono 6.8. The codec object is tiny (strings, integers, nested
// objects), so a ~200-line strict RFC 8259 reader is the smaller dependency.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Frameproof.Codec
{
    public enum JsonKind { Object, Array, String, Number, True, False, Null }

    /// <summary>A parsed JSON value. Objects keep their members in the given order; numbers keep
    /// their source text.</summary>
    public sealed class JsonValue
    {
        public JsonKind Kind;
        public string Text;                                       // string value, or number text
        public List<KeyValuePair<string, JsonValue>> Members;     // object
        public List<JsonValue> Items;                             // array

        public static JsonValue Parse(string text)
        {
            var r = new JsonReader(text);
            JsonValue v = r.ReadValue(0);
            r.SkipSpace();
            if (!r.AtEnd) throw r.Fail("unexpected text after the JSON value");
            return v;
        }

        /// <summary>The value as a non-negative integer no larger than max.</summary>
        public long AsInteger(string what, long min, long max)
        {
            long v;
            if (Kind != JsonKind.Number || !long.TryParse(Text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out v))
                throw new FormatException(what + " must be an integer, got " + ToJson());
            if (v < min || v > max) throw new FormatException(what + " must be between " + min + " and " + max + ", got " + Text);
            return v;
        }

        public bool AsBool(string what)
        {
            if (Kind != JsonKind.True && Kind != JsonKind.False) throw new FormatException(what + " must be true or false, got " + ToJson());
            return Kind == JsonKind.True;
        }

        public string AsString(string what)
        {
            if (Kind != JsonKind.String) throw new FormatException(what + " must be a string, got " + ToJson());
            return Text;
        }

        /// <summary>The object's members; throws if this is not an object.</summary>
        public List<KeyValuePair<string, JsonValue>> AsObject(string what)
        {
            if (Kind != JsonKind.Object) throw new FormatException(what + " must be a JSON object, got " + ToJson());
            return Members;
        }

        /// <summary>Compact serialization with ", " and ": " separators (the programs' output style).</summary>
        public string ToJson()
        {
            var sb = new StringBuilder();
            Write(sb);
            return sb.ToString();
        }

        void Write(StringBuilder sb)
        {
            switch (Kind)
            {
                case JsonKind.Object:
                    sb.Append('{');
                    for (int i = 0; i < Members.Count; i++)
                    {
                        if (i > 0) sb.Append(", ");
                        sb.Append(CodecJson.Quote(Members[i].Key)).Append(": ");
                        Members[i].Value.Write(sb);
                    }
                    sb.Append('}');
                    break;
                case JsonKind.Array:
                    sb.Append('[');
                    for (int i = 0; i < Items.Count; i++)
                    {
                        if (i > 0) sb.Append(", ");
                        Items[i].Write(sb);
                    }
                    sb.Append(']');
                    break;
                case JsonKind.String: sb.Append(CodecJson.Quote(Text)); break;
                case JsonKind.Number: sb.Append(Text); break;
                case JsonKind.True: sb.Append("true"); break;
                case JsonKind.False: sb.Append("false"); break;
                default: sb.Append("null"); break;
            }
        }
    }

    /// <summary>Strict RFC 8259 reader: no comments, no trailing commas, no duplicate keys, bounded depth.</summary>
    sealed class JsonReader
    {
        const int MaxDepth = 32;
        readonly string _s;
        int _i;

        public JsonReader(string s) { _s = s; }

        public bool AtEnd { get { return _i >= _s.Length; } }

        public FormatException Fail(string why) { return new FormatException("invalid JSON at character " + _i + ": " + why); }

        public void SkipSpace()
        {
            while (_i < _s.Length && (_s[_i] == ' ' || _s[_i] == '\t' || _s[_i] == '\n' || _s[_i] == '\r')) _i++;
        }

        public JsonValue ReadValue(int depth)
        {
            if (depth > MaxDepth) throw Fail("nested too deeply");
            SkipSpace();
            if (AtEnd) throw Fail("unexpected end of input");
            char c = _s[_i];
            if (c == '{') return ReadObject(depth);
            if (c == '[') return ReadArray(depth);
            if (c == '"') return new JsonValue { Kind = JsonKind.String, Text = ReadString() };
            if (c == '-' || (c >= '0' && c <= '9')) return new JsonValue { Kind = JsonKind.Number, Text = ReadNumber() };
            if (Literal("true")) return new JsonValue { Kind = JsonKind.True };
            if (Literal("false")) return new JsonValue { Kind = JsonKind.False };
            if (Literal("null")) return new JsonValue { Kind = JsonKind.Null };
            throw Fail("unexpected character '" + c + "'");
        }

        bool Literal(string word)
        {
            if (string.CompareOrdinal(_s, _i, word, 0, word.Length) != 0) return false;
            _i += word.Length;
            return true;
        }

        JsonValue ReadObject(int depth)
        {
            _i++; // {
            var members = new List<KeyValuePair<string, JsonValue>>();
            var seen = new HashSet<string>();
            SkipSpace();
            if (_i < _s.Length && _s[_i] == '}') { _i++; return new JsonValue { Kind = JsonKind.Object, Members = members }; }
            while (true)
            {
                SkipSpace();
                if (AtEnd || _s[_i] != '"') throw Fail("expected a member name");
                string key = ReadString();
                if (!seen.Add(key)) throw Fail("duplicate key \"" + key + "\"");
                SkipSpace();
                if (AtEnd || _s[_i] != ':') throw Fail("expected ':'");
                _i++;
                members.Add(new KeyValuePair<string, JsonValue>(key, ReadValue(depth + 1)));
                SkipSpace();
                if (AtEnd) throw Fail("unterminated object");
                if (_s[_i] == ',') { _i++; continue; }
                if (_s[_i] == '}') { _i++; return new JsonValue { Kind = JsonKind.Object, Members = members }; }
                throw Fail("expected ',' or '}'");
            }
        }

        JsonValue ReadArray(int depth)
        {
            _i++; // [
            var items = new List<JsonValue>();
            SkipSpace();
            if (_i < _s.Length && _s[_i] == ']') { _i++; return new JsonValue { Kind = JsonKind.Array, Items = items }; }
            while (true)
            {
                items.Add(ReadValue(depth + 1));
                SkipSpace();
                if (AtEnd) throw Fail("unterminated array");
                if (_s[_i] == ',') { _i++; continue; }
                if (_s[_i] == ']') { _i++; return new JsonValue { Kind = JsonKind.Array, Items = items }; }
                throw Fail("expected ',' or ']'");
            }
        }

        string ReadString()
        {
            _i++; // opening quote
            var sb = new StringBuilder();
            while (true)
            {
                if (AtEnd) throw Fail("unterminated string");
                char c = _s[_i++];
                if (c == '"') return sb.ToString();
                if (c < 0x20) throw Fail("control character in a string");
                if (c != '\\') { sb.Append(c); continue; }
                if (AtEnd) throw Fail("unterminated escape");
                char e = _s[_i++];
                switch (e)
                {
                    case '"': sb.Append('"'); break;
                    case '\\': sb.Append('\\'); break;
                    case '/': sb.Append('/'); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'n': sb.Append('\n'); break;
                    case 'r': sb.Append('\r'); break;
                    case 't': sb.Append('\t'); break;
                    case 'u':
                        {
                            int code;
                            if (_i + 4 > _s.Length || !int.TryParse(_s.Substring(_i, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code))
                                throw Fail("bad \\u escape");
                            _i += 4;
                            sb.Append((char)code);
                            break;
                        }
                    default: throw Fail("bad escape '\\" + e + "'");
                }
            }
        }

        string ReadNumber()
        {
            int start = _i;
            if (_s[_i] == '-') _i++;
            if (AtEnd || !IsDigit(_s[_i])) throw Fail("bad number");
            if (_s[_i] == '0') _i++;
            else while (_i < _s.Length && IsDigit(_s[_i])) _i++;
            if (_i < _s.Length && _s[_i] == '.')
            {
                _i++;
                if (AtEnd || !IsDigit(_s[_i])) throw Fail("bad number");
                while (_i < _s.Length && IsDigit(_s[_i])) _i++;
            }
            if (_i < _s.Length && (_s[_i] == 'e' || _s[_i] == 'E'))
            {
                _i++;
                if (_i < _s.Length && (_s[_i] == '+' || _s[_i] == '-')) _i++;
                if (AtEnd || !IsDigit(_s[_i])) throw Fail("bad number");
                while (_i < _s.Length && IsDigit(_s[_i])) _i++;
            }
            return _s.Substring(start, _i - start);
        }

        static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
    }

    /// <summary>The codec JSON: {"protocol": NAME, "limits": {"max_payload": N}, PARAMS_KEY: {...}}.</summary>
    public static class CodecJson
    {
        /// <summary>Parses and validates a codec JSON object against the <see cref="Registry"/>.
        /// Throws <see cref="FormatException"/> (a usage error in the programs) for bad JSON, a
        /// missing or unknown protocol, unknown keys, and values of the wrong type or range.</summary>
        public static CodecSpec Parse(string text)
        {
            JsonValue root = JsonValue.Parse(text);
            List<KeyValuePair<string, JsonValue>> members = root.AsObject("the codec");
            var spec = new CodecSpec { Json = root.ToJson() };
            JsonValue v;
            if (!TryGet(members, "protocol", out v)) throw new FormatException("the codec needs \"protocol\"");
            spec.Protocol = v.AsString("\"protocol\"");
            ProtocolModule module = Registry.Find(spec.Protocol);
            if (module == null) throw new FormatException(Registry.UnknownMessage(spec.Protocol));
            foreach (KeyValuePair<string, JsonValue> m in members)
            {
                if (m.Key == "protocol") continue;
                if (m.Key == "limits")
                {
                    if (!module.TakesLimits) throw new FormatException("\"limits\" does not apply to protocol \"" + spec.Protocol + "\" (its limit is in its own parameters)");
                    foreach (KeyValuePair<string, JsonValue> l in m.Value.AsObject("\"limits\""))
                    {
                        if (l.Key != "max_payload") throw new FormatException("unknown key \"limits\"." + Quote(l.Key));
                        spec.MaxPayload = l.Value.AsInteger("limits.max_payload", 0, long.MaxValue);
                    }
                }
                else if (m.Key == module.ParamsKey)
                {
                    spec.ParamsKey = m.Key;
                    spec.Params = module.ParseParams(m.Value);
                }
                else if (Registry.IsParamsKey(m.Key))
                    throw new FormatException("\"" + m.Key + "\" does not apply to protocol \"" + spec.Protocol + "\"");
                else throw new FormatException("unknown key " + Quote(m.Key) + " in the codec");
            }
            return spec;
        }

        /// <summary>--protocol NAME: short for {"protocol": NAME}.</summary>
        public static CodecSpec FromName(string name)
        {
            if (Registry.Find(name) == null) throw new FormatException(Registry.UnknownMessage(name));
            return CodecSpec.Named(name);
        }

        /// <summary>Checks the members of a parameter object against the allowed keys.</summary>
        public static void CheckKeys(List<KeyValuePair<string, JsonValue>> members, string where, params string[] allowed)
        {
            foreach (KeyValuePair<string, JsonValue> m in members)
                if (Array.IndexOf(allowed, m.Key) < 0) throw new FormatException("unknown key " + Quote(m.Key) + " in \"" + where + "\"");
        }

        public static bool TryGet(List<KeyValuePair<string, JsonValue>> members, string key, out JsonValue value)
        {
            foreach (KeyValuePair<string, JsonValue> m in members)
                if (m.Key == key) { value = m.Value; return true; }
            value = null;
            return false;
        }

        /// <summary>A JSON string literal.</summary>
        public static string Quote(string s)
        {
            var sb = new StringBuilder("\"");
            foreach (char c in s)
            {
                if (c == '"' || c == '\\') sb.Append('\\').Append(c);
                else if (c < 0x20) sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                else sb.Append(c);
            }
            return sb.Append('"').ToString();
        }
    }
}
