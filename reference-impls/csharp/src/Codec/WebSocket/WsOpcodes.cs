using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>Opcodes, limits and close codes (spec/websocket.md §2, §5, §8, §10).</summary>
    public static class WsOpcodes
    {
        public const byte Continuation = 0x0, Text = 0x1, Binary = 0x2, Close = 0x8, Ping = 0x9, Pong = 0xA;
        /// <summary>WS-LIM-1 default (galay-http's max_frame_size): 10 MiB.</summary>
        public const long DefaultMaxFrame = 10L * 1024 * 1024;
        /// <summary>WS-LIM-2 default (galay-http's max_message_size): 100 MiB.</summary>
        public const long DefaultMaxMessage = 100L * 1024 * 1024;
        /// <summary>This implementation's own bound on one frame or message: the largest byte array.</summary>
        public const long ArrayLimit = 0x7FFFFFC7;

        public static bool IsKnown(uint op) { return op <= 2 || (op >= 8 && op <= 10); }
        public static bool IsControl(uint op) { return op >= 8; }

        /// <summary>WS-CLOSE-2: the status codes a peer may send.</summary>
        public static bool IsValidCloseCode(int code)
        {
            return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
        }

        /// <summary>WS-ERR-1: the close code an endpoint sends when it fails the connection for this
        /// requirement, or 0 (WS-STR-3: nothing is sent).</summary>
        public static int CloseCodeFor(string requirement)
        {
            switch (requirement)
            {
                case "WS-UTF8-1": case "WS-UTF8-2": case "WS-CLOSE-3": case "WSD-CMP-3": case "WSD-CMP-4": return 1007;
                case "WS-LIM-1": case "WS-LIM-2": case "WSD-LIM-1": return 1009;
                case "WSD-FRM-2": case "WSD-NEG-5":
                case "WS-HDR-2": case "WS-HDR-3": case "WS-LEN-3": case "WS-LEN-4": case "WS-MASK-1": case "WS-MASK-2":
                case "WS-CTL-1": case "WS-CTL-2": case "WS-FRAG-2": case "WS-FRAG-3": case "WS-CLOSE-1": case "WS-CLOSE-2":
                    return 1002;
                default: return 0;
            }
        }
    }
}
