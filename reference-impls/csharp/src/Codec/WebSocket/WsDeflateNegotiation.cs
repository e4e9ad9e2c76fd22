using System;
using System.Collections.Generic;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>One side's view of a permessage-deflate configuration (spec/websocket-deflate.md §2).
    /// In an offer, <see cref="ClientMaxWindowBits"/> may be <see cref="WindowBitsNoValue"/> (the
    /// parameter without a value); in an agreement it is the window bits, or 0 (absent).</summary>
    public sealed class DeflateParams
    {
        public const int WindowBitsNoValue = -1;

        public bool ServerNoContextTakeover, ClientNoContextTakeover;
        /// <summary>8..15, or 0: absent.</summary>
        public int ServerMaxWindowBits;
        /// <summary>8..15, <see cref="WindowBitsNoValue"/> (offers only), or 0: absent.</summary>
        public int ClientMaxWindowBits;

        /// <summary>The response's Sec-WebSocket-Extensions value for this agreement.</summary>
        public string Header()
        {
            var sb = new StringBuilder(WsDeflateNegotiation.Name);
            if (ServerNoContextTakeover) sb.Append("; server_no_context_takeover");
            if (ClientNoContextTakeover) sb.Append("; client_no_context_takeover");
            if (ServerMaxWindowBits != 0) sb.Append("; server_max_window_bits=").Append(ServerMaxWindowBits);
            if (ClientMaxWindowBits == WindowBitsNoValue) sb.Append("; client_max_window_bits");
            else if (ClientMaxWindowBits != 0) sb.Append("; client_max_window_bits=").Append(ClientMaxWindowBits);
            return sb.ToString();
        }

        public override string ToString() { return Header(); }
    }

    /// <summary>
    /// Both sides of the permessage-deflate negotiation: the server's (WSD-NEG-1..4) and the client's
    /// offer and its check of the response (WSD-NEG-5), mirroring
    /// conformance/frameproof/protocols/websocket/deflate.py: the Sec-WebSocket-Extensions list in
    /// every legal spelling (RFC 6455 §9.1, RFC 7230 §3.2.6), each offer validated, the first acceptable
    /// one answered.
    /// </summary>
    public static class WsDeflateNegotiation
    {
        public const string Name = "permessage-deflate";
        /// <summary>The window bits of this server's compressor (zlib: 9..15, WSD-NEG-4).</summary>
        public const int ServerWindowBits = 15;

        /// <summary>One list element: the extension name and its parameters (name, value or null), as spelled.</summary>
        public sealed class Element
        {
            public string Name;
            public List<KeyValuePair<string, string>> Params = new List<KeyValuePair<string, string>>();
        }

        static bool IsTChar(char c)
        {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || "!#$%&'*+-.^_`|~".IndexOf(c) >= 0;
        }

        static int Ows(string s, int i)
        {
            while (i < s.Length && (s[i] == ' ' || s[i] == '\t')) i++;
            return i;
        }

        static string Token(string s, ref int i)
        {
            int j = i;
            while (j < s.Length && IsTChar(s[j])) j++;
            if (j == i) throw new FormatException("a token expected at " + i + " in '" + s + "'");
            string t = s.Substring(i, j - i);
            i = j;
            return t;
        }

        /// <summary>A quoted-string starting at s[i] == '"' (a backslash escapes one octet).</summary>
        static string Quoted(string s, ref int i)
        {
            var sb = new StringBuilder();
            i++;
            while (i < s.Length)
            {
                char c = s[i];
                if (c == '"') { i++; return sb.ToString(); }
                if (c == '\\' && i + 1 < s.Length) { sb.Append(s[i + 1]); i += 2; continue; }
                sb.Append(c);
                i++;
            }
            throw new FormatException("an unterminated quoted string in '" + s + "'");
        }

        /// <summary>Every Sec-WebSocket-Extensions value of a message (several headers are one list, in
        /// order) -> its elements. A quoted value is unquoted and must then be a token. Throws
        /// FormatException on bad syntax.</summary>
        public static List<Element> Parse(IList<string> values)
        {
            var r = new List<Element>();
            foreach (string s in values)
            {
                int i = Ows(s, 0);
                while (i < s.Length)
                {
                    if (s[i] == ',') { i = Ows(s, i + 1); continue; }   // empty list elements (RFC 7230 §7)
                    var e = new Element { Name = Token(s, ref i) };
                    i = Ows(s, i);
                    while (i < s.Length && s[i] == ';')
                    {
                        i = Ows(s, i + 1);
                        string pname = Token(s, ref i);
                        i = Ows(s, i);
                        string value = null;
                        if (i < s.Length && s[i] == '=')
                        {
                            i = Ows(s, i + 1);
                            if (i < s.Length && s[i] == '"')
                            {
                                value = Quoted(s, ref i);
                                if (value.Length == 0) throw new FormatException("an empty quoted value");
                                foreach (char c in value)
                                    if (!IsTChar(c)) throw new FormatException("the quoted value '" + value + "' is not a token");
                            }
                            else value = Token(s, ref i);
                            i = Ows(s, i);
                        }
                        e.Params.Add(new KeyValuePair<string, string>(pname, value));
                    }
                    r.Add(e);
                    if (i < s.Length)
                    {
                        if (s[i] != ',') throw new FormatException("',' or ';' expected at " + i + " in '" + s + "'");
                        i = Ows(s, i + 1);
                    }
                }
            }
            return r;
        }

        /// <summary>8..15 written without a leading zero, or 0.</summary>
        static int Bits(string v)
        {
            if (v == null || v.Length == 0 || v.Length > 2 || v[0] == '0') return 0;
            int n = 0;
            foreach (char c in v)
            {
                if (c < '0' || c > '9') return 0;
                n = n * 10 + (c - '0');
            }
            return n >= 8 && n <= 15 ? n : 0;
        }

        /// <summary>An offer's parameters, or null: the offer is declined (WSD-NEG-2: a parameter RFC
        /// 7692 does not define, an invalid value, a parameter given twice).</summary>
        public static DeflateParams OfferParams(List<KeyValuePair<string, string>> ps)
        {
            var seen = new HashSet<string>();
            var p = new DeflateParams();
            foreach (KeyValuePair<string, string> kv in ps)
            {
                string name = kv.Key.ToLowerInvariant();
                if (!seen.Add(name)) return null;
                switch (name)
                {
                    case "server_no_context_takeover":
                        if (kv.Value != null) return null;
                        p.ServerNoContextTakeover = true;
                        break;
                    case "client_no_context_takeover":
                        if (kv.Value != null) return null;
                        p.ClientNoContextTakeover = true;
                        break;
                    case "server_max_window_bits":
                        if ((p.ServerMaxWindowBits = Bits(kv.Value)) == 0) return null;
                        break;
                    case "client_max_window_bits":
                        if (kv.Value == null) p.ClientMaxWindowBits = DeflateParams.WindowBitsNoValue;
                        else if ((p.ClientMaxWindowBits = Bits(kv.Value)) == 0) return null;
                        break;
                    default:
                        return null;
                }
            }
            return p;
        }

        /// <summary>The server's answer to a request's Sec-WebSocket-Extensions values: the agreed
        /// parameters (response header: <see cref="DeflateParams.Header"/>), or null: every offer declined
        /// (no header). The first offer this server supports wins (WSD-NEG-2/3/4).</summary>
        public static DeflateParams Accept(IList<string> values)
        {
            List<Element> offers;
            try { offers = Parse(values); }
            catch (FormatException) { return null; }   // a list that does not parse: every offer declined
            foreach (Element e in offers)
            {
                if (!string.Equals(e.Name, Name, StringComparison.OrdinalIgnoreCase)) continue;
                DeflateParams p = OfferParams(e.Params);
                if (p == null) continue;
                int serverBits = Math.Min(ServerWindowBits, p.ServerMaxWindowBits == 0 ? 15 : p.ServerMaxWindowBits);
                if (serverBits < 9) continue;   // zlib cannot compress with 8 bits (WSD-NEG-4)
                int clientBits = 0;               // not offered: the response must not name it (WSD-NEG-3)
                if (p.ClientMaxWindowBits != 0)
                    clientBits = p.ClientMaxWindowBits == DeflateParams.WindowBitsNoValue ? 15 : p.ClientMaxWindowBits;
                return new DeflateParams
                {
                    ServerNoContextTakeover = p.ServerNoContextTakeover,
                    ClientNoContextTakeover = p.ClientNoContextTakeover,
                    ServerMaxWindowBits = p.ServerMaxWindowBits != 0 || serverBits < 15 ? serverBits : 0,
                    ClientMaxWindowBits = clientBits,
                };
            }
            return null;
        }

        /// <summary>What a client offers (reference-impls/README.md, websocket): <c>client_max_window_bits</c>
        /// without a value (it follows any window the server asks for, WSD-CTX-2) and nothing else.</summary>
        public static DeflateParams ClientOffer()
        {
            return new DeflateParams { ClientMaxWindowBits = DeflateParams.WindowBitsNoValue };
        }

        /// <summary>A client's reading of the server's Sec-WebSocket-Extensions values (none: an empty
        /// list) after offering <paramref name="offer"/> (WSD-NEG-5): the agreement to follow, or null
        /// with <paramref name="error"/> null (the server declined), or null with <paramref name="error"/>
        /// set: fail the connection (a list that does not parse, an element other than one
        /// permessage-deflate, an unknown, repeated or invalid parameter, <c>client_max_window_bits</c>
        /// without a value or not offered, a window larger than offered). Parameters the offer did not
        /// ask for are accepted and followed.</summary>
        public static DeflateParams CheckResponse(IList<string> values, DeflateParams offer, out string error)
        {
            error = null;
            List<Element> elements;
            try { elements = Parse(values); }
            catch (FormatException e) { error = "Sec-WebSocket-Extensions does not parse: " + e.Message; return null; }
            if (elements.Count == 0) return null;
            if (elements.Count > 1 || !string.Equals(elements[0].Name, Name, StringComparison.OrdinalIgnoreCase))
            {
                var names = new List<string>();
                foreach (Element e in elements) names.Add(e.Name);
                error = "the response names [" + string.Join(", ", names) + "]; the offer was " + Name + " alone";
                return null;
            }
            DeflateParams p = OfferParams(elements[0].Params);
            if (p == null || p.ClientMaxWindowBits == DeflateParams.WindowBitsNoValue)
            {
                error = "a response parameter is unknown, repeated or has an invalid value: " + string.Join(", ", values);
                return null;
            }
            if (p.ClientMaxWindowBits != 0)
            {
                if (offer.ClientMaxWindowBits == 0) { error = "client_max_window_bits in the response, not in the offer"; return null; }
                if (offer.ClientMaxWindowBits > 0 && p.ClientMaxWindowBits > offer.ClientMaxWindowBits)
                {
                    error = "client_max_window_bits=" + p.ClientMaxWindowBits + ", larger than the " + offer.ClientMaxWindowBits + " offered";
                    return null;
                }
            }
            if (offer.ServerMaxWindowBits != 0 && p.ServerMaxWindowBits > offer.ServerMaxWindowBits)
            {
                error = "server_max_window_bits=" + p.ServerMaxWindowBits + ", larger than the " + offer.ServerMaxWindowBits + " offered";
                return null;
            }
            if (offer.ClientNoContextTakeover) p.ClientNoContextTakeover = true;   // the offer's hint binds the client
            return p;
        }

        /// <summary><see cref="Accept(IList{string})"/> of one (comma-joined) header value; null for none.</summary>
        public static DeflateParams Accept(string value)
        {
            return value == null ? null : Accept(new[] { value });
        }
    }
}
