using System;
using System.Buffers.Binary;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>Flag-byte helpers for the `standard` protocol (STD-HDR-2..4).</summary>
    public static class StandardFlags
    {
        public const byte Reply = 0x80;
        public const byte ErrorOrOneWay = 0x40;
        public const byte KindMask = 0x3F;
        public const byte Request = 0x01;   // packet kind, the default
        public const byte OneWay = 0x41;

        public static bool IsReply(byte flag) { return (flag & Reply) != 0; }
        public static bool IsRequest(byte flag) { return (flag & (Reply | ErrorOrOneWay)) == 0; }
        public static byte ReplyFor(byte requestFlag) { return (byte)(Reply | (requestFlag & KindMask)); }
    }

    /// <summary>Streaming decoder for `standard` frames (spec/standard.md).</summary>
    public sealed class StandardDecoder : FrameDecoder
    {
        public StandardDecoder(long maxPayload = 0) : base(maxPayload, 0) { }

        protected override string TruncatedRequirement { get { return "STD-STR-3"; } }

        /// <summary>The hot path: flag, sequence, u16 LE length (STD-LEN-1) or 0xFFFF and a canonical
        /// u32 LE length with bit 31 clear (STD-LEN-2), within the limit, payload in the chunk. Any
        /// other header (STD-LEN-3/4, STD-LIM-1) is left to <see cref="ParseHeader"/>.</summary>
        protected override unsafe byte* WholeFrames(byte* p, byte* end, IFrameHandler handler, out int frames)
        {
            int n = 0;
            long limit = MaxPayload;
            while (true)
            {
                long avail = end - p;
                if (avail < 4) break;
                uint len = (uint)(p[2] | p[3] << 8);
                int hl = 4;
                if (len == 0xFFFF)
                {
                    if (avail < 8) break;
                    len = (uint)(p[4] | p[5] << 8 | p[6] << 16 | p[7] << 24);
                    if (len < 0xFFFF || len >= 0x80000000u) break;
                    hl = 8;
                }
                if (len > limit || avail - hl < len) break;
                byte flag = p[0], seq = p[1];
                p += hl;
                n++;
                handler.OnFrame(flag, seq, new ReadOnlySpan<byte>(p, (int)len));
                p += len;
                if (Failed) break;
            }
            frames = n;
            return p;
        }

        protected override HeaderStatus ParseHeader(ReadOnlySpan<byte> h, out FrameHeader header)
        {
            header = default(FrameHeader);
            if (h.Length < 4) return HeaderStatus.NeedMore;
            header.Flag = h[0];
            header.Sequence = h[1];
            long len = BinaryPrimitives.ReadUInt16LittleEndian(h.Slice(2));
            if (len != 0xFFFF)
            {
                header.HeaderLength = 4;
            }
            else
            {
                // STD-LEN-2: extended form. Error classification: LEN-3/LEN-4 before LIM-1, so the
                // whole 8-byte header is read before anything is decided.
                if (h.Length < 8) return HeaderStatus.NeedMore;
                len = BinaryPrimitives.ReadUInt32LittleEndian(h.Slice(4));
                header.HeaderLength = 8;
                if (len >= 0x80000000L)
                {
                    header.Requirement = "STD-LEN-4";
                    header.Message = "extended length " + len + " has bit 31 set";
                    return HeaderStatus.Error;
                }
                if (len < 0xFFFF)
                {
                    header.Requirement = "STD-LEN-3";
                    header.Message = "non-canonical extended length " + len + " (below 65535)";
                    return HeaderStatus.Error;
                }
            }
            return Declared(len, MaxPayload, "STD-LIM-1", ref header);
        }
    }

    /// <summary>Encoder for `standard` frames. Flag and sequence are written verbatim (STD-HDR-3/4).</summary>
    public static class StandardEncoder
    {
        /// <summary>Bytes needed to encode a payload of this length (STD-LEN-1/2).</summary>
        public static int EncodedLength(int payloadLength)
        {
            return (payloadLength < 0xFFFF ? 4 : 8) + payloadLength;
        }

        /// <summary>Checks that a payload may be encoded (STD-LEN-4, STD-LIM-2).</summary>
        public static bool Check(long payloadLength, long maxPayload, out ProtocolError error)
        {
            if (payloadLength >= 0x80000000L)
            {
                error = new ProtocolError("STD-LEN-4", 0, "payload of " + payloadLength + " bytes needs bit 31 of the extended length");
                return false;
            }
            return Limits.CheckPayload(payloadLength, maxPayload, "STD-LIM-2", out error);
        }

        /// <summary>Writes the frame into dest (which must hold EncodedLength bytes, else ArgumentException);
        /// returns bytes written. The caller has checked the payload (see <see cref="Check"/>).</summary>
        public static unsafe int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            // Pointers, not Span slices and BinaryPrimitives: on Mono those cost several times the work.
            int n = payload.Length;
            int hl = n < 0xFFFF ? 4 : 8;
            if (dest.Length - hl < n) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = &MemoryMarshal.GetReference(dest))
            {
                PutHeader(d, flag, sequence, n);
                if (n > 0)
                    fixed (byte* s = &MemoryMarshal.GetReference(payload)) ByteBuffers.Copy(d + hl, s, n);
            }
            return hl + n;
        }

        /// <summary><see cref="Write(byte, byte, ReadOnlySpan{byte}, Span{byte})"/> into
        /// <paramref name="dest"/> at <paramref name="offset"/> (the reply path: a session's output array),
        /// without building a Span for the destination, which costs Mono about as much as the frame.</summary>
        public static unsafe int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            int n = payload.Length;
            int hl = n < 0xFFFF ? 4 : 8;
            if (dest == null) throw new ArgumentNullException("dest");
            if ((uint)offset > (uint)dest.Length) throw new ArgumentOutOfRangeException("offset");
            if (dest.Length - offset - hl < n) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = dest)
            {
                PutHeader(d + offset, flag, sequence, n);
                if (n > 0)
                    fixed (byte* s = &MemoryMarshal.GetReference(payload)) ByteBuffers.Copy(d + offset + hl, s, n);
            }
            return hl + n;
        }

        /// <summary>Writes only the header (4 or 8 bytes); returns its length.</summary>
        public static unsafe int WriteHeader(byte flag, byte sequence, int payloadLength, Span<byte> dest)
        {
            int hl = payloadLength < 0xFFFF ? 4 : 8;
            if (dest.Length < hl) throw new ArgumentException("destination too short for the header", "dest");
            fixed (byte* d = &MemoryMarshal.GetReference(dest)) return PutHeader(d, flag, sequence, payloadLength);
        }

        static unsafe int PutHeader(byte* d, byte flag, byte sequence, int payloadLength)
        {
            d[0] = flag;
            d[1] = sequence;
            if (payloadLength < 0xFFFF)
            {
                d[2] = (byte)payloadLength;
                d[3] = (byte)(payloadLength >> 8);
                return 4;
            }
            d[2] = 0xFF;
            d[3] = 0xFF;
            d[4] = (byte)payloadLength;
            d[5] = (byte)(payloadLength >> 8);
            d[6] = (byte)(payloadLength >> 16);
            d[7] = (byte)(payloadLength >> 24);
            return 8;
        }

        /// <summary>Allocating convenience: checks then encodes; throws <see cref="FrameproofException"/>.</summary>
        public static byte[] Encode(byte flag, byte sequence, ReadOnlySpan<byte> payload, long maxPayload = 0)
        {
            return new StandardCodec(new CodecSpec { Protocol = StandardProtocol.Module.Name, MaxPayload = maxPayload }).Encode(flag, sequence, payload);
        }
    }

    /// <summary>
    /// `standard` matching: a 256-slot table indexed by sequence number (STD-MATCH-1), plus an
    /// intrusive list in send order for timeouts (STD-MATCH-3, oldest first). All arrays are
    /// allocated once; per request there is no allocation.
    /// </summary>
    public sealed class StandardMatcher : IRequestMatcher
    {
        readonly IMatchObserver _observer;
        readonly long _timeoutMs;
        readonly bool[] _pending = new bool[256];
        readonly long[] _ids = new long[256];
        readonly object[] _states = new object[256];
        readonly long[] _deadlines = new long[256];
        readonly short[] _prev = new short[256];
        readonly short[] _next = new short[256];
        short _head = -1, _tail = -1;
        int _count;
        byte _last;            // last sequence number used; the first request carries 1 (STD-SEQ-1)
        bool _failed;

        public StandardMatcher(IMatchObserver observer, long timeoutMs = 0)
        {
            _observer = observer;
            _timeoutMs = timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs;
        }

        public bool Failed { get { return _failed; } }
        public int PendingCount { get { return _count; } }
        public long NextDeadline { get { return _head < 0 ? long.MaxValue : _deadlines[_head]; } }
        /// <summary>Frames with bit 7 clear received (requests from the peer, STD-MATCH-5).</summary>
        public long PeerRequests;

        public bool TryRequest(RequestId id, object state, long nowMs, out byte sequence)
        {
            byte next = unchecked((byte)(_last + 1));
            sequence = next;
            if (_failed || _pending[next]) return false; // STD-SEQ-3: refused, counter not advanced
            _last = next;
            _pending[next] = true;
            _ids[next] = id.Value;
            _states[next] = state;
            _deadlines[next] = nowMs + _timeoutMs;
            _prev[next] = _tail;
            _next[next] = -1;
            if (_tail >= 0) _next[_tail] = next; else _head = next;
            _tail = next;
            _count++;
            return true;
        }

        /// <summary>STD-MATCH-4: a one-way message takes the next number, with no pending check.</summary>
        public bool TryOneWay(out byte sequence)
        {
            sequence = 0;
            if (_failed) return false;
            _last = unchecked((byte)(_last + 1));
            sequence = _last;
            return true;
        }

        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            if (_failed) return;
            if (!StandardFlags.IsReply(flag)) { PeerRequests++; return; } // STD-MATCH-5
            if (_pending[sequence])
            {
                object st = _states[sequence];
                long id = _ids[sequence];
                Remove(sequence);
                _observer.OnReply(new RequestId(id), st, flag, sequence, payload); // incl. error replies (STD-MATCH-6)
            }
            else
            {
                _observer.OnUnmatched(flag, sequence, payload); // STD-MATCH-2
            }
        }

        public void Expire(long nowMs)
        {
            while (_head >= 0 && _deadlines[_head] <= nowMs)
            {
                short s = _head;
                object st = _states[s];
                long id = _ids[s];
                Remove(s);
                _observer.OnTimeout(new RequestId(id), st);
            }
        }

        public void FailAll()
        {
            _failed = true;
            while (_head >= 0)
            {
                short s = _head;
                object st = _states[s];
                long id = _ids[s];
                Remove(s);
                _observer.OnFailed(new RequestId(id), st);
            }
        }

        void Remove(int s)
        {
            _pending[s] = false;
            _states[s] = null;
            short p = _prev[s], n = _next[s];
            if (p >= 0) _next[p] = n; else _head = n;
            if (n >= 0) _prev[n] = p; else _tail = p;
            _count--;
        }
    }

    /// <summary>`standard`'s server session: STD-ECHO-1..5. Requests (bits 7 and 6 clear) are
    /// answered with the same sequence, the reply flag (0x80 | kind) and the same payload; one-way
    /// messages and replies get nothing (STD-ECHO-2).</summary>
    public sealed class StandardEchoSession : FrameEchoSession
    {
        public StandardEchoSession(long maxPayload, bool sink) : base(new StandardDecoder(maxPayload), sink) { }

        protected override void Reply(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            if (!StandardFlags.IsRequest(flag)) return;
            int need = StandardEncoder.EncodedLength(payload.Length);
            int at = ReserveAt(need);
            Commit(StandardEncoder.Write(StandardFlags.ReplyFor(flag), sequence, payload, OutputBuffer, at));
        }
    }

    /// <summary>`standard` with its configuration (only limits.max_payload).</summary>
    public sealed class StandardCodec : FrameCodec
    {
        public StandardCodec(CodecSpec spec) : base(spec) { }

        public override FrameDecoder NewDecoder() { return new StandardDecoder(MaxPayload); }

        public override bool CheckPayload(long payloadLength, out ProtocolError error)
        {
            return StandardEncoder.Check(payloadLength, MaxPayload, out error);
        }

        public override int EncodedLength(int payloadLength) { return StandardEncoder.EncodedLength(payloadLength); }

        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return StandardEncoder.Write(flag, sequence, payload, dest);
        }

        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return StandardEncoder.Write(flag, sequence, payload, dest, offset);
        }

        public override int BenchReplyLength(int payloadLength) { return StandardEncoder.EncodedLength(payloadLength); }

        /// <summary>The echo of request <paramref name="index"/>: flag 0x81 (the reply to a request of
        /// kind 1, STD-ECHO-1) and the request's sequence.</summary>
        public override int WriteBenchReply(long index, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return StandardEncoder.Write(StandardFlags.ReplyFor(StandardFlags.Request), (byte)index, payload, dest, offset);
        }

        public override string UnsupportedHeader(uint flag, uint sequence)
        {
            return flag > 255 || sequence > 255 ? "flag/sequence above 255 cannot be written in one byte" : null;
        }

        public override IRequestMatcher NewMatcher(IMatchObserver observer, long timeoutMs)
        {
            return new StandardMatcher(observer, timeoutMs);
        }

        public override int WriteRequest(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return StandardEncoder.Write(StandardFlags.Request, sequence, payload, dest);
        }

        public override int WriteOneWay(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return StandardEncoder.Write(StandardFlags.OneWay, sequence, payload, dest);
        }

        /// <summary>The load client's requests are of kind 1: their echo has flag 0x81 (STD-ECHO-1); an
        /// error reply or another kind is not a verified echo.</summary>
        public override string ReplyProblem(byte flag)
        {
            byte want = StandardFlags.ReplyFor(StandardFlags.Request);
            return flag == want ? null : "reply flag 0x" + flag.ToString("X2") + ", expected 0x" + want.ToString("X2") + " (STD-ECHO-1)";
        }

        /// <summary>255: with all 256 sequence numbers pending the next send is refused (STD-SEQ-3).</summary>
        public override int MaxInFlight { get { return 255; } }

        /// <summary>255, the batch of NewLife.Net's StandardCodec echo benchmark (255 concurrent
        /// SendMessageAsync, WhenAll, next round), which keeps every sequence number but one pending.</summary>
        public override int DefaultBatch { get { return 255; } }

        public override ServerSession NewSession(bool sink) { return new StandardEchoSession(MaxPayload, sink); }
    }

    /// <summary>Registry entry of `standard`: no parameters besides the limits.</summary>
    public sealed class StandardProtocol : ProtocolModule
    {
        public static readonly StandardProtocol Module = new StandardProtocol();

        public override string Name { get { return "standard"; } }

        public override FrameCodec Create(CodecSpec spec) { return new StandardCodec(spec); }
    }
}
