using System;
using System.Buffers;

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

        /// <summary>Feeds one chunk. Returns false once the decoder has failed (now or before).</summary>
        public bool Feed(ReadOnlySpan<byte> data, IFrameHandler handler)
        {
            while (!_failed && data.Length > 0)
            {
                if (_inPayload)
                {
                    int n = Math.Min(_need - _bufCount, data.Length);
                    EnsureCapacity(_bufCount + n);
                    data.Slice(0, n).CopyTo(new Span<byte>(_buf, _bufCount, n));
                    _bufCount += n;
                    data = data.Slice(n);
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
                    long n = Math.Min(_skip - _skipped, (long)data.Length);
                    _skipped += n;
                    _pos += n;
                    data = data.Slice((int)n);
                    continue;
                }

                int hl, pl; byte flag, seq; string req, msg;
                HeaderStatus st;
                if (_hdrCount == 0)
                {
                    // Fast path: header (and often the whole frame) inside this chunk.
                    st = ParseHeader(data, out hl, out pl, out flag, out seq, out req, out msg);
                    if (st == HeaderStatus.Complete)
                    {
                        data = data.Slice(hl);
                        _pos += hl;
                        if (data.Length >= pl)
                        {
                            FramesDelivered++;
                            handler.OnFrame(flag, seq, data.Slice(0, pl));
                            data = data.Slice(pl);
                            _pos += pl;
                            StartFrame();
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
                _hdr[_hdrCount++] = data[0];
                data = data.Slice(1);
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
