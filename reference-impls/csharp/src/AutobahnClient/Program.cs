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
    /// Exit 0 when every case ran (the verdicts are Autobahn's), 1 if one could not, 2 on usage errors.
    /// </summary>
    public static class Program
    {
        const string Usage = "usage: fp-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N] [--case-timeout SECONDS]";
        const long Limit = 64L * 1024 * 1024;
        const int MaxAnswerHead = 64 * 1024;

        public static int Main(string[] args)
        {
            if (Options.WantsHelp(args)) { Console.Out.WriteLine(Usage); return 0; }
            IPEndPoint ep;
            string hostPort, agent, cases;
            double caseTimeout;
            try
            {
                var o = new Options(args, new string[0], new[] { "connect", "agent", "cases", "case-timeout" });
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
                List<byte[]> got = Session(ep, host, "/getCaseCount", 30, true);
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
                try { Session(ep, host, "/runCase?case=" + i + "&agent=" + a, caseTimeout, false); }
                catch (Exception e)
                {
                    failed++;
                    Console.Out.WriteLine("autobahn client: case " + i + " did not run to its end: " + e.Message);
                }
            }
            try { Session(ep, host, "/updateReports?agent=" + a, 60, false); }
            catch (Exception e)
            {
                Console.Out.WriteLine("autobahn client: /updateReports failed: " + e.Message);
                return 1;
            }
            Console.Out.WriteLine(string.Format(CultureInfo.InvariantCulture, "autobahn client: {0} of {1} cases ran in {2:F1} s", n - failed, n, sw.Elapsed.TotalSeconds));
            return failed == 0 ? 0 : 1;
        }

        /// <summary>One connection: the opening handshake, then the echo session until the server
        /// closes TCP (at most <paramref name="timeoutS"/>; after our own close, 5 s more at most).
        /// Returns the collected messages when <paramref name="collect"/>.</summary>
        static List<byte[]> Session(IPEndPoint ep, string host, string path, double timeoutS, bool collect)
        {
            var deadline = Stopwatch.StartNew();
            long limitMs = (long)(timeoutS * 1000);
            using (var s = new Socket(ep.AddressFamily, SocketType.Stream, ProtocolType.Tcp))
            using (var session = new WsEchoSession(true, Limit, Limit, false, false))
            {
                if (collect) session.Collected = new List<byte[]>();
                s.NoDelay = true;
                s.Connect(ep);
                string hostHeader = (host.Contains(":") && !host.StartsWith("[", StringComparison.Ordinal) ? "[" + host + "]" : host) + ":" + ep.Port;
                string key;
                string request = WsHandshake.Request(hostHeader, path, out key);
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
                string error = WsHandshake.CheckAnswer(Encoding.GetEncoding("iso-8859-1").GetString(buf, 0, end - 4), key);
                if (error != null) throw new InvalidOperationException("opening handshake: " + error);
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
