// etcd's v3 API through its JSON gateway (etcd 3.4: /v3/kv/put, /v3/kv/range, /v3/kv/deleterange,
// /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/watch). There is no gRPC library here
// (no NuGet), and etcd serves the same API as JSON over HTTP/1.1: keys and values base64, 64-bit
// integers as JSON strings.
//
// The JSON reader is the project's own (Frameproof.Codec.JsonValue, CodecJson.cs), the one
// EtcdMapping.Decode already uses for the stored values: it keeps numbers as their source text
// (etcd's revisions and lease IDs are int64s, written as strings or numbers), compiles unchanged
// with mcs and a modern SDK, and needs no extra assembly. DataContractJsonSerializer would need a
// contract class per gateway message and System.Json is Mono-only (not in modern .NET).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using Frameproof.Codec;

namespace Frameproof.Discovery
{
    /// <summary>Unary calls to etcd's JSON gateway, each bounded by a deadline. The endpoint is one
    /// "host:port", or a cluster's members comma-separated (DISC-ETCD-8): calls go to the current
    /// member; one that refuses or drops the connection makes the next one current, and a round over
    /// every member is tried again (every 100 ms) until the deadline.</summary>
    public sealed class EtcdGateway
    {
        readonly string[] _hosts;
        readonly int[] _ports;
        int _current;

