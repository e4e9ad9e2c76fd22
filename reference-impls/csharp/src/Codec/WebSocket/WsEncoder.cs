using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
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
}
