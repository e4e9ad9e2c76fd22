using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
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
        bool _inMessage, _text, _msgCompressed;
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

        /// <summary>permessage-deflate was agreed (spec/websocket-deflate.md): RSV1 marks the first frame
        /// of a compressed message (WSD-FRM-1), whose UTF-8 and size the receiver checks on the inflated
        /// bytes (WSD-CMP-4, WSD-LIM-1); RSV1 on a continuation or control frame is WSD-FRM-2.</summary>
        public bool AllowRsv1;

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
            bool rsv1 = false;
            if (_rsv != 0)
            {
                if (_rsv != 4 || !AllowRsv1) return Fail("WS-HDR-2", "RSV bits " + _rsv + " set without an extension");
                if (WsOpcodes.IsKnown(_op) && _op != WsOpcodes.Text && _op != WsOpcodes.Binary)
                    return Fail("WSD-FRM-2", "RSV1 on a " + (control ? "control" : "continuation") + " frame");
                rsv1 = true;
            }
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
            // a compressed message's limit is on its inflated size (WSD-LIM-1); its payload may exceed
            // that by DEFLATE's stored-block overhead (saturating: a limit of long.MaxValue stays that)
            bool compressed = _op == WsOpcodes.Continuation ? _msgCompressed : rsv1;
            long slack = (_maxMessage >> 10) + 1024;
            long maxMessage = !compressed ? _maxMessage : _maxMessage > long.MaxValue - slack ? long.MaxValue : _maxMessage + slack;
            if (!control && (_op == WsOpcodes.Continuation ? _size : 0) + (long)n > maxMessage)
                return Fail("WS-LIM-2", "message would exceed the maximum " + _maxMessage);
            if ((long)n > WsOpcodes.ArrayLimit || (!control && (_op == WsOpcodes.Continuation ? _size : 0) + (long)n > WsOpcodes.ArrayLimit))
                return Fail("WS-LIM-1", "frame or message above this implementation's 2 GiB bound");
            _n = (long)n;
            if (_op == WsOpcodes.Text || _op == WsOpcodes.Binary) _utf8.Reset();
            _checkUtf8 = !compressed && (_op == WsOpcodes.Text || (_op == WsOpcodes.Continuation && _text));
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
                _msgCompressed = _rsv == 4;
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
}
