using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>The opening handshake (spec/websocket.md §12, RFC 6455 §4).</summary>
    public static class WsHandshake
    {
        public const string Guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        public const string Subprotocol = "frameproof.echo";
        /// <summary>Largest request or response head read.</summary>
        public const int MaxHead = 8192;

        /// <summary>WS-HS-2: base64(SHA-1(key + GUID)).</summary>
        public static string AcceptFor(string key)
        {
            using (SHA1 sha = SHA1.Create())
                return Convert.ToBase64String(sha.ComputeHash(Encoding.ASCII.GetBytes(key + Guid)));
        }

        /// <summary>The index just after the blank line ending an HTTP head, or -1; bytes before
        /// <paramref name="from"/> are known not to end it.</summary>
        public static int HeadEnd(ReadOnlySpan<byte> b, int from = 0)
        {
            for (int i = Math.Max(3, from); i < b.Length; i++)
                if (b[i] == '\n' && b[i - 1] == '\r' && b[i - 2] == '\n' && b[i - 3] == '\r') return i + 1;
            return -1;
        }

        /// <summary>Parses a head into its first line and headers (names lower-case, repeated headers
        /// joined with ", "); false if a header line has no colon.</summary>
        public static bool Parse(string head, out string first, out Dictionary<string, string> headers)
        {
            headers = new Dictionary<string, string>();
            string[] lines = head.Split(new[] { "\r\n" }, StringSplitOptions.None);
            first = lines[0];
            for (int i = 1; i < lines.Length; i++)
            {
                if (lines[i].Length == 0) continue;
                int c = lines[i].IndexOf(':');
                if (c < 0) return false;
                string k = lines[i].Substring(0, c).Trim().ToLowerInvariant(), v = lines[i].Substring(c + 1).Trim();
                string old;
                headers[k] = headers.TryGetValue(k, out old) ? old + ", " + v : v;
            }
            return true;
        }

        static bool HasToken(Dictionary<string, string> h, string name, string token)
        {
            string v;
            if (!h.TryGetValue(name, out v)) return false;
            foreach (string t in v.Split(','))
                if (string.Equals(t.Trim(), token, StringComparison.OrdinalIgnoreCase)) return true;
            return false;
        }

        static bool IsKey(string key)
        {
            if (key == null || key.Length != 24 || !key.EndsWith("==", StringComparison.Ordinal)) return false;
            for (int i = 0; i < 22; i++)
            {
                char c = key[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/')) return false;
            }
            try { return Convert.FromBase64String(key).Length == 16; }
            catch (FormatException) { return false; }
        }

        static string Status(int code, string reason, string extra)
        {
            return "HTTP/1.1 " + code + " " + reason + "\r\n" + extra + "Content-Length: 0\r\nConnection: close\r\n\r\n";
        }

        /// <summary>The server's answer to a request head (without the blank line). <paramref name="ok"/>:
        /// 101, frames follow; else <paramref name="requirement"/> names the requirement the request broke.</summary>
        public static string Answer(string head, out bool ok, out string requirement)
        {
            return Answer(head, out ok, out requirement, null, Subprotocol);
        }

        /// <summary><see cref="Answer(string, out bool, out string)"/> for the echo service at
        /// <paramref name="path"/> (null: any; another gets 404, RFC 6455 §4.2.2) that speaks
        /// <paramref name="subprotocol"/> (websocket.path, websocket.subprotocol).</summary>
        public static string Answer(string head, out bool ok, out string requirement, string path, string subprotocol)
        {
            DeflateParams agreed;
            return Answer(head, out ok, out requirement, path, subprotocol, false, out agreed);
        }

        /// <summary><see cref="Answer(string, out bool, out string, string, string)"/>; with
        /// <paramref name="deflate"/> (websocket.permessage_deflate), the first acceptable
        /// permessage-deflate offer is accepted (WSD-NEG-1..4): <paramref name="agreed"/>, named in the
        /// response; null when every offer was declined (or none made, or <paramref name="deflate"/> false).</summary>
        public static string Answer(string head, out bool ok, out string requirement, string path, string subprotocol,
            bool deflate, out DeflateParams agreed)
        {
            agreed = null;
            ok = false;
            requirement = "WS-HS-1";
            string first;
            Dictionary<string, string> h;
            if (!Parse(head, out first, out h)) return Status(400, "Bad Request", "");
            string[] parts = first.Split(' ');
            string key;
            h.TryGetValue("sec-websocket-key", out key);
            bool bad = parts.Length != 3 || parts[0] != "GET" || parts[2] != "HTTP/1.1" || !h.ContainsKey("host")
                || !HasToken(h, "upgrade", "websocket") || !HasToken(h, "connection", "upgrade") || !IsKey(key);
            if (bad) return Status(400, "Bad Request", "");
            if (path != null && parts[1] != path) return Status(404, "Not Found", "");
            string version;
            if (!h.TryGetValue("sec-websocket-version", out version) || version != "13")
            {
                requirement = "WS-HS-3";
                return Status(426, "Upgrade Required", "Sec-WebSocket-Version: 13\r\n");
            }
            string extra = "";
            string offered;
            if (h.TryGetValue("sec-websocket-protocol", out offered))
                foreach (string p in offered.Split(','))
                    if (p.Trim() == subprotocol) { extra = "Sec-WebSocket-Protocol: " + subprotocol + "\r\n"; break; }
            string extensions;
            if (deflate && h.TryGetValue("sec-websocket-extensions", out extensions))
            {
                agreed = WsDeflateNegotiation.Accept(extensions);
                if (agreed != null) extra += "Sec-WebSocket-Extensions: " + agreed.Header() + "\r\n";
            }
            ok = true;
            requirement = null;
            return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
                + AcceptFor(key) + "\r\n" + extra + "\r\n";
        }

        /// <summary>A client's opening request (WS-HS-1) with a fresh random key.</summary>
        public static string Request(string host, string path, out string key, string subprotocol = null)
        {
            return Request(host, path, out key, subprotocol, null);
        }

        /// <summary><see cref="Request(string, string, out string, string)"/> offering
        /// <paramref name="deflate"/> (permessage-deflate, null: no Sec-WebSocket-Extensions).</summary>
        public static string Request(string host, string path, out string key, string subprotocol, DeflateParams deflate)
        {
            var k = new byte[16];
            using (var rng = RandomNumberGenerator.Create()) rng.GetBytes(k);
            key = Convert.ToBase64String(k);
            return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                + key + "\r\nSec-WebSocket-Version: 13\r\n"
                + (subprotocol == null ? "" : "Sec-WebSocket-Protocol: " + subprotocol + "\r\n")
                + (deflate == null ? "" : "Sec-WebSocket-Extensions: " + deflate.Header() + "\r\n") + "\r\n";
        }

        /// <summary>websocket.path: a request target, "/" then visible ASCII.</summary>
        public static bool IsPath(string p)
        {
            if (string.IsNullOrEmpty(p) || p[0] != '/') return false;
            foreach (char c in p) if (c <= ' ' || c >= 0x7f) return false;
            return true;
        }

        /// <summary>websocket.subprotocol: an RFC 7230 token (RFC 6455 §4.1 item 10).</summary>
        public static bool IsToken(string s)
        {
            if (string.IsNullOrEmpty(s)) return false;
            foreach (char c in s)
                if (!(c < 0x80 && char.IsLetterOrDigit(c)) && "!#$%&'*+-.^_`|~".IndexOf(c) < 0) return false;
            return true;
        }

        /// <summary>True if header <paramref name="name"/> is present and names anything: a non-empty
        /// element of its comma-separated list (an empty list names nothing).</summary>
        static bool NamesAny(Dictionary<string, string> h, string name)
        {
            string v;
            if (!h.TryGetValue(name, out v)) return false;
            foreach (string t in v.Split(','))
                if (t.Trim().Length > 0) return true;
            return false;
        }

        /// <summary>Checks a server's answer head (WS-HS-7, RFC 6455 §4.1, the client's checks 1-6):
        /// status 101, <c>Upgrade: websocket</c>, the <c>upgrade</c> token of <c>Connection</c>,
        /// Sec-WebSocket-Accept for <paramref name="key"/>, no extension (none offered) and no
        /// subprotocol but <paramref name="offered"/> (websocket.subprotocol), if any. Returns null if it is right, else what is wrong.</summary>
        public static string CheckAnswer(string head, string key, string offered = null)
        {
            DeflateParams agreed;
            bool failConnection;
            return CheckAnswer(head, key, offered, null, out agreed, out failConnection);
        }

        /// <summary><see cref="CheckAnswer(string, string, string)"/> after offering permessage-deflate
        /// (<paramref name="deflate"/>; null: nothing offered, and a response naming an extension is
        /// refused, WS-HS-7): <paramref name="agreed"/> is the agreement to follow, null when the server
        /// declined. A response the client cannot accept (WSD-NEG-5) is an error with
        /// <paramref name="failConnection"/> set: the 101 is otherwise right, so the client fails the
        /// WebSocket connection (close 1002, nothing else sent).</summary>
        public static string CheckAnswer(string head, string key, string offered, DeflateParams deflate,
            out DeflateParams agreed, out bool failConnection)
        {
            agreed = null;
            failConnection = false;
            string first;
            Dictionary<string, string> h;
            if (!Parse(head, out first, out h)) return "malformed answer head";
            string[] parts = first.Split(' ');
            if (parts.Length < 2 || parts[0] != "HTTP/1.1" || parts[1] != "101") return "status line '" + first + "' (expected 101)";
            if (!HasToken(h, "upgrade", "websocket")) return "no 'Upgrade: websocket'";
            if (!HasToken(h, "connection", "upgrade")) return "no 'Connection: Upgrade'";
            if (deflate == null && NamesAny(h, "sec-websocket-extensions")) return "the server named an extension that was not offered (WS-HS-7)";
            string named;
            if (NamesAny(h, "sec-websocket-protocol") && !(offered != null && h.TryGetValue("sec-websocket-protocol", out named) && named == offered))
                return "the server named a subprotocol that was not offered (WS-HS-7)";
            string accept;
            if (!h.TryGetValue("sec-websocket-accept", out accept) || accept != AcceptFor(key))
                return "Sec-WebSocket-Accept '" + accept + "', expected '" + AcceptFor(key) + "'";
            string extensions, error = null;
            if (deflate != null && h.TryGetValue("sec-websocket-extensions", out extensions))
                agreed = WsDeflateNegotiation.CheckResponse(new[] { extensions }, deflate, out error);
            if (error == null) return null;
            failConnection = true;
            return error + " (WSD-NEG-5)";
        }
    }
}
