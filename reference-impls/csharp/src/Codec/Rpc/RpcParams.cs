using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>The rpc codec's parameters: codec JSON <c>{"rpc": {"max_body": N}}</c>, testee <c>RpcParams</c>.</summary>
    public sealed class RpcParams
    {
        /// <summary>Largest body; 0 = the spec default (16 MiB).</summary>
        public long MaxBody;
    }

    /// <summary>One decoded frame, valid only during the handler call (spans into the decoder's input
    /// or its buffer). <see cref="Offset"/> is where the frame starts in the stream.</summary>
    public unsafe ref struct RpcFrame
    {
        public byte Version, Type, Flags, Reserved;
        public uint Id;
        public ushort ErrorCode;
        public ReadOnlySpan<byte> Payload;
        public long Offset;
        // REQUEST, STREAM_INIT: the body's names (service length, service, method length, method) at
        // Names, which the decoder keeps in place during the handler call; else null. Service and
        // Method are built only when asked for: building a Span costs Mono a few ns a frame.
        internal byte* Names;
        internal int ServiceLength, MethodLength;

        public ReadOnlySpan<byte> Service { get { return Names == null ? ReadOnlySpan<byte>.Empty : new ReadOnlySpan<byte>(Names + 2, ServiceLength); } }
        public ReadOnlySpan<byte> Method { get { return Names == null ? ReadOnlySpan<byte>.Empty : new ReadOnlySpan<byte>(Names + 4 + ServiceLength, MethodLength); } }

        /// <summary>Service and method are frameproof.Echo and echo: 0 (CodeOk); else the code the unary
        /// endpoint answers (RPC-ECHO-2/3: service first).</summary>
        internal ushort EchoCode()
        {
            if (Names == null || !RpcTypes.IsEchoService(Names + 2, ServiceLength)) return RpcTypes.CodeServiceNotFound;
            return RpcTypes.IsEchoMethod(Names + 4 + ServiceLength, MethodLength) ? RpcTypes.CodeOk : RpcTypes.CodeMethodNotFound;
        }

        /// <summary>The unary endpoint's code for this REQUEST, routed by service, method and call mode
        /// (RPC-MODE-1): <see cref="EchoCode"/>, except that "unary_only" is served (0) in call mode 0
        /// (RPC-ECHO-8); in modes 1-3 it stays METHOD_NOT_FOUND. (The stream endpoint serves echo only:
        /// it asks <see cref="EchoCode"/>.)</summary>
        internal ushort UnaryCode()
        {
            ushort code = EchoCode();
            if (code == RpcTypes.CodeMethodNotFound && (Flags & RpcTypes.ModeMask) == 0
                && RpcTypes.IsUnaryOnlyMethod(Names + 4 + ServiceLength, MethodLength))
                return RpcTypes.CodeOk;
            return code;
        }

        public RpcHeader ToHeader()
        {
            return new RpcHeader
            {
                Version = Version, Type = Type, Flags = Flags, Reserved = Reserved, Id = Id,
                Service = Service.ToArray(), Method = Method.ToArray(), ErrorCode = ErrorCode
            };
        }

        public FrameValue ToValue() { return new FrameValue { Payload = Payload.ToArray(), Header = ToHeader() }; }
    }
}
