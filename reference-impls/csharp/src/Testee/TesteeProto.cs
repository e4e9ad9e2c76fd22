// The testee messages of schemas/testee.proto (harness v1 and v2) in proto3 wire format, through
// the hand-written reader and writer of src/Codec/ProtoWire.cs (why hand-written: see there).
// Field numbers below are copied from schemas/testee.proto. The oneofs marked "one line per
// protocol" there (Codec.params, Frame.header, ProtocolError.detail) hold one member per protocol:
// each protocol's module reads and writes its own (ProtocolModule.OneofMember), found through the
// Registry, so nothing here depends on which protocols there are. tests/TesteeProtoTests.cs checks
// round trips and byte-exact encodings, and tests/TesteeGoldenTests.cs checks every field against
// conformance/testee-golden.json, serialized by the Python protobuf runtime (tools/gen_testee_golden.py).
using System;
using System.Collections.Generic;
using Frameproof.Codec;

namespace Frameproof.Testee
{
    // ---------------------------------------------------------------- messages (schemas/testee.proto)

    /// <summary>The members of the oneofs with one line per protocol: a member of a registered
    /// protocol is read into that protocol's object; a member with a field number reserved for
    /// protocols that no registered protocol has is skipped, its field number kept; a later member of
    /// the same oneof replaces an earlier one, as protobuf parsers do.</summary>
    static class ProtocolOneofs
    {
        /// <summary>Field numbers 4..15 of these oneofs are reserved for protocols (schemas/testee.proto).</summary>
        const int FirstReserved = 4, LastReserved = 15;

        /// <summary>If field <paramref name="field"/> is a member of <paramref name="oneof"/>, reads it
        /// (<paramref name="value"/>: the protocol's object, or null for a protocol this implementation
        /// does not have) and returns true; else reads nothing and returns false.</summary>
        public static bool TryRead(TesteeOneof oneof, int field, int wireType, ProtoReader r, out object value)
        {
            value = null;
            TesteeMember m = Registry.OneofMember(oneof, field);
            if (m == null && (field < FirstReserved || field > LastReserved)) return false;
            ProtoReader.Expect(wireType, 2, field);
            ProtoReader sub = r.ReadMessage();
            if (m != null) value = m.Read(sub);
            return true;
        }

        /// <summary>Writes <paramref name="value"/> as its protocol's member (nothing for null or an
        /// object of no registered protocol's member).</summary>
        public static void Write(TesteeOneof oneof, object value, ProtoWriter w)
        {
            ProtocolModule module;
            TesteeMember m = Registry.OneofMemberHolding(oneof, value, out module);
            if (m == null) return;
            var sub = new ProtoWriter();
            m.Write(value, sub);
            w.Message(m.Field, sub);
        }

        /// <summary>The field number of the member <paramref name="value"/> is written as, or 0.</summary>
        public static int FieldOf(TesteeOneof oneof, object value)
        {
            ProtocolModule module;
            TesteeMember m = Registry.OneofMemberHolding(oneof, value, out module);
            return m == null ? 0 : m.Field;
        }
    }

    public sealed class CodecConfig
    {
        public string Protocol = "";
        public bool HasLimits;
        public ulong MaxPayload;            // Limits.max_payload = 1
        /// <summary>params: the field number of the member given (length_field 3, rpc 4, websocket 5,
        /// ...), 0 if none.</summary>
        public int ParamsField;
        /// <summary>params: the protocol's parameter object (<see cref="CodecSpec.Params"/>), null if
        /// none was given or the member is of a protocol this implementation does not have.</summary>
        public object Params;

        public static CodecConfig Parse(ProtoReader r)
        {
            var c = new CodecConfig();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                object p;
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
                else if (ProtocolOneofs.TryRead(TesteeOneof.Params, f, wt, r, out p)) { c.ParamsField = f; c.Params = p; }
                else r.Skip(wt);
            }
            return c;
        }

        public void WriteTo(ProtoWriter w)
        {
            w.String(1, Protocol);
            if (HasLimits || MaxPayload != 0) { var l = new ProtoWriter(); l.UInt64(1, MaxPayload); w.Message(2, l); }
            ProtocolOneofs.Write(TesteeOneof.Params, Params, w);
        }

