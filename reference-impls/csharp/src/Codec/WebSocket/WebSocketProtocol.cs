using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>Registry entry of `websocket` (spec/websocket.md): parameters under
    /// "websocket": {"role": "server"|"client", "max_message": N}; the frame limit is limits.max_payload.</summary>
    public sealed class WebSocketProtocol : ProtocolModule
    {
        public static readonly WebSocketProtocol Module = new WebSocketProtocol();

        public override string Name { get { return "websocket"; } }

        public override string ParamsKey { get { return "websocket"; } }

        public override object ParseParams(JsonValue value)
        {
            var members = value.AsObject("\"websocket\"");
            CodecJson.CheckKeys(members, "websocket", "role", "max_message");
            JsonValue v;
            var p = new WebSocketParams();
            if (CodecJson.TryGet(members, "role", out v))
            {
                string role = v.AsString("websocket.role");
                if (role != "server" && role != "client") throw new FormatException("websocket.role must be \"server\" or \"client\", got \"" + role + "\"");
                p.Client = role == "client";
            }
            if (CodecJson.TryGet(members, "max_message", out v)) p.MaxMessage = v.AsInteger("websocket.max_message", 0, long.MaxValue);
            return p;
        }

        public override FrameCodec Create(CodecSpec spec) { return new WebSocketCodec(spec); }
    }
}
