using System;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    [TestFixture]
    public class StandardTests
    {
        // spec/standard.md §8 worked examples.
        [TestCase(0x01, 1, "Open", "0101 0400 4F70656E")]
        [TestCase(0x81, 1, "执行成功", "8101 0C00 E689A7E8A18CE68890E58A9F")]
        [TestCase(0x81, 1, "OK", "8101 0200 4F4B")]
        [TestCase(0x41, 1, "abc", "4101 0300 616263")]
        [TestCase(0xC1, 1, "abc", "C101 0300 616263")]
        [TestCase(0x01, 1, "", "0101 0000")]
        public void WorkedExamples_EncodeAndDecode(int flag, int seq, string text, string hex)
        {
            byte[] expected = T.Hex(hex);
            byte[] payload = T.Ascii(text);
            Assert.AreEqual(expected, StandardEncoder.Encode((byte)flag, (byte)seq, payload));
            var r = T.Decode(new StandardDecoder(), expected);
            Assert.IsFalse(r.Error.IsSet);
            Assert.AreEqual(1, r.Frames.Count);
            Assert.AreEqual((byte)flag, r.Frames[0].Flag);
            Assert.AreEqual((byte)seq, r.Frames[0].Seq);
            Assert.AreEqual(payload, r.Frames[0].Payload);
        }

        [TestCase(65534, "0101FEFF")]
        [TestCase(65535, "0101FFFFFFFF0000")]
        [TestCase(70000, "0101FFFF70110100")]
        public void LengthForms(int size, string header)
        {
            byte[] payload = T.Pattern(size);
            byte[] enc = StandardEncoder.Encode(0x01, 1, payload);
            byte[] h = T.Hex(header);
            Assert.AreEqual(h.Length + size, enc.Length);
            Assert.AreEqual(h, new ArraySegment<byte>(enc, 0, h.Length).ToArray());
            var r = T.Decode(new StandardDecoder(), enc, 3, 5, 7, 100);
            Assert.IsFalse(r.Error.IsSet, r.Error.ToString());
            Assert.AreEqual(payload, r.Frames[0].Payload);
        }

        [Test]
        public void StickyPacket_TwoFramesInOneWrite()
        {
            byte[] a = StandardEncoder.Encode(0x01, 0x10, T.Ascii("sticky-first-message"));
            byte[] b = StandardEncoder.Encode(0x01, 0x11, T.Ascii("sticky-second-message"));
            byte[] both = T.Concat(a, b);
            Assert.AreEqual(49, both.Length);
            Assert.AreEqual("01101400", T.ToHex(a).Substring(0, 8));
            var r = T.Decode(new StandardDecoder(), both);
            Assert.AreEqual(2, r.Frames.Count);
            Assert.AreEqual(0x11, r.Frames[1].Seq);
            Assert.AreEqual(T.Ascii("sticky-second-message"), r.Frames[1].Payload);
        }

        [Test]
        public void EveryKindDeliveredVerbatim()
        {
            for (int flag = 0; flag < 256; flag++)
            {
                var r = T.Decode(new StandardDecoder(), new byte[] { (byte)flag, 7, 1, 0, 0xAB });
                Assert.AreEqual((byte)flag, r.Frames[0].Flag);
            }
        }

        static byte[] MixedStream()
        {
            return T.Concat(
                StandardEncoder.Encode(0x01, 1, T.Ascii("Open")),
                StandardEncoder.Encode(0x81, 2, new byte[0]),
                StandardEncoder.Encode(0x01, 3, T.Pattern(65535, 1)),
                StandardEncoder.Encode(0x43, 4, T.Pattern(300, 2)),
                StandardEncoder.Encode(0xC1, 5, T.Pattern(70000, 3)),
                StandardEncoder.Encode(0x01, 6, T.Ascii("end")));
        }

        [Test]
        public void SplitIndependence_EveryTwoWaySplitNearBoundaries()
        {
            byte[] s = MixedStream();
            var whole = T.Decode(new StandardDecoder(), s);
            Assert.AreEqual(6, whole.Frames.Count);
            Assert.IsFalse(whole.Error.IsSet);
            // Cut at every position within 10 bytes of a frame boundary (headers, extended lengths).
            int[] boundaries = { 0, 8, 12, 12 + 65543, 12 + 65543 + 304, 12 + 65543 + 304 + 70008 };
            foreach (int b in boundaries)
                for (int c = Math.Max(1, b - 2); c <= Math.Min(s.Length - 1, b + 10); c++)
                    T.AssertSame(whole, T.Decode(new StandardDecoder(), s, c), "cut at " + c);
        }

        [Test]
        public void SplitIndependence_RandomSplitsAndBytewise()
        {
            byte[] s = MixedStream();
            var whole = T.Decode(new StandardDecoder(), s);
            var rnd = new Random(42);
            for (int iter = 0; iter < 50; iter++)
            {
                var cuts = new System.Collections.Generic.SortedSet<int>();
                int n = rnd.Next(1, 40);
                for (int i = 0; i < n; i++) cuts.Add(rnd.Next(1, s.Length));
                var arr = new int[cuts.Count];
                cuts.CopyTo(arr);
                T.AssertSame(whole, T.Decode(new StandardDecoder(), s, arr), "random split " + iter);
            }
            byte[] small = T.Concat(StandardEncoder.Encode(1, 1, T.Ascii("ab")), StandardEncoder.Encode(1, 2, T.Pattern(65535)));
            T.AssertSame(T.Decode(new StandardDecoder(), small), T.DecodeBytewise(new StandardDecoder(), small), "bytewise");
        }

        [Test]
        public void NonCanonicalExtendedLength_IsStdLen3_AtFrameStart()
        {
            byte[] good = StandardEncoder.Encode(0x01, 1, T.Ascii("ok"));
            byte[] bad = T.Hex("0102FFFF FEFF0000");
            var r = T.Decode(new StandardDecoder(), T.Concat(good, bad, T.Pattern(70000)));
            Assert.AreEqual(1, r.Frames.Count, "the frame before the error is delivered");
            Assert.AreEqual("STD-LEN-3", r.Error.Requirement);
            Assert.AreEqual(good.Length, r.Error.Offset);
            Assert.AreEqual("STD-LEN-3", T.Decode(new StandardDecoder(), T.Hex("0101FFFF00000000")).Error.Requirement);
        }

        [Test]
        public void ExtendedLengthWithBit31_IsStdLen4()
        {
            var r = T.Decode(new StandardDecoder(), T.Hex("0101FFFF00000080"));
            Assert.AreEqual("STD-LEN-4", r.Error.Requirement);
            Assert.AreEqual(0, r.Error.Offset);
            // LEN-4 takes precedence over LIM-1 even with a tiny maximum.
            Assert.AreEqual("STD-LEN-4", T.Decode(new StandardDecoder(10), T.Hex("0101FFFFFFFFFFFF")).Error.Requirement);
            Assert.AreEqual("STD-LEN-3", T.Decode(new StandardDecoder(10), T.Hex("0101FFFF10000000")).Error.Requirement);
        }

        [Test]
        public void OversizedDeclaredLength_IsStdLim1_FromHeaderAlone()
        {
            var dec = new StandardDecoder(100);
            var fl = new FrameList();
            byte[] s = T.Concat(T.Hex("01010A00") , T.Pattern(10), T.Hex("01026500"));
            Assert.IsFalse(dec.Feed(s, fl), "rejected as soon as the header is complete, without payload");
            Assert.AreEqual(1, fl.Frames.Count);
            Assert.AreEqual("STD-LIM-1", dec.Error.Requirement);
            Assert.AreEqual(14, dec.Error.Offset);
            // Exactly the maximum is accepted (here the stream then ends inside the payload).
            Assert.AreEqual("STD-STR-3", T.Decode(new StandardDecoder(100), T.Hex("01016400"), 2).Error.Requirement);
        }

        [Test]
        public void MaximumIsInclusive_AndDefaultIs10MiB()
        {
            Assert.IsFalse(T.Decode(new StandardDecoder(3), T.Hex("01010300 616263")).Error.IsSet);
            // Default maximum 10 MiB: 10485761 declared is rejected, 10485760 is not (it is truncated instead).
            Assert.AreEqual("STD-LIM-1", T.Decode(new StandardDecoder(), T.Hex("0101FFFF0100A000")).Error.Requirement);
            Assert.AreEqual("STD-STR-3", T.Decode(new StandardDecoder(), T.Hex("0101FFFF0000A000")).Error.Requirement);
        }

        [Test]
        public void HugeDeclaredLength_DoesNotBufferThePromisedSize()
        {
            var dec = new StandardDecoder(long.MaxValue);
            var fl = new FrameList();
            Assert.IsTrue(dec.Feed(T.Concat(T.Hex("0101FFFFFFFFFF7F"), T.Pattern(100)), fl));
            Assert.LessOrEqual(dec.BufferedBytes, 4096, "buffer grows with received bytes only");
            Assert.IsFalse(dec.Finish());
            Assert.AreEqual("STD-STR-3", dec.Error.Requirement);
        }

        [TestCase("01", 0)]
        [TestCase("010104", 0)]
        [TestCase("0101FFFF0000", 0)]
        [TestCase("01010400 4F70", 0)]
        [TestCase("01010200 4F4B 01", 6)]
        [TestCase("01010200 4F4B 0102FFFF 00000100 00", 6)]
        public void Truncation_IsStdStr3_AtPartialFrameStart(string hex, int offset)
        {
            byte[] s = T.Hex(hex);
            var r = T.Decode(new StandardDecoder(), s);
            Assert.AreEqual("STD-STR-3", r.Error.Requirement);
            Assert.AreEqual(offset, r.Error.Offset);
            T.AssertSame(r, T.DecodeBytewise(new StandardDecoder(), s), "bytewise");
        }

        [Test]
        public void EmptyStream_IsNotAnError()
        {
            var r = T.Decode(new StandardDecoder(), new byte[0]);
            Assert.IsFalse(r.Error.IsSet);
            Assert.AreEqual(0, r.Frames.Count);
        }

        [Test]
        public void NoFrameAfterAnError()
        {
            var dec = new StandardDecoder(5);
            var fl = new FrameList();
            Assert.IsFalse(dec.Feed(T.Hex("01010600 000000000000"), fl));
            Assert.IsFalse(dec.Feed(T.Hex("01010100 00"), fl));
            Assert.AreEqual(0, fl.Frames.Count);
            Assert.IsFalse(dec.Finish());
            Assert.AreEqual("STD-LIM-1", dec.Error.Requirement);
        }

        [Test]
        public void Encoder_RefusesAboveMaximum()
        {
            ProtocolError err;
            Assert.IsFalse(StandardEncoder.Check(101, 100, out err));
            Assert.AreEqual("STD-LIM-2", err.Requirement);
            Assert.IsTrue(StandardEncoder.Check(100, 100, out err));
            Assert.IsFalse(StandardEncoder.Check(0x80000000L, long.MaxValue, out err));
            Assert.AreEqual("STD-LEN-4", err.Requirement);
            var ex = Assert.Throws<FrameproofException>(() => StandardEncoder.Encode(1, 1, new byte[11], 10));
            Assert.AreEqual("STD-LIM-2", ex.Requirement);
            Assert.AreEqual("STD-LIM-2", Assert.Throws<FrameproofException>(() => StandardEncoder.Encode(1, 1, new byte[Limits.DefaultMaxPayload + 1])).Requirement);
        }

        [Test]
        public void DecoderIsReusableAfterReset()
        {
            var dec = new StandardDecoder(4);
            Assert.AreEqual("STD-LIM-1", T.Decode(dec, T.Hex("01010500")).Error.Requirement);
            dec.Reset();
            var r = T.Decode(dec, T.Hex("01010100 41"));
            Assert.IsFalse(r.Error.IsSet);
            Assert.AreEqual(1, r.Frames.Count);
        }
    }
}
