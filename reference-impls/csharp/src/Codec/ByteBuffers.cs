using System;
using System.Buffers;
using System.Threading;

namespace Frameproof.Codec
{
    /// <summary>
    /// The byte buffers of decoders, sessions and send buffers: <see cref="ArrayPool{T}.Shared"/> up
    /// to its largest pooled size (1 MiB), fresh arrays above it. Large arrays given back are not
    /// pooled; they are garbage until the next major collection, which a runtime may put off while
    /// hundreds of MiB of them pile up (Mono's SGen does: a server holding frames near its memory
    /// budget, *-RES-1, saw its RSS grow past the budget by the buffers dropped when frames grew or
    /// connections were closed). So once <see cref="CollectAfterBytes"/> of large arrays have been
    /// given back, a full collection (queued to a pool thread) returns them to the operating system.
    /// </summary>
    public static class ByteBuffers
    {
        /// <summary>Arrays above this are not pooled (ArrayPool.Shared's largest bucket).</summary>
        public const int LargestPooled = 1024 * 1024;
        /// <summary>Large arrays given back between two forced collections.</summary>
        public const long CollectAfterBytes = 16L * 1024 * 1024;

        static long _dropped;
        static long _collections;

        /// <summary>Full collections forced so far (for tests and reports).</summary>
        public static long Collections { get { return Interlocked.Read(ref _collections); } }

        public static byte[] Rent(int minimumLength)
        {
            return minimumLength > LargestPooled ? new byte[minimumLength] : ArrayPool<byte>.Shared.Rent(minimumLength);
        }

        public static void Return(byte[] array)
        {
            if (array == null) return;
            if (array.Length <= LargestPooled)
            {
                ArrayPool<byte>.Shared.Return(array);
                return;
            }
            if (Interlocked.Add(ref _dropped, array.Length) < CollectAfterBytes) return;
            Interlocked.Exchange(ref _dropped, 0);
            // On a pool thread, not here: this frame still holds the array, and Mono scans stacks
            // conservatively, so a collection from here would keep exactly the array it is meant to free.
            if (Interlocked.Exchange(ref _queued, 1) == 0) ThreadPool.UnsafeQueueUserWorkItem(Collect, null);
        }

        static int _queued;

        static void Collect(object _)
        {
            Interlocked.Exchange(ref _queued, 0);
            Interlocked.Increment(ref _collections);
            GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, true);
        }
    }
}
