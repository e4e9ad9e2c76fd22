using System;
using System.Buffers;
using System.Threading;

namespace Frameproof.Codec
{
    /// <summary>
    /// The byte buffers of decoders, sessions and send buffers. Small arrays (up to
    /// <see cref="SmallLimit"/>) come from <see cref="ArrayPool{T}.Shared"/>. Large ones (the runtime's
    /// large-object heap) come from a pool of this class with a bound on the bytes it keeps
    /// (<see cref="PoolBytes"/>): ArrayPool.Shared drops what its small per-core buckets cannot hold, and
    /// a dropped large array is garbage until the next major collection, which a runtime may put off
    /// while hundreds of MiB of them pile up (Mono's SGen does: a server holding frames near its memory
    /// budget, *-RES-1, saw its RSS grow past the budget by the buffers dropped when frames grew or
    /// connections were closed). Here every large array dropped is counted, and once
    /// <see cref="CollectAfterBytes"/> of them are garbage a full collection (queued to a pool thread)
    /// returns them to the operating system. Arrays above <see cref="LargestPooled"/> are never kept.
    /// </summary>
    public static class ByteBuffers
    {
        /// <summary>Arrays up to this come from ArrayPool.Shared (below the large-object threshold of
        /// Mono, 8000 bytes, and of .NET, 85,000 bytes).</summary>
        public const int SmallLimit = 8 * 1024;
        /// <summary>The largest array this pool keeps; larger ones are allocated at their size.</summary>
        public const int LargestPooled = 1024 * 1024;
        /// <summary>At most this many bytes of large arrays are kept for reuse.</summary>
        public const long PoolBytes = 8L * 1024 * 1024;
        /// <summary>Large arrays dropped between two forced collections.</summary>
        public const long CollectAfterBytes = 8L * 1024 * 1024;

        // buckets of 16 KiB, 32 KiB, ... 1 MiB arrays (powers of two)
        const int FirstShift = 14, Buckets = 7;
        static readonly byte[][][] _free = new byte[Buckets][][];
        static readonly int[] _count = new int[Buckets];
        static readonly object _lock = new object();
        static long _kept, _dropped, _collections;
        static int _queued;

        /// <summary>Full collections forced so far (for tests and reports).</summary>
        public static long Collections { get { return Interlocked.Read(ref _collections); } }

        /// <summary>A decoder's first buffer for an unfinished frame (or the whole frame, if smaller).</summary>
        public const int InitialBuffer = 4096;

        /// <summary>
        /// The buffer of a frame of <paramref name="need"/> bytes arriving in pieces, grown to hold at
        /// least <paramref name="size"/> of them (<paramref name="used"/> already in
        /// <paramref name="buf"/> are kept): from <see cref="InitialBuffer"/>, doubling with the bytes
        /// received, and once a quarter of the frame has arrived straight to the frame's size: memory
        /// follows what the peer sent (at most four times that), not what it declared, and a frame does not
        /// get a buffer of nearly its size and then one of its size. Measured with 600 peers each sending
        /// all but the last byte of a 1 MiB frame against a 256 MiB budget (frameproof net --stress,
        /// maximal_unfinished_frames): plain doubling left the server's RSS 339-347 MiB above its start,
        /// this 288-298 MiB, the allowance being 326 MiB. Returns <paramref name="buf"/> itself if it is big
        /// enough.
        /// </summary>
        public static byte[] Grow(byte[] buf, int used, long size, long need)
        {
            if (buf != null && buf.Length >= size) return buf;
            long cap = buf == null ? Math.Min(need, InitialBuffer) : buf.Length;
            while (cap < size) cap = cap * 4 >= need ? need : cap * 2;
            byte[] nb = Rent((int)cap);
            if (buf != null)
            {
                Buffer.BlockCopy(buf, 0, nb, 0, used);
                Return(buf);
            }
            return nb;
        }

        /// <summary>Largest copy <see cref="Copy(byte*, byte*, int)"/> does with its own word loop; above it
        /// Buffer.MemoryCopy. Mono 6.8 (x64): MemoryCopy costs about 7 ns even for 32 bytes, Buffer.BlockCopy
        /// 14 ns, Span.CopyTo 12 ns; the word loop 2.5 ns for 32 bytes and is even with MemoryCopy near 256.</summary>
        const int SmallCopy = 192;

