// Hand-written proto3 wire encoding of the testee messages (schemas/testee.proto, harness v1 and v2).
//
// Why hand-written: this machine has no .NET SDK, no NuGet and therefore no Google.Protobuf
// runtime or protoc C# plugin usable from Mono's mcs. The testee protocol needs only a handful of
// messages, and proto3's wire format for them is just varints (wire type 0) and length-delimited
// fields (wire type 2), so a ~300-line reader/writer is smaller than vendoring a runtime.
// Unknown fields are skipped (all wire types), so newer runners stay compatible.
// Field numbers below are copied from schemas/testee.proto; tests/TesteeProtoTests.cs checks
// round trips and byte-exact encodings, and tests/TesteeGoldenTests.cs checks every field against
// conformance/testee-golden.json, serialized by the Python protobuf runtime (tools/gen_testee_golden.py).
using System;
using System.Collections.Generic;
using System.IO;
using System.Text;
using Frameproof.Codec;

namespace Frameproof.Testee
{
    public sealed class ProtoFormatException : Exception
    {
        public ProtoFormatException(string m) : base(m) { }
    }

    /// <summary>Reads proto3 wire format from a byte array slice.</summary>
    public sealed class ProtoReader
    {
        readonly byte[] _b;
        int _pos;
        readonly int _end;

        public ProtoReader(byte[] b) : this(b, 0, b.Length) { }
        public ProtoReader(byte[] b, int offset, int length) { _b = b; _pos = offset; _end = offset + length; }

        public bool AtEnd { get { return _pos >= _end; } }

        public ulong ReadVarint()
        {
            ulong v = 0;
            for (int shift = 0; shift < 70; shift += 7)
            {
                if (_pos >= _end) throw new ProtoFormatException("truncated varint");
                byte x = _b[_pos++];
                if (shift == 63 && x > 1) throw new ProtoFormatException("varint overflow");
                v |= (ulong)(x & 0x7F) << shift;
                if ((x & 0x80) == 0) return v;
            }
            throw new ProtoFormatException("varint too long");
        }

        /// <summary>Returns (field number, wire type).</summary>
        public void ReadTag(out int field, out int wireType)
        {
            ulong t = ReadVarint();
            field = (int)(t >> 3);
            wireType = (int)(t & 7);
            if (field <= 0) throw new ProtoFormatException("field number 0");
        }

        public ProtoReader ReadMessage()
        {
            int off, len;
            ReadLengthDelimited(out off, out len);
            return new ProtoReader(_b, off, len);
        }

        public void ReadLengthDelimited(out int offset, out int length)
        {
            ulong len = ReadVarint();
            if (len > (ulong)(_end - _pos)) throw new ProtoFormatException("truncated length-delimited field");
            offset = _pos;
            length = (int)len;
            _pos += (int)len;
        }

        public byte[] ReadBytes()
        {
            int off, len;
            ReadLengthDelimited(out off, out len);
            var r = new byte[len];
            Buffer.BlockCopy(_b, off, r, 0, len);
            return r;
        }

        public string ReadString()
        {
            int off, len;
            ReadLengthDelimited(out off, out len);
            return Encoding.UTF8.GetString(_b, off, len);
        }

        public void Skip(int wireType)
        {
            switch (wireType)
            {
                case 0: ReadVarint(); break;
                case 1: Advance(8); break;
                case 2: { int o, l; ReadLengthDelimited(out o, out l); break; }
                case 5: Advance(4); break;
                default: throw new ProtoFormatException("unsupported wire type " + wireType);
            }
        }

        void Advance(int n)
        {
            if (_end - _pos < n) throw new ProtoFormatException("truncated fixed field");
            _pos += n;
        }

        public static void Expect(int wireType, int expected, int field)
        {
            if (wireType != expected) throw new ProtoFormatException("field " + field + ": wire type " + wireType + ", expected " + expected);
        }
    }

    /// <summary>Writes proto3 wire format. Scalars equal to their default are omitted (proto3),
    /// except through the *Always methods used for oneof members and repeated elements.</summary>
    public sealed class ProtoWriter
    {
        readonly MemoryStream _s = new MemoryStream();

        public void WriteVarintRaw(ulong v)
        {
            while (v >= 0x80) { _s.WriteByte((byte)(v | 0x80)); v >>= 7; }
            _s.WriteByte((byte)v);
        }

