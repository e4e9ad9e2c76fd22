using System;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    [TestFixture]
    public class LengthFieldTests
    {
        // spec/length-field.md §8: payload "abc" in every profile.
        [TestCase(0, 2, "0300 616263")]
        [TestCase(0, -2, "0003 616263")]
        [TestCase(0, 4, "03000000 616263")]
        [TestCase(0, -4, "00000003 616263")]
        [TestCase(0, 1, "03 616263")]
        [TestCase(0, 0, "03 616263")]
        [TestCase(2, 2, "0000 0300 616263")]
        public void WorkedExamples_EncodeAndDecode(int offset, int size, string hex)
        {
            var p = new LengthFieldProfile(offset, size);
            byte[] expected = T.Hex(hex);
            Assert.AreEqual(expected, LengthFieldEncoder.Encode(p, T.Ascii("abc")));
            var r = T.Decode(new LengthFieldDecoder(p), expected);
            Assert.IsFalse(r.Error.IsSet);
            Assert.AreEqual(1, r.Frames.Count);
            Assert.AreEqual(T.Ascii("abc"), r.Frames[0].Payload);
            Assert.AreEqual(0, r.Frames[0].Flag);
            Assert.AreEqual(0, r.Frames[0].Seq);
            T.AssertSame(r, T.DecodeBytewise(new LengthFieldDecoder(p), expected), "bytewise");
        }

        [Test]
        public void Varint300_IsAC02()
        {
            var p = new LengthFieldProfile(0, 0);
            byte[] enc = LengthFieldEncoder.Encode(p, T.Pattern(300));
            Assert.AreEqual(0xAC, enc[0]);
            Assert.AreEqual(0x02, enc[1]);
            Assert.AreEqual(302, enc.Length);
            Assert.AreEqual(T.Pattern(300), T.Decode(new LengthFieldDecoder(p), enc, 1).Frames[0].Payload);
        }

        [Test]
        public void BenchmarkFrame()
        {
            byte[] enc = LengthFieldEncoder.Encode(LengthFieldProfile.Default, new byte[30]);
            Assert.AreEqual(32, enc.Length);
            Assert.AreEqual(0x1E, enc[0]);
            Assert.AreEqual(0x00, enc[1]);
        }

        [Test]
        public void HeaderBytesAreIgnoredOnReceive()
        {
            var p = new LengthFieldProfile(3, 2);
            var r = T.Decode(new LengthFieldDecoder(p), T.Hex("FFEEDD 0100 41 123456 0000"), 2);
            Assert.IsFalse(r.Error.IsSet);
            Assert.AreEqual(2, r.Frames.Count);
            Assert.AreEqual(T.Hex("41"), r.Frames[0].Payload);
            Assert.AreEqual(0, r.Frames[1].Payload.Length);
        }

        [TestCase(3)]
        [TestCase(-1)]
        [TestCase(8)]
        [TestCase(-3)]
        public void UnsupportedSize_IsLfFmt3_BeforeAnyByte(int size)
        {
            var p = new LengthFieldProfile(0, size);
            var ex = Assert.Throws<FrameproofException>(() => new LengthFieldDecoder(p));
            Assert.AreEqual("LF-FMT-3", ex.Requirement);
            Assert.AreEqual(0, ex.Offset);
            ProtocolError err;
            Assert.IsFalse(LengthFieldEncoder.Check(p, 100000, 10, out err));
            Assert.AreEqual("LF-FMT-3", err.Requirement, "FMT-3 before LEN-1 and LIM-2");
        }

        [Test]
        public void Encoder_Len1_ThenLim2()
        {
            ProtocolError err;
            Assert.IsFalse(LengthFieldEncoder.Check(new LengthFieldProfile(0, 1), 256, 10, out err));
            Assert.AreEqual("LF-LEN-1", err.Requirement);
            Assert.IsTrue(LengthFieldEncoder.Check(new LengthFieldProfile(0, 1), 255, 0, out err));
            Assert.IsFalse(LengthFieldEncoder.Check(new LengthFieldProfile(0, -2), 65536, 0, out err));
            Assert.AreEqual("LF-LEN-1", err.Requirement);
            Assert.IsTrue(LengthFieldEncoder.Check(new LengthFieldProfile(0, 2), 65535, 0, out err));
            Assert.IsFalse(LengthFieldEncoder.Check(new LengthFieldProfile(0, 4), 0x80000000L, long.MaxValue, out err));
            Assert.AreEqual("LF-LEN-1", err.Requirement);
            Assert.IsFalse(LengthFieldEncoder.Check(new LengthFieldProfile(0, 4), 101, 100, out err));
            Assert.AreEqual("LF-LIM-2", err.Requirement);
            Assert.AreEqual("LF-LIM-2", Assert.Throws<FrameproofException>(() => LengthFieldEncoder.Encode(new LengthFieldProfile(0, 0), new byte[5], 4)).Requirement);
        }

        [Test]
        public void VarintLongerThan5Bytes_IsLfLen2()
        {
            var p = new LengthFieldProfile(0, 0);
            var r = T.Decode(new LengthFieldDecoder(p), T.Hex("01 41 8080808080 00"));
            Assert.AreEqual(1, r.Frames.Count);
            Assert.AreEqual("LF-LEN-2", r.Error.Requirement);
            Assert.AreEqual(2, r.Error.Offset);
            T.AssertSame(r, T.DecodeBytewise(new LengthFieldDecoder(p), T.Hex("01 41 8080808080 00")), "bytewise");
        }

        [Test]
        public void VarintAbove2Pow31Minus1_IsLfLen2_EvenWithHugeMaximum()
        {
            var p = new LengthFieldProfile(0, 0);
            Assert.AreEqual("LF-LEN-2", T.Decode(new LengthFieldDecoder(p, long.MaxValue), T.Hex("8080808008")).Error.Requirement);
            // 2^31-1 itself is a valid length (then above the default maximum: LIM-1).
            Assert.AreEqual("LF-LIM-1", T.Decode(new LengthFieldDecoder(p), T.Hex("FFFFFFFF07")).Error.Requirement);
            Assert.AreEqual("LF-STR-3", T.Decode(new LengthFieldDecoder(p, long.MaxValue), T.Hex("FFFFFFFF07")).Error.Requirement);
        }

        [Test]
        public void NonMinimalVarint_IsAccepted()
        {
            var r = T.Decode(new LengthFieldDecoder(new LengthFieldProfile(0, 0)), T.Hex("8000 8100 41"));
            Assert.IsFalse(r.Error.IsSet);
            Assert.AreEqual(2, r.Frames.Count);
            Assert.AreEqual(0, r.Frames[0].Payload.Length);
            Assert.AreEqual(T.Hex("41"), r.Frames[1].Payload);
        }

        [TestCase(4, "00000080")]
        [TestCase(-4, "80000000")]
        [TestCase(4, "FFFFFFFF")]
        public void Size4WithBit31_IsLfLen3(int size, string hex)
        {
            var r = T.Decode(new LengthFieldDecoder(new LengthFieldProfile(0, size), long.MaxValue), T.Hex(hex));
            Assert.AreEqual("LF-LEN-3", r.Error.Requirement);
            Assert.AreEqual(0, r.Error.Offset);
        }

        [Test]
        public void OversizedLength_IsLfLim1_AtFrameStartIncludingOffset()
        {
            var p = new LengthFieldProfile(2, 2);
            var dec = new LengthFieldDecoder(p, 16);
            var fl = new FrameList();
            Assert.IsFalse(dec.Feed(T.Hex("0000 0100 41 0000 1100"), fl), "rejected without any payload byte");
            Assert.AreEqual(1, fl.Frames.Count);
            Assert.AreEqual("LF-LIM-1", dec.Error.Requirement);
            Assert.AreEqual(5, dec.Error.Offset);
            Assert.AreEqual("LF-STR-3", T.Decode(new LengthFieldDecoder(p, 16), T.Hex("0000 1000")).Error.Requirement, "16 = max is accepted");
        }

        [Test]
        public void DefaultMaximum_Is10MiB()
        {
            var p = new LengthFieldProfile(0, 4);
            Assert.AreEqual("LF-LIM-1", T.Decode(new LengthFieldDecoder(p), T.Hex("0100A000")).Error.Requirement);
            Assert.AreEqual("LF-STR-3", T.Decode(new LengthFieldDecoder(p), T.Hex("0000A000")).Error.Requirement);
        }

        [TestCase(0, 2, "03", 0)]
        [TestCase(0, 2, "0300 6162", 0)]
        [TestCase(2, 2, "00", 0)]
        [TestCase(2, 2, "0000 0100 41 0000", 5)]
        [TestCase(0, 0, "01 41 80", 2)]
        [TestCase(0, -4, "00000001", 0)]
        public void Truncation_IsLfStr3(int offset, int size, string hex, int at)
        {
            var p = new LengthFieldProfile(offset, size);
            byte[] s = T.Hex(hex);
            var r = T.Decode(new LengthFieldDecoder(p), s);
            Assert.AreEqual("LF-STR-3", r.Error.Requirement);
            Assert.AreEqual(at, r.Error.Offset);
            T.AssertSame(r, T.DecodeBytewise(new LengthFieldDecoder(p), s), "bytewise");
        }

        [Test]
        public void SplitIndependence_AllProfiles_IncludingInsideVarint()
        {
            int[] sizes = { 1, 2, -2, 4, -4, 0 };
            var rnd = new Random(7);
            foreach (int size in sizes)
                foreach (int offset in new[] { 0, 3 })
                {
                    var p = new LengthFieldProfile(offset, size);
                    int big = size == 1 ? 255 : size == 2 || size == -2 ? 65535 : 70000;
                    byte[] s = T.Concat(
                        LengthFieldEncoder.Encode(p, T.Pattern(5, 1)),
                        LengthFieldEncoder.Encode(p, new byte[0]),
                        LengthFieldEncoder.Encode(p, T.Pattern(big, 2)),
                        LengthFieldEncoder.Encode(p, T.Pattern(130, 3)),
                        LengthFieldEncoder.Encode(p, T.Pattern(200, 4)));
                    var whole = T.Decode(new LengthFieldDecoder(p), s);
                    Assert.IsFalse(whole.Error.IsSet, p.ToString());
                    Assert.AreEqual(5, whole.Frames.Count);
                    Assert.AreEqual(T.Pattern(big, 2), whole.Frames[2].Payload);
                    for (int c = 1; c < 40; c++) T.AssertSame(whole, T.Decode(new LengthFieldDecoder(p), s, c), p + " cut " + c);
                    for (int c = s.Length - 220; c < s.Length; c += 7) T.AssertSame(whole, T.Decode(new LengthFieldDecoder(p), s, c), p + " cut " + c);
                    for (int i = 0; i < 10; i++)
                    {
                        var cuts = new System.Collections.Generic.SortedSet<int>();
                        for (int k = 0; k < 30; k++) cuts.Add(rnd.Next(1, s.Length));
                        var arr = new int[cuts.Count]; cuts.CopyTo(arr);
                        T.AssertSame(whole, T.Decode(new LengthFieldDecoder(p), s, arr), p + " random " + i);
                    }
                }
        }

        [Test]
        public void Size1_CapacityCapsTheMaximum()
        {
            var p = new LengthFieldProfile(0, 1);
            var r = T.Decode(new LengthFieldDecoder(p, 10), T.Hex("0B"));
            Assert.AreEqual("LF-LIM-1", r.Error.Requirement);
            Assert.AreEqual(255, p.Capacity);
        }
    }
}
