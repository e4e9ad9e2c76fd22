using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>
    /// The load client's rpc side of one connection: REQUESTs to frameproof.Echo/echo with the
    /// variant's call mode and END_STREAM, ids from the per-connection counter (RPC-ID-1/2), RESPONSEs
    /// matched by id (RPC-MATCH-1) and checked: error code 0, flags = mode | END_STREAM (RPC-MODE-2).
    /// </summary>
    public sealed class RpcClientChannel : ClientChannel, IRpcMatchObserver
    {
        readonly RpcCodec _codec;
        readonly IClientObserver _observer;
        readonly RpcMatcher _matcher;
        readonly RpcDecoder _decoder;
        readonly byte _flags;
        uint _unmatchedId;

        public RpcClientChannel(RpcCodec codec, IClientObserver observer, long timeoutMs, int mode)
        {
            _codec = codec;
            _observer = observer;
            _matcher = new RpcMatcher(this, timeoutMs);
            _decoder = new RpcDecoder(codec.MaxBody);
            _flags = (byte)((mode & RpcTypes.ModeMask) | RpcTypes.EndStream);
        }

        public override bool TryRequest(RequestId id, object state, long nowMs, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            uint rid;
            if (!_codec.CheckPayload(payload.Length, out err) || !_matcher.TryNextId(out rid)) return false;
            output.Commit(RpcCodec.WriteEchoRequest(rid, _flags, payload, output.Reserve(_codec.EncodedLength(payload.Length))));
            _matcher.Sent(rid, id.Value, state, nowMs);
            return true;
        }

        public override bool EncodeUnmatched(ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            if (!_codec.CheckPayload(payload.Length, out err)) return false;
            output.Commit(RpcCodec.WriteEchoRequest(_unmatchedId++, _flags, payload, output.Reserve(_codec.EncodedLength(payload.Length))));
            return true;
        }

        sealed class Counter : IRpcFrameHandler
        {
            public RpcClientChannel C;
            public bool OnFrame(ref RpcFrame f)
            {
                C.FramesReceived++;
                return C._matcher.OnFrame(ref f);
            }
        }

        Counter _counter;

        public override bool Feed(ReadOnlySpan<byte> data)
        {
            return _decoder.Feed(data, _counter ?? (_counter = new Counter { C = this })) || !_decoder.Failed;
        }

        public override bool Finish() { return _decoder.Finish(); }
        public override ProtocolError Error { get { return _decoder.Error; } }
        public override void Expire(long nowMs) { _matcher.Expire(nowMs); }
        public override void FailAll() { _matcher.FailAll(); }
        public override bool Failed { get { return _matcher.Failed; } }
        public override int PendingCount { get { return _matcher.PendingCount; } }
        public override void Dispose() { _decoder.Dispose(); }

        public void OnReply(long request, object state, ref RpcFrame f)
        {
            if (f.ErrorCode != 0) _observer.OnRejectedReply(new RequestId(request), state, "RESPONSE id " + f.Id + " has error code " + f.ErrorCode);
            else if (f.Flags != _flags) _observer.OnRejectedReply(new RequestId(request), state, "RESPONSE id " + f.Id + " has flags 0x" + f.Flags.ToString("x2") + ", expected 0x" + _flags.ToString("x2") + " (RPC-MODE-2)");
            else _observer.OnReply(new RequestId(request), state, f.Flags, 0, f.Payload);
        }

        public void OnTimeout(long request, object state) { _observer.OnTimeout(new RequestId(request), state); }
        public void OnFailed(long request, object state) { _observer.OnFailed(new RequestId(request), state); }
        public void OnUnmatched(ref RpcFrame f) { _observer.OnUnmatched(f.Flags, (byte)f.Id, f.Payload); }
    }
}
