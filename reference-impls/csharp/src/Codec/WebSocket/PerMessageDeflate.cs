using System;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>
    /// One connection's permessage-deflate state once the extension was agreed (spec/websocket-deflate.md
    /// §3-§6), mirroring Deflater / Inflater of conformance/frameproof/protocols/websocket/deflate.py,
    /// for either role: this end's compressor (window <c>server_max_window_bits</c> for a server,
    /// <c>client_max_window_bits</c> for a client; reset after each message with that side's
    /// <c>*_no_context_takeover</c>) and the inflater of the peer's messages (15-bit window, reset
    /// before each message with the peer's <c>*_no_context_takeover</c>). A client told to compress with
    /// 8 window bits sends every message uncompressed (<see cref="Compresses"/>; zlib cannot keep to a
    /// 256-byte window, WSD-NEG-4, and WSD-FRM-1 allows it); so does a message whose compressed payload would
    /// be longer than itself, which also resets the compressor (<see cref="Payload"/>, WSD-FRM-3). The zlib state is created lazily
    /// (WSD-LIM-3: an idle connection costs nothing more) and freed by <see cref="Dispose"/>.
    /// Inflating stops one byte past the message limit, in steps of at most <see cref="Step"/> bytes
    /// (WSD-LIM-1).
    /// </summary>
    public sealed unsafe class PerMessageDeflate : IDisposable
    {
        /// <summary>The end of an empty stored block: removed by the sender, added back by the receiver (WSD-CMP-1/2).</summary>
        static readonly byte[] Tail = { 0x00, 0x00, 0xff, 0xff };
        /// <summary>Inflated bytes per step: the most a receiver holds past its limit (WSD-LIM-1).</summary>
        public const int Step = 64 * 1024;
        /// <summary>zlib's compression level (the Python reference's).</summary>
        public const int Level = 6;

        public readonly DeflateParams Agreed;
        readonly long _maxMessage;
        readonly int _ownBits;          // this end's compressor window (9..15), or 8: nothing is compressed
        readonly bool _ownReset, _peerReset;
        Zlib.ZStream* _def, _inf;
        bool _ended;        // the message being inflated had a final block: the rest of it is ignored (WSD-CMP-5)
        bool _streamEnded;  // the inflater's stream ended: the next message starts a new one
        byte[] _out;        // the compressed payload of the last message
        bool _disposed;

        /// <summary>Inflated bytes of the current message so far (tests, WSD-LIM-1).</summary>
        public long Inflated;
        /// <summary>The message limit (websocket.max_message) on the inflated size.</summary>
        public long MaxMessage { get { return _maxMessage; } }

        /// <summary>The state of an agreement for a server (<paramref name="client"/> false) or a client.</summary>
        public PerMessageDeflate(DeflateParams agreed, long maxMessage, bool client = false)
        {
            Agreed = agreed;
            _maxMessage = maxMessage <= 0 ? WsOpcodes.DefaultMaxMessage : Math.Min(maxMessage, WsOpcodes.ArrayLimit - Step);
            int bits = client ? agreed.ClientMaxWindowBits : agreed.ServerMaxWindowBits;
            _ownBits = bits <= 0 ? 15 : bits;
            _ownReset = client ? agreed.ClientNoContextTakeover : agreed.ServerNoContextTakeover;
            _peerReset = client ? agreed.ServerNoContextTakeover : agreed.ClientNoContextTakeover;
            if (_ownBits < 9 && !client) throw new ArgumentException("zlib compresses raw DEFLATE with 9..15 window bits (WSD-NEG-4)");
        }

        /// <summary>This end compresses its messages: false for a client limited to 8 window bits, which
        /// sends them uncompressed (RSV1 clear, WSD-FRM-1).</summary>
        public bool Compresses { get { return _ownBits >= 9; } }

        /// <summary>Memory held by the zlib state and the compression buffer (WSD-LIM-2): zlib's own
        /// figures with memLevel 8, a deflater 2^(bits+2) + 128 KiB + its 6 KiB struct, an inflater (15 bits)
        /// 32 KiB + 12 KiB.</summary>
        public long StateBytes
        {
            get
            {
                long n = 0;
                if (_def != null) n += (1L << (_ownBits + 2)) + (128 << 10) + (6 << 10);
                if (_inf != null) n += 44 << 10;
                if (_out != null) n += _out.Length;
                return n;
            }
        }

        // ---------------------------------------------------------------- inflating (WSD-CMP-2..5, CTX-*, LIM-1)

        /// <summary>The first frame of a compressed message: the inflater is created, or reset where the
        /// peer keeps no context (WSD-CTX-1), or, after a final block, started on a new stream whose
        /// dictionary is the window so far (WSD-CMP-5).</summary>
        public void BeginMessage()
        {
            if (_disposed) throw new ObjectDisposedException("PerMessageDeflate");
            Inflated = 0;
            _ended = false;
            if (_inf == null) { _inf = Zlib.NewInflater(15); _streamEnded = false; return; }
            if (_peerReset) { Zlib.InflateReset(_inf); _streamEnded = false; return; }
            if (_streamEnded)
            {
                var dict = new byte[1 << 15];
                fixed (byte* d = dict)
                {
                    uint len = (uint)dict.Length;
                    if (Zlib.InflateGetDictionary(_inf, d, &len) != Zlib.Ok) len = 0;
                    Zlib.InflateReset(_inf);
                    if (len > 0) Zlib.InflateSetDictionary(_inf, d, len);
                }
                _streamEnded = false;
            }
        }

        /// <summary>One frame's payload of the compressed message (<paramref name="last"/>: its final
        /// frame, after which the tail 00 00 ff ff is inflated too), inflated onto <paramref name="dst"/>
        /// from <paramref name="dstLen"/>. Returns 0, 1007 (does not inflate, WSD-CMP-3) or 1009 (past
        /// the message limit, WSD-LIM-1: stops there, the rest is not inflated); <paramref name="error"/>
        /// says why.</summary>
        public int InflateFrame(ReadOnlySpan<byte> payload, bool last, NativeBuffer dst, ref int dstLen, out string error)
        {
            error = null;
            int rc;
            fixed (byte* p = &MemoryMarshal.GetReference(payload))
                rc = Feed(p, payload.Length, dst, ref dstLen, out error);
            if (rc != 0 || !last) return rc;
            fixed (byte* t = Tail)
                rc = Feed(t, Tail.Length, dst, ref dstLen, out error);
            return rc;
        }

        int Feed(byte* data, int length, NativeBuffer dst, ref int dstLen, out string error)
        {
            error = null;
            if (_ended || length == 0) return 0;
            Zlib.ZStream* z = _inf;
            z->NextIn = data;
            z->AvailIn = (uint)length;
            while (true)
            {
                long room = _maxMessage - dstLen + 1;            // one byte past the limit is enough to know
                int step = (int)Math.Min(Step, room);
                dst.Ensure(dstLen + step, (int)Math.Min(int.MaxValue, _maxMessage + 1));
                uint inBefore = z->AvailIn;
                z->NextOut = dst.Pointer + dstLen;
                z->AvailOut = (uint)step;
                int rc = Zlib.Inflate(z, Zlib.NoFlush);
                int produced = step - (int)z->AvailOut;
                dstLen += produced;
                Inflated += produced;
                if (rc == Zlib.StreamError || rc == Zlib.DataError || rc == Zlib.NeedDict || rc == Zlib.MemError)
                {
                    error = "the payload does not inflate: " + Zlib.Message(z, rc);
                    return 1007;
                }
                if (dstLen > _maxMessage)
                {
                    error = "the message inflates past max_message (" + _maxMessage + " bytes)";
                    return 1009;
                }
                if (rc == Zlib.StreamEnd) { _ended = _streamEnded = true; break; }
                if (z->AvailIn == 0 && z->AvailOut != 0) break;   // input used up, nothing held back
                if (produced == 0 && z->AvailIn == inBefore) break; // no progress possible (Z_BUF_ERROR)
            }
            z->NextIn = null;
            z->AvailIn = 0;
            z->NextOut = null;
            return 0;
        }

        // ---------------------------------------------------------------- compressing (WSD-CMP-1, CTX-1/2)

        /// <summary>The payload of one compressed message: DEFLATE, sync-flushed, its last four octets
        /// 00 00 ff ff removed; an empty message is the single octet 0x00. Valid until the next call.</summary>
        public ReadOnlySpan<byte> Compress(ReadOnlySpan<byte> message)
        {
            if (_disposed) throw new ObjectDisposedException("PerMessageDeflate");
            if (!Compresses) throw new InvalidOperationException("this end compresses nothing (8 window bits, WSD-NEG-4)");
            if (_def == null) _def = Zlib.NewDeflater(Level, _ownBits);
            int n = message.Length;
            long bound = (long)n + (n >> 12) + (n >> 14) + (n >> 25) + 64;
            if (_out == null || _out.Length < bound) _out = new byte[Math.Max(256, bound)];
            int outLen = 0;
            Zlib.ZStream* z = _def;
            fixed (byte* src = &MemoryMarshal.GetReference(message))
            {
                z->NextIn = src;
                z->AvailIn = (uint)n;
                while (true)
                {
                    fixed (byte* o = _out)
                    {
                        z->NextOut = o + outLen;
                        z->AvailOut = (uint)(_out.Length - outLen);
                        int rc = Zlib.Deflate(z, Zlib.SyncFlush);
                        if (rc != Zlib.Ok && rc != Zlib.BufError) throw new InvalidOperationException("deflate failed: " + Zlib.Message(z, rc));
                        outLen = _out.Length - (int)z->AvailOut;
                    }
                    if (z->AvailOut != 0) break;   // all input read and flushed
                    Array.Resize(ref _out, _out.Length * 2);
                }
                z->NextIn = null;
                z->AvailIn = 0;
                z->NextOut = null;
            }
            if (_ownReset) Zlib.DeflateReset(z);
            if (outLen >= 4 && _out[outLen - 4] == 0 && _out[outLen - 3] == 0 && _out[outLen - 2] == 0xff && _out[outLen - 1] == 0xff) outLen -= 4;
            if (outLen == 0) { _out[0] = 0; outLen = 1; }
            return new ReadOnlySpan<byte>(_out, 0, outLen);
        }

        /// <summary>A sender's payload for one message (WSD-FRM-3): the compressed payload (<see cref="Compress"/>,
        /// <paramref name="compressed"/> true), or, where that would be longer than the message (incompressible
        /// data, an empty message), the message itself, to go uncompressed with RSV1 clear (<paramref name="compressed"/>
        /// false), and the compressor reset: its zlib state freed, created again at the next message (WSD-LIM-3),
        /// since the message entered its window but no receiver's (WSD-CTX-3) and the next compressed message
        /// must refer to nothing earlier. Valid until the next call.</summary>
        public ReadOnlySpan<byte> Payload(ReadOnlySpan<byte> message, out bool compressed)
        {
            ReadOnlySpan<byte> z = Compress(message);
            compressed = z.Length <= message.Length;
            if (compressed) return z;
            Zlib.FreeDeflater(_def);
            _def = null;
            return message;
        }

        /// <summary>After a message's echo was written: a large compression buffer is let go.</summary>
        public void EndMessage()
        {
            if (_out != null && _out.Length > 64 * 1024) _out = null;
        }

        public void Dispose()
        {
            if (_disposed) return;
            _disposed = true;
            Zlib.FreeDeflater(_def);
            Zlib.FreeInflater(_inf);
            _def = _inf = null;
            _out = null;
            GC.SuppressFinalize(this);
        }

        ~PerMessageDeflate()
        {
            Zlib.FreeDeflater(_def);
            Zlib.FreeInflater(_inf);
        }
    }
}