        /// <summary>The codec for the registry: the oneof member given becomes the parameters of the
        /// protocol it belongs to.</summary>
        public CodecSpec ToSpec()
        {
            var spec = new CodecSpec { Protocol = Protocol, MaxPayload = MaxPayload > (ulong)long.MaxValue ? long.MaxValue : (long)MaxPayload };
            ProtocolModule owner;
            if (Registry.OneofMemberHolding(TesteeOneof.Params, Params, out owner) != null)
            {
                spec.ParamsKey = owner.ParamsKey;
                spec.Params = Params;
            }
            return spec;
        }
    }

    public sealed class FrameMsg
    {
        public uint Flag;
        public uint Sequence;
        public byte[] Payload = new byte[0];
        /// <summary>header: the field number of the member given (rpc 4, websocket 5, ...), 0 if none.</summary>
        public int HeaderField;
        /// <summary>header: the protocol's header object (<see cref="FrameValue.Header"/>), null if none
        /// was given or the member is of a protocol this implementation does not have.</summary>
        public object Header;

        public static FrameMsg Parse(ProtoReader r)
        {
            var m = new FrameMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                object h;
                if (f == 1) { ProtoReader.Expect(wt, 0, f); m.Flag = (uint)r.ReadVarint(); }
                else if (f == 2) { ProtoReader.Expect(wt, 0, f); m.Sequence = (uint)r.ReadVarint(); }
                else if (f == 3) { ProtoReader.Expect(wt, 2, f); m.Payload = r.ReadBytes(); }
                else if (ProtocolOneofs.TryRead(TesteeOneof.Header, f, wt, r, out h)) { m.HeaderField = f; m.Header = h; }
                else r.Skip(wt);
            }
            return m;
        }

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.UInt32(1, Flag); w.UInt32(2, Sequence); w.Bytes(3, Payload);
            ProtocolOneofs.Write(TesteeOneof.Header, Header, w);
            return w;
        }

        public FrameValue ToValue() { return new FrameValue { Flag = Flag, Sequence = Sequence, Payload = Payload, Header = Header }; }

        public static FrameMsg From(FrameValue v)
        {
            return new FrameMsg { Flag = v.Flag, Sequence = v.Sequence, Payload = v.Payload ?? new byte[0], Header = v.Header,
                HeaderField = ProtocolOneofs.FieldOf(TesteeOneof.Header, v.Header) };
        }
    }

    public sealed class ErrorMsg
    {
        public string Requirement = "";
        public ulong Offset;
        public string Message = "";
        /// <summary>detail: the field number of the member given (rpc 4, websocket 5, ...), 0 if none.</summary>
        public int DetailField;
        /// <summary>detail: the protocol's detail object (<see cref="ProtocolError.Detail"/>), null if
        /// none was given or the member is of a protocol this implementation does not have.</summary>
        public object Detail;

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.String(1, Requirement); w.UInt64(2, Offset); w.String(3, Message);
            ProtocolOneofs.Write(TesteeOneof.Detail, Detail, w);
            return w;
        }

        public static ErrorMsg Parse(ProtoReader r)
        {
            var m = new ErrorMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                object d;
                if (f == 1) { ProtoReader.Expect(wt, 2, f); m.Requirement = r.ReadString(); }
                else if (f == 2) { ProtoReader.Expect(wt, 0, f); m.Offset = r.ReadVarint(); }
                else if (f == 3) { ProtoReader.Expect(wt, 2, f); m.Message = r.ReadString(); }
                else if (ProtocolOneofs.TryRead(TesteeOneof.Detail, f, wt, r, out d)) { m.DetailField = f; m.Detail = d; }
                else r.Skip(wt);
            }
            return m;
        }

        /// <summary>The error with what its protocol says about it on the wire, where it says anything.</summary>
        public static ErrorMsg From(ProtocolError e)
        {
            var m = new ErrorMsg { Requirement = e.Requirement, Offset = (ulong)e.Offset, Message = e.Message ?? "" };
            m.DetailField = ProtocolOneofs.FieldOf(TesteeOneof.Detail, e.Detail);
            if (m.DetailField != 0) m.Detail = e.Detail;
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

    public enum RequestKind { None = 0, Hello = 1, Decode = 2, Encode = 3, Match = 4, Serve = 5, Discovery = 6, LongStream = 7 }

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
        public LongStreamRequestMsg LongStream;           // long stream (field 7, outside the oneof; v3)

        public static TesteeRequestMsg Parse(byte[] data)
        {
            var m = new TesteeRequestMsg();
            DiscoveryRequestMsg discovery = null;
            LongStreamRequestMsg longStream = null;
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
                else if (f == 7 && wt == 2) longStream = LongStreamRequestMsg.Parse(r.ReadMessage());
                else r.Skip(wt);
            }
            // spec/testee.md: a TesteeRequest with no request set is parsed once more as a
            // TesteeDiscoveryRequest (its field 6).
            if (m.Kind == RequestKind.None && discovery != null) m = new TesteeRequestMsg { Kind = RequestKind.Discovery, Discovery = discovery };
            // ... and as a TesteeLongStreamRequest (its field 7).
            if (m.Kind == RequestKind.None && longStream != null) m = new TesteeRequestMsg { Kind = RequestKind.LongStream, LongStream = longStream };
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

    public enum ResponseKind { None = 0, Hello = 1, Decode = 2, Encode = 3, Match = 4, Skipped = 5, RuntimeError = 6, Serve = 7, Discovery = 8, LongStream = 9 }

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
        // long stream (field 9, outside the oneof; v3)
        public LongStreamResponseMsg LongStream;
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
                case ResponseKind.LongStream: w.Message(9, LongStream.ToWriter()); return w.ToArray();
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