        void Tag(int field, int wt) { WriteVarintRaw((ulong)((uint)field << 3 | (uint)wt)); }

        public void UInt64(int field, ulong v) { if (v != 0) { Tag(field, 0); WriteVarintRaw(v); } }
        public void UInt32(int field, uint v) { UInt64(field, v); }
        public void Enum(int field, int v) { if (v != 0) { Tag(field, 0); WriteVarintRaw((ulong)(long)v); } }
        public void Bool(int field, bool v) { if (v) { Tag(field, 0); WriteVarintRaw(1); } }
        public void SInt32(int field, int v) { if (v != 0) { Tag(field, 0); WriteVarintRaw((uint)((v << 1) ^ (v >> 31))); } }

        public void Bytes(int field, byte[] v) { if (v != null && v.Length > 0) BytesAlways(field, v); }
        public void BytesAlways(int field, byte[] v)
        {
            if (v == null) v = new byte[0];
            Tag(field, 2);
            WriteVarintRaw((ulong)v.Length);
            _s.Write(v, 0, v.Length);
        }

        public void String(int field, string v) { if (!string.IsNullOrEmpty(v)) StringAlways(field, v); }
        public void StringAlways(int field, string v) { BytesAlways(field, Encoding.UTF8.GetBytes(v ?? "")); }

        /// <summary>Writes a sub-message (always, even when empty: presence matters for messages).</summary>
        public void Message(int field, ProtoWriter sub) { BytesAlways(field, sub.ToArray()); }

        public byte[] ToArray() { return _s.ToArray(); }
    }

    // ---------------------------------------------------------------- messages (schemas/testee.proto)
    // Members of the oneofs "one line per protocol" (Codec.params, Frame.header,
    // ProtocolError.detail) that this implementation has no protocol for are skipped; a later member
    // of the same oneof replaces an earlier one, as protobuf parsers do.

    public sealed class CodecConfig
    {
        public string Protocol = "";
        public bool HasLimits;
        public ulong MaxPayload;            // Limits.max_payload = 1
        public bool HasLengthField;         // params: LengthFieldParams length_field = 3
        public uint LfOffset;               // LengthFieldParams.offset = 1
        public int LfSize;                  // LengthFieldParams.size = 2 (sint32)
        public int OtherParams;             // params: the field number of the member given if not length_field (rpc 4, websocket 5, ...), else 0
        public RpcParams Rpc;               // params: RpcParams rpc = 4 (max_body = 1)
        public WebSocketParamsMsg WebSocket; // params: WebSocketParams websocket = 5

