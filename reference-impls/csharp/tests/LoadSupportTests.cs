using System;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    [TestFixture]
    public class LoadSupportTests
    {
        // the Python reference's text (conformance/frameproof/protocols/websocket/load.py, prose)
        [TestCase(0L, "0 into what of him that have are she the")]
        [TestCase(12345L, "12345 for with it are there or it what when other are had th")]
        [TestCase(-1L, "18446744073709551615 has more his what up so two")]  // 2^64 - 1
        public void ProsePayload_IsTheContracts(long index, string want)
        {
            byte[] w = System.Text.Encoding.ASCII.GetBytes(want);
            var got = new byte[w.Length];
            ProsePayload.Fill(index, got);
            Assert.AreEqual(want, System.Text.Encoding.ASCII.GetString(got));
            Assert.IsTrue(ProsePayload.Matches(index, w.Length, w));
            Assert.IsFalse(ProsePayload.Matches(index + 1, w.Length, w), "another request's payload");
            Assert.IsFalse(ProsePayload.Matches(index, w.Length + 1, w), "wrong length");
            var ws = (WebSocketCodec)Registry.Create(CodecSpec.Named("websocket"));
            Assert.AreEqual("prose", ws.LoadVariants[2]);
            Assert.IsTrue(ws.VerifyLoadPayload(2, index, w.Length, w));
        }

        [TestCase(0)]
        [TestCase(3)]
        [TestCase(8)]
        [TestCase(32)]
        [TestCase(1000)]
        public void Payload_RoundTrip_AndMixupDetected(int size)
        {
            var a = new byte[size];
            Payloads.Fill(12345, a);
            Assert.IsTrue(Payloads.Verify(12345, size, a));
            if (size >= 8) Assert.AreEqual(12345, BitConverter.ToInt64(a, 0));
            if (size > 0)
            {
                var b = new byte[size];
                Payloads.Fill(12346, b);
                Assert.IsFalse(Payloads.Verify(12345, size, b), "another request's payload");
                a[size - 1] ^= 1;
                Assert.IsFalse(Payloads.Verify(12345, size, a), "one flipped bit");
            }
            Assert.IsFalse(Payloads.Verify(12345, size + 1, a), "wrong length");
        }

        [Test]
        public void Histogram_Percentiles()
        {
            var h = new LatencyHistogram();
            Assert.AreEqual(0, h.Percentile(0.5));
            for (int i = 1; i <= 100; i++) h.Record(i);
            Assert.AreEqual(50, h.Percentile(0.5));
            Assert.AreEqual(90, h.Percentile(0.9));
            Assert.AreEqual(100, h.Percentile(0.999));
            Assert.AreEqual(100, h.Max);
            var g = new LatencyHistogram();
            g.Record(1000000);
            h.Add(g);
            Assert.AreEqual(101, h.Count);
            Assert.AreEqual(1000000, h.Max);
            Assert.AreEqual(1000000, h.Percentile(1.0));
            long p = h.Percentile(0.995);
            Assert.That(p, Is.InRange(984375L, 1000000L), "within 1/64 of the true value");
        }

        [Test]
        public void Histogram_RelativeErrorBelowOnePercentAndAHalf()
        {
            foreach (long v in new long[] { 127, 128, 129, 255, 256, 1000, 12345, 999999, 123456789 })
            {
                var h = new LatencyHistogram();
                h.Record(v);
                h.Record(v * 2 + 1000); // max above, so the bucket bound is not capped
                long est = h.Percentile(0.5);
                Assert.That(est, Is.GreaterThanOrEqualTo(v));
                Assert.That((double)(est - v) / v, Is.LessThan(1.0 / 64), "v=" + v);
            }
        }
    }
}
