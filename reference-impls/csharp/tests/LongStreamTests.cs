using System;
using System.Collections.Generic;
using System.Linq;
using Frameproof.Testee;
using NUnit.Framework;

namespace Frameproof.Tests
{
    [TestFixture]
    public class LongStreamTests
    {
        [Test]
        public void SplitMix64_IsTheReferenceGenerator()
        {
            // splitmix64 from state 0 (Vigna's reference implementation's first outputs), as the
            // Python runner and the Rust and C++ testees check
            var r = new LongStream.SplitMix64(0);
            Assert.AreEqual(0xE220A8397B1DCDAFUL, r.Next());
            Assert.AreEqual(0x6E789E6AA1B965F4UL, r.Next());
            Assert.AreEqual(0x06C45D188009454FUL, r.Next());
        }

        [TestCase(1u)]
        [TestCase(5u)]
        [TestCase(64u)]
        public void Reads_AreTheCycleRepeatedThenTheTail(uint maxChunk)
        {
            var all = new List<byte>();
            foreach (ArraySegment<byte> s in LongStream.Reads(new byte[] { 1, 2, 3 }, 4, new byte[] { 9, 8 }, 7, maxChunk))
            {
                Assert.That(s.Count, Is.InRange(1, (int)maxChunk));
                all.AddRange(s);
            }
            CollectionAssert.AreEqual(new byte[] { 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 9, 8 }, all.ToArray());
        }
    }
}
