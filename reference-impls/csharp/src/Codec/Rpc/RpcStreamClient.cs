using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>The load client's stream side (spec/rpc.md §10): STREAM_INIT to frameproof.Echo/echo
    /// with the next id of the connection's counter (shared with requests, RPC-ID-1), DATA and END with
    /// the stream's id; the stream endpoint's frames classified.</summary>
    public sealed class RpcStreamClient : StreamClient, IRpcFrameHandler
    {
        readonly RpcDecoder _decoder;
        readonly long _maxBody;
        readonly Queue<KeyValuePair<long, byte[]>> _events = new Queue<KeyValuePair<long, byte[]>>();
        readonly Queue<StreamEventKind> _kinds = new Queue<StreamEventKind>();
        uint _next;

        public RpcStreamClient(long maxBody)
        {
            _maxBody = maxBody;
            _decoder = new RpcDecoder(maxBody);
        }

        public override long Open(SendBuffer output)
        {
            uint sid = _next++;
            int n = RpcTypes.HeaderLength + 4 + RpcTypes.EchoService.Length + RpcTypes.EchoMethod.Length;
            output.Commit(RpcEncoder.Write(RpcTypes.StreamInit, 0, 0, sid, 0, RpcTypes.EchoService, RpcTypes.EchoMethod, ReadOnlySpan<byte>.Empty, output.Reserve(n)));
            return sid;
        }

        public override bool Data(long streamId, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            if (payload.Length > _maxBody) return false;
            output.Commit(RpcEncoder.WriteSimple(RpcTypes.StreamData, (uint)streamId, payload, output.Reserve(RpcTypes.HeaderLength + payload.Length)));
            return true;
        }

        public override void End(long streamId, SendBuffer output)
        {
            output.Commit(RpcEncoder.WriteSimple(RpcTypes.StreamEnd, (uint)streamId, ReadOnlySpan<byte>.Empty, output.Reserve(RpcTypes.HeaderLength)));
        }

        public override bool Feed(ReadOnlySpan<byte> data) { return _decoder.Feed(data, this); }
        public override ProtocolError Error { get { return _decoder.Error; } }

        public bool OnFrame(ref RpcFrame f)
        {
            StreamEventKind k = f.Type == RpcTypes.StreamInitAck ? StreamEventKind.Ack : f.Type == RpcTypes.StreamData ? StreamEventKind.Data
                : f.Type == RpcTypes.StreamEnd ? StreamEventKind.End : StreamEventKind.Other;
            _kinds.Enqueue(k);
            _events.Enqueue(new KeyValuePair<long, byte[]>(f.Id, k == StreamEventKind.Data ? f.Payload.ToArray() : null));
            return true;
        }

        public override bool TryTake(out StreamEventKind kind, out long id, out byte[] payload)
        {
            kind = StreamEventKind.Other; id = 0; payload = null;
            if (_kinds.Count == 0) return false;
            kind = _kinds.Dequeue();
            KeyValuePair<long, byte[]> e = _events.Dequeue();
            id = e.Key;
            payload = e.Value;
            return true;
        }

        public override void Dispose() { _decoder.Dispose(); }
    }
}
