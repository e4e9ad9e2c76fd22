using System;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    [TestFixture]
    public class NativeBufferTests
    {
        [Test]
        public void Ensure_GrowsFrom4KiB_Doubling_KeepsContents()
        {
            using (var b = new NativeBuffer())
            {
                Assert.AreEqual(0, b.Capacity);
                b.Ensure(10);
                Assert.AreEqual(4096, b.Capacity);
                Span<byte> first = b.Slice(0, 4096);
                for (int i = 0; i < 4096; i++) first[i] = (byte)(i * 7);
                b.Ensure(4097);
                Assert.AreEqual(8192, b.Capacity, "doubling");
                b.Ensure(100000);
                Assert.AreEqual(100000, b.Capacity, "straight to the size when doubling is not enough");
                for (int i = 0; i < 4096; i++) Assert.AreEqual((byte)(i * 7), b.Slice(i, 1)[0], "byte " + i + " kept");
                b.Ensure(50);
                Assert.AreEqual(100000, b.Capacity, "never shrinks on Ensure");
            }
        }

        [Test]
        public void Slice_OutsideTheBuffer_Throws()
        {
            using (var b = new NativeBuffer())
            {
                b.Ensure(4096);
                Assert.Throws<ArgumentOutOfRangeException>(() => b.Slice(4000, 97));
                Assert.Throws<ArgumentOutOfRangeException>(() => b.Slice(-1, 1));
                Assert.AreEqual(96, b.Slice(4000, 96).Length);
            }
        }

        [Test]
        public void Free_Empties_AndTheBufferGrowsAgain_DisposeTwiceIsSafe()
        {
            var b = new NativeBuffer();
            b.Ensure(1 << 20);
            b.Free();
            Assert.AreEqual(0, b.Capacity);
            Assert.Throws<ArgumentOutOfRangeException>(() => b.Slice(0, 1));
            b.Ensure(5);
            Assert.AreEqual(4096, b.Capacity);
            b.Dispose();
            b.Dispose();
            Assert.AreEqual(0, b.Capacity);
        }
    }
}
