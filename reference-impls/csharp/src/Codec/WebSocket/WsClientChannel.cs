using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>
    /// The load client's websocket side of one connection (reference-impls/README.md, "websocket"):
    /// the opening handshake with a random key (WS-HS-1, the 101 and Sec-WebSocket-Accept checked),
    /// then each message as one FIN frame masked with a fresh key (WS-MASK-3/4), binary or text by
    /// variant; echoes matched FIFO (<see cref="FifoMatcher"/>) with their opcode checked; at the end
    /// a close frame with code 1000, answered by the server's close.
    /// </summary>
    public sealed class WsClientChannel : ClientChannel, IWsFrameHandler, IMatchObserver
    {
        readonly WebSocketCodec _codec;
        readonly IClientObserver _observer;
        readonly FifoMatcher _matcher;
        readonly WsDecoder _decoder;
        readonly MaskKeySource _keys = new MaskKeySource();
        readonly byte[] _key = new byte[4];
        readonly byte _opcode;
        string _handshakeKey;
        bool _peerClosed;
        byte[] _msg;             // a fragmented echo being reassembled (the server sends none)
        int _msgLen;
        byte _msgOp;

        public WsClientChannel(WebSocketCodec codec, IClientObserver observer, long timeoutMs, bool text)
        {
            _codec = codec;
            _observer = observer;
            _opcode = text ? WsOpcodes.Text : WsOpcodes.Binary;
            _matcher = new FifoMatcher(this, timeoutMs);
            _decoder = new WsDecoder(false, long.MaxValue, long.MaxValue);
        }

        public override byte[] OpeningRequest(string host)
        {
            return Encoding.ASCII.GetBytes(WsHandshake.Request(host, _codec.Path ?? "/", out _handshakeKey, _codec.Subprotocol));
        }

        public override int AcceptOpening(ReadOnlySpan<byte> received, out string error)
        {
            error = null;
            int end = WsHandshake.HeadEnd(received);
            if (end < 0)
            {
                if (received.Length >= WsHandshake.MaxHead) { error = "answer head longer than " + WsHandshake.MaxHead + " bytes"; return -1; }
                return 0;
            }
            string head = Encoding.GetEncoding("iso-8859-1").GetString(received.Slice(0, end - 4).ToArray());
            error = WsHandshake.CheckAnswer(head, _handshakeKey, _codec.Subprotocol);
            return error == null ? end : -1;
        }

        int Encode(byte opcode, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            _keys.Next(_key);
            int need = WsEncoder.HeaderLength(payload.Length, true) + payload.Length;
            int n = WsEncoder.Write(true, opcode, _key, payload, output.Reserve(need));
            output.Commit(n);
            return n;
        }

        public override bool TryRequest(RequestId id, object state, long nowMs, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            byte seq;
            if (_peerClosed || !_codec.CheckPayload(payload.Length, out err) || !_matcher.TryRequest(id, state, nowMs, out seq)) return false;
            Encode(_opcode, payload, output);
            return true;
        }

        public override bool EncodeUnmatched(ReadOnlySpan<byte> payload, SendBuffer output)
        {
            ProtocolError err;
            if (!_codec.CheckPayload(payload.Length, out err)) return false;
            Encode(_opcode, payload, output);
            return true;
        }

        public override bool Feed(ReadOnlySpan<byte> data) { return _decoder.Feed(data, this) || !_decoder.Failed; }

        public bool OnFrame(ref WsFrame f)
        {
            FramesReceived++;
            switch (f.Opcode)
            {
                case WsOpcodes.Close: _peerClosed = true; return false;
                case WsOpcodes.Ping: case WsOpcodes.Pong: return true;   // the echo server sends neither
            }
            if (f.Opcode != WsOpcodes.Continuation) { _msgOp = f.Opcode; _msgLen = 0; }
            if (f.Fin && f.Opcode != WsOpcodes.Continuation) { _matcher.OnFrame(_msgOp, 0, f.Payload); return true; }
            if (_msg == null || _msgLen + f.Payload.Length > _msg.Length) Array.Resize(ref _msg, Math.Max(4096, (_msgLen + f.Payload.Length) * 2));
            f.Payload.CopyTo(new Span<byte>(_msg, _msgLen, f.Payload.Length));
            _msgLen += f.Payload.Length;
            if (f.Fin) { _matcher.OnFrame(_msgOp, 0, new ReadOnlySpan<byte>(_msg, 0, _msgLen)); _msgLen = 0; }
            return true;
        }

        // IMatchObserver of the FIFO matcher: the opcode is checked here, the payload by the load client.
        public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            if (flag != _opcode) _observer.OnRejectedReply(id, state, "echo has opcode " + flag + ", the request " + _opcode);
            else _observer.OnReply(id, state, flag, sequence, payload);
        }
        public void OnTimeout(RequestId id, object state) { _observer.OnTimeout(id, state); }
        public void OnFailed(RequestId id, object state) { _observer.OnFailed(id, state); }
        public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { _observer.OnUnmatched(flag, sequence, payload); }

        public override bool Finish() { return _decoder.Finish(); }
        public override ProtocolError Error { get { return _decoder.Error; } }
        public override void Expire(long nowMs) { _matcher.Expire(nowMs); }
        public override void FailAll() { _matcher.FailAll(); }
        public override bool Failed { get { return _matcher.Failed; } }
        public override int PendingCount { get { return _matcher.PendingCount; } }

        /// <summary>A close frame with code 1000 (normal closure), masked.</summary>
        public override byte[] ClosingFrame()
        {
            var o = new SendBuffer();
            Encode(WsOpcodes.Close, new byte[] { 0x03, 0xE8 }, o);
            byte[] r = new ReadOnlySpan<byte>(o.Buffer, 0, o.Length).ToArray();
            o.Dispose();
            return r;
        }

        public override bool PeerClosed { get { return _peerClosed; } }

        public override void Dispose()
        {
            _decoder.Dispose();
            _keys.Dispose();
        }
    }
}
