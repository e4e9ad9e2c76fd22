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
    /// a close frame with code 1000, answered by the server's close. With websocket.permessage_deflate
    /// the handshake offers permessage-deflate (<see cref="WsDeflateNegotiation.ClientOffer"/>), a
    /// response WSD-NEG-5 refuses is an error (nothing is sent), and once agreed each request is sent
    /// compressed (RSV1; uncompressed where the client is held to 8 window bits, and where the compressed
    /// payload would be longer than the request, WSD-FRM-3) and each compressed echo
    /// is inflated within websocket.max_message (<see cref="PerMessageDeflate"/>, client role) before it
    /// is matched and verified.
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
        readonly DeflateParams _offer;   // the permessage-deflate offer, or null
        PerMessageDeflate _pmd;          // the agreement's state, or null
        readonly NativeBuffer _inflated = new NativeBuffer();   // the compressed echo in progress, inflated
        int _inflatedLen;
        bool _msgCompressed;
        ProtocolError _error;            // an echo that does not inflate (WSD-CMP-3, WSD-LIM-1)

        public WsClientChannel(WebSocketCodec codec, IClientObserver observer, long timeoutMs, bool text)
        {
            _codec = codec;
            _observer = observer;
            _opcode = text ? WsOpcodes.Text : WsOpcodes.Binary;
            _matcher = new FifoMatcher(this, timeoutMs);
            _decoder = new WsDecoder(false, long.MaxValue, long.MaxValue);
            if (codec.PermessageDeflate) _offer = WsDeflateNegotiation.ClientOffer();
        }

        public override byte[] OpeningRequest(string host)
        {
            return Encoding.ASCII.GetBytes(WsHandshake.Request(host, _codec.Path ?? "/", out _handshakeKey, _codec.Subprotocol, _offer));
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
            DeflateParams agreed;
            bool failConnection;
            error = WsHandshake.CheckAnswer(head, _handshakeKey, _codec.Subprotocol, _offer, out agreed, out failConnection);
            if (error != null) return -1;
            if (agreed != null)
            {
                _pmd = new PerMessageDeflate(agreed, _codec.MaxMessage, true);
                _decoder.AllowRsv1 = true;
            }
            return end;
        }

        /// <summary>One masked FIN frame; a data frame compressed (RSV1) once permessage-deflate was agreed.</summary>
        int Encode(byte opcode, ReadOnlySpan<byte> payload, SendBuffer output)
        {
            bool compress = _pmd != null && _pmd.Compresses && !WsOpcodes.IsControl(opcode);
            // uncompressed, RSV1 clear, where compressing would make it longer (random bytes, WSD-FRM-3)
            if (compress) payload = _pmd.Payload(payload, out compress);
            _keys.Next(_key);
            int need = WsEncoder.HeaderLength(payload.Length, true) + payload.Length;
            Span<byte> d = output.Reserve(need);
            int n = WsEncoder.Write(true, opcode, _key, payload, d);
            if (compress) d[0] |= 0x40;
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

        public override bool Feed(ReadOnlySpan<byte> data) { return (_decoder.Feed(data, this) || !_decoder.Failed) && !_error.IsSet; }

        public bool OnFrame(ref WsFrame f)
        {
            FramesReceived++;
            switch (f.Opcode)
            {
                case WsOpcodes.Close: _peerClosed = true; return false;
                case WsOpcodes.Ping: case WsOpcodes.Pong: return true;   // the echo server sends neither
            }
            if (f.Opcode != WsOpcodes.Continuation) { _msgOp = f.Opcode; _msgLen = 0; _msgCompressed = f.Rsv != 0; }
            if (_msgCompressed) return Inflate(ref f);
            if (f.Fin && f.Opcode != WsOpcodes.Continuation) { _matcher.OnFrame(_msgOp, 0, f.Payload); return true; }
            if (_msg == null || _msgLen + f.Payload.Length > _msg.Length) Array.Resize(ref _msg, Math.Max(4096, (_msgLen + f.Payload.Length) * 2));
            f.Payload.CopyTo(new Span<byte>(_msg, _msgLen, f.Payload.Length));
            _msgLen += f.Payload.Length;
            if (f.Fin) { _matcher.OnFrame(_msgOp, 0, new ReadOnlySpan<byte>(_msg, 0, _msgLen)); _msgLen = 0; }
            return true;
        }

        /// <summary>A frame of a compressed echo, inflated onto the message (WSD-CMP-2, within
        /// websocket.max_message: WSD-LIM-1); the whole echo is matched at its last frame.</summary>
        bool Inflate(ref WsFrame f)
        {
            if (f.Opcode != WsOpcodes.Continuation) { _pmd.BeginMessage(); _inflatedLen = 0; }
            string why;
            int code = _pmd.InflateFrame(f.Payload, f.Fin, _inflated, ref _inflatedLen, out why);
            if (code != 0)
            {
                _error = new ProtocolError(code == 1009 ? "WSD-LIM-1" : "WSD-CMP-3", f.Offset, why, new WebSocketCloseDetail((uint)code));
                return false;
            }
            if (!f.Fin) return true;
            _matcher.OnFrame(_msgOp, 0, _inflated.Slice(0, _inflatedLen));
            _inflatedLen = 0;
            if (_inflated.Capacity > 64 * 1024) _inflated.Free();
            _pmd.EndMessage();
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
        public override ProtocolError Error { get { return _error.IsSet ? _error : _decoder.Error; } }
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
            _inflated.Dispose();
            if (_pmd != null) _pmd.Dispose();
        }
    }
}
