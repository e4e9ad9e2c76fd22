using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>Registry entry of `rpc` (spec/rpc.md): parameters under "rpc": {"max_body": N}, and
    /// rpc's members of the testee messages (params, header, error detail).</summary>
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

        // ---------------------------------------------------------------- testee messages

        /// <summary>rpc's line in each oneof of schemas/testee.proto: field 4 (RpcParams, RpcHeader,
        /// RpcErrorDetail).</summary>
        static readonly TesteeLine Line = TesteeLine.Of<RpcParams, RpcHeader, RpcErrorDetail>(4,
            ReadParams, WriteParams, ReadHeader, WriteHeader, ReadDetail, WriteDetail);

        public override TesteeMember OneofMember(TesteeOneof oneof) { return Line.Member(oneof); }

        /// <summary>RpcParams: max_body = 1 (above long.MaxValue: long.MaxValue).</summary>
        static RpcParams ReadParams(ProtoReader r)
        {
            var p = new RpcParams();
            while (!r.AtEnd)
            {
                int g, w; r.ReadTag(out g, out w);
                if (g == 1) { ProtoReader.Expect(w, 0, g); ulong v = r.ReadVarint(); p.MaxBody = v > long.MaxValue ? long.MaxValue : (long)v; }
                else r.Skip(w);
            }
            return p;
        }

        static void WriteParams(RpcParams p, ProtoWriter w) { w.UInt64(1, (ulong)p.MaxBody); }

        /// <summary>RpcHeader: version 1, type 2, flags 3, reserved 4, id 5, service 6, method 7,
        /// error_code 8; a field not given is 0 (the version too).</summary>
        static RpcHeader ReadHeader(ProtoReader r)
        {
            var h = new RpcHeader { Version = 0 };
            while (!r.AtEnd)
            {
                int g, w; r.ReadTag(out g, out w);
                switch (g)
                {
                    case 1: ProtoReader.Expect(w, 0, g); h.Version = (uint)r.ReadVarint(); break;
                    case 2: ProtoReader.Expect(w, 0, g); h.Type = (uint)r.ReadVarint(); break;
                    case 3: ProtoReader.Expect(w, 0, g); h.Flags = (uint)r.ReadVarint(); break;
                    case 4: ProtoReader.Expect(w, 0, g); h.Reserved = (uint)r.ReadVarint(); break;
                    case 5: ProtoReader.Expect(w, 0, g); h.Id = (uint)r.ReadVarint(); break;
                    case 6: ProtoReader.Expect(w, 2, g); h.Service = r.ReadBytes(); break;
                    case 7: ProtoReader.Expect(w, 2, g); h.Method = r.ReadBytes(); break;
                    case 8: ProtoReader.Expect(w, 0, g); h.ErrorCode = (uint)r.ReadVarint(); break;
                    default: r.Skip(w); break;
                }
            }
            return h;
        }

        static void WriteHeader(RpcHeader h, ProtoWriter w)
        {
            w.UInt32(1, h.Version); w.UInt32(2, h.Type); w.UInt32(3, h.Flags); w.UInt32(4, h.Reserved);
            w.UInt32(5, h.Id); w.Bytes(6, h.Service); w.Bytes(7, h.Method); w.UInt32(8, h.ErrorCode);
        }

        /// <summary>RpcErrorDetail: error_code = 1.</summary>
        static RpcErrorDetail ReadDetail(ProtoReader r) { return new RpcErrorDetail(r.ReadField1UInt32()); }

        static void WriteDetail(RpcErrorDetail d, ProtoWriter w) { w.UInt32(1, d.ErrorCode); }
    }
}