        public EtcdGateway(string endpoint)
        {
            if (string.IsNullOrEmpty(endpoint)) throw new ArgumentException("etcd endpoint is empty");
            var hosts = new List<string>();
            var ports = new List<int>();
            foreach (string part in endpoint.Split(','))
            {
                string e = part.Trim();
                if (e.Length == 0) continue;
                int scheme = e.IndexOf("://", StringComparison.Ordinal);
                if (scheme >= 0) e = e.Substring(scheme + 3);
                e = e.TrimEnd('/');
                int colon = e.LastIndexOf(':');
                int port;
                if (colon <= 0 || !int.TryParse(e.Substring(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out port) || port <= 0 || port > 65535)
                    throw new ArgumentException("etcd endpoint '" + part + "' is not host:port");
                hosts.Add(e.Substring(0, colon).Trim('[', ']'));
                ports.Add(port);
            }
            if (hosts.Count == 0) throw new ArgumentException("etcd endpoint is empty");
            _hosts = hosts.ToArray();
            _ports = ports.ToArray();
        }

        /// <summary>The current member's index, for <see cref="Failed"/>.</summary>
        public int Current { get { return Volatile.Read(ref _current); } }

        /// <summary>The current member's host and port.</summary>
        public string Host { get { return _hosts[Current]; } }
        public int Port { get { return _ports[Current]; } }

        /// <summary>The member at <paramref name="index"/> failed: the next one is current (unless
        /// another call moved on already).</summary>
        public void Failed(int index)
        {
            Interlocked.CompareExchange(ref _current, (index + 1) % _hosts.Length, index);
        }

        /// <summary>POSTs a JSON body and answers the parsed JSON answer. Throws
        /// <see cref="EtcdUnreachableException"/> when there is no answer by the deadline (Stopwatch
        /// ticks, see <see cref="Deadline"/>) or etcd answers an error.</summary>
        public JsonValue Post(string path, string json, long deadline)
        {
            Exception last = null;
            for (int tried = 1; EtcdHttpConnection.Left(deadline) > 0; tried++)
            {
                int at = Current;
                try
                {
                    using (EtcdHttpConnection c = EtcdHttpConnection.Post(_hosts[at], _ports[at], path, json, deadline))
                    {
                        string text = c.ReadBodyToEnd();
                        JsonValue d = JsonValue.Parse(text.Trim().Length == 0 ? "{}" : text);
                        if (c.Status != 200)
                        {
                            JsonValue err = Member(d, "error");
                            JsonValue msg = Member(d, "message");
                            string m = msg != null && msg.Kind == JsonKind.String ? msg.Text
                                     : err != null && err.Kind == JsonKind.String ? err.Text : "HTTP " + c.Status;
                            throw new EtcdUnreachableException(path + ": " + m, m);
                        }
                        return d;
                    }
                }
                catch (EtcdUnreachableException) { throw; }
                catch (Exception x)   // refused, reset, timed out, not HTTP, not JSON: the next member, again until the deadline
                {
                    last = x;
                    Failed(at);
                    int wait = tried % _hosts.Length == 0 ? Math.Min(100, EtcdHttpConnection.Left(deadline)) : 0;
                    if (wait > 0) Thread.Sleep(wait);
                }
            }
            throw new EtcdUnreachableException(path + ": etcd at " + string.Join(",", Endpoints()) + " did not answer in time" +
                                               (last == null ? "" : " (" + last.Message + ")"), null, last);
        }

        /// <summary>Opens a streamed call (/v3/watch): connected and its headers read by the deadline,
        /// then read without one (<see cref="EtcdHttpConnection.ReadLine"/>).</summary>
        internal EtcdHttpConnection Stream(string path, string json, long deadline)
        {
            int at = Current;
            EtcdHttpConnection c;
            try { c = EtcdHttpConnection.Post(_hosts[at], _ports[at], path, json, deadline); }
            catch (Exception) { Failed(at); throw; }
            if (c.Status != 200)
            {
                c.Dispose();
                throw new IOException(path + ": HTTP " + c.Status);
            }
            c.SetDeadline(0);
            return c;
        }

        string[] Endpoints()
        {
            var all = new string[_hosts.Length];
            for (int i = 0; i < all.Length; i++) all[i] = _hosts[i] + ":" + _ports[i].ToString(CultureInfo.InvariantCulture);
            return all;
        }

        /// <summary>A range read of every key starting with <paramref name="key"/>, sorted by create
        /// revision, ascending (DISC-ETCD-4); linearizable (etcd's default).</summary>
        public JsonValue RangePrefix(byte[] key, long deadline)
        {
            return Post("/v3/kv/range", "{\"key\":\"" + B64(key) + "\",\"range_end\":\"" + B64(PrefixEnd(key)) +
                                        "\",\"sort_order\":\"ASCEND\",\"sort_target\":\"CREATE\"}", deadline);
        }

        /// <summary>A deadline <paramref name="timeout"/> from now, in Stopwatch ticks.</summary>
        public static long Deadline(TimeSpan timeout) { return EtcdHttpConnection.Deadline(timeout); }

        // ---------------------------------------------------------------- JSON and key helpers

        public static string B64(byte[] b) { return Convert.ToBase64String(b ?? new byte[0]); }

        /// <summary>The bytes of a base64 member; empty when absent (the gateway omits empty values).</summary>
        public static byte[] UnB64(JsonValue v)
        {
            if (v == null || v.Kind != JsonKind.String || v.Text.Length == 0) return new byte[0];
            return Convert.FromBase64String(v.Text);
        }

        /// <summary>The range end that covers every key starting with <paramref name="key"/> (etcd's
        /// prefix convention: the last byte below 0xFF incremented, the 0xFF bytes after it dropped).</summary>
        public static byte[] PrefixEnd(byte[] key)
        {
            var k = new List<byte>(key);
            while (k.Count > 0)
            {
                if (k[k.Count - 1] < 0xFF)
                {
                    k[k.Count - 1]++;
                    return k.ToArray();
                }
                k.RemoveAt(k.Count - 1);
            }
            return new byte[] { 0 };
        }

        /// <summary>The member <paramref name="name"/> of an object; null when absent or not an object.</summary>
        public static JsonValue Member(JsonValue o, string name)
        {
            if (o == null || o.Kind != JsonKind.Object) return null;
            foreach (KeyValuePair<string, JsonValue> m in o.Members)
                if (m.Key == name) return m.Value;
            return null;
        }

        /// <summary>An int64 member (a JSON string or number, as the gateway writes them); 0 when absent.</summary>
        public static long Int64(JsonValue o, string name)
        {
            JsonValue v = Member(o, name);
            if (v == null || (v.Kind != JsonKind.String && v.Kind != JsonKind.Number)) return 0;
            long x;
            return long.TryParse(v.Text, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out x) ? x : 0;
        }

        public static bool Bool(JsonValue o, string name)
        {
            JsonValue v = Member(o, name);
            return v != null && v.Kind == JsonKind.True;
        }

        /// <summary>header.revision of an answer.</summary>
        public static long Revision(JsonValue d) { return Int64(Member(d, "header"), "revision"); }

        internal static string Str(long x) { return x.ToString(CultureInfo.InvariantCulture); }
    }
}
