using System;
using System.Buffers;

namespace Frameproof.Codec
{
    /// <summary>A growable output buffer rented from <see cref="ArrayPool{T}.Shared"/>.</summary>
    public sealed class SendBuffer : IDisposable
    {
        const int Initial = 64 * 1024;
        byte[] _buf = ByteBuffers.Rent(Initial);
        int _len;

        public byte[] Buffer { get { return _buf; } }
        public int Length { get { return _len; } }

        /// <summary>Space for <paramref name="n"/> more bytes; follow with <see cref="Commit"/>.</summary>
        public Span<byte> Reserve(int n)
        {
            if (_len + n > _buf.Length)
            {
                byte[] nb = ByteBuffers.Rent(Math.Max(_buf.Length * 2, _len + n));
                System.Buffer.BlockCopy(_buf, 0, nb, 0, _len);
                ByteBuffers.Return(_buf);
                _buf = nb;
            }
            return new Span<byte>(_buf, _len, n);
        }

        public void Commit(int n) { _len += n; }

        public void Append(ReadOnlySpan<byte> data)
        {
            data.CopyTo(Reserve(data.Length));
            Commit(data.Length);
        }

        /// <summary>Forgets the content (it has been sent); gives an oversized buffer back.</summary>
        public void Clear()
        {
            _len = 0;
            if (_buf.Length > 1024 * 1024)
            {
                ByteBuffers.Return(_buf);
                _buf = ByteBuffers.Rent(Initial);
            }
        }

        public void Dispose()
        {
            if (_buf == null) return;
            ByteBuffers.Return(_buf);
            _buf = null;
        }
    }

    /// <summary>The load client's view of match outcomes: <see cref="IMatchObserver"/> plus replies a
    /// protocol's client side rejects from their header (e.g. an rpc RESPONSE with an error code).</summary>
    public interface IClientObserver : IMatchObserver
    {
        void OnRejectedReply(RequestId id, object state, string why);
    }

    /// <summary>
    /// The client side of one connection for the load client, protocol-specific behind a common
    /// face: the opening handshake (if the protocol has one), request encoding with the
    /// <c>--variant</c>, the reply decoder and matcher, and the closing handshake. Called under the
    /// caller's lock, one connection per channel.
    /// </summary>
    public abstract class ClientChannel : IDisposable
    {
        /// <summary>Frames decoded from the peer.</summary>
        public long FramesReceived;

        /// <summary>Registers a request and encodes it into <paramref name="output"/>. False if the
        /// send is refused (nothing written).</summary>
        public abstract bool TryRequest(RequestId id, object state, long nowMs, ReadOnlySpan<byte> payload, SendBuffer output);

        /// <summary>Encodes a request that expects no reply (receive mode, the server a sink).</summary>
        public abstract bool EncodeUnmatched(ReadOnlySpan<byte> payload, SendBuffer output);

        /// <summary>Decodes bytes from the peer and completes requests. False once the stream is rejected.</summary>
        public abstract bool Feed(ReadOnlySpan<byte> data);

        /// <summary>The peer's EOF. False if it ended inside a frame.</summary>
        public abstract bool Finish();

        public abstract ProtocolError Error { get; }
        public abstract void Expire(long nowMs);
        public abstract void FailAll();
        public abstract bool Failed { get; }
        public abstract int PendingCount { get; }

        /// <summary>The opening handshake's request (sent right after connecting), or null.</summary>
        public virtual byte[] OpeningRequest(string host) { return null; }

        /// <summary>Reads the opening handshake's answer from the bytes received so far: the number of
        /// bytes it takes (the rest are frames), 0 if more are needed, or -1 with
        /// <paramref name="error"/> if the handshake failed.</summary>
        public virtual int AcceptOpening(ReadOnlySpan<byte> received, out string error) { error = null; return 0; }

        /// <summary>The closing handshake's frame (sent when the run is over), or null.</summary>
        public virtual byte[] ClosingFrame() { return null; }

        /// <summary>True once the peer's answer to <see cref="ClosingFrame"/> has been received.</summary>
        public virtual bool PeerClosed { get { return false; } }

        public virtual void Dispose() { }
    }

