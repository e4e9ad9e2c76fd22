using System;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Threading;
using System.Threading.Tasks;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>Runs build/fp-server.exe and build/fp-load.exe as processes, over 127.0.0.1.</summary>
    [TestFixture]
    public partial class NetTests
    {
        static string BuildDir { get { return Path.GetDirectoryName(typeof(NetTests).Assembly.Location); } }

        /// <summary>One command-line argument, quoted for ProcessStartInfo (JSON has quotes and spaces).</summary>
        static string Q(string arg) { return "\"" + arg.Replace("\"", "\\\"") + "\""; }

        static string LfCodec(int offset, int size)
        {
            return Q("{\"protocol\": \"length-field\", \"length_field\": {\"offset\": " + offset + ", \"size\": " + size + "}}");
        }

        /// <summary>Runs a program to completion; returns (exit status, stdout, stderr).</summary>
        static int RunProgram(string exe, string args, out string stdout, out string stderr)
        {
            var psi = new ProcessStartInfo("mono", Path.Combine(BuildDir, exe) + " " + args)
            { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
            Process p = Process.Start(psi);
            Task<string> o = p.StandardOutput.ReadToEndAsync(), e = p.StandardError.ReadToEndAsync();
            Assert.IsTrue(p.WaitForExit(30000), exe + " " + args + ": exits");
            stdout = o.Result;
            stderr = e.Result;
            return p.ExitCode;
        }

        sealed class ServerProcess : IDisposable
        {
            public Process P;
            public int Port;

            public ServerProcess(string args)
            {
                var psi = new ProcessStartInfo("mono", Path.Combine(BuildDir, "fp-server.exe") + " " + args)
                {
                    UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true
                };
                P = Process.Start(psi);
                Task<string> line = P.StandardOutput.ReadLineAsync();
                Assert.IsTrue(line.Wait(20000), "LISTENING line");
                StringAssert.StartsWith("LISTENING 127.0.0.1:", line.Result);
                Port = int.Parse(line.Result.Substring(line.Result.LastIndexOf(':') + 1));
            }

            /// <summary>SIGTERM; returns the JSON counters line.</summary>
            public string Stop()
            {
                Assert.AreEqual(0, Syscall.Kill(P.Id, 15));
                Task<string> rest = P.StandardOutput.ReadToEndAsync();
                Task<string> err = P.StandardError.ReadToEndAsync();
                if (!P.WaitForExit(15000))
                {
                    string state = "?";
                    try { state = File.ReadAllText("/proc/" + P.Id + "/status").Split('\n')[2]; } catch (Exception e) { state = e.GetType().Name; }
                    string stacks = "";
                    try { foreach (var d in Directory.GetDirectories("/proc/" + P.Id + "/task")) stacks += Path.GetFileName(d) + ":" + File.ReadAllText(d + "/comm").Trim() + ":" + File.ReadAllText(d + "/wchan") + " "; } catch (Exception) { }
                    Assert.Fail("exits after SIGTERM; " + state + "; threads " + stacks + "; exited later: " + P.WaitForExit(15000) + "; stdout so far: " + (rest.Wait(100) ? rest.Result : "(open)"));
                }
                Assert.AreEqual(0, P.ExitCode, "exit status; stderr: " + (err.Wait(5000) ? err.Result : "?"));
                return rest.Result.Trim();
            }

            public void Dispose()
            {
                try { if (!P.HasExited) P.Kill(); } catch (Exception) { }
            }
        }

        static class Syscall
        {
            [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "kill")]
            public static extern int Kill(int pid, int sig);
        }

        static Socket Connect(int port)
        {
            var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            s.NoDelay = true;
            s.ReceiveTimeout = 10000;
            s.Connect(new IPEndPoint(IPAddress.Loopback, port));
            return s;
        }

        /// <summary>Reads until EOF (the server closed).</summary>
        static byte[] ReadToEnd(Socket s)
        {
            var ms = new MemoryStream();
            var buf = new byte[65536];
            while (true)
            {
                int n = s.Receive(buf);
                if (n <= 0) break;
                ms.Write(buf, 0, n);
            }
            return ms.ToArray();
        }

        /// <summary>fp-load against fp-server, as processes, for the typed protocols: every variant and
        /// mode, every reply verified, the JSON report's counts and new keys.</summary>
        [TestCase("rpc", "--mode pipelined --window 16 --requests 600 --variant bidi", 600, 0)]
        [TestCase("rpc", "--requests 50", 50, 0)]
        [TestCase("rpc", "--mode stream --frames-per-stream 8 --window 3 --requests 20", 160, 20)]
        [TestCase("websocket", "--mode pipelined --window 16 --requests 600 --variant text", 600, 0)]
        [TestCase("websocket", "--requests 30 --payload 70000", 30, 0)]
        [TestCase("rpc", "--mode batched --batch 50 --requests 230", 230, 0)]
        [TestCase("websocket", "--mode batched --requests 700", 700, 0)]
        public void Load_AgainstServer_TypedProtocols(string protocol, string args, int data, int streams)
        {
            using (var srv = new ServerProcess("--protocol " + protocol + " --listen 127.0.0.1:0"))
            {
                string json = Path.Combine(Path.GetTempPath(), "fp-cs-load-" + Guid.NewGuid().ToString("N") + ".json");
                string stdout, stderr;
                int rc = RunProgram("fp-load.exe", "--protocol " + protocol + " --connect 127.0.0.1:" + srv.Port + " --connections 2 " + args + " --json " + json, out stdout, out stderr);
                Assert.AreEqual(0, rc, stdout + stderr);
                string report = File.ReadAllText(json);
                File.Delete(json);
                StringAssert.Contains("\"requests_sent\": " + data + ", \"replies_received\": " + data + ", \"replies_verified\": " + data + ", \"errors\": 0", report);
                StringAssert.Contains("\"streams_completed\": " + streams + ",", report);
                StringAssert.Contains("\"variant\": ", report);
                StringAssert.Contains("\"streams_per_s\": ", report);
                string counters = srv.Stop();
                StringAssert.Contains("\"protocol_errors\": 0", counters);
            }
        }

        /// <summary>fp-load offering permessage-deflate to fp-server accepting it (websocket.permessage_deflate
        /// on both): every echo inflated and verified; the server's received payload bytes (as on the wire)
        /// well below the messages' size shows the requests went compressed. Declined by a server without the
        /// key, the same run goes uncompressed.</summary>
        [TestCase(true, "--mode pipelined --window 16 --variant text")]
        [TestCase(true, "--mode batched")]
        [TestCase(false, "--mode pipelined --window 16 --variant text")]
        public void Load_PermessageDeflate_AgainstServer(bool serverDeflate, string args)
        {
            const string on = "\"{\\\"protocol\\\": \\\"websocket\\\", \\\"websocket\\\": {\\\"permessage_deflate\\\": true}}\"";
            const int requests = 400, payload = 2000;
            using (var srv = new ServerProcess((serverDeflate ? "--codec " + on : "--protocol websocket") + " --listen 127.0.0.1:0"))
            {
                string json = Path.Combine(Path.GetTempPath(), "fp-cs-load-" + Guid.NewGuid().ToString("N") + ".json");
                string stdout, stderr;
                int rc = RunProgram("fp-load.exe", "--codec " + on + " --connect 127.0.0.1:" + srv.Port + " --connections 2 --requests " + requests
                    + " --payload " + payload + " " + args + " --json " + json, out stdout, out stderr);
                Assert.AreEqual(0, rc, stdout + stderr);
                string report = File.ReadAllText(json);
                File.Delete(json);
                StringAssert.Contains("\"replies_verified\": " + requests + ", \"errors\": 0", report);
                string counters = srv.Stop();
                StringAssert.Contains("\"protocol_errors\": 0", counters);
                var m = System.Text.RegularExpressions.Regex.Match(counters, "\"bytes\": (\\d+)");
                long bytes = long.Parse(m.Groups[1].Value);
                if (serverDeflate) Assert.Less(bytes, requests * (long)payload * 3 / 4, "compressed requests: " + counters);
                else Assert.AreEqual(requests * (long)payload + 2 * 2, bytes, "uncompressed (and the two closes' codes): " + counters);
            }
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void Standard_EchoRules_HalfCloseWithPartialFrame(string io)
        {
            using (var srv = new ServerProcess("--protocol standard --listen 127.0.0.1:0 --io " + io))
            {
                Socket s = Connect(srv.Port);
                s.Send(T.Hex("01010400 4F70656E 41020100 AA 81030100 BB 07040000"));
                s.Send(T.Concat(T.Hex("0105FFFF FFFF0000"), T.Pattern(65535)));
                s.Send(T.Hex("01060500 0102")); // partial frame, then half-close
                s.Shutdown(SocketShutdown.Send);
                byte[] got = ReadToEnd(s);
                byte[] expected = T.Concat(T.Hex("81010400 4F70656E 87040000"), StandardEncoder.Encode(0x81, 5, T.Pattern(65535)));
                Assert.AreEqual(expected.Length, got.Length);
                Assert.IsTrue(new ReadOnlySpan<byte>(expected).SequenceEqual(got), "replies to requests only, in order");
                s.Close();
                string json = srv.Stop();
                StringAssert.Contains("\"connections\": 1", json);
                StringAssert.Contains("\"frames\": 5", json);
                StringAssert.Contains("\"bytes\": " + (4 + 1 + 1 + 0 + 65535), json);
            }
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void Standard_DecodeError_RepliesBeforeThenCloses_OthersServed(string io)
        {
            using (var srv = new ServerProcess("--codec " + Q("{\"protocol\": \"standard\", \"limits\": {\"max_payload\": 100}}") + " --listen 127.0.0.1:0 --io " + io))
            {
                Socket other = Connect(srv.Port);
                Socket bad = Connect(srv.Port);
                bad.Send(T.Hex("01010100 41 01020200 4243 01036500 00")); // third frame declares 101 > 100
                byte[] got = ReadToEnd(bad);
                Assert.AreEqual(T.Hex("81010100 41 81020200 4243"), got);
                other.Send(T.Hex("01090100 5A"));
                var buf = new byte[16];
                int n = other.Receive(buf);
                Assert.AreEqual(T.Hex("81090100 5A"), new ArraySegment<byte>(buf, 0, n).ToArray());
                other.Close();
                bad.Close();
                StringAssert.Contains("\"protocol_errors\": 1", srv.Stop());
            }
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void LengthField_Varint_WithOffset_EchoAndSink(string io)
        {
            using (var srv = new ServerProcess("--codec " + LfCodec(2, 0) + " --listen 127.0.0.1:0 --io " + io))
            {
                var p = new LengthFieldProfile(2, 0);
                Socket s = Connect(srv.Port);
                s.Send(T.Concat(T.Hex("FFFF 8100"), new byte[] { 0x61 }, LengthFieldEncoder.Encode(p, T.Pattern(300))));
                s.Shutdown(SocketShutdown.Send);
                byte[] got = ReadToEnd(s);
                Assert.AreEqual(T.Concat(T.Hex("0000 01 61"), LengthFieldEncoder.Encode(p, T.Pattern(300))), got, "same profile, header zeroed, minimal varint");
                s.Close();
                srv.Stop();
            }
            using (var srv = new ServerProcess("--protocol length-field --listen 127.0.0.1:0 --sink --io " + io))
            {
                Socket s = Connect(srv.Port);
                s.Send(T.Hex("0100 41 0000 0200 4243"));
                s.Shutdown(SocketShutdown.Send);
                Assert.AreEqual(0, ReadToEnd(s).Length, "sink sends nothing");
                s.Close();
                string json = srv.Stop();
                StringAssert.Contains("\"frames\": 3", json);
                StringAssert.Contains("\"bytes\": 3", json);
            }
        }

        [Test]
        public void ServerRefusesUnsupportedProfile()
        {
            string stdout, stderr;
            Assert.AreEqual(2, RunProgram("fp-server.exe", "--codec " + LfCodec(0, 3) + " --listen 127.0.0.1:0", out stdout, out stderr));
            StringAssert.StartsWith("usage error: ", stderr);
            StringAssert.Contains("LF-FMT-3", stderr);
            Assert.AreEqual("", stdout);
        }

        [TestCase("fp-server.exe", "--protocol standard --codec " + "\"{}\"" + " --listen 127.0.0.1:0", "not both")]
        [TestCase("fp-server.exe", "--listen 127.0.0.1:0", "--codec JSON or --protocol NAME is required")]
        [TestCase("fp-server.exe", "--protocol standard --listen 127.0.0.1:0 --lf-size 2", "unknown option --lf-size")]
        [TestCase("fp-server.exe", "--protocol standard --listen 127.0.0.1:0 --max-payload 10", "unknown option --max-payload")]
        [TestCase("fp-server.exe", "--protocol rpc2 --listen 127.0.0.1:0", "unknown protocol 'rpc2'")]
        [TestCase("fp-server.exe", "--codec \"{\\\"protocol\\\": \\\"standard\\\", \\\"x\\\": 1}\" --listen 127.0.0.1:0", "unknown key \"x\"")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9 --requests 1 --window 5", "--window must be 1 in per-packet mode")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9 --requests 1 --mode pipelined --window 256", "--window must be at most 255")]
        [TestCase("fp-load.exe", "--protocol length-field --connect 127.0.0.1:9 --requests 1 --mode pipelined --window 257", "--window must be at most 256")]
        [TestCase("fp-load.exe", "--protocol standard --codec \"{}\" --connect 127.0.0.1:9 --requests 1", "not both")]
        [TestCase("fp-load.exe", "--codec \"{\\\"protocol\\\": 1}\" --connect 127.0.0.1:9 --requests 1", "must be a string")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9", "exactly one of --requests and --duration")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9 --requests 1 --lf-offset 2", "unknown option --lf-offset")]
        [TestCase("fp-load.exe", "--protocol rpc --connect 127.0.0.1:9 --requests 1 --variant text", "rpc has the variants unary, client-stream, server-stream, bidi")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9 --requests 1 --variant bidi", "standard has the variants default")]
        [TestCase("fp-load.exe", "--protocol websocket --connect 127.0.0.1:9 --requests 1 --mode stream", "websocket has no streams")]
        [TestCase("fp-load.exe", "--protocol rpc --connect 127.0.0.1:9 --requests 1 --frames-per-stream 4", "applies to --mode stream only")]
        [TestCase("fp-server.exe", "--codec \"{\\\"protocol\\\": \\\"rpc\\\", \\\"limits\\\": {}}\" --listen 127.0.0.1:0", "\"limits\" does not apply")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9 --requests 1 --batch 4", "--batch applies to --mode batched only")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9 --requests 1 --mode batched --window 4", "--window does not apply to --mode batched")]
        [TestCase("fp-load.exe", "--protocol standard --connect 127.0.0.1:9 --requests 1 --mode batched --batch 256", "--batch must be at most 255")]
        [TestCase("fp-autobahn-client.exe", "--connect 127.0.0.1:9", "option --agent is required")]
        [TestCase("fp-autobahn-client.exe", "--connect 127.0.0.1:9 --agent a --cases some", "--cases must be 'all' or a number")]
        [TestCase("fp-autobahn-client.exe", "--connect 127.0.0.1:9 --agent a --codec \"{\\\"protocol\\\": \\\"standard\\\"}\"", "--codec: the protocol must be websocket")]
        [TestCase("fp-autobahn-client.exe", "--connect 127.0.0.1:9 --agent a --codec \"{\\\"protocol\\\": \\\"websocket\\\", \\\"websocket\\\": {\\\"permessage_deflate\\\": 1}}\"", "--codec: ")]
        public void UsageErrors_Exit2_OneLineThenUsage(string exe, string args, string why)
        {
            string stdout, stderr;
            Assert.AreEqual(2, RunProgram(exe, args, out stdout, out stderr), stderr);
            string[] lines = stderr.TrimEnd().Split('\n');
            Assert.AreEqual(2, lines.Length, stderr);
            StringAssert.StartsWith("usage error: ", lines[0]);
            StringAssert.Contains(why, lines[0]);
            StringAssert.StartsWith("usage: ", lines[1]);
            Assert.AreEqual("", stdout);
        }

        [TestCase("fp-server.exe", "(--codec JSON | --protocol NAME)")]
        [TestCase("fp-load.exe", "(--codec JSON | --protocol NAME)")]
        [TestCase("fp-autobahn-client.exe", "--connect HOST:PORT --agent NAME [--cases all|N]")]
        public void Help_PrintsUsageToStdout_Exit0(string exe, string part)
        {
            string stdout, stderr;
            Assert.AreEqual(0, RunProgram(exe, "--help", out stdout, out stderr));
            StringAssert.StartsWith("usage: ", stdout);
            StringAssert.Contains(part, stdout);
            Assert.AreEqual("", stderr);
        }

        sealed class Verifier : IReplyVerifier
        {
            public int Len;
            public int Unmatched, Errors;
            public bool Verify(RequestId id, ReadOnlySpan<byte> payload) { return Payloads.Verify(id.Value, Len, payload); }
            public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { Interlocked.Increment(ref Unmatched); }
            public void OnProtocolError(ProtocolError error) { Interlocked.Increment(ref Errors); }
        }

        static async Task<int> Pipeline(RequestClient c, int count, int len, int window)
        {
            var ring = new ValueTask<Completion>[window];
            var payload = new byte[len];
            int head = 0, inflight = 0, sent = 0, ok = 0;
            while (sent < count || inflight > 0)
            {
                while (inflight < window && sent < count)
                {
                    Payloads.Fill(sent, payload);
                    ValueTask<Completion> t;
                    Assert.IsTrue(c.TryEnqueue(new RequestId(sent), payload, out t));
                    ring[(head + inflight) % window] = t;
                    inflight++; sent++;
                }
                Assert.IsTrue(c.Flush());
                Completion r = await ring[head];
                head = (head + 1) % window; inflight--;
                if (r.Kind == CompletionKind.Reply && r.Verified) ok++;
            }
            return ok;
        }

        /// <summary>count requests of len bytes, window in flight, against a server: all verified.</summary>
        static void PipelineAllVerified(int port, FrameCodec codec, int count, int len, int window, bool inline)
        {
            var v = new Verifier { Len = len };
            var c = new RequestClient(Connect(port), codec, 5000, v, inline);
            Task<int> t = Pipeline(c, count, len, window);
            Assert.IsTrue(t.Wait(60000));
            Assert.AreEqual(count, t.Result);
            Assert.AreEqual(count, c.FramesReceived);
            Assert.AreEqual(0, v.Unmatched);
            c.Dispose();
        }

        [TestCase("standard", 0, 2)]
        [TestCase("length-field", 0, 2)]
        [TestCase("length-field", 1, -4)]
        public void RequestClient_PipelinedAgainstServer_AllVerified(string proto, int offset, int size)
        {
            string json = proto == "standard" ? "{\"protocol\": \"standard\"}"
                : "{\"protocol\": \"length-field\", \"length_field\": {\"offset\": " + offset + ", \"size\": " + size + "}}";
            using (var srv = new ServerProcess("--codec " + Q(json) + " --listen 127.0.0.1:0"))
            {
                PipelineAllVerified(srv.Port, Registry.Create(CodecJson.Parse(json)), 3000, 100, 200, false);
                srv.Stop();
            }
        }

        [Test]
        public void RequestClient_Timeouts_OnARealClock()
        {
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            int port = ((IPEndPoint)listener.LocalEndpoint).Port;
            try
            {
                foreach (string proto in RegistryTests.ByteLevel())
                {
                    var c = new RequestClient(Connect(port), Registry.Create(CodecSpec.Named(proto)), 150, new Verifier { Len = 1 });
                    Socket peer = listener.AcceptSocket(); // accepts, never replies
                    ValueTask<Completion> a, b;
                    Assert.IsTrue(c.TryEnqueue(new RequestId(1), new byte[1], out a));
                    Assert.IsTrue(c.TryEnqueue(new RequestId(2), new byte[1], out b));
                    Assert.IsTrue(c.Flush());
                    var sw = Stopwatch.StartNew();
                    Completion ra = a.AsTask().Result, rb = b.AsTask().Result;
                    Assert.That(sw.ElapsedMilliseconds, Is.InRange(50L, 3000L));
                    Assert.AreEqual(CompletionKind.Timeout, ra.Kind);
                    if (proto == "length-field")
                    {
                        // b's deadline is a hair later than a's: if a timer tick falls between the two,
                        // a times out and b fails with the connection (LF-MATCH-3); else both time out.
                        Assert.That(rb.Kind, Is.EqualTo(CompletionKind.Timeout).Or.EqualTo(CompletionKind.Failed));
                        Assert.IsTrue(c.Failed, "LF-MATCH-3 fails the connection");
                    }
                    else
                    {
                        Assert.AreEqual(CompletionKind.Timeout, rb.Kind, "standard: each request times out on its own");
                        Assert.IsFalse(c.Failed, "a standard timeout does not fail the connection");
                    }
                    c.Dispose();
                    peer.Close();
                }
            }
            finally { listener.Stop(); }
        }

        [Test]
        public void RequestClient_InlineCompletions_PerPacket()
        {
            using (var srv = new ServerProcess("--protocol standard --listen 127.0.0.1:0"))
            {
                // window 1: seq wraps past 255 twice
                PipelineAllVerified(srv.Port, Registry.Create(CodecSpec.Named("standard")), 600, 8, 1, true);
                srv.Stop();
            }
        }

        [Test]
        public void RequestClient_RejectedReplyStream_FailsPending()
        {
            var listener = new TcpListener(IPAddress.Loopback, 0);
            listener.Start();
            try
            {
                var v = new Verifier { Len = 1 };
                var c = new RequestClient(Connect(((IPEndPoint)listener.LocalEndpoint).Port), Registry.Create(CodecSpec.Named("standard")), 5000, v);
                Socket peer = listener.AcceptSocket();
                ValueTask<Completion> a, b;
                Assert.IsTrue(c.TryEnqueue(new RequestId(1), new byte[1], out a));
                Assert.IsTrue(c.TryEnqueue(new RequestId(2), new byte[1], out b));
                Assert.IsTrue(c.Flush());
                peer.Send(T.Hex("81010100 00 8102FFFF 00000000")); // reply to 1, then STD-LEN-3
                Completion ra = a.AsTask().Result, rb = b.AsTask().Result;
                Assert.AreEqual(CompletionKind.Reply, ra.Kind);
                Assert.IsFalse(ra.Verified, "payload 00 is not request 1's pattern");
                Assert.AreEqual(CompletionKind.Failed, rb.Kind);
                Assert.AreEqual(1, v.Errors);
                ValueTask<Completion> d;
                Assert.IsFalse(c.TryEnqueue(new RequestId(3), new byte[1], out d), "failed connection refuses");
                Assert.AreEqual(CompletionKind.Refused, d.Result.Kind);
                c.Dispose();
                peer.Close();
            }
            finally { listener.Stop(); }
        }

        [Test]
        public void FpLoad_ConnectionRefused_StillWritesTheReport_Exit1()
        {
            var l = new TcpListener(IPAddress.Loopback, 0);
            l.Start();
            int port = ((IPEndPoint)l.LocalEndpoint).Port;
            l.Stop(); // nobody listens there now
            string json = Path.Combine(Path.GetTempPath(), "fp-load-test-" + Guid.NewGuid().ToString("N") + ".json");
            var psi = new ProcessStartInfo("mono", Path.Combine(BuildDir, "fp-load.exe") + " --protocol standard --connect 127.0.0.1:" + port
                + " --connections 1 --requests 5 --payload 8 --mode per-packet --json " + json) { UseShellExecute = false, RedirectStandardOutput = true };
            Process p = Process.Start(psi);
            p.StandardOutput.ReadToEnd();
            Assert.IsTrue(p.WaitForExit(30000));
            Assert.AreEqual(1, p.ExitCode);
            string j = File.ReadAllText(json);
            File.Delete(json);
            StringAssert.Contains("\"requests_sent\": 0", j);
            StringAssert.Contains("\"errors\": 1", j);
            StringAssert.Contains("\"latency_us\": {", j);
        }

        [TestCase("standard", "pipelined", 32)]
        [TestCase("length-field", "per-packet", 1)]
        public void FpLoad_AgainstFpServer_ExactCountsAndJson(string proto, string mode, int window)
        {
            using (var srv = new ServerProcess("--protocol " + proto + " --listen 127.0.0.1:0"))
            {
                string json = Path.Combine(Path.GetTempPath(), "fp-load-test-" + Guid.NewGuid().ToString("N") + ".json");
                var psi = new ProcessStartInfo("mono", Path.Combine(BuildDir, "fp-load.exe") + " --protocol " + proto + " --connect 127.0.0.1:" + srv.Port
                    + " --connections 3 --requests 1001 --payload 40 --mode " + mode + " --window " + window + " --json " + json)
                { UseShellExecute = false, RedirectStandardOutput = true };
                Process p = Process.Start(psi);
                string text = p.StandardOutput.ReadToEnd();
                Assert.IsTrue(p.WaitForExit(60000));
                Assert.AreEqual(0, p.ExitCode, text);
                string j = File.ReadAllText(json);
                File.Delete(json);
                StringAssert.Contains("\"implementation\": \"csharp\", \"protocol\": \"" + proto + "\", \"codec\": {\"protocol\": \"" + proto + "\"}, \"mode\": \"" + mode + "\"", j);
                StringAssert.IsMatch("\"duration_s\": [0-9]+\\.[0-9]{6}, \"msgs_per_s\": [0-9]+\\.[0-9], \"mb_per_s\": [0-9]+\\.[0-9]{3},", j);
                StringAssert.Contains("\"requests_sent\": 1001, \"replies_received\": 1001, \"replies_verified\": 1001, \"errors\": 0", j);
                StringAssert.Contains("\"latency_us\": {\"p50\": ", j);
                string counters = srv.Stop();
                StringAssert.Contains("\"connections\": 3", counters);
                StringAssert.Contains("\"frames\": 1001", counters);
            }
        }

        [Test]
        public void FpLoad_CodecJson_Defaults_AndCodecEchoed()
        {
            string codec = "{\"protocol\": \"length-field\", \"limits\": {\"max_payload\": 4096}, \"length_field\": {\"offset\": 1, \"size\": -4}}";
            using (var srv = new ServerProcess("--codec " + Q(codec) + " --listen 127.0.0.1:0"))
            {
                string json = Path.Combine(Path.GetTempPath(), "fp-load-test-" + Guid.NewGuid().ToString("N") + ".json");
                string stdout, stderr;
                // Defaults: 1 connection, payload 32, window 32 when pipelined.
                int rc = RunProgram("fp-load.exe", "--codec " + Q(codec) + " --connect 127.0.0.1:" + srv.Port + " --requests 500 --mode pipelined --json " + json, out stdout, out stderr);
                Assert.AreEqual(0, rc, stdout + stderr);
                string j = File.ReadAllText(json);
                File.Delete(json);
                StringAssert.Contains("\"protocol\": \"length-field\", \"codec\": " + codec + ", \"mode\": \"pipelined\"", j);
                StringAssert.Contains("\"connections\": 1, \"window\": 32, \"payload\": 32", j);
                StringAssert.Contains("\"requests_sent\": 500, \"replies_received\": 500, \"replies_verified\": 500, \"errors\": 0", j);
                StringAssert.Contains("\"frames\": 500", srv.Stop());
            }
        }
    }
}
