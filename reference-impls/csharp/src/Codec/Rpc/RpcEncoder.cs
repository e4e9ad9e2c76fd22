using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>rpc encoder (spec/rpc.md §2, §3): checks in the order of §11's encoder list, then
    /// writes header and body straight into the destination.</summary>
    public static class RpcEncoder
    {
        /// <summary>Body length of a frame of this type with these field lengths.</summary>
        public static long BodyLength(uint type, int serviceLength, int methodLength, long payloadLength)
        {
            if (RpcTypes.HasNames(type)) return 4L + serviceLength + methodLength + payloadLength;
            if (type == RpcTypes.Response) return 2L + payloadLength;
            return payloadLength;
        }

        /// <summary>RPC-HDR-3, RPC-HDR-4, RPC-BODY-5, RPC-BODY-6, RPC-BODY-2, RPC-LIM-2.</summary>
        public static bool Check(uint version, uint type, uint errorCode, int serviceLength, int methodLength, long payloadLength,
            long maxBody, out ProtocolError error)
        {
            error = default(ProtocolError);
            if (version != 1) { error = new ProtocolError("RPC-HDR-3", 0, "version " + version + " (only 1 is written)"); return false; }
            if (!RpcTypes.IsKnown(type)) { error = new ProtocolError("RPC-HDR-4", 0, "unknown type " + type); return false; }
            if (RpcTypes.IsControl(type) && payloadLength > 0) { error = new ProtocolError("RPC-BODY-5", 0, "control frame with a payload"); return false; }
            if (RpcTypes.HasNames(type) && (serviceLength > 0xFFFF || methodLength > 0xFFFF))
            {
                error = new ProtocolError("RPC-BODY-6", 0, "name longer than 65535 bytes");
                return false;
            }
            if (type == RpcTypes.Response && errorCode > 0xFFFF) { error = new ProtocolError("RPC-BODY-2", 0, "error code " + errorCode + " above 65535"); return false; }
            long max = Math.Min(maxBody <= 0 ? RpcTypes.DefaultMaxBody : maxBody, uint.MaxValue);
            long body = BodyLength(type, serviceLength, methodLength, payloadLength);
            if (body > max) { error = new ProtocolError("RPC-LIM-2", 0, "body of " + body + " bytes exceeds the maximum " + max); return false; }
            return true;
        }

        /// <summary>Writes a checked frame into dest (16 + BodyLength bytes); returns the bytes written.
        /// Flags and reserved are written as their low byte.</summary>
        public static unsafe int Write(byte type, uint flags, uint reserved, uint id, uint errorCode,
            ReadOnlySpan<byte> service, ReadOnlySpan<byte> method, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            // Pointers, not Span slices, BinaryPrimitives and Span.CopyTo: on Mono those cost several times the work.
            int body = (int)BodyLength(type, service.Length, method.Length, payload.Length);
            if (dest.Length - RpcTypes.HeaderLength < body) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = &MemoryMarshal.GetReference(dest))
            fixed (byte* sv = &MemoryMarshal.GetReference(service))
            fixed (byte* mt = &MemoryMarshal.GetReference(method))
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
            {
                PutHeader(d, type, flags, reserved, id, (uint)body);
                int p = RpcTypes.HeaderLength;
                if (RpcTypes.HasNames(type))
                {
                    int sl = service.Length, ml = method.Length;
                    d[p] = (byte)(sl >> 8); d[p + 1] = (byte)sl;
                    ByteBuffers.Copy(d + p + 2, sv, sl);
                    p += 2 + sl;
                    d[p] = (byte)(ml >> 8); d[p + 1] = (byte)ml;
                    ByteBuffers.Copy(d + p + 2, mt, ml);
                    p += 2 + ml;
                }
                else if (type == RpcTypes.Response)
                {
                    d[p] = (byte)(errorCode >> 8); d[p + 1] = (byte)errorCode;
                    p += 2;
                }
                ByteBuffers.Copy(d + p, s, payload.Length);
                return p + payload.Length;
            }
        }

        /// <summary>A RESPONSE (flags, id, error code, payload) into <paramref name="dest"/> at
        /// <paramref name="offset"/> (the reply path: a session's output array) through pointers; returns the
        /// bytes written (16 + 2 + payload).</summary>
        public static unsafe int WriteResponse(uint flags, uint id, uint errorCode, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            int n = payload.Length;
            CheckRoom(dest, offset, RpcTypes.HeaderLength + 2 + (long)n);
            fixed (byte* d0 = dest)
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
            {
                byte* d = d0 + offset;
                PutHeader(d, RpcTypes.Response, flags, 0, id, (uint)(2 + n));
                d[RpcTypes.HeaderLength] = (byte)(errorCode >> 8);
                d[RpcTypes.HeaderLength + 1] = (byte)errorCode;
                ByteBuffers.Copy(d + RpcTypes.HeaderLength + 2, s, n);
            }
            return RpcTypes.HeaderLength + 2 + n;
        }

        /// <summary><see cref="WriteSimple(byte, uint, ReadOnlySpan{byte}, Span{byte})"/> into
        /// <paramref name="dest"/> at <paramref name="offset"/> through pointers.</summary>
        public static unsafe int WriteSimple(byte type, uint id, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            int n = payload.Length;
            CheckRoom(dest, offset, RpcTypes.HeaderLength + (long)n);
            fixed (byte* d0 = dest)
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
            {
                PutHeader(d0 + offset, type, 0, 0, id, (uint)n);
                ByteBuffers.Copy(d0 + offset + RpcTypes.HeaderLength, s, n);
            }
            return RpcTypes.HeaderLength + n;
        }

        static void CheckRoom(byte[] dest, int offset, long length)
        {
            if (dest == null) throw new ArgumentNullException("dest");
            if ((uint)offset > (uint)dest.Length) throw new ArgumentOutOfRangeException("offset");
            if (dest.Length - offset < length) throw new ArgumentException("destination too short for the frame", "dest");
        }

        static unsafe void PutHeader(byte* d, byte type, uint flags, uint reserved, uint id, uint body)
        {
            d[0] = 0x47; d[1] = 0x52; d[2] = 0x50; d[3] = 0x43;
            d[4] = 1;
            d[5] = type;
            d[6] = (byte)flags;
            d[7] = (byte)reserved;
            d[8] = (byte)(id >> 24); d[9] = (byte)(id >> 16); d[10] = (byte)(id >> 8); d[11] = (byte)id;
            d[12] = (byte)(body >> 24); d[13] = (byte)(body >> 16); d[14] = (byte)(body >> 8); d[15] = (byte)body;
        }

        /// <summary>A frame without names or error code (stream frames): header + payload.</summary>
        public static int WriteSimple(byte type, uint id, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return Write(type, 0, 0, id, 0, ReadOnlySpan<byte>.Empty, ReadOnlySpan<byte>.Empty, payload, dest);
        }

        /// <summary>Allocating convenience for a header object: checks, then encodes.</summary>
        public static bool Encode(RpcHeader h, byte[] payload, long maxBody, out byte[] bytes, out ProtocolError error)
        {
            bytes = null;
            if (!Check(h.Version, h.Type, h.ErrorCode, h.Service.Length, h.Method.Length, payload.Length, maxBody, out error)) return false;
            bytes = new byte[RpcTypes.HeaderLength + BodyLength(h.Type, h.Service.Length, h.Method.Length, payload.Length)];
            Write((byte)h.Type, h.Flags, h.Reserved, h.Id, h.ErrorCode, h.Service, h.Method, payload, bytes);
            return true;
        }
    }
}
