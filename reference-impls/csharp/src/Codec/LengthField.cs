using System;
using System.Buffers.Binary;

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
        public int FieldLength(long payloadLength)
        {
            if (Size != 0) return Math.Abs(Size);
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
        readonly long _limit;

        /// <summary>Throws FrameproofException LF-FMT-3 for an unsupported profile, before any byte is read.</summary>
        public LengthFieldDecoder(LengthFieldProfile profile, long maxPayload = 0)
            : base(maxPayload, profile.Offset)
        {
            profile.Validate();
            _size = profile.Size;
            _limit = Math.Min(MaxPayload, profile.Capacity); // LF-LIM-1: max or the field's capacity
        }

        protected override string TruncatedRequirement { get { return "LF-STR-3"; } }

        protected override HeaderStatus ParseHeader(ReadOnlySpan<byte> h, out int headerLength, out int payloadLength,
            out byte flag, out byte sequence, out string requirement, out string message)
        {
            headerLength = 0; payloadLength = 0; flag = 0; sequence = 0; requirement = null; message = null;
            long len;
            switch (_size)
            {
                case 1:
                    if (h.Length < 1) return HeaderStatus.NeedMore;
                    len = h[0]; headerLength = 1;
                    break;
                case 2:
                    if (h.Length < 2) return HeaderStatus.NeedMore;
                    len = BinaryPrimitives.ReadUInt16LittleEndian(h); headerLength = 2;
                    break;
                case -2:
                    if (h.Length < 2) return HeaderStatus.NeedMore;
                    len = BinaryPrimitives.ReadUInt16BigEndian(h); headerLength = 2;
                    break;
                case 4:
                case -4:
                    if (h.Length < 4) return HeaderStatus.NeedMore;
                    len = _size == 4 ? BinaryPrimitives.ReadUInt32LittleEndian(h) : BinaryPrimitives.ReadUInt32BigEndian(h);
                    headerLength = 4;
                    if (len >= 0x80000000L)
                    {
                        requirement = "LF-LEN-3";
                        message = "length " + len + " has bit 31 set";
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
                                requirement = "LF-LEN-2";
                                message = "varint longer than 5 bytes";
                                return HeaderStatus.Error;
                            }
                        }
                        if (v > int.MaxValue)
                        {
                            requirement = "LF-LEN-2";
                            message = "varint value " + v + " exceeds 2^31-1";
                            return HeaderStatus.Error;
                        }
                        len = (long)v;
                        headerLength = i;
                        break;
                    }
            }
            if (len > _limit)
            {
                requirement = "LF-LIM-1";
                message = "declared payload " + len + " exceeds the maximum " + _limit;
                return HeaderStatus.Error;
            }
            payloadLength = (int)len;
            return HeaderStatus.Complete;
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
            long max = Limits.Effective(maxPayload);
            if (payloadLength > max)
            {
                error = new ProtocolError("LF-LIM-2", 0, "payload of " + payloadLength + " bytes exceeds the maximum " + max);
                return false;
            }
            error = default(ProtocolError);
            return true;
        }

        public static long EncodedLength(LengthFieldProfile profile, int payloadLength)
        {
            return profile.Offset + profile.FieldLength(payloadLength) + payloadLength;
        }

        /// <summary>Writes header zeros and the length field; returns bytes written. Checked by the caller.</summary>
        public static int WriteHeader(LengthFieldProfile profile, int payloadLength, Span<byte> dest)
        {
            int off = (int)profile.Offset;
            dest.Slice(0, off).Clear(); // LF-FMT-4
            Span<byte> f = dest.Slice(off);
            switch (profile.Size)
            {
                case 1: f[0] = (byte)payloadLength; return off + 1;
                case 2: BinaryPrimitives.WriteUInt16LittleEndian(f, (ushort)payloadLength); return off + 2;
                case -2: BinaryPrimitives.WriteUInt16BigEndian(f, (ushort)payloadLength); return off + 2;
                case 4: BinaryPrimitives.WriteUInt32LittleEndian(f, (uint)payloadLength); return off + 4;
                case -4: BinaryPrimitives.WriteUInt32BigEndian(f, (uint)payloadLength); return off + 4;
                default:
                    {
                        uint v = (uint)payloadLength;
                        int i = 0;
                        while (v >= 0x80)
                        {
                            f[i++] = (byte)(v | 0x80);
                            v >>= 7;
                        }
                        f[i++] = (byte)v; // minimal LEB128 (LF-LEN-2)
                        return off + i;
                    }
            }
        }

        public static int Write(LengthFieldProfile profile, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            int hl = WriteHeader(profile, payload.Length, dest);
            payload.CopyTo(dest.Slice(hl));
            return hl + payload.Length;
        }

        /// <summary>Allocating convenience: checks then encodes; throws <see cref="FrameproofException"/>.</summary>
        public static byte[] Encode(LengthFieldProfile profile, ReadOnlySpan<byte> payload, long maxPayload = 0)
        {
            ProtocolError err;
            if (!Check(profile, payload.Length, maxPayload, out err)) throw new FrameproofException(err);
            var result = new byte[EncodedLength(profile, payload.Length)];
            Write(profile, payload, result);
            return result;
        }
    }
}
