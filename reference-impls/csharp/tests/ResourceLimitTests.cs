using System;
using System.Diagnostics;
using System.Net.Sockets;
using System.Threading;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>fp-server's resource limits (*-RES-*) on both I/O paths, as a process over 127.0.0.1,
    /// with small limits so that each test takes a second or two. (frameproof net --stress checks them
    /// at scale.)</summary>
    public partial class NetTests
    {
        const string Std1M = "{\"protocol\": \"standard\", \"limits\": {\"max_payload\": 1048576}}";

        /// <summary>Waits (bounded) until the server closes s: EOF or reset. Returns the seconds it took,
        /// or -1 if it is still open after <paramref name="limitS"/>. Bytes the server sends are counted
        /// in <paramref name="received"/>.</summary>
        static double WaitClosed(Socket s, double limitS, out int received)
        {
            var sw = Stopwatch.StartNew();
            var buf = new byte[65536];
            received = 0;
            s.ReceiveTimeout = 100;
            while (sw.Elapsed.TotalSeconds < limitS)
            {
                try
                {
                    int n = s.Receive(buf);
                    if (n <= 0) return sw.Elapsed.TotalSeconds;
                    received += n;
                }
                catch (SocketException e)
                {
                    if (e.SocketErrorCode != SocketError.TimedOut && e.SocketErrorCode != SocketError.WouldBlock) return sw.Elapsed.TotalSeconds;
                }
            }
            return -1;
        }

        static byte[] StdRequest(byte seq, byte[] payload) { return StandardEncoder.Encode(0x01, seq, payload); }

        static void AssertEcho(Socket s, byte seq, byte[] payload)
        {
            byte[] expected = StandardEncoder.Encode(0x81, seq, payload);
            var got = new byte[expected.Length];
            int have = 0;
            s.ReceiveTimeout = 5000;
            while (have < got.Length)
            {
                int n = s.Receive(got, have, got.Length - have, SocketFlags.None);
                Assert.Greater(n, 0, "the server closed a connection it had to serve");
                have += n;
            }
            Assert.AreEqual(expected, got);
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void Res3_IdleTimeout_ClosesSilentConnections_KeepsActiveOnes(string io)
        {
            using (var srv = new ServerProcess("--protocol standard --listen 127.0.0.1:0 --idle-timeout-ms 400 --io " + io))
            {
                Socket silent = Connect(srv.Port);
                Socket afterOne = Connect(srv.Port);
                Socket active = Connect(srv.Port);
                afterOne.Send(StdRequest(1, T.Ascii("one")));
                AssertEcho(afterOne, 1, T.Ascii("one"));
                var sw = Stopwatch.StartNew();
                for (byte i = 0; sw.ElapsedMilliseconds < 1200; i++)   // a request every 150 ms: never idle 400 ms
                {
                    active.Send(StdRequest(i, T.Ascii("keep")));
                    AssertEcho(active, i, T.Ascii("keep"));
                    Thread.Sleep(150);
                }
                int got;
                double t1 = WaitClosed(silent, 3, out got);
                Assert.That(t1, Is.GreaterThanOrEqualTo(0), "a connection that never sent is closed");
                Assert.AreEqual(0, got);
                double t2 = WaitClosed(afterOne, 3, out got);
                Assert.That(t2, Is.GreaterThanOrEqualTo(0), "a connection silent after one request is closed");
                active.Send(StdRequest(9, T.Ascii("still")));
                AssertEcho(active, 9, T.Ascii("still"));
                silent.Close(); afterOne.Close(); active.Close();
                srv.Stop();
            }
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void Res4_FrameTimeout_ClosesAConnectionStoppedInsideAFrame(string io)
        {
            using (var srv = new ServerProcess("--protocol standard --listen 127.0.0.1:0 --idle-timeout-ms 60000 --frame-timeout-ms 400 --io " + io))
            {
                Socket s = Connect(srv.Port);
                byte[] frame = StdRequest(1, T.Pattern(100));
                s.Send(frame, 0, 10, SocketFlags.None);
                int got;
                double t = WaitClosed(s, 4, out got);
                Assert.That(t, Is.GreaterThanOrEqualTo(0.3), "closed after the frame timeout, not before");
                Assert.AreEqual(0, got, "nothing is answered for the unfinished frame");
                s.Close();
                srv.Stop();
            }
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void Res1_Res2_MemoryBudget_ClosesTheLargestHolders_ServesTheSmallOne(string io)
        {
            using (var srv = new ServerProcess("--codec " + Q(Std1M) + " --listen 127.0.0.1:0 --memory-budget 1048576 --io " + io))
            {
                Socket small = Connect(srv.Port);
                byte[] smallFrame = StdRequest(1, T.Pattern(20000));
                small.Send(smallFrame, 0, 10000, SocketFlags.None);          // holds < 64 KiB: never closed for the budget
                var bigs = new Socket[3];
                // 300 kB of a 400 kB frame: the decoder holds the whole frame's buffer (a quarter arrived,
                // ByteBuffers.Grow), 512 KiB from the pool: two of them are over the budget, one is not
                byte[] big = StdRequest(2, T.Pattern(400000));
                for (int i = 0; i < bigs.Length; i++)
                {
                    bigs[i] = Connect(srv.Port);
                    bigs[i].SendTimeout = 3000;
                    try { bigs[i].Send(big, 0, 300000, SocketFlags.None); } catch (SocketException) { }
                    Thread.Sleep(200);
                }
                int closed = 0, got;
                foreach (Socket b in bigs) if (WaitClosed(b, 1, out got) >= 0) closed++;
                Assert.GreaterOrEqual(closed, 1, "3 × 512 KiB held for unfinished frames against a 1 MiB budget: the largest holders are closed");
                Assert.Less(closed, 3, "only as many as needed to get back within the budget");
                small.Send(smallFrame, 10000, smallFrame.Length - 10000, SocketFlags.None);
                AssertEcho(small, 1, T.Pattern(20000));
                foreach (Socket b in bigs) b.Close();
                small.Close();
                srv.Stop();
            }
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void Res5_WriteTimeout_ClosesAPeerThatNeverReads(string io)
        {
            using (var srv = new ServerProcess("--protocol standard --listen 127.0.0.1:0 --max-output-bytes 65536 --write-timeout-ms 400 --io " + io))
            {
                Socket s = Connect(srv.Port);
                s.ReceiveBufferSize = 16384;
                s.SendTimeout = 200;
                var batch = new byte[0];
                for (int i = 0; i < 64; i++) batch = T.Concat(batch, StdRequest((byte)i, T.Pattern(1000, i)));
                var sw = Stopwatch.StartNew();
                bool reset = false;
                long sent = 0;
                while (sw.Elapsed.TotalSeconds < 15 && !reset)
                {
                    try { sent += s.Send(batch); }
                    catch (SocketException e) { reset = e.SocketErrorCode != SocketError.TimedOut && e.SocketErrorCode != SocketError.WouldBlock; }
                }
                Assert.IsTrue(reset, "the server closed the connection whose replies made no progress (" + sent + " bytes sent)");
                Assert.Less(sent, 64L * 1024 * 1024, "the server stopped reading (output bounded)");
                s.Close();
                srv.Stop();
            }
        }

        [TestCase("epoll")]
        [TestCase("blocking")]
        [TestCase("saea")]
        public void Res6_ConnectionLimit_BeyondItClosedAtOnce_AcceptsAgainAfterAClose(string io)
        {
            using (var srv = new ServerProcess("--protocol standard --listen 127.0.0.1:0 --max-connections 2 --io " + io))
            {
                Socket a = Connect(srv.Port), b = Connect(srv.Port);
                a.Send(StdRequest(1, T.Ascii("a")));
                AssertEcho(a, 1, T.Ascii("a"));
                b.Send(StdRequest(1, T.Ascii("b")));
                AssertEcho(b, 1, T.Ascii("b"));
                Socket c = Connect(srv.Port);
                int got;
                Assert.That(WaitClosed(c, 3, out got), Is.GreaterThanOrEqualTo(0), "the third connection is closed at once");
                Assert.AreEqual(0, got);
                c.Close();
                a.Close();
                Thread.Sleep(300);
                Socket d = Connect(srv.Port);
                d.Send(StdRequest(4, T.Ascii("d")));
                AssertEcho(d, 4, T.Ascii("d"));
                b.Send(StdRequest(2, T.Ascii("b2")));
                AssertEcho(b, 2, T.Ascii("b2"));
                d.Close(); b.Close();
                srv.Stop();
            }
        }

        [TestCase("--protocol standard --listen 127.0.0.1:0 --idle-timeout-ms 0", "--idle-timeout-ms must be a positive integer")]
        [TestCase("--protocol standard --listen 127.0.0.1:0 --max-connections -3", "--max-connections must be a positive integer")]
        [TestCase("--protocol standard --listen 127.0.0.1:0 --write-timeout-ms x", "--write-timeout-ms")]
        [TestCase("--protocol standard --listen 127.0.0.1:0 --memory-budget 1048576", "below the largest frame the server accepts (10485760 bytes)")]
        [TestCase("--protocol rpc --listen 127.0.0.1:0 --memory-budget 16777215", "below the largest frame the server accepts (16777216 bytes)")]
        [TestCase("--protocol websocket --listen 127.0.0.1:0 --memory-budget 104857599", "below the largest frame the server accepts (104857600 bytes)")]
        public void ResourceLimitFlags_UsageErrors(string args, string why)
        {
            UsageErrors_Exit2_OneLineThenUsage("fp-server.exe", args, why);
        }
    }
}
