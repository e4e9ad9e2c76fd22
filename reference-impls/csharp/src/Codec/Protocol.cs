using System;
using System.Buffers;

namespace Frameproof.Codec
{
    /// <summary>
    /// A protocol name and its configuration, as the codec JSON (<c>--codec</c>, the vectors' "codec")
    /// and the testee's <c>Codec</c> message carry it. <see cref="Params"/> is the protocol's own
    /// parameter object (<see cref="ProtocolModule.ParamsKey"/>), or null for its defaults.
    /// </summary>
    public sealed class CodecSpec
    {
        public string Protocol;
        /// <summary>limits.max_payload; 0 = the spec default.</summary>
        public long MaxPayload;
        /// <summary>JSON key / proto oneof member the parameters came under (null: none given).</summary>
        public string ParamsKey;
        /// <summary>The protocol's parameters (e.g. a <see cref="LengthFieldProfile"/>), or null.</summary>
        public object Params;
        /// <summary>The codec JSON object as given, re-serialized compactly (for reports).</summary>
        public string Json;

        public static CodecSpec Named(string protocol)
        {
            return new CodecSpec { Protocol = protocol, Json = "{\"protocol\": " + CodecJson.Quote(protocol) + "}" };
        }
    }

    /// <summary>
    /// One protocol's entry in the <see cref="Registry"/>: its name, how its parameters are read from
    /// the codec JSON, and a factory for configured codecs.
    /// </summary>
    public abstract partial class ProtocolModule
    {
        public abstract string Name { get; }

        /// <summary>The codec JSON key of this protocol's parameters (the same name as the member of
        /// the testee's <c>Codec.params</c> oneof), or null if it takes none.</summary>
        public virtual string ParamsKey { get { return null; } }

        /// <summary>False for protocols whose limit travels in their own parameters (rpc's max_body):
        /// then "limits" in the codec JSON is a usage error.</summary>
        public virtual bool TakesLimits { get { return true; } }

        /// <summary>Reads the parameter object given under <see cref="ParamsKey"/>. Throws
        /// <see cref="FormatException"/> for unknown keys or values of the wrong type.</summary>
        public virtual object ParseParams(JsonValue value)
        {
            throw new FormatException("protocol '" + Name + "' takes no parameters");
        }

        /// <summary>A configured codec. Never throws for a bad configuration: the codec reports it
        /// through <see cref="FrameCodec.ConfigError"/>.</summary>
        public abstract FrameCodec Create(CodecSpec spec);
    }

    /// <summary>
    /// A protocol with its configuration applied: the decoder, the encoder, the client side (request
    /// encoding and the matcher) and the server side (the echo session). Programs and the testee use
    /// only this class; everything protocol-specific lives in the protocol's module.
    /// Frames are (flag, sequence, payload): standard's header; protocols without one use 0, 0.
    /// </summary>
    public abstract partial class FrameCodec
    {
        public readonly CodecSpec Spec;
        /// <summary>The effective maximum payload (the spec default for 0).</summary>
        public readonly long MaxPayload;

        protected FrameCodec(CodecSpec spec)
        {
            Spec = spec;
            MaxPayload = Limits.Effective(spec.MaxPayload);
        }

        public string Protocol { get { return Spec.Protocol; } }

        /// <summary>The largest frame (or message) the server accepts: a memory budget below it is a
        /// usage error (*-RES-1). Default: the maximum payload.</summary>
        public virtual long LargestInput { get { return MaxPayload; } }

        // ---------------------------------------------------------------- configuration

        /// <summary>Set when the configuration itself is invalid (e.g. LF-FMT-3, offset 0): nothing can
        /// be decoded or encoded.</summary>
        public virtual ProtocolError ConfigError { get { return default(ProtocolError); } }

        /// <summary>Why this implementation's encoder cannot serve this (valid) configuration, or null.
        /// The testee answers <c>skipped</c>; the programs refuse it as a usage error.</summary>
        public virtual string EncoderUnsupported { get { return null; } }

        // ---------------------------------------------------------------- decoder

        /// <summary>A fresh streaming decoder (the configuration must be valid).</summary>
        public abstract FrameDecoder NewDecoder();

        // ---------------------------------------------------------------- encoder

        /// <summary>The encoder's checks of a payload length, in the spec's order.</summary>
        public abstract bool CheckPayload(long payloadLength, out ProtocolError error);

        /// <summary>Bytes needed to encode a frame with a payload of this length.</summary>
        public abstract int EncodedLength(int payloadLength);

        /// <summary>Writes a frame with this header (written verbatim where the protocol has one)
        /// into dest (EncodedLength bytes); returns the bytes written. Checked by the caller.</summary>
        public abstract int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest);

