using System;
using System.Buffers;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>Result of parsing a frame header (after any ignored prefix bytes).</summary>
    public enum HeaderStatus { NeedMore, Complete, Error }

    /// <summary>
    /// Streaming frame decoder shared by both protocols. Feed it the byte stream split any way
    /// (STD-STR-1, LF-STR-1); it delivers every complete frame (STD-STR-2, LF-STR-2), stops at the
    /// first error (STD-STR-4, LF-STR-4) and reports truncation at end of stream (STD-STR-3, LF-STR-3).
    ///
    /// Frames that lie wholly inside one fed chunk are delivered straight from the caller's span
    /// (no copy). A frame split across chunks is accumulated in a buffer rented from
    /// <see cref="ArrayPool{T}.Shared"/> that grows with the bytes actually received, never beyond the
    /// declared payload, which the header check has already bounded by the maximum payload
    /// (STD-LIM-3, LF-LIM-3). Not thread-safe: one decoder per connection.
    /// </summary>
    public abstract class FrameDecoder : IDisposable
    {

        readonly long _skip;               // ignored header bytes before the parsed header (LF offset)
        readonly byte[] _hdr = new byte[8]; // partial header accumulation (slow path)
        int _hdrCount;
        long _skipped;                     // prefix bytes of the current frame consumed so far

        byte[] _buf;                       // pooled payload accumulation
        int _bufCount;
        int _need;                         // declared payload length of the frame being accumulated
        byte _flag, _seq;
        bool _inPayload;

        long _pos;                         // stream offset of the next byte to consume
        long _frameStart;                  // stream offset where the current frame starts
        ProtocolError _error;
        bool _failed;

        protected readonly long MaxPayload;

        protected FrameDecoder(long maxPayload, long ignoredPrefix)
        {
            MaxPayload = Limits.Effective(maxPayload);
            _skip = ignoredPrefix;
        }

        /// <summary>Requirement ID reported when the stream ends inside a frame.</summary>
        protected abstract string TruncatedRequirement { get; }

        /// <summary>Parses a header from <paramref name="h"/>, which starts right after the ignored prefix.
        /// Must return NeedMore only while h is too short; on Error fill requirement/message.</summary>
        protected abstract HeaderStatus ParseHeader(ReadOnlySpan<byte> h, out int headerLength, out int payloadLength,
            out byte flag, out byte sequence, out string requirement, out string message);

        /// <summary>The common end of <see cref="ParseHeader"/>: the declared payload length against the
        /// limit, decided at header time (STD-LIM-1 / LF-LIM-1, before any payload byte is buffered).</summary>
        protected static HeaderStatus Declared(long length, long limit, string limitRequirement, out int payloadLength,
            out string requirement, out string message)
        {
            payloadLength = 0; requirement = null; message = null;
            if (length > limit)
            {
                requirement = limitRequirement;
                message = "declared payload " + length + " exceeds the maximum " + limit;
                return HeaderStatus.Error;
            }
            payloadLength = (int)length;
            return HeaderStatus.Complete;
        }

        public bool Failed { get { return _failed; } }
        public ProtocolError Error { get { return _error; } }
        /// <summary>Total stream bytes consumed.</summary>
        public long Position { get { return _pos; } }
        /// <summary>Bytes currently buffered for a partial frame.</summary>
        public int BufferedBytes { get { return _hdrCount + _bufCount; } }

        /// <summary>Memory held for the frame in progress (*-RES-1): its bytes so far (the header
        /// counted as 8 bytes once complete) or the buffer allocated for it, if more; at least 1 while
        /// a frame is unfinished (ignored prefix bytes included), 0 between frames and after an error.</summary>
        public long HeldBytes
        {
            get
            {
                if (_failed || _pos == _frameStart) return 0;
                long held = _inPayload ? 8 + _bufCount : _hdrCount;
                if (_inPayload && _buf != null && _buf.Length > held) held = _buf.Length;
                return Math.Max(held, 1);
            }
        }
        public long FramesDelivered;

        /// <summary>Header forms the hot path of <see cref="Feed"/> parses inline, without calling
        /// <see cref="ParseHeader"/>: `standard` (STD-LEN-1/2) and the fixed-size length fields (LF-LEN-1/3).</summary>
        protected enum HeaderForm : byte { None, Standard, U8, U16LE, U16BE, U32LE, U32BE }

        HeaderForm _form;
        long _formLimit;

        /// <summary>Declares the header form for the inline parse of the hot path: a header of this form
        /// whose length is at most <paramref name="limit"/> (and, for `standard`, whose extended length is
        /// canonical with bit 31 clear) is accepted there with the result ParseHeader would give; any other
        /// header (or a short one) goes to ParseHeader, which decides. Must agree with ParseHeader.</summary>
        protected void UseInlineHeader(HeaderForm form, long limit)
        {
            _form = form;
            _formLimit = limit;
        }

        /// <summary>The header of <see cref="_form"/> at <paramref name="p"/>: its length, or -1 if it is
        /// not whole in <paramref name="available"/> bytes or not of the accepted shape (the caller still
        /// checks the length against <see cref="_formLimit"/>).</summary>
        unsafe int InlineHeader(byte* p, int available, out uint len, out byte flag, out byte seq)
        {
            flag = 0; seq = 0; len = 0;
            switch (_form)
            {
                case HeaderForm.Standard:
                    if (available < 4) return -1;
                    flag = p[0];
                    seq = p[1];
                    len = (uint)(p[2] | p[3] << 8);
                    if (len != 0xFFFF) return 4;
                    if (available < 8) return -1;
                    len = (uint)(p[4] | p[5] << 8 | p[6] << 16 | p[7] << 24);
                    return len >= 0xFFFF && len < 0x80000000u ? 8 : -1;   // else STD-LEN-3/4
                case HeaderForm.U16LE:
                    if (available < 2) return -1;
                    len = (uint)(p[0] | p[1] << 8);
                    return 2;
                case HeaderForm.U8:
                    len = p[0];
                    return 1;
                case HeaderForm.U16BE:
                    if (available < 2) return -1;
                    len = (uint)(p[0] << 8 | p[1]);
                    return 2;
                case HeaderForm.U32LE:
                    if (available < 4) return -1;
                    len = (uint)(p[0] | p[1] << 8 | p[2] << 16 | p[3] << 24);
                    return 4;
                case HeaderForm.U32BE:
                    if (available < 4) return -1;
                    len = (uint)(p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]);
                    return 4;
                default:
                    return -1;
            }
        }

        /// <summary>Feeds one chunk. Returns false once the decoder has failed (now or before).</summary>
        public unsafe bool Feed(ReadOnlySpan<byte> data, IFrameHandler handler)
        {
            if (_failed) return false;
            int length = data.Length;
            if (length == 0) return true;
            // Pointers over the pinned chunk: on Mono every Span slice and index is a call and a check,
            // which cost more than the decoding itself for small frames.
            fixed (byte* start = &MemoryMarshal.GetReference(data))
            {
                byte* p = start, end = start + length;
                // Hot path, kept small (Mono's JIT spills a big method's locals): whole frames back to
                // back at a frame boundary, headers of the inline form. Anything else, FeedAny.
                while (!_inPayload && _hdrCount == 0 && _skip == 0)
                {
                    int avail = (int)(end - p);
                    uint len; byte flag, seq;
                    int hl;
                    if (_form == HeaderForm.Standard && avail >= 4 && (len = (uint)(p[2] | p[3] << 8)) != 0xFFFF)
                    {
                        hl = 4; flag = p[0]; seq = p[1];
                    }
                    else if (_form == HeaderForm.U16LE && avail >= 2)
                    {
                        hl = 2; flag = 0; seq = 0; len = (uint)(p[0] | p[1] << 8);
                    }
                    else hl = InlineHeader(p, avail, out len, out flag, out seq);
                    if (hl <= 0 || len > _formLimit || avail - hl < len) break;
                    p += hl;
                    FramesDelivered++;
                    handler.OnFrame(flag, seq, new ReadOnlySpan<byte>(p, (int)len));
                    p += len;
                    _pos += hl + len;
                    _frameStart = _pos;
                    if (p == end) return !_failed;
                    if (_failed) return false;
                }
                return FeedAny(p, end, handler);
            }
        }

        /// <summary>The general decoding loop over the pinned bytes [p, end).</summary>
        unsafe bool FeedAny(byte* p, byte* end, IFrameHandler handler)
        {
            while (!_failed && p < end)
            {
                if (_inPayload)
                {
                    int n = (int)Math.Min(_need - _bufCount, end - p);
                    EnsureCapacity(_bufCount + n);
                    fixed (byte* b = _buf) ByteBuffers.Copy(b + _bufCount, p, n);
                    _bufCount += n;
                    p += n;
                    _pos += n;
                    if (_bufCount == _need)
                    {
                        _inPayload = false;
                        FramesDelivered++;
                        handler.OnFrame(_flag, _seq, new ReadOnlySpan<byte>(_buf, 0, _need));
                        ReleaseBuffer();
                        _bufCount = 0;
                        StartFrame();
                    }
                    continue;
                }

                if (_skipped < _skip)
                {
                    long n = Math.Min(_skip - _skipped, end - p);
                    _skipped += n;
                    _pos += n;
                    p += n;
                    continue;
                }

                int hl, pl; byte flag, seq; string req, msg;
                HeaderStatus st;
                if (_hdrCount == 0)
                {
                    // Fast path: header (and often the whole frame) inside this chunk.
                    int avail = (int)(end - p);
                    uint len;
                    hl = InlineHeader(p, avail, out len, out flag, out seq);
                    pl = 0;
                    if (hl > 0 && len <= _formLimit)
                    {
                        pl = (int)len;
                        st = HeaderStatus.Complete; req = null; msg = null;
                    }
                    else st = ParseHeader(new ReadOnlySpan<byte>(p, avail), out hl, out pl, out flag, out seq, out req, out msg);
                    if (st == HeaderStatus.Complete)
                    {
                        p += hl;
                        _pos += hl;
                        if (end - p >= pl)
                        {
                            FramesDelivered++;
                            handler.OnFrame(flag, seq, new ReadOnlySpan<byte>(p, pl));
                            p += pl;
                            _pos += pl;
                            _frameStart = _pos;   // StartFrame(), with _skipped already 0 or set below
                            _skipped = 0;
                        }
                        else
                        {
                            BeginPayload(flag, seq, pl);
                        }
                        continue;
                    }
                    if (st == HeaderStatus.Error)
                    {
                        Fail(req, msg);
                        return false;
                    }
                }
                // Slow path: the header is split across chunks; take one byte at a time (≤ 8 bytes).
                _hdr[_hdrCount++] = *p++;
                _pos++;
                st = ParseHeader(new ReadOnlySpan<byte>(_hdr, 0, _hdrCount), out hl, out pl, out flag, out seq, out req, out msg);
                if (st == HeaderStatus.Error)
                {
                    Fail(req, msg);
                    return false;
                }
                if (st == HeaderStatus.Complete)
                {
                    _hdrCount = 0;
                    if (pl == 0)
                    {
                        FramesDelivered++;
                        handler.OnFrame(flag, seq, ReadOnlySpan<byte>.Empty);
                        StartFrame();
                    }
                    else
                    {
                        BeginPayload(flag, seq, pl);
                    }
                }
                else if (_hdrCount == _hdr.Length)
                {
                    Fail(TruncatedRequirement, "internal: header parser wants more than 8 bytes");
                    return false;
                }
            }
            return !_failed;
        }

        /// <summary>Signals end of stream. Returns false if the stream was rejected (now or before):
        /// a stream that ends inside a frame is truncated (STD-STR-3 / LF-STR-3).</summary>
        public bool Finish()
        {
            if (_failed) return false;
            if (_pos > _frameStart)
            {
                Fail(TruncatedRequirement, "stream ended inside a frame (" + (_pos - _frameStart) + " bytes of it received)");
                return false;
            }
            DropBuffer();
            return true;
        }

        /// <summary>Forget everything (the decoder can be reused for a new stream).</summary>
        public void Reset()
        {
            DropBuffer();
            _bufCount = 0; _need = 0; _inPayload = false; _hdrCount = 0; _skipped = 0;
            _pos = 0; _frameStart = 0; _failed = false; _error = default(ProtocolError);
            FramesDelivered = 0;
        }

        public void Dispose()
        {
            DropBuffer();
        }

        void StartFrame()
        {
            _frameStart = _pos;
            _skipped = 0;
        }

        void BeginPayload(byte flag, byte seq, int length)
        {
            _flag = flag;
            _seq = seq;
            _need = length;
            _bufCount = 0;
            _inPayload = true;
        }

        void EnsureCapacity(int size) { _buf = ByteBuffers.Grow(_buf, _bufCount, size, _need); }

        /// <summary>Keeps a small buffer for the next split frame; gives big ones back to the pool.</summary>
        void ReleaseBuffer()
        {
            if (_buf != null && _buf.Length > 64 * 1024) DropBuffer();
        }

        void DropBuffer()
        {
            if (_buf != null)
            {
                ByteBuffers.Return(_buf);
                _buf = null;
            }
        }

        void Fail(string requirement, string message)
        {
            _failed = true;
            _error = new ProtocolError(requirement, _frameStart, message);
            _inPayload = false;
            _bufCount = 0;
            _hdrCount = 0;
            DropBuffer();
        }
    }
}
