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
    /// "websocket": {"role": "server"|"client", "max_message": N, "path": P, "subprotocol": S, "permessage_deflate": B}; the frame limit is limits.max_payload.
    /// Also websocket's members of the testee messages (params, header, error detail).</summary>
    public sealed class WebSocketProtocol : ProtocolModule
    {
        public static readonly WebSocketProtocol Module = new WebSocketProtocol();

        public override string Name { get { return "websocket"; } }

        public override string ParamsKey { get { return "websocket"; } }

        public override object ParseParams(JsonValue value)
        {
            var members = value.AsObject("\"websocket\"");
            CodecJson.CheckKeys(members, "websocket", "role", "max_message", "path", "subprotocol", "permessage_deflate");
            JsonValue v;
            var p = new WebSocketParams();
            if (CodecJson.TryGet(members, "role", out v))
            {
                string role = v.AsString("websocket.role");
                if (role != "server" && role != "client") throw new FormatException("websocket.role must be \"server\" or \"client\", got \"" + role + "\"");
                p.Client = role == "client";
            }
            if (CodecJson.TryGet(members, "max_message", out v)) p.MaxMessage = v.AsInteger("websocket.max_message", 0, long.MaxValue);
            if (CodecJson.TryGet(members, "path", out v))
            {
                p.Path = v.AsString("websocket.path");
                if (!WsHandshake.IsPath(p.Path)) throw new FormatException("websocket.path must be a request target starting with '/', got \"" + p.Path + "\"");
            }
            if (CodecJson.TryGet(members, "subprotocol", out v))
            {
                p.Subprotocol = v.AsString("websocket.subprotocol");
                if (!WsHandshake.IsToken(p.Subprotocol)) throw new FormatException("websocket.subprotocol must be one token (RFC 6455 §4.1), got \"" + p.Subprotocol + "\"");
            }
            if (CodecJson.TryGet(members, "permessage_deflate", out v)) p.PermessageDeflate = v.AsBool("websocket.permessage_deflate");
            return p;
        }

        public override FrameCodec Create(CodecSpec spec) { return new WebSocketCodec(spec); }

        // ---------------------------------------------------------------- testee messages

        /// <summary>websocket's line in each oneof of schemas/testee.proto: field 5 (WebSocketParams,
        /// WebSocketHeader, WebSocketErrorDetail).</summary>
        static readonly TesteeLine Line = TesteeLine.Of<WebSocketParams, WebSocketHeader, WebSocketCloseDetail>(5,
            ReadParams, WriteParams, ReadHeader, WriteHeader, ReadDetail, WriteDetail);

        public override TesteeMember OneofMember(TesteeOneof oneof) { return Line.Member(oneof); }

        /// <summary>WebSocketParams.Role: ROLE_UNSPECIFIED 0 and SERVER 1 are the server role.</summary>
        const int RoleClient = 2;

        /// <summary>WebSocketParams: role = 1, max_message = 2 (above long.MaxValue: long.MaxValue).</summary>
        static WebSocketParams ReadParams(ProtoReader r)
        {
            var p = new WebSocketParams();
            while (!r.AtEnd)
            {
                int g, w; r.ReadTag(out g, out w);
                if (g == 1) { ProtoReader.Expect(w, 0, g); p.Client = (int)r.ReadVarint() == RoleClient; }
                else if (g == 2) { ProtoReader.Expect(w, 0, g); ulong v = r.ReadVarint(); p.MaxMessage = v > long.MaxValue ? long.MaxValue : (long)v; }
                else r.Skip(w);
            }
            return p;
        }

        /// <summary>The server role is written as ROLE_UNSPECIFIED (0), the client role as CLIENT.</summary>
        static void WriteParams(WebSocketParams p, ProtoWriter w)
        {
            w.Enum(1, p.Client ? RoleClient : 0);
            w.UInt64(2, (ulong)p.MaxMessage);
        }

        /// <summary>WebSocketHeader: fin 1, rsv 2, opcode 3, masked 4, mask_key 5.</summary>
        static WebSocketHeader ReadHeader(ProtoReader r)
        {
            var h = new WebSocketHeader();
            while (!r.AtEnd)
            {
                int g, w; r.ReadTag(out g, out w);
                switch (g)
                {
                    case 1: ProtoReader.Expect(w, 0, g); h.Fin = r.ReadVarint() != 0; break;
                    case 2: ProtoReader.Expect(w, 0, g); h.Rsv = (uint)r.ReadVarint(); break;
                    case 3: ProtoReader.Expect(w, 0, g); h.Opcode = (uint)r.ReadVarint(); break;
                    case 4: ProtoReader.Expect(w, 0, g); h.Masked = r.ReadVarint() != 0; break;
                    case 5: ProtoReader.Expect(w, 2, g); h.MaskKey = r.ReadBytes(); break;
                    default: r.Skip(w); break;
                }
            }
            return h;
        }

        static void WriteHeader(WebSocketHeader h, ProtoWriter w)
        {
            w.Bool(1, h.Fin); w.UInt32(2, h.Rsv); w.UInt32(3, h.Opcode); w.Bool(4, h.Masked); w.Bytes(5, h.MaskKey);
        }

        /// <summary>WebSocketErrorDetail: close_code = 1.</summary>
        static WebSocketCloseDetail ReadDetail(ProtoReader r) { return new WebSocketCloseDetail(r.ReadField1UInt32()); }

        static void WriteDetail(WebSocketCloseDetail d, ProtoWriter w) { w.UInt32(1, d.Code); }
    }
}
