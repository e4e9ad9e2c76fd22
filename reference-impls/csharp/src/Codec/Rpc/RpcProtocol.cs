using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>Registry entry of `rpc` (spec/rpc.md): parameters under "rpc": {"max_body": N}.</summary>
    public sealed class RpcProtocol : ProtocolModule
    {
        public static readonly RpcProtocol Module = new RpcProtocol();

        public override string Name { get { return "rpc"; } }

        public override string ParamsKey { get { return "rpc"; } }

        /// <summary>The limit is rpc.max_body; "limits" does not apply.</summary>
        public override bool TakesLimits { get { return false; } }

        public override object ParseParams(JsonValue value)
        {
            var members = value.AsObject("\"rpc\"");
            CodecJson.CheckKeys(members, "rpc", "max_body");
            JsonValue v;
            return new RpcParams { MaxBody = CodecJson.TryGet(members, "max_body", out v) ? v.AsInteger("rpc.max_body", 0, long.MaxValue) : 0 };
        }

        public override FrameCodec Create(CodecSpec spec) { return new RpcCodec(spec); }
    }
}