    /// <summary>The channel of a protocol whose frames are (flag, sequence, payload): its
    /// <see cref="FrameDecoder"/>, its <see cref="IRequestMatcher"/> and <see cref="FrameCodec.WriteRequest"/>.</summary>
    public sealed class ByteLevelChannel : ClientChannel, IFrameHandler, IMatchObserver
    {
        readonly FrameCodec _codec;
        readonly FrameDecoder _decoder;
        readonly IRequestMatcher _matcher;
        readonly IMatchObserver _observer;
        readonly IClientObserver _client;
        byte _unmatchedSeq;

        public ByteLevelChannel(FrameCodec codec, IMatchObserver observer, long timeoutMs)
        {
            _codec = codec;
            _decoder = codec.NewDecoder();
            _observer = observer;
            _client = observer as IClientObserver;
            // the load client's replies pass the protocol's reply check first (FrameCodec.ReplyProblem)
            _matcher = codec.NewMatcher(_client != null ? this : observer, timeoutMs);
        }

        // IMatchObserver, for a load client: a matched reply the protocol would not send is rejected
        // (standard: flag 0x81, STD-ECHO-1), as the Rust, C++ and Python load clients reject it
        public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            string why = _codec.ReplyProblem(flag);
            if (why != null) _client.OnRejectedReply(id, state, why);
            else _observer.OnReply(id, state, flag, sequence, payload);
        }

        public void OnTimeout(RequestId id, object state) { _observer.OnTimeout(id, state); }
        public void OnFailed(RequestId id, object state) { _observer.OnFailed(id, state); }
        public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { _observer.OnUnmatched(flag, sequence, payload); }

        public override bool TryRequest(RequestId id, object state, long nowMs, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            byte seq;
            if (!_codec.CheckPayload(payload.Length, out err) || !_matcher.TryRequest(id, state, nowMs, out seq)) return false;
            int need = _codec.EncodedLength(payload.Length);
            output.Commit(_codec.WriteRequest(seq, payload, output.Reserve(need)));
            return true;
        }

        /// <summary>Takes the next sequence number of a counter of its own (the server is a sink).</summary>
        public override bool EncodeUnmatched(ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            if (!_codec.CheckPayload(payload.Length, out err)) return false;
            _unmatchedSeq = unchecked((byte)(_unmatchedSeq + 1));
            int need = _codec.EncodedLength(payload.Length);
            output.Commit(_codec.WriteRequest(_unmatchedSeq, payload, output.Reserve(need)));
            return true;
        }

        public override bool Feed(ReadOnlySpan<byte> data) { return _decoder.Feed(data, this); }

        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            FramesReceived++;
            _matcher.OnFrame(flag, sequence, payload);
        }

        public override bool Finish() { return _decoder.Finish(); }
        public override ProtocolError Error { get { return _decoder.Error; } }
        public override void Expire(long nowMs) { _matcher.Expire(nowMs); }
        public override void FailAll() { _matcher.FailAll(); }
        public override bool Failed { get { return _matcher.Failed; } }
        public override int PendingCount { get { return _matcher.PendingCount; } }
        public override void Dispose() { _decoder.Dispose(); }
    }

    public enum StreamEventKind { Ack, Data, End, Other }

    /// <summary>
    /// The client side of one connection in <c>--mode stream</c> (protocols with streams): frames to
    /// open a stream, send data and end it, and the peer's frames classified. Strictly sequential:
    /// the load client writes, then reads until it has the answer it waits for.
    /// </summary>
    public abstract class StreamClient : IDisposable
    {
        /// <summary>Writes the frame that opens the next stream; returns its id.</summary>
        public abstract long Open(SendBuffer output);
        public abstract bool Data(long streamId, ReadOnlySpan<byte> payload, SendBuffer output);
        public abstract void End(long streamId, SendBuffer output);

        /// <summary>Decodes bytes from the peer; each frame is queued as an event. False once rejected.</summary>
        public abstract bool Feed(ReadOnlySpan<byte> data);
        public abstract ProtocolError Error { get; }

        /// <summary>The next frame received: its kind, id and (Data) payload.</summary>
        public abstract bool TryTake(out StreamEventKind kind, out long id, out byte[] payload);

        public virtual void Dispose() { }
    }
}
