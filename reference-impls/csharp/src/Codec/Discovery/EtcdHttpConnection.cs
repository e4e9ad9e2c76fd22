// One HTTP/1.1 exchange with etcd's v3 JSON gateway, on a plain TCP socket.
//
// Why not HttpClient / HttpWebRequest: the code compiles with Mono's mcs (no NuGet) and a modern
// .NET SDK, and needs three things those make awkward on Mono 6.8: a hard deadline over connect,
// send and the whole answer (DISC-ETCD-7), a long-lived streamed answer (/v3/watch, one JSON object
// a line, chunked) that another thread can cut at once (unwatch, close), and no per-host connection
// pool (ServicePointManager's default limit of 2 would queue a third watch behind two open streams).
// The gateway speaks only a tiny subset of HTTP/1.1 to us (POST, Content-Length request, Connection:
// close, a Content-Length or chunked answer), so ~200 lines over System.Net.Sockets do it, the same
// on both runtimes.
using System;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace Frameproof.Discovery
{
    /// <summary>A POST to the gateway and its answer: read whole (<see cref="ReadBodyToEnd"/>) or a
    /// line at a time (<see cref="ReadLine"/>, the watch stream). Not thread-safe, except
    /// <see cref="Abort"/>, which any thread may call to end a blocked read.</summary>
    sealed class EtcdHttpConnection : IDisposable
    {
        readonly Socket _socket;
        readonly byte[] _buf = new byte[16384];
        int _pos, _len;
        bool _chunked, _bodyEnd, _afterChunk;
        long _chunkLeft, _contentLeft = -1;
        volatile bool _aborted;

        public int Status { get; private set; }

        EtcdHttpConnection(Socket s) { _socket = s; }

        /// <summary>Milliseconds left until a Stopwatch deadline (at least 1).</summary>
        public static int Left(long deadline)
        {
            long ticks = deadline - Stopwatch.GetTimestamp();
            if (ticks <= 0) return 0;
            long ms = ticks * 1000 / Stopwatch.Frequency;
            return (int)Math.Max(1, Math.Min(ms, int.MaxValue));
        }

        public static long Deadline(TimeSpan t) { return Stopwatch.GetTimestamp() + (long)(t.TotalSeconds * Stopwatch.Frequency); }

        /// <summary>Connects, sends the POST and reads the status line and headers, all before the
        /// deadline. Throws IOException / SocketException on any failure (the caller retries).</summary>
        public static EtcdHttpConnection Post(string host, int port, string path, string json, long deadline)
        {
            int ms = Left(deadline);
            if (ms <= 0) throw new TimeoutException("no time left to connect");
            IPAddress ip;
            if (!IPAddress.TryParse(host, out ip))
            {
                IPAddress[] all = Dns.GetHostAddresses(host);
                if (all.Length == 0) throw new IOException("cannot resolve " + host);
                ip = all[0];
                foreach (IPAddress a in all) if (a.AddressFamily == AddressFamily.InterNetwork) { ip = a; break; }
            }
            var s = new Socket(ip.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
            var c = new EtcdHttpConnection(s);
            try
            {
                IAsyncResult ar = s.BeginConnect(new IPEndPoint(ip, port), null, null);
                if (!ar.AsyncWaitHandle.WaitOne(ms))
                    throw new TimeoutException("connect to " + host + ":" + port + " timed out");
                s.EndConnect(ar);
                byte[] body = Encoding.UTF8.GetBytes(json);
                string head = "POST " + path + " HTTP/1.1\r\nHost: " + host + ":" + port +
                              "\r\nContent-Type: application/json\r\nContent-Length: " + body.Length +
                              "\r\nConnection: close\r\n\r\n";
                byte[] hb = Encoding.ASCII.GetBytes(head);
                var all = new byte[hb.Length + body.Length];
                Buffer.BlockCopy(hb, 0, all, 0, hb.Length);
                Buffer.BlockCopy(body, 0, all, hb.Length, body.Length);
                s.SendTimeout = Math.Max(1, Left(deadline));
                int sent = 0;
                while (sent < all.Length) sent += s.Send(all, sent, all.Length - sent, SocketFlags.None);
                c.ReadHead(deadline);
                return c;
            }
            catch
            {
                c.Dispose();
                throw;
            }
        }

        /// <summary>The deadline of the next reads (0: none, for the watch stream).</summary>
        public void SetDeadline(long deadline)
        {
            _deadline = deadline;
        }

        long _deadline;

        int Fill()
        {
            if (_aborted) throw new IOException("aborted");
            int timeout = 0;
            if (_deadline != 0)
            {
                timeout = Left(_deadline);
                if (timeout <= 0) throw new TimeoutException("etcd did not answer in time");
            }
            _socket.ReceiveTimeout = timeout;
            int n = _socket.Receive(_buf, 0, _buf.Length, SocketFlags.None);
            _pos = 0;
            _len = n;
            return n;
        }

        int RawByte()
        {
            if (_pos == _len && Fill() == 0) return -1;
            return _buf[_pos++];
        }

        string RawLine()
        {
            var sb = new StringBuilder();
            while (true)
            {
                int b = RawByte();
                if (b < 0) throw new IOException("connection closed in the middle of a header line");
                if (b == '\n') break;
                if (b != '\r') sb.Append((char)b);
                if (sb.Length > 16384) throw new IOException("header line too long");
            }
            return sb.ToString();
        }

        void ReadHead(long deadline)
        {
            _deadline = deadline;
            string status = RawLine();
            string[] parts = status.Split(' ');
            int code;
            if (parts.Length < 2 || !parts[0].StartsWith("HTTP/1.", StringComparison.Ordinal) || !int.TryParse(parts[1], out code))
                throw new IOException("not an HTTP answer: " + status);
            Status = code;
            while (true)
            {
                string h = RawLine();
                if (h.Length == 0) break;
                int colon = h.IndexOf(':');
                if (colon <= 0) continue;
                string name = h.Substring(0, colon).Trim(), value = h.Substring(colon + 1).Trim();
                if (name.Equals("Transfer-Encoding", StringComparison.OrdinalIgnoreCase) && value.IndexOf("chunked", StringComparison.OrdinalIgnoreCase) >= 0)
                    _chunked = true;
                else if (name.Equals("Content-Length", StringComparison.OrdinalIgnoreCase))
                    _contentLeft = long.Parse(value, System.Globalization.CultureInfo.InvariantCulture);
            }
            if (_chunked) _contentLeft = -1;
        }

        /// <summary>One byte of the (de-chunked) body; -1 at its end.</summary>
        int BodyByte()
        {
            if (_bodyEnd) return -1;
            if (_chunked)
            {
                if (_chunkLeft == 0)
                {
                    if (_afterChunk) RawLine();   // the CRLF that ends a chunk's data
                    string size = RawLine();
                    int semi = size.IndexOf(';');
                    if (semi >= 0) size = size.Substring(0, semi);
                    long n;
                    if (!long.TryParse(size.Trim(), System.Globalization.NumberStyles.AllowHexSpecifier, System.Globalization.CultureInfo.InvariantCulture, out n) || n < 0)
                        throw new IOException("bad chunk size '" + size + "'");
                    if (n == 0)
                    {
                        while (RawLine().Length > 0) { }   // trailers
                        _bodyEnd = true;
                        return -1;
                    }
                    _chunkLeft = n;
                    _afterChunk = true;
                }
                int b = RawByte();
                if (b < 0) throw new IOException("connection closed inside a chunk");
                _chunkLeft--;
                return b;
            }
            if (_contentLeft == 0) { _bodyEnd = true; return -1; }
            int x = RawByte();
            if (x < 0)
            {
                if (_contentLeft > 0) throw new IOException("connection closed before the end of the body");
                _bodyEnd = true;
                return -1;
            }
            if (_contentLeft > 0) _contentLeft--;
            return x;
        }

        /// <summary>The whole body as UTF-8 text.</summary>
        public string ReadBodyToEnd()
        {
            var ms = new MemoryStream();
            int b;
            while ((b = BodyByte()) >= 0) ms.WriteByte((byte)b);
            return Encoding.UTF8.GetString(ms.GetBuffer(), 0, (int)ms.Length);
        }

        /// <summary>The next line of the body (without its newline); null at the end of the body.</summary>
        public string ReadLine()
        {
            var ms = new MemoryStream();
            while (true)
            {
                int b = BodyByte();
                if (b < 0)
                {
                    if (ms.Length == 0) return null;
                    break;
                }
                if (b == '\n') break;
                ms.WriteByte((byte)b);
            }
            return Encoding.UTF8.GetString(ms.GetBuffer(), 0, (int)ms.Length);
        }

        /// <summary>Ends the exchange from any thread: a read blocked on it fails at once.</summary>
        public void Abort()
        {
            _aborted = true;
            try { _socket.Shutdown(SocketShutdown.Both); } catch (Exception) { }
            try { _socket.Close(); } catch (Exception) { }
        }

        public void Dispose()
        {
            try { _socket.Close(); } catch (Exception) { }
        }
    }
}
