using System;
using System.Buffers.Binary;

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

        protected override HeaderStatus ParseHeader(ReadOnlySpan<byte> h, out int headerLength, out int payloadLength,
            out byte flag, out byte sequence, out string requirement, out string message)
        {
            headerLength = 0; payloadLength = 0; flag = 0; sequence = 0; requirement = null; message = null;
            if (h.Length < 4) return HeaderStatus.NeedMore;
            flag = h[0];
            sequence = h[1];
            long len = BinaryPrimitives.ReadUInt16LittleEndian(h.Slice(2));
            if (len != 0xFFFF)
            {
                headerLength = 4;
            }
            else
            {
                // STD-LEN-2: extended form. Error classification: LEN-3/LEN-4 before LIM-1, so the
                // whole 8-byte header is read before anything is decided.
                if (h.Length < 8) return HeaderStatus.NeedMore;
                len = BinaryPrimitives.ReadUInt32LittleEndian(h.Slice(4));
                headerLength = 8;
                if (len >= 0x80000000L)
                {
                    requirement = "STD-LEN-4";
                    message = "extended length " + len + " has bit 31 set";
                    return HeaderStatus.Error;
                }
                if (len < 0xFFFF)
                {
                    requirement = "STD-LEN-3";
                    message = "non-canonical extended length " + len + " (below 65535)";
                    return HeaderStatus.Error;
                }
            }
            if (len > MaxPayload)
            {
                requirement = "STD-LIM-1";
                message = "declared payload " + len + " exceeds the maximum " + MaxPayload;
                return HeaderStatus.Error;
            }
            payloadLength = (int)len;
            return HeaderStatus.Complete;
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
            long max = Limits.Effective(maxPayload);
            if (payloadLength > max)
            {
                error = new ProtocolError("STD-LIM-2", 0, "payload of " + payloadLength + " bytes exceeds the maximum " + max);
                return false;
            }
            error = default(ProtocolError);
            return true;
        }

        /// <summary>Writes the frame into dest (which must hold EncodedLength bytes); returns bytes written.
        /// The caller has checked the payload (see <see cref="Check"/>).</summary>
        public static int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            int hl = WriteHeader(flag, sequence, payload.Length, dest);
            payload.CopyTo(dest.Slice(hl));
            return hl + payload.Length;
        }

        /// <summary>Writes only the header (4 or 8 bytes); returns its length.</summary>
        public static int WriteHeader(byte flag, byte sequence, int payloadLength, Span<byte> dest)
        {
            dest[0] = flag;
            dest[1] = sequence;
            if (payloadLength < 0xFFFF)
            {
                BinaryPrimitives.WriteUInt16LittleEndian(dest.Slice(2), (ushort)payloadLength);
                return 4;
            }
            dest[2] = 0xFF;
            dest[3] = 0xFF;
            BinaryPrimitives.WriteUInt32LittleEndian(dest.Slice(4), (uint)payloadLength);
            return 8;
        }

        /// <summary>Allocating convenience: checks then encodes; throws <see cref="FrameproofException"/>.</summary>
        public static byte[] Encode(byte flag, byte sequence, ReadOnlySpan<byte> payload, long maxPayload = 0)
        {
            ProtocolError err;
            if (!Check(payload.Length, maxPayload, out err)) throw new FrameproofException(err);
            var result = new byte[EncodedLength(payload.Length)];
            Write(flag, sequence, payload, result);
            return result;
        }
    }
}