        /// <summary>memmove of <paramref name="n"/> bytes (the copy of a read into a receive buffer, a payload
        /// into a frame): a word loop for small non-overlapping ranges, where the runtime's copy routines cost
        /// several times the copy itself, Buffer.MemoryCopy otherwise.</summary>
        public static unsafe void Copy(byte* dst, byte* src, int n)
        {
            // Buffer.MemoryCopy for large and for overlapping ranges (it copies as memmove does)
            if (n > SmallCopy || (ulong)(dst - src) < (ulong)n || (ulong)(src - dst) < (ulong)n)
            {
                Buffer.MemoryCopy(src, dst, n, n);
                return;
            }
            while (n >= 32)
            {
                ((ulong*)dst)[0] = ((ulong*)src)[0];
                ((ulong*)dst)[1] = ((ulong*)src)[1];
                ((ulong*)dst)[2] = ((ulong*)src)[2];
                ((ulong*)dst)[3] = ((ulong*)src)[3];
                dst += 32; src += 32; n -= 32;
            }
            if (n >= 16)
            {
                ((ulong*)dst)[0] = ((ulong*)src)[0];
                ((ulong*)dst)[1] = ((ulong*)src)[1];
                dst += 16; src += 16; n -= 16;
            }
            if (n >= 8)
            {
                *(ulong*)dst = *(ulong*)src;
                dst += 8; src += 8; n -= 8;
            }
            if (n >= 4)
            {
                *(uint*)dst = *(uint*)src;
                dst += 4; src += 4; n -= 4;
            }
            while (n > 0)
            {
                *dst++ = *src++;
                n--;
            }
        }

        /// <summary><see cref="Copy(byte*, byte*, int)"/> between arrays, bounds checked as Buffer.BlockCopy
        /// (ArgumentException / ArgumentOutOfRangeException).</summary>
        public static unsafe void Copy(byte[] src, int srcOffset, byte[] dst, int dstOffset, int count)
        {
            if (src == null) throw new ArgumentNullException("src");
            if (dst == null) throw new ArgumentNullException("dst");
            if (srcOffset < 0 || dstOffset < 0 || count < 0) throw new ArgumentOutOfRangeException("count");
            if (src.Length - srcOffset < count || dst.Length - dstOffset < count) throw new ArgumentException("offset and count exceed the array");
            if (count == 0) return;
            fixed (byte* s = src) fixed (byte* d = dst) Copy(d + dstOffset, s + srcOffset, count);
        }

        static int Bucket(int length)
        {
            int b = 0;
            while ((1 << (FirstShift + b)) < length) b++;
            return b;
        }

        public static byte[] Rent(int minimumLength)
        {
            if (minimumLength <= SmallLimit) return ArrayPool<byte>.Shared.Rent(minimumLength);
            if (minimumLength > LargestPooled) return new byte[minimumLength];
            int b = Bucket(minimumLength);
            lock (_lock)
            {
                if (_count[b] > 0)
                {
                    byte[] a = _free[b][--_count[b]];
                    _free[b][_count[b]] = null;
                    _kept -= a.Length;
                    return a;
                }
            }
            return new byte[1 << (FirstShift + b)];
        }

        public static void Return(byte[] array)
        {
            if (array == null || array.Length == 0) return;
            if (array.Length <= SmallLimit)
            {
                ArrayPool<byte>.Shared.Return(array);
                return;
            }
            int b = array.Length <= LargestPooled ? Bucket(array.Length) : -1;
            if (b >= 0 && array.Length == 1 << (FirstShift + b))
            {
                lock (_lock)
                {
                    if (_kept + array.Length <= PoolBytes)
                    {
                        byte[][] list = _free[b] ?? (_free[b] = new byte[4][]);
                        if (_count[b] == list.Length) Array.Resize(ref _free[b], list.Length * 2);
                        _free[b][_count[b]++] = array;
                        _kept += array.Length;
                        return;
                    }
                }
            }
            if (Interlocked.Add(ref _dropped, array.Length) < CollectAfterBytes) return;
            Interlocked.Exchange(ref _dropped, 0);
            // On a pool thread, not here: this frame still holds the array, and Mono scans stacks
            // conservatively, so a collection from here would keep exactly the array it is meant to free.
            if (Interlocked.Exchange(ref _queued, 1) == 0) ThreadPool.UnsafeQueueUserWorkItem(Collect, null);
        }

        static void Collect(object _)
        {
            Interlocked.Exchange(ref _queued, 0);
            Interlocked.Increment(ref _collections);
            GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, true);
        }
    }
}
