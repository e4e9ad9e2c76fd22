using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>Masking keys for a client's frames (WS-MASK-3: unpredictable): drawn from the system
    /// CSPRNG in batches, four bytes per frame.</summary>
    public sealed class MaskKeySource : IDisposable
    {
        readonly RandomNumberGenerator _rng = RandomNumberGenerator.Create();
        readonly byte[] _pool = new byte[4096];
        int _next = 4096;

        public void Next(Span<byte> key)
        {
            if (_next + 4 > _pool.Length) { _rng.GetBytes(_pool); _next = 0; }
            new ReadOnlySpan<byte>(_pool, _next, 4).CopyTo(key);
            _next += 4;
        }

        public void Dispose() { _rng.Dispose(); }
    }
}
