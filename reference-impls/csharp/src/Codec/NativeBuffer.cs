using System;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>
    /// A growable byte buffer outside the garbage-collected heap (malloc/realloc/free through
    /// <see cref="Marshal"/>), for the one buffer of a connection that may reach a hundred MiB: the
    /// fragments of a WebSocket message in progress (WS-LIM-2). Its memory goes back to the operating
    /// system the moment the connection is done with it, whatever the collector does. A byte[] of that
    /// size did not always: Mono scans stacks and registers conservatively, and a stale slot or register
    /// of the thread that had just copied the message into a larger array kept the old one (64 or 128
    /// MiB) alive through every later collection: `frameproof net --protocol websocket`,
    /// message_over_limit_1009, failed on the server's RSS in 2-5 runs out of 25 (2026-11-24), with the
    /// array still reachable by a WeakReference after three forced full collections. Growth uses
    /// realloc, which moves pages of a large block (mremap) instead of copying them.
    /// Not thread-safe: one connection's I/O path owns it. Dispose frees (idempotent); a buffer never
    /// disposed is freed by its finalizer.
    /// </summary>
    public sealed unsafe class NativeBuffer : IDisposable
    {
        byte* _p;
        int _capacity;

        /// <summary>Bytes allocated (0 when empty or disposed).</summary>
        public int Capacity { get { return _capacity; } }

        /// <summary>Room for at least <paramref name="size"/> bytes (the first <paramref name="size"/>
        /// kept on growth are the old contents): from 4 KiB, doubling.</summary>
        public void Ensure(int size) { Ensure(size, int.MaxValue); }

        /// <summary><see cref="Ensure(int)"/>, growing to no more than <paramref name="limit"/> bytes
        /// unless <paramref name="size"/> is larger.</summary>
        public void Ensure(int size, int limit)
        {
            if (size <= _capacity) return;
            long cap = Math.Max(4096, (long)_capacity * 2);
            if (cap > limit) cap = limit;
            if (cap < size) cap = size;
            if (cap > int.MaxValue) cap = int.MaxValue;
            _p = _p == null ? (byte*)Marshal.AllocHGlobal((IntPtr)cap) : (byte*)Marshal.ReAllocHGlobal((IntPtr)_p, (IntPtr)cap);
            _capacity = (int)cap;
        }

        /// <summary>The first byte (null when empty); valid until the next growth or <see cref="Free"/>.</summary>
        public byte* Pointer { get { return _p; } }

        public Span<byte> Slice(int start, int length)
        {
            if ((uint)start > (uint)_capacity || (uint)length > (uint)(_capacity - start))
                throw new ArgumentOutOfRangeException("start");
            return new Span<byte>(_p + start, length);
        }

        /// <summary>Frees the memory; the buffer can grow again afterwards.</summary>
        public void Free()
        {
            if (_p == null) return;
            Marshal.FreeHGlobal((IntPtr)_p);
            _p = null;
            _capacity = 0;
        }

        public void Dispose()
        {
            Free();
            GC.SuppressFinalize(this);
        }

        ~NativeBuffer() { Free(); }
    }
}