        public static CodecConfig Parse(ProtoReader r)
        {
            var c = new CodecConfig();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f == 1) { ProtoReader.Expect(wt, 2, f); c.Protocol = r.ReadString(); }
                else if (f == 2)
                {
                    ProtoReader.Expect(wt, 2, f);
                    c.HasLimits = true;
                    var lr = r.ReadMessage();
                    while (!lr.AtEnd)
                    {
                        int g, w; lr.ReadTag(out g, out w);
                        if (g == 1) { ProtoReader.Expect(w, 0, g); c.MaxPayload = lr.ReadVarint(); } else lr.Skip(w);
                    }
                }
                else if (f == 3)
                {
                    ProtoReader.Expect(wt, 2, f);
                    c.HasLengthField = true;
                    c.OtherParams = 0;
                    var pr = r.ReadMessage();
                    while (!pr.AtEnd)
                    {
                        int g, w; pr.ReadTag(out g, out w);
                        if (g == 1) { ProtoReader.Expect(w, 0, g); c.LfOffset = (uint)pr.ReadVarint(); }
                        else if (g == 2) { ProtoReader.Expect(w, 0, g); uint z = (uint)pr.ReadVarint(); c.LfSize = (int)(z >> 1) ^ -(int)(z & 1); }
                        else pr.Skip(w);
                    }
                }
                else if (f >= 4 && f <= 15)
                {
                    ProtoReader.Expect(wt, 2, f); // another protocol's parameters (oneof params)
                    c.HasLengthField = false;
                    c.LfOffset = 0; c.LfSize = 0;
                    c.Rpc = null; c.WebSocket = null;
                    c.OtherParams = f;
                    if (f == 4) c.Rpc = ParseRpc(r.ReadMessage());
                    else if (f == 5) c.WebSocket = WebSocketParamsMsg.Parse(r.ReadMessage());
                    else r.Skip(wt);
                }
                else r.Skip(wt);
            }
            return c;
        }

        static RpcParams ParseRpc(ProtoReader r)
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

        public void WriteTo(ProtoWriter w)
        {
            w.String(1, Protocol);
            if (HasLimits || MaxPayload != 0) { var l = new ProtoWriter(); l.UInt64(1, MaxPayload); w.Message(2, l); }
            if (HasLengthField) { var p = new ProtoWriter(); p.UInt32(1, LfOffset); p.SInt32(2, LfSize); w.Message(3, p); }
            if (Rpc != null) { var p = new ProtoWriter(); p.UInt64(1, (ulong)Rpc.MaxBody); w.Message(4, p); }
            if (WebSocket != null) w.Message(5, WebSocket.ToWriter());
        }

        /// <summary>The codec for the registry: the oneof member given becomes the protocol's parameters.</summary>
        public CodecSpec ToSpec()
        {
            var spec = new CodecSpec { Protocol = Protocol, MaxPayload = MaxPayload > (ulong)long.MaxValue ? long.MaxValue : (long)MaxPayload };
            if (HasLengthField)
            {
                spec.ParamsKey = LengthFieldProtocol.Module.ParamsKey;
                spec.Params = new LengthFieldProfile(LfOffset, LfSize);
            }
            else if (Rpc != null)
            {
                spec.ParamsKey = "rpc";
                spec.Params = Rpc;
            }
            else if (WebSocket != null)
            {
                spec.ParamsKey = "websocket";
                spec.Params = WebSocket.ToParams();
            }
            return spec;
        }
    }

    public sealed class FrameMsg
    {
        public uint Flag;
        public uint Sequence;
        public byte[] Payload = new byte[0];
        public int OtherHeader;             // header: the field number of the member given (rpc 4, websocket 5, ...), else 0
        public object Header;               // header: RpcHeader (4) or WebSocketHeader (5), else null

        public static FrameMsg Parse(ProtoReader r)
        {
            var m = new FrameMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f == 1) { ProtoReader.Expect(wt, 0, f); m.Flag = (uint)r.ReadVarint(); }
                else if (f == 2) { ProtoReader.Expect(wt, 0, f); m.Sequence = (uint)r.ReadVarint(); }
                else if (f == 3) { ProtoReader.Expect(wt, 2, f); m.Payload = r.ReadBytes(); }
                else if (f >= 4 && f <= 15)
                {
                    ProtoReader.Expect(wt, 2, f);
                    m.OtherHeader = f;
                    m.Header = null;
                    if (f == 4) m.Header = ParseRpc(r.ReadMessage());
                    else if (f == 5) m.Header = ParseWebSocket(r.ReadMessage());
                    else r.Skip(wt);
                }
                else r.Skip(wt);
            }
            return m;
        }

        static RpcHeader ParseRpc(ProtoReader r)
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

        static WebSocketHeader ParseWebSocket(ProtoReader r)
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

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.UInt32(1, Flag); w.UInt32(2, Sequence); w.Bytes(3, Payload);
            var rpc = Header as RpcHeader;
            if (rpc != null)
            {
                var h = new ProtoWriter();
                h.UInt32(1, rpc.Version); h.UInt32(2, rpc.Type); h.UInt32(3, rpc.Flags); h.UInt32(4, rpc.Reserved);
                h.UInt32(5, rpc.Id); h.Bytes(6, rpc.Service); h.Bytes(7, rpc.Method); h.UInt32(8, rpc.ErrorCode);
                w.Message(4, h);
            }
            var ws = Header as WebSocketHeader;
            if (ws != null)
            {
                var h = new ProtoWriter();
                h.Bool(1, ws.Fin); h.UInt32(2, ws.Rsv); h.UInt32(3, ws.Opcode); h.Bool(4, ws.Masked); h.Bytes(5, ws.MaskKey);
                w.Message(5, h);
            }
            return w;
        }

        public FrameValue ToValue() { return new FrameValue { Flag = Flag, Sequence = Sequence, Payload = Payload, Header = Header }; }

        public static FrameMsg From(FrameValue v)
        {
            return new FrameMsg { Flag = v.Flag, Sequence = v.Sequence, Payload = v.Payload ?? new byte[0], Header = v.Header,
                OtherHeader = v.Header is RpcHeader ? 4 : v.Header is WebSocketHeader ? 5 : 0 };
        }
    }

    public sealed class ErrorMsg
    {
        public string Requirement = "";
        public ulong Offset;
        public string Message = "";
        public int OtherDetail;             // detail: the field number of the member given (rpc 4, websocket 5, ...), else 0
        public uint RpcErrorCode;           // detail: RpcErrorDetail rpc = 4 (error_code = 1)
        public uint CloseCode;              // detail: WebSocketErrorDetail websocket = 5 (close_code = 1)

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.String(1, Requirement); w.UInt64(2, Offset); w.String(3, Message);
            if (OtherDetail == 4) { var d = new ProtoWriter(); d.UInt32(1, RpcErrorCode); w.Message(4, d); }
            else if (OtherDetail == 5) { var d = new ProtoWriter(); d.UInt32(1, CloseCode); w.Message(5, d); }
            return w;
        }

        static uint ParseDetail(ProtoReader r)
        {
            uint v = 0;
            while (!r.AtEnd)
            {
                int g, w; r.ReadTag(out g, out w);
                if (g == 1) { ProtoReader.Expect(w, 0, g); v = (uint)r.ReadVarint(); } else r.Skip(w);
            }
            return v;
        }

        public static ErrorMsg Parse(ProtoReader r)
        {
            var m = new ErrorMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f == 1) { ProtoReader.Expect(wt, 2, f); m.Requirement = r.ReadString(); }
                else if (f == 2) { ProtoReader.Expect(wt, 0, f); m.Offset = r.ReadVarint(); }
                else if (f == 3) { ProtoReader.Expect(wt, 2, f); m.Message = r.ReadString(); }
                else if (f >= 4 && f <= 15)
                {
                    ProtoReader.Expect(wt, 2, f);
                    m.OtherDetail = f;
                    m.RpcErrorCode = 0; m.CloseCode = 0;
                    if (f == 4) m.RpcErrorCode = ParseDetail(r.ReadMessage());
                    else if (f == 5) m.CloseCode = ParseDetail(r.ReadMessage());
                    else r.Skip(wt);
                }
                else r.Skip(wt);
            }
            return m;
        }

        public static ErrorMsg From(ProtocolError e)
        {
            var m = new ErrorMsg { Requirement = e.Requirement, Offset = (ulong)e.Offset, Message = e.Message ?? "" };
            var close = e.Detail as WebSocketCloseDetail;
            if (close != null) { m.OtherDetail = 5; m.CloseCode = close.Code; }
            return m;
        }
    }

    public enum MatchEventKind { None = 0, Send = 1, SendOneWay = 2, Receive = 3, AdvanceMs = 4, SendFrame = 5 }

    public sealed class MatchEventMsg
    {
        public MatchEventKind Kind;
        public byte[] Bytes = new byte[0];
        public uint AdvanceMs;
        public FrameMsg Frame;              // send_frame

        public static MatchEventMsg Parse(ProtoReader r)
        {
            var e = new MatchEventMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f >= 1 && f <= 3) { ProtoReader.Expect(wt, 2, f); e.Kind = (MatchEventKind)f; e.Bytes = r.ReadBytes(); }
                else if (f == 4) { ProtoReader.Expect(wt, 0, f); e.Kind = MatchEventKind.AdvanceMs; e.AdvanceMs = (uint)r.ReadVarint(); }
                else if (f == 5) { ProtoReader.Expect(wt, 2, f); e.Kind = MatchEventKind.SendFrame; e.Frame = FrameMsg.Parse(r.ReadMessage()); }
                else r.Skip(wt);
            }
            return e;
        }

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            if (Kind == MatchEventKind.AdvanceMs) { w.WriteVarintRaw(4 << 3); w.WriteVarintRaw(AdvanceMs); }
            else if (Kind == MatchEventKind.SendFrame) w.Message(5, (Frame ?? new FrameMsg()).ToWriter());
            else w.BytesAlways((int)Kind, Bytes);
            return w;
        }
    }

    public enum RequestKind { None = 0, Hello = 1, Decode = 2, Encode = 3, Match = 4, Serve = 5, Discovery = 6 }

    /// <summary>TesteeRequest with its oneof flattened.</summary>
    public sealed class TesteeRequestMsg
    {
        public RequestKind Kind;
        public uint HarnessVersion;                       // hello
        public uint MaxHarnessVersion;                    // hello (v2)
        public CodecConfig Codec = new CodecConfig();     // decode, encode, match, serve
        public List<byte[]> Chunks = new List<byte[]>();  // decode, serve
        public FrameMsg Frame = new FrameMsg();           // encode
        public uint TimeoutMs;                            // match
        public List<MatchEventMsg> Events = new List<MatchEventMsg>();
        public string Endpoint = "";                      // serve
        public bool HalfClose;                            // serve
        public DiscoveryRequestMsg Discovery;             // discovery (field 6, outside the oneof)

        public static TesteeRequestMsg Parse(byte[] data)
        {
            var m = new TesteeRequestMsg();
            DiscoveryRequestMsg discovery = null;
            var r = new ProtoReader(data);
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f >= 1 && f <= 5)
                {
                    ProtoReader.Expect(wt, 2, f);
                    m = new TesteeRequestMsg { Kind = (RequestKind)f }; // oneof: the last one wins
                    var sub = r.ReadMessage();
                    if (f == 1) m.ParseHello(sub);
                    else m.ParseBody(sub);
                }
                else if (f == 6 && wt == 2) discovery = DiscoveryRequestMsg.Parse(r.ReadMessage());
                else r.Skip(wt);
            }
            // spec/testee.md: a TesteeRequest with no request set is parsed once more as a
            // TesteeDiscoveryRequest (its field 6).
            if (m.Kind == RequestKind.None && discovery != null) m = new TesteeRequestMsg { Kind = RequestKind.Discovery, Discovery = discovery };
            return m;
        }

        void ParseHello(ProtoReader r)
        {
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f == 1) { ProtoReader.Expect(wt, 0, f); HarnessVersion = (uint)r.ReadVarint(); }
                else if (f == 2) { ProtoReader.Expect(wt, 0, f); MaxHarnessVersion = (uint)r.ReadVarint(); }
                else r.Skip(wt);
            }
        }

        void ParseBody(ProtoReader r)
        {
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                // Field 1 is the codec in every request but hello.
                if (f == 1) { ProtoReader.Expect(wt, 2, f); Codec = CodecConfig.Parse(r.ReadMessage()); }
                else if (Kind == RequestKind.Decode && f == 2) { ProtoReader.Expect(wt, 2, f); Chunks.Add(r.ReadBytes()); }
                else if (Kind == RequestKind.Encode && f == 2) { ProtoReader.Expect(wt, 2, f); Frame = FrameMsg.Parse(r.ReadMessage()); }
                else if (Kind == RequestKind.Match && f == 2) { ProtoReader.Expect(wt, 0, f); TimeoutMs = (uint)r.ReadVarint(); }
                else if (Kind == RequestKind.Match && f == 3) { ProtoReader.Expect(wt, 2, f); Events.Add(MatchEventMsg.Parse(r.ReadMessage())); }
                else if (Kind == RequestKind.Serve && f == 2) { ProtoReader.Expect(wt, 2, f); Endpoint = r.ReadString(); }
                else if (Kind == RequestKind.Serve && f == 3) { ProtoReader.Expect(wt, 2, f); Chunks.Add(r.ReadBytes()); }
                else if (Kind == RequestKind.Serve && f == 4) { ProtoReader.Expect(wt, 0, f); HalfClose = r.ReadVarint() != 0; }
                else r.Skip(wt);
            }
        }

        /// <summary>Encoding of requests (used by the unit tests to drive the testee like the runner).</summary>
        public byte[] ToBytes()
        {
            var body = new ProtoWriter();
            if (Kind == RequestKind.Hello) { body.UInt32(1, HarnessVersion); body.UInt32(2, MaxHarnessVersion); }
            else
            {
                var c = new ProtoWriter(); Codec.WriteTo(c); body.Message(1, c);
                if (Kind == RequestKind.Decode) foreach (var ch in Chunks) body.BytesAlways(2, ch);
                if (Kind == RequestKind.Encode) body.Message(2, Frame.ToWriter());
                if (Kind == RequestKind.Match)
                {
                    body.UInt32(2, TimeoutMs);
                    foreach (var e in Events) body.Message(3, e.ToWriter());
                }
                if (Kind == RequestKind.Serve)
                {
                    body.String(2, Endpoint);
                    foreach (var ch in Chunks) body.BytesAlways(3, ch);
                    body.Bool(4, HalfClose);
                }
            }
            var w = new ProtoWriter();
            w.Message((int)Kind, body);
            return w.ToArray();
        }
    }

    public enum CompletionKindMsg { Unspecified = 0, Reply = 1, Timeout = 2, Unmatched = 3, Failed = 4, Refused = 5 }

    public sealed class CompletionMsg
    {
        public CompletionKindMsg Kind;
        public uint Request;
        public FrameMsg Frame; // REPLY / UNMATCHED

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.Enum(1, (int)Kind); w.UInt32(2, Request);
            if (Frame != null) w.Message(3, Frame.ToWriter());
            return w;
        }

        public static CompletionMsg Parse(ProtoReader r)
        {
            var c = new CompletionMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f == 1) { ProtoReader.Expect(wt, 0, f); c.Kind = (CompletionKindMsg)(int)r.ReadVarint(); }
                else if (f == 2) { ProtoReader.Expect(wt, 0, f); c.Request = (uint)r.ReadVarint(); }
                else if (f == 3) { ProtoReader.Expect(wt, 2, f); c.Frame = FrameMsg.Parse(r.ReadMessage()); }
                else r.Skip(wt);
            }
            return c;
        }
    }

    public enum ResponseKind { None = 0, Hello = 1, Decode = 2, Encode = 3, Match = 4, Skipped = 5, RuntimeError = 6, Serve = 7, Discovery = 8 }

    /// <summary>TesteeResponse with its oneof flattened.</summary>
    public sealed class TesteeResponseMsg
    {
        public ResponseKind Kind;
        // hello
        public uint HarnessVersion;
        public string Name = "", Version = "";
        public List<string> Protocols = new List<string>(), Features = new List<string>();
        // decode / match
        public List<FrameMsg> Frames = new List<FrameMsg>();
        public ErrorMsg Error;          // decode, encode (oneof), match, serve
        // encode
        public byte[] Encoded;
        // match
        public List<byte[]> Sent = new List<byte[]>();
        public List<CompletionMsg> Completions = new List<CompletionMsg>();
        // serve
        public List<byte[]> Written = new List<byte[]>();
        public bool Closed;
        // discovery (field 8, outside the oneof)
        public DiscoveryResponseMsg Discovery;
        // skipped / runtime_error
        public string Text = "";

        public byte[] ToBytes()
        {
            var w = new ProtoWriter();
            var b = new ProtoWriter();
            switch (Kind)
            {
                case ResponseKind.Hello:
                    b.UInt32(1, HarnessVersion); b.String(2, Name); b.String(3, Version);
                    foreach (var p in Protocols) b.StringAlways(4, p);
                    foreach (var f in Features) b.StringAlways(5, f);
                    break;
                case ResponseKind.Decode:
                    foreach (var f in Frames) b.Message(1, f.ToWriter());
                    if (Error != null) b.Message(2, Error.ToWriter());
                    break;
                case ResponseKind.Encode:
                    if (Error != null) b.Message(2, Error.ToWriter());
                    else b.BytesAlways(1, Encoded); // oneof member: written even when empty
                    break;
                case ResponseKind.Match:
                    foreach (var s in Sent) b.BytesAlways(1, s);
                    foreach (var c in Completions) b.Message(2, c.ToWriter());
                    if (Error != null) b.Message(3, Error.ToWriter());
                    break;
                case ResponseKind.Serve:
                    foreach (var x in Written) b.BytesAlways(1, x);
                    b.Bool(2, Closed);
                    if (Error != null) b.Message(3, Error.ToWriter());
                    break;
                case ResponseKind.Discovery: w.Message(8, Discovery.ToWriter()); return w.ToArray();
                case ResponseKind.Skipped: w.StringAlways(5, Text); return w.ToArray();
                case ResponseKind.RuntimeError: w.StringAlways(6, Text); return w.ToArray();
                default: throw new InvalidOperationException("response kind not set");
            }
            w.Message((int)Kind, b);
            return w.ToArray();
        }

        /// <summary>Decoding of responses (used by the unit tests).</summary>
        public static TesteeResponseMsg Parse(byte[] data)
        {
            var m = new TesteeResponseMsg();
            var r = new ProtoReader(data);
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                if (f < 1 || f > 8) { r.Skip(wt); continue; }
                ProtoReader.Expect(wt, 2, f);
                if (f == 8) { m = new TesteeResponseMsg { Kind = ResponseKind.Discovery, Discovery = DiscoveryResponseMsg.Parse(r.ReadMessage()) }; continue; }
                m = new TesteeResponseMsg { Kind = (ResponseKind)f }; // oneof: the last one wins
                if (f == 5 || f == 6) { m.Text = r.ReadString(); continue; }
                var s = r.ReadMessage();
                while (!s.AtEnd)
                {
                    int g, w; s.ReadTag(out g, out w);
                    int key = g < 16 ? f * 16 + g : 0; // (response member, field)
                    switch (key)
                    {
                        case 1 * 16 + 1: ProtoReader.Expect(w, 0, g); m.HarnessVersion = (uint)s.ReadVarint(); break;
                        case 1 * 16 + 2: ProtoReader.Expect(w, 2, g); m.Name = s.ReadString(); break;
                        case 1 * 16 + 3: ProtoReader.Expect(w, 2, g); m.Version = s.ReadString(); break;
                        case 1 * 16 + 4: ProtoReader.Expect(w, 2, g); m.Protocols.Add(s.ReadString()); break;
                        case 1 * 16 + 5: ProtoReader.Expect(w, 2, g); m.Features.Add(s.ReadString()); break;
                        case 2 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Frames.Add(FrameMsg.Parse(s.ReadMessage())); break;
                        case 2 * 16 + 2: ProtoReader.Expect(w, 2, g); m.Error = ErrorMsg.Parse(s.ReadMessage()); break;
                        case 3 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Encoded = s.ReadBytes(); m.Error = null; break;
                        case 3 * 16 + 2: ProtoReader.Expect(w, 2, g); m.Error = ErrorMsg.Parse(s.ReadMessage()); m.Encoded = null; break;
                        case 4 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Sent.Add(s.ReadBytes()); break;
                        case 4 * 16 + 2: ProtoReader.Expect(w, 2, g); m.Completions.Add(CompletionMsg.Parse(s.ReadMessage())); break;
                        case 4 * 16 + 3: ProtoReader.Expect(w, 2, g); m.Error = ErrorMsg.Parse(s.ReadMessage()); break;
                        case 7 * 16 + 1: ProtoReader.Expect(w, 2, g); m.Written.Add(s.ReadBytes()); break;
                        case 7 * 16 + 2: ProtoReader.Expect(w, 0, g); m.Closed = s.ReadVarint() != 0; break;
                        case 7 * 16 + 3: ProtoReader.Expect(w, 2, g); m.Error = ErrorMsg.Parse(s.ReadMessage()); break;
                        default: s.Skip(w); break;
                    }
                }
            }
            return m;
        }
    }
}

namespace Frameproof.Testee
{
    /// <summary>WebSocketParams (role = 1: 0/1 server, 2 client; max_message = 2).</summary>
    public sealed class WebSocketParamsMsg
    {
        public int Role;
        public ulong MaxMessage;

        public static WebSocketParamsMsg Parse(ProtoReader r)
        {
            var p = new WebSocketParamsMsg();
            while (!r.AtEnd)
            {
                int g, w; r.ReadTag(out g, out w);
                if (g == 1) { ProtoReader.Expect(w, 0, g); p.Role = (int)r.ReadVarint(); }
                else if (g == 2) { ProtoReader.Expect(w, 0, g); p.MaxMessage = r.ReadVarint(); }
                else r.Skip(w);
            }
            return p;
        }

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.Enum(1, Role); w.UInt64(2, MaxMessage);
            return w;
        }

        public WebSocketParams ToParams()
        {
            return new WebSocketParams { Client = Role == 2, MaxMessage = MaxMessage > long.MaxValue ? long.MaxValue : (long)MaxMessage };
        }
    }
}
