using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using Frameproof.Codec;

namespace Frameproof.AutobahnClient
{
    /// <summary>
    /// fp-autobahn-client (reference-impls/README.md, "websocket"): the Autobahn testsuite's client
    /// protocol against its fuzzingserver. <c>GET /getCaseCount</c> (one text message: the count),
    /// then for each case <c>GET /runCase?case=I&amp;agent=NAME</c> echoing every text and binary
    /// message until the server closes, then <c>GET /updateReports?agent=NAME</c>. Each connection is
    /// the websocket module's echo session in the client role (<see cref="WsEchoSession"/>: masked
    /// replies with fresh keys, pings answered, the close answered with its code, a protocol error
    /// answered with the close code of WS-ERR-1), with no message size limit below 64 MiB.
    /// <c>--codec JSON</c> (a websocket codec, reference-impls/README.md) sets the frame and message
    /// limits (limits.max_payload, websocket.max_message; absent: 64 MiB each) and, with
    /// <c>"websocket": {"permessage_deflate": true}</c>, offers permessage-deflate on every connection
    /// (<see cref="WsDeflateNegotiation.ClientOffer"/>; spec/websocket-deflate.md): a response it cannot
    /// accept fails the connection (WSD-NEG-5: close 1002, nothing else sent), an agreed one makes the
    /// session inflate what it receives within max_message (1009 past it) and compress its echoes.
    /// Exit 0 when every case ran (the verdicts are Autobahn's), 1 if one could not, 2 on usage errors.
    /// </summary>
    public static class Program
    {
        const string Usage = "usage: fp-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N] [--case-timeout SECONDS] [--codec JSON]";
        const long Limit = 64L * 1024 * 1024;
        const int MaxAnswerHead = 64 * 1024;

        public static int Main(string[] args)
        {
            if (Options.WantsHelp(args)) { Console.Out.WriteLine(Usage); return 0; }
            IPEndPoint ep;
            string hostPort, agent, cases;
            double caseTimeout;
            Config cfg;
            try
            {
                var o = new Options(args, new string[0], new[] { "connect", "agent", "cases", "case-timeout", "codec" });
                cfg = new Config();
                if (o.Has("codec"))
                {
                    var ws = o.CreateCodec() as WebSocketCodec;
                    if (ws == null) throw new UsageException("--codec: the protocol must be websocket");
                    cfg.MaxFrame = ws.MaxFrame;
                    cfg.MaxMessage = ws.MaxMessage;
                    if (ws.PermessageDeflate) cfg.Offer = WsDeflateNegotiation.ClientOffer();
                }
                hostPort = o.Require("connect");
                ep = Options.ParseEndPoint(hostPort);
                agent = o.Require("agent");
                cases = o.Get("cases", "all");
                int dummy;
                if (cases != "all" && !(int.TryParse(cases, NumberStyles.None, CultureInfo.InvariantCulture, out dummy) && dummy >= 0))
                    throw new UsageException("--cases must be 'all' or a number");
                caseTimeout = o.GetDouble("case-timeout", 120);
                if (!(caseTimeout > 0)) throw new UsageException("--case-timeout must be > 0");
            }
            catch (Exception e) { return Options.UsageError(e, Usage); }

            string host = hostPort.Substring(0, hostPort.LastIndexOf(':'));
            int count;
            try
            {
                List<byte[]> got = Session(cfg, ep, host, "/getCaseCount", 30, true);
                if (got.Count == 0) throw new InvalidOperationException("no message with the case count");
                count = int.Parse(Encoding.UTF8.GetString(got[0]).Trim(), CultureInfo.InvariantCulture);
            }
            catch (Exception e)
            {
                Console.Out.WriteLine("autobahn client: /getCaseCount failed: " + e.Message);
                return 1;
            }
            int n = cases == "all" ? count : Math.Min(count, int.Parse(cases, CultureInfo.InvariantCulture));
            Console.Out.WriteLine("autobahn client: " + count + " cases offered, running " + n + " as agent '" + agent + "'");
            string a = Uri.EscapeDataString(agent);
            int failed = 0;
            var sw = Stopwatch.StartNew();
            for (int i = 1; i <= n; i++)
            {
                try { Session(cfg, ep, host, "/runCase?case=" + i + "&agent=" + a, caseTimeout, false); }
                catch (Exception e)
                {
                    failed++;
                    Console.Out.WriteLine("autobahn client: case " + i + " did not run to its end: " + e.Message);
                }
            }
            try { Session(cfg, ep, host, "/updateReports?agent=" + a, 60, false); }
            catch (Exception e)
            {
                Console.Out.WriteLine("autobahn client: /updateReports failed: " + e.Message);
                return 1;
            }
            Console.Out.WriteLine(string.Format(CultureInfo.InvariantCulture, "autobahn client: {0} of {1} cases ran in {2:F1} s", n - failed, n, sw.Elapsed.TotalSeconds));
            return failed == 0 ? 0 : 1;
        }