        /// <summary>The same frame into <paramref name="dest"/> at <paramref name="offset"/>; byte-level codecs
        /// override it to skip building a destination Span (Mono: a few ns a frame).</summary>
        public virtual int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return Write(flag, sequence, payload, new Span<byte>(dest, offset, dest.Length - offset));
        }

        /// <summary>Why a testee frame header cannot be encoded (e.g. a value above one byte), or null.</summary>
        public virtual string UnsupportedHeader(uint flag, uint sequence) { return null; }

        /// <summary>Allocating convenience: checks, then encodes; throws <see cref="FrameproofException"/>.</summary>
        public byte[] Encode(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            ProtocolError err;
            if (!CheckPayload(payload.Length, out err)) throw new FrameproofException(err);
            var r = new byte[EncodedLength(payload.Length)];
            Write(flag, sequence, payload, r);
            return r;
        }

        // ---------------------------------------------------------------- client

        /// <summary>A matcher for one client connection.</summary>
        public abstract IRequestMatcher NewMatcher(IMatchObserver observer, long timeoutMs);

        /// <summary>Writes a request frame carrying the sequence the matcher assigned.</summary>
        public abstract int WriteRequest(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest);

        /// <summary>Writes a one-way message (no reply expected).</summary>
        public abstract int WriteOneWay(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest);

        /// <summary>Most requests one connection may have in flight (load client's pipelined window).</summary>
        public abstract int MaxInFlight { get; }

        /// <summary>The load client's default batch in <c>--mode batched</c> (concurrent requests
        /// awaited before the next round): the protocol's own where it declares one, else 256, the
        /// benchmarks' default pipelined window.</summary>
        public virtual int DefaultBatch { get { return 256; } }

        // ---------------------------------------------------------------- server

        /// <summary>A server-side echo session for one connection (the configuration must be valid).
        /// With <paramref name="sink"/>, frames are decoded and counted, nothing is written.</summary>
        public abstract ServerSession NewSession(bool sink);

        /// <summary>The server session of a named endpoint (the testee's <c>serve</c>; "" = the
        /// default), or null if the protocol has no such endpoint. Protocols with one endpoint take
        /// only "".</summary>
        public virtual ServerSession NewSession(string endpoint, bool sink)
        {
            return endpoint == "" ? NewSession(sink) : null;
        }

        // ---------------------------------------------------------------- typed frames

        /// <summary>The whole-stream operations on typed frames for protocols whose frames carry more
        /// than (flag, sequence, payload), or null (the testee then uses the decoder and matcher).</summary>
        public virtual ITypedFrames Typed { get { return null; } }

        // ---------------------------------------------------------------- load client

        /// <summary>The kinds of request the load client can send (<c>--variant</c>); the first is the
        /// default. Protocols with one kind: "default".</summary>
        public virtual string[] LoadVariants { get { return new[] { "default" }; } }

        /// <summary>The load client's side of one connection, sending requests of variant
        /// <paramref name="variant"/> (an index into <see cref="LoadVariants"/>).</summary>
        public virtual ClientChannel NewClientChannel(IClientObserver observer, long timeoutMs, int variant)
        {
            return new ByteLevelChannel(this, observer, timeoutMs);
        }

        /// <summary>The load payload of request <paramref name="index"/> for a variant (default: the
        /// index and a pattern, <see cref="Payloads.Fill"/>).</summary>
        public virtual void FillLoadPayload(int variant, long index, Span<byte> dst) { Payloads.Fill(index, dst); }

        /// <summary>Why the load client must not count a matched reply with this flag as verified, or null
        /// (default: no flag to check; standard: the echo's flag is 0x81, STD-ECHO-1).</summary>
        public virtual string ReplyProblem(byte flag) { return null; }

        /// <summary>Checks an echoed load payload against the one <see cref="FillLoadPayload"/> made.</summary>
        public virtual bool VerifyLoadPayload(int variant, long index, int length, ReadOnlySpan<byte> payload)
        {
            return Payloads.Verify(index, length, payload);
        }

        /// <summary>Whether a reply that matches no pending request is an error of the load client's
        /// report and counts as received (default: it is). rpc: it is not; an unmatched RESPONSE completes
        /// nothing and is not a connection error (RPC-MATCH-2), like a frame of another type (RPC-MATCH-4).</summary>
        public virtual bool UnmatchedIsLoadError { get { return true; } }

        /// <summary>The stream client of <c>--mode stream</c>, or null if the protocol has no streams.</summary>
        public virtual StreamClient NewStreamClient(int variant) { return null; }
    }

    /// <summary>
    /// The server side of one connection, without I/O: bytes in (<see cref="Receive"/>,
    /// <see cref="EndOfInput"/>), bytes out (<see cref="Output"/>, appended until
    /// <see cref="ClearOutput"/>), closed or not, and the classified error. The network server is a
    /// loop around it; the testee's <c>serve</c> request drives it offline. The output buffer is
    /// rented from <see cref="ArrayPool{T}.Shared"/> when output is written and given back when it has
    /// been sent (an idle connection holds none, *-RES-1); a session allocates nothing per frame.
    /// </summary>
    public abstract class ServerSession : IDisposable
    {
        const int InitialOutput = 64 * 1024 + 64;
        static readonly byte[] NoOutput = new byte[0];
        byte[] _out = NoOutput;
        int _outLen;
        ProtocolError _error;
        bool _closed;

        /// <summary>Frames received and their payload bytes (server counters).</summary>
        public long Frames, PayloadBytes;

        /// <summary>The session has closed the connection (after the output written so far).</summary>
        public bool Closed { get { return _closed; } }
        /// <summary>Why it closed, if the input broke a requirement.</summary>
        public ProtocolError Error { get { return _error; } }

        /// <summary>Feeds bytes received from the client. Returns false once the session has closed.</summary>
        public abstract bool Receive(ReadOnlySpan<byte> data);

        /// <summary>The client's EOF (half-close): the session writes what it still owes and closes.</summary>
        public abstract void EndOfInput();

        /// <summary>Memory held for what is unfinished (*-RES-1): a partial opening handshake, frame or
        /// message; at least 1 while anything is unfinished (the frame timeout applies, *-RES-4), 0
        /// otherwise. The output is not included (<see cref="OutputLength"/>).</summary>
        public virtual long HeldInput { get { return 0; } }

        /// <summary>Memory a connection holds between messages, not unfinished input (no frame timeout
        /// applies): e.g. websocket's permessage-deflate state (WSD-LIM-2). Counted in the memory budget.</summary>
        public virtual long HeldState { get { return 0; } }

        /// <summary>The protocol's opening handshake is still being read (it must complete within the
        /// idle timeout, counted from the accept).</summary>
        public virtual bool Opening { get { return false; } }

        public byte[] OutputBuffer { get { return _out; } }
        public int OutputLength { get { return _outLen; } }
        public ReadOnlySpan<byte> Output { get { return new ReadOnlySpan<byte>(_out, 0, _outLen); } }

        /// <summary>Forgets the output (it has been sent) and gives its buffer back to the pool.</summary>
        public void ClearOutput()
        {
            _outLen = 0;
            if (_out.Length > 0)
            {
                ByteBuffers.Return(_out);
                _out = NoOutput;
            }
        }

        /// <summary>Space for <paramref name="length"/> more output bytes; follow with <see cref="Commit"/>.</summary>
        protected Span<byte> Reserve(int length)
        {
            int at = ReserveAt(length);   // first: it may replace _out
            return new Span<byte>(_out, at, length);
        }

        /// <summary>Space for <paramref name="length"/> more output bytes at the returned offset of
        /// <see cref="OutputBuffer"/> (read it after this call: the buffer may have grown); follow with
        /// <see cref="Commit"/>.</summary>
        protected int ReserveAt(int length)
        {
            if (_outLen + length > _out.Length)
            {
                byte[] nb = ByteBuffers.Rent(Math.Max(Math.Max(_out.Length * 2, InitialOutput), _outLen + length));
                Buffer.BlockCopy(_out, 0, nb, 0, _outLen);
                if (_out.Length > 0) ByteBuffers.Return(_out);
                _out = nb;
            }
            return _outLen;
        }

        protected void Commit(int written) { _outLen += written; }

        protected void Close(ProtocolError error)
        {
            if (_closed) return;
            _closed = true;
            _error = error;
        }

        public virtual void Dispose()
        {
            if (_out != null && _out.Length > 0) ByteBuffers.Return(_out);
            _out = null;
        }
    }

    /// <summary>
    /// Echo session of a protocol whose server answers frame by frame (standard, length-field):
    /// every complete frame is handed to <see cref="Reply"/> as soon as the bytes that complete it
    /// arrive; a decoding error closes after the replies to the frames before it; EOF closes, with
    /// the truncation error if a frame was left unfinished.
    /// </summary>
    public abstract class FrameEchoSession : ServerSession, IFrameHandler
    {
        readonly FrameDecoder _decoder;
        readonly bool _sink;

        protected FrameEchoSession(FrameDecoder decoder, bool sink)
        {
            _decoder = decoder;
            _sink = sink;
        }

        public override bool Receive(ReadOnlySpan<byte> data)
        {
            if (Closed) return false;
            if (!_decoder.Feed(data, this))
            {
                Close(_decoder.Error);
                return false;
            }
            return true;
        }

        public override void EndOfInput()
        {
            if (Closed) return;
            Close(_decoder.Finish() ? default(ProtocolError) : _decoder.Error);
        }

        public override long HeldInput { get { return Closed ? 0 : _decoder.HeldBytes; } }

        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            Frames++;
            PayloadBytes += payload.Length;
            if (!_sink) Reply(flag, sequence, payload);
        }

        /// <summary>Writes the reply to one frame, if the protocol answers it (use Reserve/Commit).</summary>
        protected abstract void Reply(byte flag, byte sequence, ReadOnlySpan<byte> payload);

        public override void Dispose()
        {
            _decoder.Dispose();
            base.Dispose();
        }
    }
}
