using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>rpc frame types, flags and the conformance echo service's names (spec/rpc.md §2, §3, §9).</summary>
    public static class RpcTypes
    {
        public const byte Request = 0x01, Response = 0x02, Heartbeat = 0x03, Error = 0x04;
        public const byte StreamInit = 0x10, StreamInitAck = 0x11, StreamData = 0x12, StreamEnd = 0x13, StreamCancel = 0x14;
        public const byte EndStream = 0x04;
        public const byte ModeMask = 0x03;
        public const int HeaderLength = 16;
        /// <summary>RPC-LIM-1 default: 16 MiB (upstream RPC_MAX_BODY_SIZE).</summary>
        public const long DefaultMaxBody = 16L * 1024 * 1024;
        public const ushort CodeOk = 0, CodeServiceNotFound = 2, CodeMethodNotFound = 3;

        /// <summary>"frameproof.Echo" and "echo" (spec/rpc.md §9).</summary>
        public static readonly byte[] EchoService = { 0x66, 0x72, 0x61, 0x6d, 0x65, 0x70, 0x72, 0x6f, 0x6f, 0x66, 0x2e, 0x45, 0x63, 0x68, 0x6f };
        public static readonly byte[] EchoMethod = { 0x65, 0x63, 0x68, 0x6f };
        // the same names as words in memory order (bytes 0-7 and 7-14 of the service), compared through pointers
        static readonly ulong EchoService0 = BitConverter.ToUInt64(EchoService, 0), EchoService1 = BitConverter.ToUInt64(EchoService, 7);
        static readonly uint EchoMethodWord = BitConverter.ToUInt32(EchoMethod, 0);
        /// <summary>"unary_only": the echo service's method registered for the UNARY call mode (0) only (RPC-ECHO-8).</summary>
        public static readonly byte[] UnaryOnlyMethod = { 0x75, 0x6e, 0x61, 0x72, 0x79, 0x5f, 0x6f, 0x6e, 0x6c, 0x79 };
        // bytes 0-7 and 6-9 of it as words in memory order
        static readonly ulong UnaryOnlyWord0 = BitConverter.ToUInt64(UnaryOnlyMethod, 0);
        static readonly uint UnaryOnlyWord1 = BitConverter.ToUInt32(UnaryOnlyMethod, 6);

        /// <summary>The <paramref name="length"/> bytes at <paramref name="p"/> are "frameproof.Echo".</summary>
        internal static unsafe bool IsEchoService(byte* p, int length)
        {
            return length == 15 && *(ulong*)p == EchoService0 && *(ulong*)(p + 7) == EchoService1;
        }

        /// <summary>The <paramref name="length"/> bytes at <paramref name="p"/> are "echo".</summary>
        internal static unsafe bool IsEchoMethod(byte* p, int length)
        {
            return length == 4 && *(uint*)p == EchoMethodWord;
        }

        /// <summary>The <paramref name="length"/> bytes at <paramref name="p"/> are "unary_only".</summary>
        internal static unsafe bool IsUnaryOnlyMethod(byte* p, int length)
        {
            return length == 10 && *(ulong*)p == UnaryOnlyWord0 && *(uint*)(p + 6) == UnaryOnlyWord1;
        }

        /// <summary>The nine types (RPC-HDR-4) as bits 1 &lt;&lt; type: one test where a method call
        /// would cost Mono more than the check (the decoder's hot path tests them itself).</summary>
        internal const uint KnownTypes = 1u << Request | 1u << Response | 1u << Heartbeat | 1u << Error
            | 1u << StreamInit | 1u << StreamInitAck | 1u << StreamData | 1u << StreamEnd | 1u << StreamCancel;
        /// <summary>The types with an empty body (RPC-BODY-5) as bits 1 &lt;&lt; type.</summary>
        internal const uint ControlTypes = 1u << StreamInitAck | 1u << StreamEnd | 1u << StreamCancel;

        /// <summary>RPC-HDR-4: the nine types.</summary>
        public static bool IsKnown(uint type) { return type < 32 && (KnownTypes >> (int)type & 1) != 0; }

        /// <summary>RPC-BODY-5: STREAM_INIT_ACK, STREAM_END, STREAM_CANCEL have an empty body.</summary>
        public static bool IsControl(uint type) { return type < 32 && (ControlTypes >> (int)type & 1) != 0; }

        /// <summary>REQUEST and STREAM_INIT carry service and method (RPC-BODY-1, RPC-BODY-3).</summary>
        public static bool HasNames(uint type) { return type == Request || type == StreamInit; }

        /// <summary>STREAM_INIT .. STREAM_CANCEL: the types that pick the stream endpoint (RPC-ECHO-7).</summary>
        public static bool IsStream(uint type) { return type >= StreamInit && type <= StreamCancel; }
    }
}
