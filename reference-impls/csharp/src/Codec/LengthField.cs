using System;
using System.Buffers.Binary;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>A length-field profile (offset, size), LF-FMT-1..3. Default (0, 2).</summary>
    public readonly struct LengthFieldProfile
    {
        public readonly long Offset;
        public readonly int Size;

        public LengthFieldProfile(long offset, int size)
        {
            Offset = offset;
            Size = size;
        }

        public static LengthFieldProfile Default { get { return new LengthFieldProfile(0, 2); } }

        /// <summary>LF-FMT-3: sizes 1, 2, 4, -2, -4 and 0 (LEB128) are supported.</summary>
        public bool IsValid
        {
            get { return Offset >= 0 && (Size == 0 || Size == 1 || Size == 2 || Size == 4 || Size == -2 || Size == -4); }
        }

        /// <summary>Largest payload length the field can represent (LF-LEN-1..3).</summary>
        public long Capacity
        {
            get
            {
                switch (Size)
                {
                    case 1: return 0xFF;
                    case 2: case -2: return 0xFFFF;
                    default: return int.MaxValue; // ±4 (bit 31 clear, LF-LEN-3) and LEB128 (LF-LEN-2)
                }
            }
        }

        /// <summary>Bytes of the length field for this payload length.</summary>
        public int FieldLength(long payloadLength) { return FieldLength(Size, payloadLength); }

        /// <summary>Bytes of a length field of this size for this payload length.</summary>
        public static int FieldLength(int size, long payloadLength)
        {
            if (size != 0) return size < 0 ? -size : size;
            int n = 1;
            ulong v = (ulong)payloadLength;
            while (v >= 0x80) { v >>= 7; n++; }
            return n;
        }

        /// <summary>LF-FMT-3 check; throws FrameproofException (offset 0) for an unsupported size.</summary>
        public void Validate()
        {
            if (!IsValid)
                throw new FrameproofException(new ProtocolError("LF-FMT-3", 0,
                    "unsupported length-field profile (offset " + Offset + ", size " + Size + ")"));
        }

        public override string ToString() { return "(offset " + Offset + ", size " + Size + ")"; }
    }

    /// <summary>Streaming decoder for `length-field` frames (spec/length-field.md). The offset
    /// header bytes are skipped without buffering and their content ignored (LF-FMT-4).</summary>
    public sealed class LengthFieldDecoder : FrameDecoder
    {
        readonly int _size;
        readonly long _offset;
        readonly long _limit;

        /// <summary>Throws FrameproofException LF-FMT-3 for an unsupported profile, before any byte is read.</summary>
        public LengthFieldDecoder(LengthFieldProfile profile, long maxPayload = 0)
            : base(maxPayload, profile.Offset)
        {
            profile.Validate();
            _size = profile.Size;
            _offset = profile.Offset;
            _limit = Math.Min(MaxPayload, profile.Capacity); // LF-LIM-1: max or the field's capacity
        }

        protected override string TruncatedRequirement { get { return "LF-STR-3"; } }

        /// <summary>The hot path: the fixed-size length fields (sizes 1, 2, -2, 4, -4) behind the
        /// offset, within the limit (which also keeps bit 31 of a 4-byte field clear, LF-LEN-3),
        /// payload in the chunk. LEB128 (size 0) and any length above the limit are left to
        /// <see cref="ParseHeader"/>.</summary>
        protected override unsafe byte* WholeFrames(byte* p, byte* end, IFrameHandler handler, out int frames)
        {
            int n = 0;
            long off = _offset, limit = _limit;
            int size = _size;
            while (true)
            {
                long avail = end - p - off;   // bytes from the length field on
                if (avail <= 0) break;
                byte* h = p + off;
                uint len;
                int fl;
                if (size == 2)
                {
                    if (avail < 2) break;
                    len = (uint)(h[0] | h[1] << 8);
                    fl = 2;
                }
                else if (size == 1)
                {
                    len = h[0];
                    fl = 1;
                }
                else if (size == -2)
                {
                    if (avail < 2) break;
                    len = (uint)(h[0] << 8 | h[1]);
                    fl = 2;
                }
                else if (size == 4)
                {
                    if (avail < 4) break;
                    len = (uint)(h[0] | h[1] << 8 | h[2] << 16 | h[3] << 24);
                    fl = 4;
                }
                else if (size == -4)
                {
                    if (avail < 4) break;
                    len = (uint)(h[0] << 24 | h[1] << 16 | h[2] << 8 | h[3]);
                    fl = 4;
                }
                else break;
                if (len > limit || avail - fl < len) break;
                n++;
                handler.OnFrame(0, 0, new ReadOnlySpan<byte>(h + fl, (int)len));
                p = h + fl + len;
                if (Failed) break;
            }
            frames = n;
            return p;
        }

        protected override HeaderStatus ParseHeader(ReadOnlySpan<byte> h, out FrameHeader header)
        {
            header = default(FrameHeader);
            long len;
            switch (_size)
            {
                case 1:
                    if (h.Length < 1) return HeaderStatus.NeedMore;
                    len = h[0]; header.HeaderLength = 1;
                    break;
                case 2:
                    if (h.Length < 2) return HeaderStatus.NeedMore;
                    len = BinaryPrimitives.ReadUInt16LittleEndian(h); header.HeaderLength = 2;
                    break;
                case -2:
                    if (h.Length < 2) return HeaderStatus.NeedMore;
                    len = BinaryPrimitives.ReadUInt16BigEndian(h); header.HeaderLength = 2;
                    break;
                case 4:
                case -4:
                    if (h.Length < 4) return HeaderStatus.NeedMore;
                    len = _size == 4 ? BinaryPrimitives.ReadUInt32LittleEndian(h) : BinaryPrimitives.ReadUInt32BigEndian(h);
                    header.HeaderLength = 4;
                    if (len >= 0x80000000L)
                    {
                        header.Requirement = "LF-LEN-3";
                        header.Message = "length " + len + " has bit 31 set";
                        return HeaderStatus.Error;
                    }
                    break;
                default: // 0: unsigned LEB128 (LF-LEN-2; non-minimal accepted, LF-LEN-4)
                    {
                        ulong v = 0;
                        int i = 0;
                        while (true)
                        {
                            if (i >= h.Length) return HeaderStatus.NeedMore;
                            byte b = h[i];
                            v |= (ulong)(b & 0x7F) << (7 * i);
                            i++;
                            if ((b & 0x80) == 0) break;
                            if (i == 5)
                            {
                                header.Requirement = "LF-LEN-2";
                                header.Message = "varint longer than 5 bytes";
                                return HeaderStatus.Error;
                            }
                        }
                        if (v > int.MaxValue)
                        {
                            header.Requirement = "LF-LEN-2";
                            header.Message = "varint value " + v + " exceeds 2^31-1";
                            return HeaderStatus.Error;
                        }
                        len = (long)v;
                        header.HeaderLength = i;
                        break;
                    }
            }
            return Declared(len, _limit, "LF-LIM-1", ref header);
        }
    }

    /// <summary>Encoder for `length-field` frames: zero header bytes, length field, payload.</summary>
    public static class LengthFieldEncoder
    {
        /// <summary>Encoder checks in the order of the spec's error classification:
        /// LF-FMT-3, LF-LEN-1 (field cannot represent it), LF-LIM-2 (above the maximum).</summary>
        public static bool Check(LengthFieldProfile profile, long payloadLength, long maxPayload, out ProtocolError error)
        {
            if (!profile.IsValid)
            {
                error = new ProtocolError("LF-FMT-3", 0, "unsupported length-field profile " + profile);
                return false;
            }
            if (payloadLength > profile.Capacity)
            {
                error = new ProtocolError("LF-LEN-1", 0, "payload of " + payloadLength + " bytes does not fit a size-" + profile.Size + " length field");
                return false;
            }
            return Limits.CheckPayload(payloadLength, maxPayload, "LF-LIM-2", out error);
        }

        public static long EncodedLength(LengthFieldProfile profile, int payloadLength)
        {
            return profile.Offset + profile.FieldLength(payloadLength) + payloadLength;
        }

        /// <summary>Writes header zeros and the length field; returns bytes written. Checked by the caller
        /// (dest too short: ArgumentException).</summary>
        public static unsafe int WriteHeader(LengthFieldProfile profile, int payloadLength, Span<byte> dest)
        {
            long hl = profile.Offset + profile.FieldLength(payloadLength);
            if (dest.Length < hl) throw new ArgumentException("destination too short for the header", "dest");
            fixed (byte* d = &MemoryMarshal.GetReference(dest)) return PutHeader(d, profile.Offset, profile.Size, payloadLength);
        }

        /// <summary>The header at <paramref name="d"/> (room checked by the caller); returns its length.
        /// Pointers, not Span slices and BinaryPrimitives: on Mono those cost several times the work.</summary>
        static unsafe int PutHeader(byte* d, long offset, int size, int payloadLength)
        {
            int off = (int)offset;
            if (off > 0)
            {
                if (off <= 64) for (int i = 0; i < off; i++) d[i] = 0;   // LF-FMT-4
                else new Span<byte>(d, off).Clear();
                d += off;
            }
            uint v = (uint)payloadLength;
            switch (size)
            {
                case 2: d[0] = (byte)v; d[1] = (byte)(v >> 8); return off + 2;
                case 1: d[0] = (byte)v; return off + 1;
                case -2: d[0] = (byte)(v >> 8); d[1] = (byte)v; return off + 2;
                case 4: d[0] = (byte)v; d[1] = (byte)(v >> 8); d[2] = (byte)(v >> 16); d[3] = (byte)(v >> 24); return off + 4;
                case -4: d[0] = (byte)(v >> 24); d[1] = (byte)(v >> 16); d[2] = (byte)(v >> 8); d[3] = (byte)v; return off + 4;
                default:
                    {
                        int i = 0;
                        while (v >= 0x80)
                        {
                            d[i++] = (byte)(v | 0x80);
                            v >>= 7;
                        }
                        d[i++] = (byte)v; // minimal LEB128 (LF-LEN-2)
                        return off + i;
                    }
            }
        }

        public static unsafe int Write(LengthFieldProfile profile, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            int n = payload.Length;
            long total = profile.Offset + profile.FieldLength(n) + n;
            if (dest.Length < total) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = &MemoryMarshal.GetReference(dest))
            {
                int hl = PutHeader(d, profile.Offset, profile.Size, n);
                if (n > 0)
                    fixed (byte* s = &MemoryMarshal.GetReference(payload)) ByteBuffers.Copy(d + hl, s, n);
                return hl + n;
            }
        }

        /// <summary><see cref="Write(LengthFieldProfile, ReadOnlySpan{byte}, Span{byte})"/> into
        /// <paramref name="dest"/> at <paramref name="offset"/> (the reply path: a session's output array),
        /// without building a Span for the destination, which costs Mono about as much as the frame.</summary>
        public static int Write(LengthFieldProfile profile, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return Write(profile.Offset, profile.Size, payload, dest, offset);
        }

        /// <summary>The profile's members passed apart (Mono copies the struct at every call).</summary>
        internal static unsafe int Write(long headerOffset, int size, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            int n = payload.Length;
            long total = headerOffset + LengthFieldProfile.FieldLength(size, n) + n;
            if (dest == null) throw new ArgumentNullException("dest");
            if ((uint)offset > (uint)dest.Length) throw new ArgumentOutOfRangeException("offset");
            if (dest.Length - offset < total) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = dest)
            {
                int hl = PutHeader(d + offset, headerOffset, size, n);
                if (n > 0)
                    fixed (byte* s = &MemoryMarshal.GetReference(payload)) ByteBuffers.Copy(d + offset + hl, s, n);
                return hl + n;
            }
        }

        /// <summary>Allocating convenience: checks then encodes; throws <see cref="FrameproofException"/>.</summary>
        public static byte[] Encode(LengthFieldProfile profile, ReadOnlySpan<byte> payload, long maxPayload = 0)
        {
            var spec = new CodecSpec { Protocol = LengthFieldProtocol.Module.Name, MaxPayload = maxPayload, Params = profile };
            return new LengthFieldCodec(spec).Encode(0, 0, payload);
        }
    }

    /// <summary>`length-field`'s server session: LF-ECHO-1..3, every frame is answered with the same
    /// payload in the same profile (header bytes zeroed, minimal length field).</summary>
    public sealed class LengthFieldEchoSession : FrameEchoSession
    {
        readonly long _offset;
        readonly int _size;

        public LengthFieldEchoSession(LengthFieldProfile profile, long maxPayload, bool sink)
            : base(new LengthFieldDecoder(profile, maxPayload), sink)
        {
            _offset = profile.Offset;
            _size = profile.Size;
        }

        protected override void Reply(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            int n = payload.Length;
            int need = (int)(_offset + LengthFieldProfile.FieldLength(_size, n) + n);
            int at = ReserveAt(need);
            Commit(LengthFieldEncoder.Write(_offset, _size, payload, OutputBuffer, at));
        }
    }

    /// <summary>`length-field` with its profile and limits. Frames carry flag and sequence 0.</summary>
    public sealed class LengthFieldCodec : FrameCodec
    {
        /// <summary>Largest header offset this implementation encodes (the whole header is written
        /// into one buffer); decoding skips any offset without buffering it.</summary>
        public const long MaxEncodeOffset = 64L * 1024 * 1024;

        public readonly LengthFieldProfile Profile;

        public LengthFieldCodec(CodecSpec spec) : base(spec)
        {
            Profile = spec.Params is LengthFieldProfile ? (LengthFieldProfile)spec.Params : LengthFieldProfile.Default;
            _headerOffset = Profile.Offset;
            _size = Profile.Size;
            _fixedHeader = _size != 0 ? Profile.Offset + Math.Abs(_size) : -1;
        }

        // the profile's members apart, for the reply path (Mono copies a struct at every member call)
        readonly long _headerOffset, _fixedHeader;   // _fixedHeader: offset + field size, -1 for LEB128
        readonly int _size;

        public override ProtocolError ConfigError
        {
            get
            {
                return Profile.IsValid ? default(ProtocolError)
                    : new ProtocolError("LF-FMT-3", 0, "unsupported length-field profile " + Profile);
            }
        }

        public override string EncoderUnsupported
        {
            get { return Profile.Offset > MaxEncodeOffset ? "header offset above 64 MiB not supported by this encoder" : null; }
        }

        public override FrameDecoder NewDecoder() { return new LengthFieldDecoder(Profile, MaxPayload); }

        public override bool CheckPayload(long payloadLength, out ProtocolError error)
        {
            return LengthFieldEncoder.Check(Profile, payloadLength, MaxPayload, out error);
        }

        public override int EncodedLength(int payloadLength)
        {
            if (_fixedHeader >= 0) return (int)(_fixedHeader + payloadLength);
            return (int)(_headerOffset + LengthFieldProfile.FieldLength(_size, payloadLength) + payloadLength);
        }

        public override int BenchReplyLength(int payloadLength) { return EncodedLength(payloadLength); }

        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return LengthFieldEncoder.Write(Profile, payload, dest);
        }

        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return LengthFieldEncoder.Write(_headerOffset, _size, payload, dest, offset);
        }

        public override IRequestMatcher NewMatcher(IMatchObserver observer, long timeoutMs)
        {
            return new FifoMatcher(observer, timeoutMs);
        }

        public override int WriteRequest(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return LengthFieldEncoder.Write(Profile, payload, dest);
        }

        public override int WriteOneWay(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return LengthFieldEncoder.Write(Profile, payload, dest);
        }

        /// <summary>LF-MATCH-4: the pending bound.</summary>
        public override int MaxInFlight { get { return FifoMatcher.DefaultPendingBound; } }

        /// <summary>128, the batch of NewLife.Net's LengthFieldCodec echo benchmark (128 concurrent
        /// requests awaited before the next round).</summary>
        public override int DefaultBatch { get { return 128; } }

        public override ServerSession NewSession(bool sink) { return new LengthFieldEchoSession(Profile, MaxPayload, sink); }
    }

    /// <summary>Registry entry of `length-field`: parameters {"offset": N, "size": S} under "length_field".</summary>
    public sealed class LengthFieldProtocol : ProtocolModule
    {
        public static readonly LengthFieldProtocol Module = new LengthFieldProtocol();

        public override string Name { get { return "length-field"; } }

        public override string ParamsKey { get { return "length_field"; } }

        /// <summary>{"offset": 0..2^32-1, "size": int32}; absent members take the defaults (0, 2).
        /// An unsupported size is not a JSON error: the codec reports LF-FMT-3.</summary>
        public override object ParseParams(JsonValue value)
        {
            var members = value.AsObject("\"length_field\"");
            CodecJson.CheckKeys(members, "length_field", "offset", "size");
            JsonValue v;
            long offset = CodecJson.TryGet(members, "offset", out v) ? v.AsInteger("length_field.offset", 0, uint.MaxValue) : 0;
            long size = CodecJson.TryGet(members, "size", out v) ? v.AsInteger("length_field.size", int.MinValue, int.MaxValue) : 2;
            return new LengthFieldProfile(offset, (int)size);
        }

        public override FrameCodec Create(CodecSpec spec) { return new LengthFieldCodec(spec); }

        /// <summary>The testee's <c>Codec.params</c> member length_field = 3 (LengthFieldParams:
        /// offset = 1 uint32, size = 2 sint32; a field not given is 0). The only oneof it has a line in.</summary>
        static readonly TesteeMember ParamsMember = new TesteeMember<LengthFieldProfile>(3, ReadParams, WriteParams);

        public override TesteeMember OneofMember(TesteeOneof oneof) { return oneof == TesteeOneof.Params ? ParamsMember : null; }

        static LengthFieldProfile ReadParams(ProtoReader r)
        {
            uint offset = 0;
            int size = 0;
            while (!r.AtEnd)
            {
                int g, w; r.ReadTag(out g, out w);
                if (g == 1) { ProtoReader.Expect(w, 0, g); offset = (uint)r.ReadVarint(); }
                else if (g == 2) { ProtoReader.Expect(w, 0, g); size = r.ReadSInt32(); }
                else r.Skip(w);
            }
            return new LengthFieldProfile(offset, size);
        }

        static void WriteParams(LengthFieldProfile p, ProtoWriter w) { w.UInt32(1, (uint)p.Offset); w.SInt32(2, p.Size); }

        /// <summary>Micro-benchmarks: payloads that do not fit the default 2-byte length use the 4-byte
        /// profile (offset 0, size 4), as the case catalog says.</summary>
        public override CodecSpec BenchSpec(int payload)
        {
            if (payload <= ushort.MaxValue) return CodecSpec.Named(Name);
            return new CodecSpec { Protocol = Name, ParamsKey = ParamsKey, Params = new LengthFieldProfile(0, 4),
                Json = "{\"protocol\": \"length-field\", \"length_field\": {\"offset\": 0, \"size\": 4}}" };
        }
    }
}