        /// <summary>The limits and the permessage-deflate offer (null: none) of every connection.</summary>
        sealed class Config
        {
            public long MaxFrame = Limit, MaxMessage = Limit;
            public DeflateParams Offer;
        }

        /// <summary>One connection: the opening handshake, then the echo session until the server
        /// closes TCP (at most <paramref name="timeoutS"/>; after our own close, 5 s more at most).
        /// Returns the collected messages when <paramref name="collect"/>.</summary>
        static List<byte[]> Session(Config cfg, IPEndPoint ep, string host, string path, double timeoutS, bool collect)
        {
            var deadline = Stopwatch.StartNew();
            long limitMs = (long)(timeoutS * 1000);
            using (var s = new Socket(ep.AddressFamily, SocketType.Stream, ProtocolType.Tcp))
            using (var session = new WsEchoSession(true, cfg.MaxFrame, cfg.MaxMessage, false, false))
            {
                if (collect) session.Collected = new List<byte[]>();
                s.NoDelay = true;
                s.Connect(ep);
                string hostHeader = (host.Contains(":") && !host.StartsWith("[", StringComparison.Ordinal) ? "[" + host + "]" : host) + ":" + ep.Port;
                string key;
                string request = WsHandshake.Request(hostHeader, path, out key, null, cfg.Offer);
                request = request.Substring(0, request.Length - 2) + "User-Agent: frameproof-autobahn-client-csharp\r\n\r\n";
                s.Send(Encoding.ASCII.GetBytes(request));

                var buf = new byte[1 << 20];
                int have = 0, end;
                while ((end = WsHandshake.HeadEnd(new ReadOnlySpan<byte>(buf, 0, have))) < 0)
                {
                    if (have >= MaxAnswerHead) throw new InvalidOperationException("answer head over 64 KiB");
                    s.ReceiveTimeout = Remaining(deadline, limitMs);
                    int m = s.Receive(buf, have, buf.Length - have, SocketFlags.None);
                    if (m <= 0) throw new InvalidOperationException("connection closed during the handshake");
                    have += m;
                }
                DeflateParams agreed;
                bool failConnection;
                string error = WsHandshake.CheckAnswer(Encoding.GetEncoding("iso-8859-1").GetString(buf, 0, end - 4), key, null,
                    cfg.Offer, out agreed, out failConnection);
                if (error != null)
                {
                    if (failConnection)   // WSD-NEG-5: the connection is open but unusable: close 1002, then TCP
                    {
                        session.FailConnection(new ProtocolError("WSD-NEG-5", 0, error));
                        s.SendTimeout = Remaining(deadline, limitMs);
                        s.Send(session.OutputBuffer, 0, session.OutputLength, SocketFlags.None);
                    }
                    throw new InvalidOperationException("opening handshake: " + error);
                }
                if (agreed != null) session.Agree(agreed);
                if (have > end) session.Receive(new ReadOnlySpan<byte>(buf, end, have - end));

                long closingSince = -1;
                while (true)
                {
                    if (session.OutputLength > 0)
                    {
                        s.SendTimeout = Remaining(deadline, limitMs);
                        int off = 0;
                        while (off < session.OutputLength) off += s.Send(session.OutputBuffer, off, session.OutputLength - off, SocketFlags.None);
                        session.ClearOutput();
                    }
                    if (session.Closed && closingSince < 0) closingSince = deadline.ElapsedMilliseconds;
                    // after the close handshake the server closes TCP first (WS-CLOSE-5); 5 s at most
                    long until = closingSince >= 0 ? Math.Min(limitMs, closingSince + 5000) : limitMs;
                    long left = until - deadline.ElapsedMilliseconds;
                    if (left <= 0)
                    {
                        if (closingSince < 0) throw new TimeoutException(path + ": the server did not end the connection within " + timeoutS + " s");
                        break;
                    }
                    s.ReceiveTimeout = (int)Math.Max(1, left);
                    int n;
                    try { n = s.Receive(buf, 0, buf.Length, SocketFlags.None); }
                    catch (SocketException e)
                    {
                        if (e.SocketErrorCode == SocketError.TimedOut || e.SocketErrorCode == SocketError.WouldBlock) continue;
                        if (e.SocketErrorCode == SocketError.ConnectionReset) break;
                        throw;
                    }
                    if (n <= 0)
                    {
                        session.EndOfInput();
                        break;
                    }
                    if (!session.Closed) session.Receive(new ReadOnlySpan<byte>(buf, 0, n));
                }
                return session.Collected;
            }
        }

        static int Remaining(Stopwatch sw, long limitMs)
        {
            return (int)Math.Max(1, Math.Min(int.MaxValue, limitMs - sw.ElapsedMilliseconds));
        }
    }
}
