using System;
using System.Buffers;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>Result of parsing a frame header (after any ignored prefix bytes).</summary>
    public enum HeaderStatus { NeedMore, Complete, Error }

    /// <summary>What <see cref="FrameDecoder.ParseHeader"/> read from a header: its length and the
    /// frame's payload length, flag and sequence (Complete), or the requirement it breaks and why (Error).</summary>
    public struct FrameHeader
    {
        public int HeaderLength;
        public int PayloadLength;
        public byte Flag;
        public byte Sequence;
        public string Requirement;
        public string Message;
    }

    /// <summary>
    /// Streaming frame decoder of the protocols whose frames are (flag, sequence, payload) behind a
    /// header that declares the payload length. Feed it the byte stream split any way (*-STR-1); it
    /// delivers every complete frame (*-STR-2), stops at the first error (*-STR-4) and reports
    /// truncation at end of stream (*-STR-3). A subclass supplies its protocol's header:
    /// <see cref="ParseHeader"/> decides every header, and <see cref="WholeFrames"/>, optional, is the
    /// hot path over pointers for the frames that lie whole in a chunk.
    ///
    /// Frames that lie wholly inside one fed chunk are delivered straight from the caller's span
    /// (no copy). A frame split across chunks is accumulated in a buffer rented from
    /// <see cref="ArrayPool{T}.Shared"/> that grows with the bytes actually received, never beyond the
    /// declared payload, which the header check has already bounded by the maximum payload
    /// (*-LIM-3). Not thread-safe: one decoder per connection.
    /// </summary>
    public abstract class FrameDecoder : IDisposable
    {
        /// <summary>The longest header (after the ignored prefix) a subclass may parse: the bytes of a
        /// header split across chunks are gathered in a buffer of this size.</summary>
        protected const int MaxHeaderLength = 8;

        readonly long _skip;               // ignored header bytes before the parsed header (a prefix)
        readonly byte[] _hdr = new byte[MaxHeaderLength]; // partial header accumulation (slow path)
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
        /// Must return NeedMore only while h is too short; on Error fill the header's Requirement and
        /// Message.</summary>
        protected abstract HeaderStatus ParseHeader(ReadOnlySpan<byte> h, out FrameHeader header);

        /// <summary>The common end of <see cref="ParseHeader"/>: the declared payload length against the
        /// limit, decided at header time (*-LIM-1, before any payload byte is buffered).</summary>
        protected static HeaderStatus Declared(long length, long limit, string limitRequirement, ref FrameHeader header)
        {
            if (length > limit)
            {
                header.Requirement = limitRequirement;
                header.Message = "declared payload " + length + " exceeds the maximum " + limit;
                return HeaderStatus.Error;
            }
            header.PayloadLength = (int)length;
            return HeaderStatus.Complete;
        }

        /// <summary>
        /// The protocol's hot path, over the pinned bytes [<paramref name="p"/>, <paramref name="end"/>)
        /// where <paramref name="p"/> is the first byte of a frame (its ignored prefix included): delivers
        /// the frames that lie whole and back to back from there, each to <paramref name="handler"/>, and
        /// stops at the first one it does not take (not whole in the chunk, or a header it leaves to
        /// <see cref="ParseHeader"/>: an unusual form, an error, a length above the limit), or once
        /// <see cref="Failed"/>. Returns where it stopped, with the number of frames delivered. What it
        /// delivers must be exactly what <see cref="ParseHeader"/> would give; it decides no error.
        /// Default: it takes none (every header goes to <see cref="ParseHeader"/>).
        /// </summary>
        /// <remarks>Pointers, because on Mono every Span slice and index is a call and a check, which
        /// cost more than the decoding itself for small frames; a loop of its own per protocol, because
        /// a call per frame would cost about as much.</remarks>
        protected virtual unsafe byte* WholeFrames(byte* p, byte* end, IFrameHandler handler, out int frames)
        {
            frames = 0;
            return p;
        }

        public bool Failed { get { return _failed; } }
        public ProtocolError Error { get { return _error; } }
        /// <summary>Total stream bytes consumed.</summary>
        public long Position { get { return _pos; } }
        /// <summary>Bytes currently buffered for a partial frame.</summary>
        public int BufferedBytes { get { return _hdrCount + _bufCount; } }

        /// <summary>Memory held for the frame in progress (*-RES-1): its bytes so far (the header
        /// counted as <see cref="MaxHeaderLength"/> bytes once complete) or the buffer allocated for it,
        /// if more; at least 1 while a frame is unfinished (ignored prefix bytes included), 0 between
        /// frames and after an error.</summary>
        public long HeldBytes
        {
            get
            {
                if (_failed || _pos == _frameStart) return 0;
                long held = _inPayload ? MaxHeaderLength + _bufCount : _hdrCount;
                if (_inPayload && _buf != null && _buf.Length > held) held = _buf.Length;
                return Math.Max(held, 1);
            }
        }
        public long FramesDelivered;

        /// <summary>Feeds one chunk. Returns false once the decoder has failed (now or before).</summary>
        public unsafe bool Feed(ReadOnlySpan<byte> data, IFrameHandler handler)
        {
            if (_failed) return false;
            int length = data.Length;
            if (length == 0) return true;
            fixed (byte* start = &MemoryMarshal.GetReference(data))
            {
                byte* p = start, end = start + length;
                // The hot path first, from here rather than from FeedAny: Mono's JIT spills a big
                // method's locals, which costs a chunk of whole frames more than decoding them.
                if (!_inPayload && _hdrCount == 0 && _skipped == 0)
                {
                    p = TakeWholeFrames(p, end, handler);
                    if (p == end || _failed) return !_failed;
                }
                return FeedAny(p, end, handler, false);
            }
        }

        /// <summary><see cref="WholeFrames"/> from <paramref name="p"/>, the first byte of a frame, with
        /// the frames it delivered and the bytes it took counted; returns where it stopped.</summary>
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        unsafe byte* TakeWholeFrames(byte* p, byte* end, IFrameHandler handler)
        {
            int frames;
            byte* q = WholeFrames(p, end, handler, out frames);
            if (q != p)
            {
                FramesDelivered += frames;
                _pos += q - p;
                _frameStart = _pos;
            }
            return q;
        }

        /// <summary>The general decoding loop over the pinned bytes [p, end); <paramref name="atFrameStart"/>:
        /// p is the first byte of a frame not yet offered to the hot path (<see cref="WholeFrames"/>).</summary>
        unsafe bool FeedAny(byte* p, byte* end, IFrameHandler handler, bool atFrameStart)
        {
            while (!_failed && p < end)
            {
                if (atFrameStart)
                {
                    atFrameStart = false;
                    byte* q = TakeWholeFrames(p, end, handler);
                    if (q != p)
                    {
                        p = q;
                        continue;
                    }
                }

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
                        atFrameStart = true;
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

                FrameHeader fh;
                HeaderStatus st;
                if (_hdrCount == 0)
                {
                    // The header starts in this chunk: decided on the bytes there (often the whole frame).
                    st = ParseHeader(new ReadOnlySpan<byte>(p, (int)(end - p)), out fh);
                    if (st == HeaderStatus.Complete)
                    {
                        p += fh.HeaderLength;
                        _pos += fh.HeaderLength;
                        int pl = fh.PayloadLength;
                        if (end - p >= pl)
                        {
                            FramesDelivered++;
                            handler.OnFrame(fh.Flag, fh.Sequence, new ReadOnlySpan<byte>(p, pl));
                            p += pl;
                            _pos += pl;
                            StartFrame();
                            atFrameStart = true;
                        }
                        else
                        {
                            BeginPayload(fh.Flag, fh.Sequence, pl);
                        }
                        continue;
                    }
                    if (st == HeaderStatus.Error)
                    {
                        Fail(fh.Requirement, fh.Message);
                        return false;
                    }
                }
                // Slow path: the header is split across chunks; take one byte at a time (at most
                // MaxHeaderLength bytes).
                _hdr[_hdrCount++] = *p++;
                _pos++;
                st = ParseHeader(new ReadOnlySpan<byte>(_hdr, 0, _hdrCount), out fh);
                if (st == HeaderStatus.Error)
                {
                    Fail(fh.Requirement, fh.Message);
                    return false;
                }
                if (st == HeaderStatus.Complete)
                {
                    _hdrCount = 0;
                    if (fh.PayloadLength == 0)
                    {
                        FramesDelivered++;
                        handler.OnFrame(fh.Flag, fh.Sequence, ReadOnlySpan<byte>.Empty);
                        StartFrame();
                        atFrameStart = true;
                    }
                    else
                    {
                        BeginPayload(fh.Flag, fh.Sequence, fh.PayloadLength);
                    }
                }
                else if (_hdrCount == _hdr.Length)
                {
                    Fail(TruncatedRequirement, "internal: header parser wants more than " + MaxHeaderLength + " bytes");
                    return false;
                }
            }
            return !_failed;
        }

        /// <summary>Signals end of stream. Returns false if the stream was rejected (now or before):
        /// a stream that ends inside a frame is truncated (*-STR-3, <see cref="TruncatedRequirement"/>).</summary>
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
