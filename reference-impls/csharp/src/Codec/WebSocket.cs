using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>Opcodes, limits and close codes (spec/websocket.md §2, §5, §8, §10).</summary>
    public static class WsOpcodes
    {
        public const byte Continuation = 0x0, Text = 0x1, Binary = 0x2, Close = 0x8, Ping = 0x9, Pong = 0xA;
        /// <summary>WS-LIM-1 default (galay-http's max_frame_size): 10 MiB.</summary>
        public const long DefaultMaxFrame = 10L * 1024 * 1024;
        /// <summary>WS-LIM-2 default (galay-http's max_message_size): 100 MiB.</summary>
        public const long DefaultMaxMessage = 100L * 1024 * 1024;
        /// <summary>This implementation's own bound on one frame or message: the largest byte array.</summary>
        public const long ArrayLimit = 0x7FFFFFC7;

        public static bool IsKnown(uint op) { return op <= 2 || (op >= 8 && op <= 10); }
        public static bool IsControl(uint op) { return op >= 8; }

        /// <summary>WS-CLOSE-2: the status codes a peer may send.</summary>
        public static bool IsValidCloseCode(int code)
        {
            return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
        }

        /// <summary>WS-ERR-1: the close code an endpoint sends when it fails the connection for this
        /// requirement, or 0 (WS-STR-3: nothing is sent).</summary>
        public static int CloseCodeFor(string requirement)
        {
            switch (requirement)
            {
                case "WS-UTF8-1": case "WS-UTF8-2": case "WS-CLOSE-3": return 1007;
                case "WS-LIM-1": case "WS-LIM-2": return 1009;
                case "WS-HDR-2": case "WS-HDR-3": case "WS-LEN-3": case "WS-LEN-4": case "WS-MASK-1": case "WS-MASK-2":
                case "WS-CTL-1": case "WS-CTL-2": case "WS-FRAG-2": case "WS-FRAG-3": case "WS-CLOSE-1": case "WS-CLOSE-2":
                    return 1002;
                default: return 0;
            }
        }
    }

    /// <summary>
    /// Incremental fail-fast UTF-8 validation (RFC 3629; WS-UTF8-1/2): <see cref="Feed(ReadOnlySpan{byte})"/> returns the
    /// index of the first byte after which the input so far can no longer be completed to valid
    /// UTF-8 (overlong forms, surrogates and code points above U+10FFFF are excluded by the ranges
    /// of the byte after the lead byte), or -1. Code points may be split across calls. ASCII runs
    /// are skipped eight bytes at a time.
    /// </summary>
    public struct Utf8Validator
    {
        int _left;          // continuation bytes still due
        byte _lo, _hi;      // the range of the next continuation byte

        /// <summary>True if the input so far ends on a code point boundary.</summary>
        public bool Complete { get { return _left == 0; } }

        public void Reset() { _left = 0; }

        public unsafe int Feed(ReadOnlySpan<byte> s)
        {
            int n = s.Length;
            if (n == 0) return -1;
            // through a pointer: span indexing and span reads are slow on Mono (see WsMask)
            fixed (byte* p = &MemoryMarshal.GetReference(s)) return Feed(p, n);
        }

        /// <summary>The same over <paramref name="n"/> bytes at <paramref name="p"/> (the decoder's path).</summary>
        public unsafe int Feed(byte* p, int n)
        {
            int i = 0;
            int left = _left;
            byte lo = _lo, hi = _hi;
            while (i < n)
            {
                if (left == 0)
                {
                    while (i + 8 <= n && (*(ulong*)(p + i) & 0x8080808080808080UL) == 0) i += 8;
                    if (i == n) break;
                    byte b = p[i];
                    if (b < 0x80) { i++; continue; }
                    if (b < 0xC2 || b > 0xF4) { _left = 0; return i; }
                    left = b < 0xE0 ? 1 : b < 0xF0 ? 2 : 3;
                    lo = b == 0xE0 ? (byte)0xA0 : b == 0xF0 ? (byte)0x90 : (byte)0x80;
                    hi = b == 0xED ? (byte)0x9F : b == 0xF4 ? (byte)0x8F : (byte)0xBF;
                    i++;
                    continue;
                }
                byte c = p[i];
                if (c < lo || c > hi) { _left = left; _lo = lo; _hi = hi; return i; }
                left--;
                lo = 0x80;
                hi = 0xBF;
                i++;
            }
            _left = left; _lo = lo; _hi = hi;
            return -1;
        }

        public static bool IsValid(ReadOnlySpan<byte> s)
        {
            var v = new Utf8Validator();
            return v.Feed(s) < 0 && v.Complete;
        }
    }

    /// <summary>WS-MASK-3 at memory speed: XOR with the 4-byte key, 32 then 8 bytes at a time through
    /// pointers, then a scalar tail. Pointers, not <c>MemoryMarshal.Read&lt;ulong&gt;</c> on span slices
    /// or <see cref="System.Numerics.Vector{T}"/>: on Mono 6.8 Vector is not hardware accelerated and
    /// the span reads cost about 12 ns each (1.5 µs a KiB, measured); the pointer loop runs at about
    /// 28 ns a KiB there, and is what a modern JIT vectorises as well.</summary>
    public static class WsMask
    {
        /// <summary>dst[i] = src[i] ^ key[(phase + i) % 4]; src and dst may be the same span.</summary>
        public static unsafe void Apply(ReadOnlySpan<byte> src, Span<byte> dst, ReadOnlySpan<byte> key, long phase)
        {
            int n = src.Length;
            if (dst.Length < n) throw new ArgumentException("dst is shorter than src");
            if (n == 0) return;
            if (key.Length < 4) throw new ArgumentException("the key has 4 bytes");
            fixed (byte* s0 = &MemoryMarshal.GetReference(src))
            fixed (byte* d0 = &MemoryMarshal.GetReference(dst))
            fixed (byte* k = &MemoryMarshal.GetReference(key))
                Apply(s0, d0, n, k, phase);
        }

        /// <summary>The same over pointers: <paramref name="n"/> bytes, the 4-byte key at <paramref name="key"/>
        /// (the decoder's path, without the Spans that cost Mono a few ns each).</summary>
        public static unsafe void Apply(byte* s0, byte* d0, int n, byte* key, long phase)
        {
            int p = (int)(phase & 3);
            // the key rotated to this phase, as it lies in memory over 8 bytes (built in a register, not
            // through a pointer into a local, which keeps it in memory for the whole loop on Mono)
            uint b0 = key[p], b1 = key[(p + 1) & 3], b2 = key[(p + 2) & 3], b3 = key[(p + 3) & 3];
            uint k4 = BitConverter.IsLittleEndian ? b0 | b1 << 8 | b2 << 16 | b3 << 24 : b3 | b2 << 8 | b1 << 16 | b0 << 24;
            ulong kw = k4 | (ulong)k4 << 32;
            byte* s = s0, d = d0, end = s0 + n;
            for (; s + 32 <= end; s += 32, d += 32)
            {
                *(ulong*)d = *(ulong*)s ^ kw;
                *(ulong*)(d + 8) = *(ulong*)(s + 8) ^ kw;
                *(ulong*)(d + 16) = *(ulong*)(s + 16) ^ kw;
                *(ulong*)(d + 24) = *(ulong*)(s + 24) ^ kw;
            }
            for (; s + 8 <= end; s += 8, d += 8) *(ulong*)d = *(ulong*)s ^ kw;
            for (int j = p; s < end; s++, d++, j++) *d = (byte)(*s ^ key[j & 3]);
        }
    }

    /// <summary>One decoded frame, valid during the handler call: header fields, the unmasked payload
    /// and the stream offset where the frame starts.</summary>
    public ref struct WsFrame
    {
        public bool Fin, Masked;
        public byte Rsv, Opcode;
        public ReadOnlySpan<byte> Payload;
        public long Offset;
        /// <summary>The decoder's 4-byte key of a masked frame (a Span is built only when asked for:
        /// building one costs Mono a few ns a frame).</summary>
        internal byte[] Key;

        /// <summary>The masking key of a masked frame, else empty.</summary>
        public ReadOnlySpan<byte> MaskKey { get { return Masked && Key != null ? new ReadOnlySpan<byte>(Key) : ReadOnlySpan<byte>.Empty; } }

        public FrameValue ToValue()
        {
            return new FrameValue
            {
                Payload = Payload.ToArray(),
                Header = new WebSocketHeader { Fin = Fin, Rsv = Rsv, Opcode = Opcode, Masked = Masked, MaskKey = MaskKey.ToArray() }
            };
        }
    }

    /// <summary>Receives decoded websocket frames; returns false to stop the decoder.</summary>
    public interface IWsFrameHandler
    {
        bool OnFrame(ref WsFrame frame);
    }

    /// <summary>
    /// The receiving endpoint of one connection (spec/websocket.md §2-§11), for either role: frames
    /// with their header checks, in the order of the error classification (RSV, opcode, fragmented
    /// control, mask bit for the role, control length, non-minimal length, 64-bit MSB, orphan
    /// continuation, data frame inside a message, frame limit, message limit), all judged from the
    /// header before any payload byte is kept; then the message layer: UTF-8 of text messages checked
    /// as the bytes arrive (fail fast, WS-UTF8-2), across fragments and control frames between them
    /// (WS-CTL-3), close payload checks (WS-CLOSE-1..3), nothing read after a close (WS-CLOSE-4).
    /// Payloads are unmasked while they are copied into a pooled buffer that grows with the bytes
    /// received; an unmasked frame inside one fed chunk is delivered from the caller's span.
    /// Errors carry the offset of the frame's first byte and the close code (<see cref="WebSocketCloseDetail"/>).
    /// </summary>
    public sealed class WsDecoder : IDisposable
    {
        readonly bool _server;
        readonly long _maxFrame, _maxMessage;
        readonly byte[] _hdr = new byte[14];
        int _hdrCount;
        // the frame whose payload is arriving
        bool _inPayload, _fin, _masked, _checkUtf8;
        byte _rsv, _op;
        readonly byte[] _key = new byte[4];
        long _n, _got;
        byte[] _buf;
        // the message
        bool _inMessage, _text;
        long _size;
        Utf8Validator _utf8;
        // the stream
        long _pos, _frameStart;
        bool _failed, _halted, _closed;
        ProtocolError _error;

        /// <summary>A decoder receiving as a server (<paramref name="server"/>: masked frames) or a client
        /// (unmasked frames), with the frame limit (limits.max_payload, 0: 10 MiB) and the message
        /// limit (websocket.max_message, 0: 100 MiB).</summary>
        public WsDecoder(bool server, long maxFrame = 0, long maxMessage = 0)
        {
            _server = server;
            _maxFrame = maxFrame <= 0 ? WsOpcodes.DefaultMaxFrame : maxFrame;
            _maxMessage = maxMessage <= 0 ? WsOpcodes.DefaultMaxMessage : maxMessage;
            _maskBit = server ? 0x80u : 0u;
            _fastLimit = Math.Min(Math.Min(_maxFrame, _maxMessage), WsOpcodes.ArrayLimit);
        }

        readonly uint _maskBit;      // the MASK bit a frame for this role has (WS-MASK-1/2)
        readonly long _fastLimit;    // the largest payload of an unfragmented data frame (WS-LIM-1/2)

        public bool Failed { get { return _failed; } }
        public ProtocolError Error { get { return _error; } }
        /// <summary>A close frame was read: the stream has ended (WS-CLOSE-4).</summary>
        public bool CloseReceived { get { return _closed; } }
        public long Position { get { return _pos; } }
        /// <summary>Bytes held for the frame in progress (header and payload so far).</summary>
        public long BufferedBytes { get { return _hdrCount + (_inPayload ? _got : 0); } }

        /// <summary>Memory held for the frame in progress (WS-RES-1): header and payload bytes so far,
        /// or the payload buffer allocated, if more; at least 1 while a frame is unfinished, else 0.</summary>
        public long HeldBytes
        {
            get
            {
                if (_failed || _pos == _frameStart) return 0;
                long held = _hdrCount + (_inPayload ? 14 + _got : 0);
                if (_inPayload && _buf != null && _buf.Length > held) held = _buf.Length;
                return Math.Max(held, 1);
            }
        }
        /// <summary>A fragmented message is in progress.</summary>
        public bool InMessage { get { return _inMessage; } }

        /// <summary>Feeds one chunk. Returns false once the decoder has failed or a handler stopped it;
        /// after a close frame, input is ignored (true).</summary>
        public unsafe bool Feed(ReadOnlySpan<byte> data, IWsFrameHandler handler)
        {
            if (_failed || _halted) return false;
            int length = data.Length;
            if (_closed || length == 0) return true;
            // Pointers over the pinned chunk, not Span slices: on Mono each slice, index and Span passed
            // costs a few ns, more than the decoding of a small frame (see FrameDecoder.Feed).
            fixed (byte* start = &MemoryMarshal.GetReference(data))
            {
                byte* p = start, end = start + length;
                // Hot path: whole unfragmented text or binary frames of this role lying back to back at a
                // frame boundary, which pass every header check (FIN, no RSV, MASK bit of the role, minimal
                // length within both limits) and, text, hold valid UTF-8. Anything else, or any check
                // failing, goes to FeedAny from the frame's first byte, which decides as before.
                while (!_inPayload && _hdrCount == 0 && !_inMessage)
                {
                    long avail = end - p;
                    if (avail < 2) break;
                    uint b0 = p[0], b1 = p[1];
                    if (b0 - 0x81u > 1u || (b1 & 0x80u) != _maskBit) break;
                    uint n7 = b1 & 0x7Fu;
                    int hl;
                    long n;
                    if (n7 < 126) { hl = 2; n = n7; }
                    else if (n7 == 126)
                    {
                        if (avail < 4) break;
                        n = p[2] << 8 | p[3];
                        if (n < 126) break;
                        hl = 4;
                    }
                    else
                    {
                        if (avail < 10) break;
                        ulong u = (ulong)(uint)(p[2] << 24 | p[3] << 16 | p[4] << 8 | p[5]) << 32 | (uint)(p[6] << 24 | p[7] << 16 | p[8] << 8 | p[9]);
                        if (u < 0x10000 || u > (ulong)_fastLimit) break;
                        n = (long)u;
                        hl = 10;
                    }
                    if (n > _fastLimit) break;
                    if (_maskBit != 0) hl += 4;
                    if (avail - hl < n) break;
                    int len = (int)n;
                    bool text = b0 == 0x81;
                    byte* q = p + hl;
                    bool masked = _maskBit != 0;
                    if (masked) fixed (byte* key = _key) *(uint*)key = *(uint*)(q - 4);
                    if (masked && len > 0)
                    {
                        // unmasked into the decoder's buffer (the chunk is read-only), with the key in the chunk
                        if (_buf == null || _buf.Length < len) _buf = ByteBuffers.Grow(_buf, 0, len, len);
                        bool ok;
                        fixed (byte* b = _buf)
                        {
                            WsMask.Apply(q, b, len, q - 4, 0);
                            ok = Deliver(b, len, text, true, hl, handler);
                        }
                        if (_buf != null && _buf.Length > 64 * 1024) Drop();
                        if (!ok) return _halted ? false : FeedAny(p, end, handler);
                    }
                    else if (!Deliver(q, len, text, masked, hl, handler)) return _halted ? false : FeedAny(p, end, handler);
                    p = q + len;
                    if (p == end) return true;
                }
                return FeedAny(p, end, handler);
            }
        }

        /// <summary>The hot path's delivery of a whole frame (FIN, text or binary, checked header) whose
        /// payload is at <paramref name="q"/>: false, with nothing changed, if the payload is text and not
        /// valid UTF-8 (the general path then decides); false with <see cref="_halted"/> set if the handler
        /// stopped the decoder; else true.</summary>
        unsafe bool Deliver(byte* q, int len, bool text, bool masked, int hl, IWsFrameHandler handler)
        {
            _utf8.Reset();
            if (text && (_utf8.Feed(q, len) >= 0 || !_utf8.Complete)) return false;
            // the state Judge and Complete leave after such a frame
            _fin = true; _rsv = 0; _op = text ? WsOpcodes.Text : WsOpcodes.Binary; _masked = masked;
            _n = len; _got = 0; _checkUtf8 = text; _text = text; _size = 0;
            long offset = _frameStart;
            _pos += hl + len;
            _frameStart = _pos;
            WsFrame f;
            f.Fin = true; f.Rsv = 0; f.Opcode = _op; f.Masked = masked; f.Key = masked ? _key : null;
            f.Payload = new ReadOnlySpan<byte>(q, len); f.Offset = offset;
            if (handler.OnFrame(ref f)) return true;
            _halted = true;
            return false;
        }

        /// <summary>The general decoding loop over the pinned bytes [p, end): any split, every check.</summary>
        unsafe bool FeedAny(byte* p, byte* end, IWsFrameHandler handler)
        {
            while (!_failed && !_halted && !_closed && p < end)
            {
                if (_inPayload)
                {
                    int k = (int)Math.Min(_n - _got, end - p);
                    Ensure(_got + k);
                    fixed (byte* b = _buf)
                    fixed (byte* key = _key)
                    {
                        byte* dst = b + _got;
                        if (_masked) WsMask.Apply(p, dst, k, key, _got);
                        else ByteBuffers.Copy(dst, p, k);
                        if (_checkUtf8 && _utf8.Feed(dst, k) >= 0)
                            return Fail(_fin ? "WS-UTF8-1" : "WS-UTF8-2", "invalid UTF-8 in a text message");
                    }
                    _got += k;
                    _pos += k;
                    p += k;
                    if (_got == _n)
                    {
                        _inPayload = false;
                        Complete(new ReadOnlySpan<byte>(_buf, 0, (int)_n), handler);
                        if (_buf != null && _buf.Length > 64 * 1024) Drop();
                    }
                    continue;
                }
                if (_hdrCount == 0 && end - p >= 2)
                {
                    int hl = HeaderLength(p[1]);
                    if (end - p >= hl)
                    {
                        if (!Judge(p, hl)) return false;
                        _pos += hl;
                        p += hl;
                        if (!_masked && end - p >= _n)
                        {
                            // Zero-copy: the whole unmasked frame is in this chunk.
                            int len = (int)_n;
                            if (_checkUtf8 && _utf8.Feed(p, len) >= 0)
                                return Fail(_fin ? "WS-UTF8-1" : "WS-UTF8-2", "invalid UTF-8 in a text message");
                            _pos += len;
                            var payload = new ReadOnlySpan<byte>(p, len);
                            p += len;
                            Complete(payload, handler);
                            continue;
                        }
                        BeginPayload(handler);
                        continue;
                    }
                }
                // The header is split across chunks: collect it (at most 14 bytes).
                int need = _hdrCount < 2 ? 2 : HeaderLength(_hdr[1]);
                int t = (int)Math.Min(need - _hdrCount, end - p);
                for (int i = 0; i < t; i++) _hdr[_hdrCount + i] = p[i];
                _hdrCount += t;
                _pos += t;
                p += t;
                if (_hdrCount < 2 || _hdrCount < HeaderLength(_hdr[1])) continue;
                bool ok;
                fixed (byte* h = _hdr) ok = Judge(h, _hdrCount);
                if (!ok) return false;
                _hdrCount = 0;
                BeginPayload(handler);
            }
            return !_failed && !_halted;
        }

        /// <summary>End of stream: a frame left unfinished is WS-STR-3 (between frames, even inside a
        /// fragmented message, is not an error). Returns false if the stream was rejected.</summary>
        public bool Finish()
        {
            if (_failed) return false;
            if (_closed || _halted) return true;
            if (_pos > _frameStart) return Fail("WS-STR-3", "stream ended inside a frame (" + (_pos - _frameStart) + " bytes of it received)");
            Drop();
            return true;
        }

        public void Dispose() { Drop(); }

        static int HeaderLength(byte b1)
        {
            int n7 = b1 & 0x7F;
            return 2 + (n7 == 126 ? 2 : n7 == 127 ? 8 : 0) + ((b1 & 0x80) != 0 ? 4 : 0);
        }

        void BeginPayload(IWsFrameHandler handler)
        {
            _got = 0;
            if (_n == 0) { Complete(ReadOnlySpan<byte>.Empty, handler); return; }
            _inPayload = true;
        }

        /// <summary>The header checks of the error classification, in order; sets the frame fields.</summary>
        unsafe bool Judge(byte* h, int hl)
        {
            byte b0 = h[0], b1 = h[1];
            _fin = (b0 & 0x80) != 0;
            _rsv = (byte)((b0 >> 4) & 7);
            _op = (byte)(b0 & 0x0F);
            _masked = (b1 & 0x80) != 0;
            int n7 = b1 & 0x7F;
            ulong n = n7 == 126 ? (ulong)(h[2] << 8 | h[3])
                : n7 == 127 ? (ulong)(uint)(h[2] << 24 | h[3] << 16 | h[4] << 8 | h[5]) << 32 | (uint)(h[6] << 24 | h[7] << 16 | h[8] << 8 | h[9])
                : (ulong)n7;
            if (_masked)
                fixed (byte* k = _key) *(uint*)k = *(uint*)(h + hl - 4);
            bool control = WsOpcodes.IsControl(_op);
            if (_rsv != 0) return Fail("WS-HDR-2", "RSV bits " + _rsv + " set without an extension");
            if (!WsOpcodes.IsKnown(_op)) return Fail("WS-HDR-3", "reserved opcode 0x" + _op.ToString("x"));
            if (control && !_fin) return Fail("WS-CTL-1", "fragmented control frame");
            if (_server && !_masked) return Fail("WS-MASK-1", "unmasked frame from a client");
            if (!_server && _masked) return Fail("WS-MASK-2", "masked frame from a server");
            if (control && n7 > 125) return Fail("WS-CTL-2", "control frame longer than 125 bytes");
            if ((n7 == 126 && n < 126) || (n7 == 127 && n < 0x10000)) return Fail("WS-LEN-3", "non-minimal length " + n);
            if (n7 == 127 && n >= 0x8000000000000000UL) return Fail("WS-LEN-4", "64-bit length with the most significant bit set");
            if (_op == WsOpcodes.Continuation && !_inMessage) return Fail("WS-FRAG-2", "continuation frame outside a message");
            if ((_op == WsOpcodes.Text || _op == WsOpcodes.Binary) && _inMessage) return Fail("WS-FRAG-3", "data frame inside a fragmented message");
            if ((long)n > _maxFrame) return Fail("WS-LIM-1", "frame payload of " + n + " bytes exceeds the maximum " + _maxFrame);
            if (!control && (_op == WsOpcodes.Continuation ? _size : 0) + (long)n > _maxMessage)
                return Fail("WS-LIM-2", "message would exceed the maximum " + _maxMessage);
            if ((long)n > WsOpcodes.ArrayLimit || (!control && (_op == WsOpcodes.Continuation ? _size : 0) + (long)n > WsOpcodes.ArrayLimit))
                return Fail("WS-LIM-1", "frame or message above this implementation's 2 GiB bound");
            _n = (long)n;
            if (_op == WsOpcodes.Text || _op == WsOpcodes.Binary) _utf8.Reset();
            _checkUtf8 = _op == WsOpcodes.Text || (_op == WsOpcodes.Continuation && _text);
            return true;
        }

        /// <summary>A whole frame: the end-of-frame checks, the message state, delivery.</summary>
        void Complete(ReadOnlySpan<byte> payload, IWsFrameHandler handler)
        {
            if (_checkUtf8 && _fin && !_utf8.Complete) { Fail("WS-UTF8-1", "text message ends inside a code point"); return; }
            if (_op == WsOpcodes.Close)
            {
                if (payload.Length == 1) { Fail("WS-CLOSE-1", "close payload of 1 byte"); return; }
                if (payload.Length >= 2)
                {
                    int code = BinaryPrimitives.ReadUInt16BigEndian(payload);
                    if (!WsOpcodes.IsValidCloseCode(code)) { Fail("WS-CLOSE-2", "close code " + code); return; }
                    if (!Utf8Validator.IsValid(payload.Slice(2))) { Fail("WS-CLOSE-3", "close reason is not UTF-8"); return; }
                }
                _closed = true;
            }
            else if (_op == WsOpcodes.Text || _op == WsOpcodes.Binary)
            {
                _inMessage = !_fin;
                _text = _op == WsOpcodes.Text;
                _size = _n;
            }
            else if (_op == WsOpcodes.Continuation)
            {
                _inMessage = !_fin;
                _size += _n;
            }
            if (!WsOpcodes.IsControl(_op) && _fin) { _inMessage = false; _size = 0; }
            var f = new WsFrame
            {
                Fin = _fin, Rsv = _rsv, Opcode = _op, Masked = _masked, Key = _masked ? _key : null,
                Payload = payload, Offset = _frameStart,
            };
            _frameStart = _pos;
            if (!handler.OnFrame(ref f)) _halted = true;
        }

        void Ensure(long size) { _buf = ByteBuffers.Grow(_buf, (int)_got, size, _n); }

        void Drop()
        {
            if (_buf == null) return;
            ByteBuffers.Return(_buf);
            _buf = null;
        }

        bool Fail(string requirement, string message)
        {
            _failed = true;
            int code = WsOpcodes.CloseCodeFor(requirement);
            _error = new ProtocolError(requirement, _frameStart, message, code == 0 ? null : new WebSocketCloseDetail((uint)code));
            _inPayload = false;
            _hdrCount = 0;
            Drop();
            return false;
        }
    }

    /// <summary>The frame encoder (spec/websocket.md §2-§5): checks, then header (minimal length,
    /// WS-LEN-2), masking key and the payload masked with it.</summary>
    public static class WsEncoder
    {
        /// <summary>WS-HDR-2, WS-HDR-3, WS-CTL-1, WS-CTL-2, WS-MASK-4, WS-LIM-3, in that order.</summary>
        public static bool Check(bool fin, uint rsv, uint opcode, bool masked, int keyLength, long payloadLength, long maxPayload, out ProtocolError error)
        {
            error = default(ProtocolError);
            if (rsv != 0) { error = new ProtocolError("WS-HDR-2", 0, "RSV bits without an extension"); return false; }
            if (!WsOpcodes.IsKnown(opcode)) { error = new ProtocolError("WS-HDR-3", 0, "reserved opcode " + opcode); return false; }
            if (WsOpcodes.IsControl(opcode) && !fin) { error = new ProtocolError("WS-CTL-1", 0, "fragmented control frame"); return false; }
            if (WsOpcodes.IsControl(opcode) && payloadLength > 125) { error = new ProtocolError("WS-CTL-2", 0, "control payload over 125 bytes"); return false; }
            if ((masked && keyLength != 4) || (!masked && keyLength != 0)) { error = new ProtocolError("WS-MASK-4", 0, "masking key of " + keyLength + " bytes"); return false; }
            long max = maxPayload <= 0 ? WsOpcodes.DefaultMaxFrame : maxPayload;
            if (payloadLength > max) { error = new ProtocolError("WS-LIM-3", 0, "payload of " + payloadLength + " bytes exceeds the maximum " + max); return false; }
            return true;
        }

        public static int HeaderLength(long payloadLength, bool masked)
        {
            return 2 + (payloadLength <= 125 ? 0 : payloadLength < 65536 ? 2 : 8) + (masked ? 4 : 0);
        }

        /// <summary>Writes a checked frame into dest (HeaderLength + payload bytes); returns its length.
        /// With a key (4 bytes) the frame is masked.</summary>
        public static unsafe int Write(bool fin, byte opcode, ReadOnlySpan<byte> key, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            bool masked = key.Length == 4;
            int n = payload.Length;
            if (dest.Length - HeaderLength(n, masked) < n) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = &MemoryMarshal.GetReference(dest))
            fixed (byte* k = &MemoryMarshal.GetReference(key))
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
                return Put(d, fin, opcode, masked ? k : null, s, n);
        }

        /// <summary>The same frame into <paramref name="dest"/> at <paramref name="offset"/> (the reply path:
        /// a session's output array), masked with the 4 bytes at <paramref name="key"/> unless it is null,
        /// without the destination Span, Span slices and small-copy routines that cost Mono several times
        /// the work.</summary>
        public static unsafe int Write(bool fin, byte opcode, byte* key, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            int n = payload.Length;
            if (dest == null) throw new ArgumentNullException("dest");
            if ((uint)offset > (uint)dest.Length) throw new ArgumentOutOfRangeException("offset");
            if (dest.Length - offset - HeaderLength(n, key != null) < n) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = dest)
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
                return Put(d + offset, fin, opcode, key, s, n);
        }

        /// <summary>Header (minimal length), key and payload (masked with the key, if not null) at
        /// <paramref name="d"/>, which has room; returns the frame's length.</summary>
        internal static unsafe int Put(byte* d, bool fin, byte opcode, byte* key, byte* s, int n)
        {
            d[0] = (byte)((fin ? 0x80 : 0) | opcode);
            uint m = key != null ? 0x80u : 0u;
            int p;
            if (n <= 125) { d[1] = (byte)(m | (uint)n); p = 2; }
            else if (n < 65536) { d[1] = (byte)(m | 126); d[2] = (byte)(n >> 8); d[3] = (byte)n; p = 4; }
            else
            {
                d[1] = (byte)(m | 127);
                d[2] = 0; d[3] = 0; d[4] = 0; d[5] = 0;   // n < 2^31
                d[6] = (byte)(n >> 24); d[7] = (byte)(n >> 16); d[8] = (byte)(n >> 8); d[9] = (byte)n;
                p = 10;
            }
            if (key != null)
            {
                d[p] = key[0]; d[p + 1] = key[1]; d[p + 2] = key[2]; d[p + 3] = key[3];
                p += 4;
                WsMask.Apply(s, d + p, n, key, 0);
            }
            else ByteBuffers.Copy(d + p, s, n);
            return p + n;
        }
    }

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

    /// <summary>The opening handshake (spec/websocket.md §12, RFC 6455 §4).</summary>
    public static class WsHandshake
    {
        public const string Guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        public const string Subprotocol = "frameproof.echo";
        /// <summary>Largest request or response head read.</summary>
        public const int MaxHead = 8192;

        /// <summary>WS-HS-2: base64(SHA-1(key + GUID)).</summary>
        public static string AcceptFor(string key)
        {
            using (SHA1 sha = SHA1.Create())
                return Convert.ToBase64String(sha.ComputeHash(Encoding.ASCII.GetBytes(key + Guid)));
        }

        /// <summary>The index just after the blank line ending an HTTP head, or -1; bytes before
        /// <paramref name="from"/> are known not to end it.</summary>
        public static int HeadEnd(ReadOnlySpan<byte> b, int from = 0)
        {
            for (int i = Math.Max(3, from); i < b.Length; i++)
                if (b[i] == '\n' && b[i - 1] == '\r' && b[i - 2] == '\n' && b[i - 3] == '\r') return i + 1;
            return -1;
        }

        /// <summary>Parses a head into its first line and headers (names lower-case, repeated headers
        /// joined with ", "); false if a header line has no colon.</summary>
        public static bool Parse(string head, out string first, out Dictionary<string, string> headers)
        {
            headers = new Dictionary<string, string>();
            string[] lines = head.Split(new[] { "\r\n" }, StringSplitOptions.None);
            first = lines[0];
            for (int i = 1; i < lines.Length; i++)
            {
                if (lines[i].Length == 0) continue;
                int c = lines[i].IndexOf(':');
                if (c < 0) return false;
                string k = lines[i].Substring(0, c).Trim().ToLowerInvariant(), v = lines[i].Substring(c + 1).Trim();
                string old;
                headers[k] = headers.TryGetValue(k, out old) ? old + ", " + v : v;
            }
            return true;
        }

        static bool HasToken(Dictionary<string, string> h, string name, string token)
        {
            string v;
            if (!h.TryGetValue(name, out v)) return false;
            foreach (string t in v.Split(','))
                if (string.Equals(t.Trim(), token, StringComparison.OrdinalIgnoreCase)) return true;
            return false;
        }

        static bool IsKey(string key)
        {
            if (key == null || key.Length != 24 || !key.EndsWith("==", StringComparison.Ordinal)) return false;
            for (int i = 0; i < 22; i++)
            {
                char c = key[i];
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/')) return false;
            }
            try { return Convert.FromBase64String(key).Length == 16; }
            catch (FormatException) { return false; }
        }

        static string Status(int code, string reason, string extra)
        {
            return "HTTP/1.1 " + code + " " + reason + "\r\n" + extra + "Content-Length: 0\r\nConnection: close\r\n\r\n";
        }

        /// <summary>The server's answer to a request head (without the blank line). <paramref name="ok"/>:
        /// 101, frames follow; else <paramref name="requirement"/> names the requirement the request broke.</summary>
        public static string Answer(string head, out bool ok, out string requirement)
        {
            ok = false;
            requirement = "WS-HS-1";
            string first;
            Dictionary<string, string> h;
            if (!Parse(head, out first, out h)) return Status(400, "Bad Request", "");
            string[] parts = first.Split(' ');
            string key;
            h.TryGetValue("sec-websocket-key", out key);
            bool bad = parts.Length != 3 || parts[0] != "GET" || parts[2] != "HTTP/1.1" || !h.ContainsKey("host")
                || !HasToken(h, "upgrade", "websocket") || !HasToken(h, "connection", "upgrade") || !IsKey(key);
            if (bad) return Status(400, "Bad Request", "");
            string version;
            if (!h.TryGetValue("sec-websocket-version", out version) || version != "13")
            {
                requirement = "WS-HS-3";
                return Status(426, "Upgrade Required", "Sec-WebSocket-Version: 13\r\n");
            }
            string extra = "";
            string offered;
            if (h.TryGetValue("sec-websocket-protocol", out offered))
                foreach (string p in offered.Split(','))
                    if (p.Trim() == Subprotocol) { extra = "Sec-WebSocket-Protocol: " + Subprotocol + "\r\n"; break; }
            ok = true;
            requirement = null;
            return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
                + AcceptFor(key) + "\r\n" + extra + "\r\n";
        }

        /// <summary>A client's opening request (WS-HS-1) with a fresh random key.</summary>
        public static string Request(string host, string path, out string key)
        {
            var k = new byte[16];
            using (var rng = RandomNumberGenerator.Create()) rng.GetBytes(k);
            key = Convert.ToBase64String(k);
            return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "
                + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
        }

        /// <summary>Checks a server's answer head: 101, Upgrade, Connection, Sec-WebSocket-Accept for
        /// <paramref name="key"/>. Returns null if it is right, else what is wrong.</summary>
        public static string CheckAnswer(string head, string key)
        {
            string first;
            Dictionary<string, string> h;
            if (!Parse(head, out first, out h)) return "malformed answer head";
            string[] parts = first.Split(' ');
            if (parts.Length < 2 || parts[1] != "101") return "status line '" + first + "' (expected 101)";
            if (!HasToken(h, "upgrade", "websocket")) return "no 'Upgrade: websocket'";
            if (!HasToken(h, "connection", "upgrade")) return "no 'Connection: Upgrade'";
            if (h.ContainsKey("sec-websocket-extensions")) return "the server named an extension nobody offered (WS-HS-5)";
            string accept;
            if (!h.TryGetValue("sec-websocket-accept", out accept) || accept != AcceptFor(key))
                return "Sec-WebSocket-Accept '" + accept + "', expected '" + AcceptFor(key) + "'";
            return null;
        }
    }

    /// <summary>
    /// The websocket echo endpoint of one connection (spec/websocket.md §13), for either role:
    /// a server (the testee's <c>serve</c>, starting after the handshake; the network server, starting
    /// with the opening handshake, WS-HS-1..5) answers unmasked, a client (the Autobahn client)
    /// answers masked with fresh keys. Every complete data message is echoed as one FIN frame with its
    /// opcode (WS-ECHO-1); pings get pongs (WS-PING-1), pongs nothing (WS-PING-2); a close is
    /// answered with its code and closes (WS-CLOSE-5); an error writes the replies before it, the
    /// close frame of WS-ERR-1 and closes (WS-ECHO-2); EOF closes without writing (WS-ECHO-3).
    /// Fragments are collected in a <see cref="NativeBuffer"/> bounded by the message limit.
    /// </summary>
    public sealed class WsEchoSession : ServerSession, IWsFrameHandler
    {
        readonly WsDecoder _decoder;
        readonly bool _client, _sink;
        readonly MaskKeySource _keys;
        byte[] _head;                 // opening handshake still to read (network server), else null
        int _headLen;
        readonly NativeBuffer _msg = new NativeBuffer();   // fragments of the message in progress
        int _msgLen;
        byte _msgOp;
        readonly byte[] _key = new byte[4], _scratch = new byte[2];

        /// <summary>An echo endpoint: <paramref name="client"/> for the client role (masked replies,
        /// unmasked input), the frame and message limits (0: the defaults), <paramref name="handshake"/>
        /// to read the opening handshake first (network server), <paramref name="sink"/> to answer only
        /// pings and the close.</summary>
        public WsEchoSession(bool client, long maxFrame, long maxMessage, bool handshake, bool sink)
        {
            _client = client;
            _sink = sink;
            _decoder = new WsDecoder(!client, maxFrame, maxMessage);
            if (client) _keys = new MaskKeySource();
            if (handshake) _head = new byte[WsHandshake.MaxHead];
        }

        /// <summary>When set, complete data messages are collected here instead of echoed (the
        /// Autobahn client's /getCaseCount).</summary>
        public List<byte[]> Collected;

        /// <summary>The handshake is done (or there is none): frames are being read.</summary>
        public bool Open { get { return _head == null; } }

        public override bool Receive(ReadOnlySpan<byte> data)
        {
            if (Closed) return false;
            if (_head != null)
            {
                int room = _head.Length - _headLen;
                int k = Math.Min(room, data.Length);
                data.Slice(0, k).CopyTo(new Span<byte>(_head, _headLen, k));
                int end = WsHandshake.HeadEnd(new ReadOnlySpan<byte>(_head, 0, _headLen + k), _headLen);
                if (end < 0)
                {
                    _headLen += k;
                    if (_headLen == _head.Length)
                    {
                        WriteAscii("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        Close(new ProtocolError("WS-HS-1", 0, "request head longer than " + WsHandshake.MaxHead + " bytes"));
                        return false;
                    }
                    return true;
                }
                int used = end - _headLen;          // bytes of this chunk that belong to the head
                string head = Encoding.GetEncoding("iso-8859-1").GetString(_head, 0, end - 4);
                bool ok;
                string requirement;
                WriteAscii(WsHandshake.Answer(head, out ok, out requirement));
                _head = null;
                if (!ok)
                {
                    Close(new ProtocolError(requirement, 0, "opening handshake refused"));
                    return false;
                }
                data = data.Slice(used);
                if (data.Length == 0) return true;
            }
            if (!_decoder.Feed(data, this) && !Closed) Fail(_decoder.Error);
            return !Closed;
        }

        /// <summary>The opening handshake is still being read (WS-RES-3: it must complete within the
        /// idle timeout).</summary>
        public override bool Opening { get { return _head != null && !Closed; } }

        /// <summary>The request head so far, the frame in progress and the fragments of the message in
        /// progress (WS-RES-1; at least 1 while a message is unfinished).</summary>
        public override long HeldInput
        {
            get
            {
                if (Closed) return 0;
                if (_head != null) return _headLen;
                long held = _decoder.HeldBytes;
                if (_decoder.InMessage) held += Math.Max(1, Math.Max(_msgLen, _msg.Capacity));
                return held;
            }
        }

        public override void EndOfInput()
        {
            if (Closed) return;
            if (_head != null) { Close(default(ProtocolError)); return; }
            Close(_decoder.Finish() ? default(ProtocolError) : _decoder.Error);
        }

        void Fail(ProtocolError e)
        {
            int code = WsOpcodes.CloseCodeFor(e.Requirement);
            if (code != 0)
            {
                BinaryPrimitives.WriteUInt16BigEndian(_scratch, (ushort)code);
                Reply(WsOpcodes.Close, new ReadOnlySpan<byte>(_scratch, 0, 2));
            }
            Close(e);
        }

        public unsafe bool OnFrame(ref WsFrame f)
        {
            Frames++;
            int n = f.Payload.Length;
            PayloadBytes += n;
            byte op = f.Opcode;
            if (f.Fin && (op == WsOpcodes.Text || op == WsOpcodes.Binary) && !_sink && !_client && Collected == null)
            {
                // The echo of an unfragmented message, written inline (what Message and Reply do): on Mono
                // each Span passed on or built costs a few ns.
                _msgOp = op;
                _msgLen = 0;
                int at = ReserveAt(WsEncoder.HeaderLength(n, false) + n);
                fixed (byte* d = OutputBuffer)
                fixed (byte* s = &MemoryMarshal.GetReference(f.Payload))
                    Commit(WsEncoder.Put(d + at, true, op, null, s, n));
                return true;
            }
            switch (op)
            {
                case WsOpcodes.Ping:
                    Reply(WsOpcodes.Pong, f.Payload);
                    return true;
                case WsOpcodes.Pong:
                    return true;
                case WsOpcodes.Close:
                    Reply(WsOpcodes.Close, f.Payload.Length >= 2 ? f.Payload.Slice(0, 2) : ReadOnlySpan<byte>.Empty);
                    Close(default(ProtocolError));
                    return false;
            }
            if (_sink) return true;
            if (f.Opcode != WsOpcodes.Continuation)
            {
                _msgOp = f.Opcode;
                _msgLen = 0;
                if (f.Fin) { Message(_msgOp, f.Payload); return true; }   // unfragmented: straight from the frame
            }
            Append(f.Payload);
            if (f.Fin)
            {
                Message(_msgOp, _msg.Slice(0, _msgLen));
                _msgLen = 0;
                if (_msg.Capacity > 64 * 1024) _msg.Free();
            }
            return true;
        }

        void Message(byte opcode, ReadOnlySpan<byte> payload)
        {
            if (Collected != null) Collected.Add(payload.ToArray());
            else Reply(opcode, payload);
        }

        void Append(ReadOnlySpan<byte> p)
        {
            _msg.Ensure(_msgLen + p.Length);   // the decoder bounds _msgLen + p.Length by the message limit
            p.CopyTo(_msg.Slice(_msgLen, p.Length));
            _msgLen += p.Length;
        }

        unsafe void Reply(byte opcode, ReadOnlySpan<byte> payload)
        {
            int at = ReserveAt(WsEncoder.HeaderLength(payload.Length, _client) + payload.Length);
            if (!_client) { Commit(WsEncoder.Write(true, opcode, null, payload, OutputBuffer, at)); return; }
            _keys.Next(_key);
            fixed (byte* k = _key) Commit(WsEncoder.Write(true, opcode, k, payload, OutputBuffer, at));
        }

        void WriteAscii(string s)
        {
            Span<byte> d = Reserve(s.Length);
            for (int i = 0; i < s.Length; i++) d[i] = (byte)s[i];
            Commit(s.Length);
        }

        public override void Dispose()
        {
            _decoder.Dispose();
            _msg.Dispose();
            if (_keys != null) _keys.Dispose();
            base.Dispose();
        }
    }

    /// <summary>
    /// The load client's websocket side of one connection (reference-impls/README.md, "websocket"):
    /// the opening handshake with a random key (WS-HS-1, the 101 and Sec-WebSocket-Accept checked),
    /// then each message as one FIN frame masked with a fresh key (WS-MASK-3/4), binary or text by
    /// variant; echoes matched FIFO (<see cref="FifoMatcher"/>) with their opcode checked; at the end
    /// a close frame with code 1000, answered by the server's close.
    /// </summary>
    public sealed class WsClientChannel : ClientChannel, IWsFrameHandler, IMatchObserver
    {
        readonly WebSocketCodec _codec;
        readonly IClientObserver _observer;
        readonly FifoMatcher _matcher;
        readonly WsDecoder _decoder;
        readonly MaskKeySource _keys = new MaskKeySource();
        readonly byte[] _key = new byte[4];
        readonly byte _opcode;
        string _handshakeKey;
        bool _peerClosed;
        byte[] _msg;             // a fragmented echo being reassembled (the server sends none)
        int _msgLen;
        byte _msgOp;

        public WsClientChannel(WebSocketCodec codec, IClientObserver observer, long timeoutMs, bool text)
        {
            _codec = codec;
            _observer = observer;
            _opcode = text ? WsOpcodes.Text : WsOpcodes.Binary;
            _matcher = new FifoMatcher(this, timeoutMs);
            _decoder = new WsDecoder(false, long.MaxValue, long.MaxValue);
        }

        public override byte[] OpeningRequest(string host)
        {
            return Encoding.ASCII.GetBytes(WsHandshake.Request(host, "/", out _handshakeKey));
        }

        public override int AcceptOpening(ReadOnlySpan<byte> received, out string error)
        {
            error = null;
            int end = WsHandshake.HeadEnd(received);
            if (end < 0)
            {
                if (received.Length >= WsHandshake.MaxHead) { error = "answer head longer than " + WsHandshake.MaxHead + " bytes"; return -1; }
                return 0;
            }
            string head = Encoding.GetEncoding("iso-8859-1").GetString(received.Slice(0, end - 4).ToArray());
            error = WsHandshake.CheckAnswer(head, _handshakeKey);
            return error == null ? end : -1;
        }

        int Encode(byte opcode, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            _keys.Next(_key);
            int need = WsEncoder.HeaderLength(payload.Length, true) + payload.Length;
            int n = WsEncoder.Write(true, opcode, _key, payload, output.Reserve(need));
            output.Commit(n);
            return n;
        }

        public override bool TryRequest(RequestId id, object state, long nowMs, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            byte seq;
            if (_peerClosed || !_codec.CheckPayload(payload.Length, out err) || !_matcher.TryRequest(id, state, nowMs, out seq)) return false;
            Encode(_opcode, payload, output);
            return true;
        }

        public override bool EncodeUnmatched(ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            if (!_codec.CheckPayload(payload.Length, out err)) return false;
            Encode(_opcode, payload, output);
            return true;
        }

        public override bool Feed(ReadOnlySpan<byte> data) { return _decoder.Feed(data, this) || !_decoder.Failed; }

        public bool OnFrame(ref WsFrame f)
        {
            FramesReceived++;
            switch (f.Opcode)
            {
                case WsOpcodes.Close: _peerClosed = true; return false;
                case WsOpcodes.Ping: case WsOpcodes.Pong: return true;   // the echo server sends neither
            }
            if (f.Opcode != WsOpcodes.Continuation) { _msgOp = f.Opcode; _msgLen = 0; }
            if (f.Fin && f.Opcode != WsOpcodes.Continuation) { _matcher.OnFrame(_msgOp, 0, f.Payload); return true; }
            if (_msg == null || _msgLen + f.Payload.Length > _msg.Length) Array.Resize(ref _msg, Math.Max(4096, (_msgLen + f.Payload.Length) * 2));
            f.Payload.CopyTo(new Span<byte>(_msg, _msgLen, f.Payload.Length));
            _msgLen += f.Payload.Length;
            if (f.Fin) { _matcher.OnFrame(_msgOp, 0, new ReadOnlySpan<byte>(_msg, 0, _msgLen)); _msgLen = 0; }
            return true;
        }

        // IMatchObserver of the FIFO matcher: the opcode is checked here, the payload by the load client.
        public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            if (flag != _opcode) _observer.OnRejectedReply(id, state, "echo has opcode " + flag + ", the request " + _opcode);
            else _observer.OnReply(id, state, flag, sequence, payload);
        }
        public void OnTimeout(RequestId id, object state) { _observer.OnTimeout(id, state); }
        public void OnFailed(RequestId id, object state) { _observer.OnFailed(id, state); }
        public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { _observer.OnUnmatched(flag, sequence, payload); }

        public override bool Finish() { return _decoder.Finish(); }
        public override ProtocolError Error { get { return _decoder.Error; } }
        public override void Expire(long nowMs) { _matcher.Expire(nowMs); }
        public override void FailAll() { _matcher.FailAll(); }
        public override bool Failed { get { return _matcher.Failed; } }
        public override int PendingCount { get { return _matcher.PendingCount; } }

        /// <summary>A close frame with code 1000 (normal closure), masked.</summary>
        public override byte[] ClosingFrame()
        {
            var o = new SendBuffer();
            Encode(WsOpcodes.Close, new byte[] { 0x03, 0xE8 }, o);
            byte[] r = new ReadOnlySpan<byte>(o.Buffer, 0, o.Length).ToArray();
            o.Dispose();
            return r;
        }

        public override bool PeerClosed { get { return _peerClosed; } }

        public override void Dispose()
        {
            _decoder.Dispose();
            _keys.Dispose();
        }
    }

    /// <summary>`websocket` with its configuration: limits.max_payload (one frame), websocket.role and
    /// websocket.max_message. Frames carry a typed header (<see cref="Typed"/>); the byte-level
    /// (flag, sequence) members of <see cref="FrameCodec"/> do not apply and say so.</summary>
    public sealed class WebSocketCodec : FrameCodec, ITypedFrames
    {
        public readonly bool Client;
        public readonly long MaxFrame, MaxMessage;

        public WebSocketCodec(CodecSpec spec) : base(spec)
        {
            var p = spec.Params as WebSocketParams;
            Client = p != null && p.Client;
            MaxFrame = spec.MaxPayload <= 0 ? WsOpcodes.DefaultMaxFrame : spec.MaxPayload;
            MaxMessage = p == null || p.MaxMessage <= 0 ? WsOpcodes.DefaultMaxMessage : p.MaxMessage;
        }

        public override ITypedFrames Typed { get { return this; } }

        /// <summary>The largest message the server accepts (websocket.max_message, WS-RES-1).</summary>
        public override long LargestInput { get { return MaxMessage; } }

        // ---------------------------------------------------------------- byte-level members

        const string NotByteLevel = "websocket frames carry a typed header: use WsDecoder / WsEncoder (FrameCodec.Typed)";

        public override FrameDecoder NewDecoder() { throw new NotSupportedException(NotByteLevel); }

        /// <summary>A data frame with a payload of this length fits the frame limit (WS-LIM-3).</summary>
        public override bool CheckPayload(long payloadLength, out ProtocolError error)
        {
            return WsEncoder.Check(true, 0, WsOpcodes.Binary, true, 4, payloadLength, MaxFrame, out error);
        }

        /// <summary>A masked (client) data frame with this payload.</summary>
        public override int EncodedLength(int payloadLength) { return WsEncoder.HeaderLength(payloadLength, true) + payloadLength; }

        /// <summary>An unmasked FIN frame with opcode <paramref name="flag"/>.</summary>
        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return WsEncoder.Write(true, flag, ReadOnlySpan<byte>.Empty, payload, dest);
        }

        public override IRequestMatcher NewMatcher(IMatchObserver observer, long timeoutMs) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteRequest(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteOneWay(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException(NotByteLevel); }

        // ---------------------------------------------------------------- micro-benchmarks (tools/bench/microbench.md)

        static readonly byte[] SeedKey = { 0x12, 0x34, 0x56, 0x78 };

        /// <summary>One FIN binary frame, masked with the seed's key 12 34 56 78.</summary>
        public override byte[] BenchRequest(long index, ReadOnlySpan<byte> payload)
        {
            var r = new byte[WsEncoder.HeaderLength(payload.Length, true) + payload.Length];
            WsEncoder.Write(true, WsOpcodes.Binary, SeedKey, payload, r);
            return r;
        }

        sealed class BenchWsDecoder : BenchDecoder, IWsFrameHandler
        {
            readonly WsDecoder _d;
            public BenchWsDecoder(long maxFrame, long maxMessage) { _d = new WsDecoder(true, maxFrame, maxMessage); }
            public override bool Feed(ReadOnlySpan<byte> data) { return _d.Feed(data, this); }
            public bool OnFrame(ref WsFrame f)
            {
                // Consume(f.Payload), inlined: Mono does not inline a call that passes a Span on.
                int n = f.Payload.Length;
                Frames++;
                Checksum += n + (n > 0 ? f.Payload[0] : 0);
                return true;
            }
            public override void Dispose() { _d.Dispose(); }
        }

        /// <summary>The server role's decoder (masked frames in, payloads unmasked).</summary>
        public override BenchDecoder NewBenchDecoder() { return new BenchWsDecoder(MaxFrame, MaxMessage); }

        public override int BenchReplyLength(int payloadLength) { return WsEncoder.HeaderLength(payloadLength, false) + payloadLength; }

        /// <summary>The echo: one unmasked FIN binary frame (WsEchoSession's reply path).</summary>
        public override unsafe int WriteBenchReply(long index, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return WsEncoder.Write(true, WsOpcodes.Binary, null, payload, dest, offset);
        }

        /// <summary>mask/1024/1 (WsMask, the decoder's unmasking routine) and utf8/67/1, utf8/71/1 (the
        /// validator of text messages), with the seed's key and texts.</summary>
        public override IDictionary<string, BenchIteration> BenchExtraCases
        {
            get
            {
                var buf = new byte[1024];
                for (int i = 0; i < buf.Length; i++) buf[i] = (byte)i;
                byte[] ascii = Encoding.UTF8.GetBytes("Hello World! This is a test message for UTF-8 validation benchmark.");
                byte[] mixed = Encoding.UTF8.GetBytes("Hello \u4e16\u754c! \u8fd9\u662f\u4e00\u4e2a\u7528\u4e8e UTF-8 \u9a8c\u8bc1\u7684\u6d4b\u8bd5\u6d88\u606f, mixed ok.");
                return new Dictionary<string, BenchIteration>
                {
                    { "mask/" + buf.Length + "/1", () => { WsMask.Apply(buf, buf, SeedKey, 0); return buf[buf.Length - 1]; } },
                    { "utf8/" + ascii.Length + "/1", () => Utf8Validator.IsValid(ascii) ? 1 : 0 },
                    { "utf8/" + mixed.Length + "/1", () => Utf8Validator.IsValid(mixed) ? 1 : 0 },
                };
            }
        }
        public override int MaxInFlight { get { return FifoMatcher.DefaultPendingBound; } }

        // ---------------------------------------------------------------- load client

        /// <summary>binary (default): the load payloads as they are; text: the lowercase hex of them.</summary>
        public override string[] LoadVariants { get { return new[] { "binary", "text" }; } }

        public override ClientChannel NewClientChannel(IClientObserver observer, long timeoutMs, int variant)
        {
            return new WsClientChannel(this, observer, timeoutMs, variant == 1);
        }

        [ThreadStatic] static byte[] _binary;

        /// <summary>text: the first <c>dst.Length</c> characters of the lowercase hex of the binary
        /// payload of that index (valid UTF-8, unique per index).</summary>
        public override void FillLoadPayload(int variant, long index, Span<byte> dst)
        {
            if (variant != 1) { base.FillLoadPayload(variant, index, dst); return; }
            if (_binary == null || _binary.Length < dst.Length) _binary = new byte[Math.Max(64, dst.Length)];
            Span<byte> b = new Span<byte>(_binary, 0, dst.Length);
            Payloads.Fill(index, b);
            for (int i = 0; i < dst.Length; i++)
            {
                int v = (b[i >> 1] >> ((i & 1) == 0 ? 4 : 0)) & 15;
                dst[i] = (byte)(v < 10 ? '0' + v : 'a' + v - 10);
            }
        }

        public override bool VerifyLoadPayload(int variant, long index, int length, ReadOnlySpan<byte> payload)
        {
            if (variant != 1) return base.VerifyLoadPayload(variant, index, length, payload);
            if (payload.Length != length) return false;
            var expect = new byte[length];
            FillLoadPayload(variant, index, expect);
            return payload.SequenceEqual(expect);
        }

        // ---------------------------------------------------------------- server

        /// <summary>The network server's session: opening handshake, then the echo service (server role).</summary>
        public override ServerSession NewSession(bool sink) { return new WsEchoSession(false, MaxFrame, MaxMessage, true, sink); }

        /// <summary>serve: the echo endpoint ("" or "echo"), server role, after the handshake.</summary>
        public override ServerSession NewSession(string endpoint, bool sink)
        {
            return endpoint == "" || endpoint == "echo" ? new WsEchoSession(false, MaxFrame, MaxMessage, false, sink) : null;
        }

        // ---------------------------------------------------------------- typed frames (testee)

        sealed class Collector : IWsFrameHandler
        {
            public readonly List<FrameValue> Frames = new List<FrameValue>();
            public bool OnFrame(ref WsFrame f) { Frames.Add(f.ToValue()); return true; }
        }

        /// <summary>decode: receives as the codec's role.</summary>
        public DecodeOutcome Decode(IList<byte[]> chunks)
        {
            var r = new DecodeOutcome();
            var c = new Collector();
            using (var d = new WsDecoder(!Client, MaxFrame, MaxMessage))
            {
                bool ok = true;
                foreach (byte[] ch in chunks) if (!d.Feed(ch, c)) { ok = false; break; }
                if (ok) ok = d.Finish();
                if (!ok) r.Error = d.Error;
            }
            r.Frames.AddRange(c.Frames);
            return r;
        }

        /// <summary>encode: the frame exactly as given, its MASK bit and key included.</summary>
        public EncodeOutcome Encode(FrameValue frame)
        {
            var r = new EncodeOutcome();
            WebSocketHeader h = frame.Header as WebSocketHeader ?? new WebSocketHeader();
            byte[] p = frame.Payload ?? new byte[0];
            byte[] key = h.MaskKey ?? new byte[0];
            ProtocolError err;
            if (!WsEncoder.Check(h.Fin, h.Rsv, h.Opcode, h.Masked, key.Length, p.Length, MaxFrame, out err)) { r.Error = err; return r; }
            var bytes = new byte[WsEncoder.HeaderLength(p.Length, h.Masked) + p.Length];
            WsEncoder.Write(h.Fin, (byte)h.Opcode, key, p, bytes);
            r.Encoded = bytes;
            return r;
        }

        public MatchOutcome Match(long timeoutMs, IList<MatchStep> steps)
        {
            return new MatchOutcome { Skipped = "websocket has no client-side request matching (spec/websocket.md §1)" };
        }
    }

    /// <summary>Registry entry of `websocket` (spec/websocket.md): parameters under
    /// "websocket": {"role": "server"|"client", "max_message": N}; the frame limit is limits.max_payload.</summary>
    public sealed class WebSocketProtocol : ProtocolModule
    {
        public static readonly WebSocketProtocol Module = new WebSocketProtocol();

        public override string Name { get { return "websocket"; } }

        public override string ParamsKey { get { return "websocket"; } }

        public override object ParseParams(JsonValue value)
        {
            var members = value.AsObject("\"websocket\"");
            CodecJson.CheckKeys(members, "websocket", "role", "max_message");
            JsonValue v;
            var p = new WebSocketParams();
            if (CodecJson.TryGet(members, "role", out v))
            {
                string role = v.AsString("websocket.role");
                if (role != "server" && role != "client") throw new FormatException("websocket.role must be \"server\" or \"client\", got \"" + role + "\"");
                p.Client = role == "client";
            }
            if (CodecJson.TryGet(members, "max_message", out v)) p.MaxMessage = v.AsInteger("websocket.max_message", 0, long.MaxValue);
            return p;
        }

        public override FrameCodec Create(CodecSpec spec) { return new WebSocketCodec(spec); }
    }
}
