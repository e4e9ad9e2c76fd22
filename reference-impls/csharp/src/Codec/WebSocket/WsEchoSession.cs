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
    /// The websocket echo endpoint of one connection (spec/websocket.md §13), for either role:
    /// a server (the testee's <c>serve</c>, starting after the handshake; the network server, starting
    /// with the opening handshake, WS-HS-1..5) answers unmasked, a client (the Autobahn client)
    /// answers masked with fresh keys. Every complete data message is echoed as one FIN frame with its
    /// opcode (WS-ECHO-1); pings get pongs (WS-PING-1), pongs nothing (WS-PING-2); a close is
    /// answered with its code and closes (WS-CLOSE-5); an error writes the replies before it, the
    /// close frame of WS-ERR-1 and closes (WS-ECHO-2); EOF closes without writing (WS-ECHO-3).
    /// Fragments are collected in a <see cref="NativeBuffer"/> bounded by the message limit.
    /// </summary>
    public sealed class WsEchoSession : ServerSession, IWsFrameHandler
    {
        readonly WsDecoder _decoder;
        readonly bool _client, _sink;
        readonly MaskKeySource _keys;
        byte[] _head;                 // opening handshake still to read (network server), else null
        int _headLen;
        readonly NativeBuffer _msg = new NativeBuffer();   // fragments of the message in progress
        int _msgLen;
        byte _msgOp;
        readonly byte[] _key = new byte[4], _scratch = new byte[2];
        readonly long _maxMessage;
        PerMessageDeflate _pmd;       // permessage-deflate, once agreed in the opening handshake
        bool _msgCompressed;          // the message in progress is compressed (RSV1 on its first frame)
        Utf8Validator _utf8;          // UTF-8 of an inflated text message (WSD-CMP-4)

        /// <summary>An echo endpoint: <paramref name="client"/> for the client role (masked replies,
        /// unmasked input), the frame and message limits (0: the defaults), <paramref name="handshake"/>
        /// to read the opening handshake first (network server), <paramref name="sink"/> to answer only
        /// pings and the close.</summary>
        public WsEchoSession(bool client, long maxFrame, long maxMessage, bool handshake, bool sink)
        {
            _client = client;
            _sink = sink;
            _decoder = new WsDecoder(!client, maxFrame, maxMessage);
            _maxMessage = maxMessage <= 0 ? WsOpcodes.DefaultMaxMessage : maxMessage;
            if (client) _keys = new MaskKeySource();
            if (handshake) _head = new byte[WsHandshake.MaxHead];
        }

        /// <summary>The only resource served (websocket.path; null: any) and the subprotocol selected
        /// when offered (websocket.subprotocol, WS-HS-4).</summary>
        public string Path, Subprotocol = WsHandshake.Subprotocol;

        /// <summary>Accept permessage-deflate in the opening handshake (websocket.permessage_deflate;
        /// server role with the handshake only): the first acceptable offer is taken, compressed messages
        /// are inflated (limit on the inflated size) and every echo is compressed. (A client reads its
        /// own 101 and calls <see cref="Agree"/>.)</summary>
        public bool Deflate;

        /// <summary>permessage-deflate was agreed (<paramref name="agreed"/>) in the opening handshake:
        /// for a server, read by <see cref="Receive"/>; for a client, by its caller, which read the 101
        /// (<see cref="WsHandshake.CheckAnswer(string, string, string, DeflateParams, out DeflateParams, out bool)"/>).
        /// Compressed messages are inflated and every echo is compressed from then on; the zlib state comes
        /// with the first compressed message (WSD-LIM-3).</summary>
        public void Agree(DeflateParams agreed)
        {
            _pmd = new PerMessageDeflate(agreed, _maxMessage, _client);
            _decoder.AllowRsv1 = true;
        }

        /// <summary>The agreed permessage-deflate state, or null (not agreed).</summary>
        public PerMessageDeflate PerMessageDeflate { get { return _pmd; } }

        /// <summary>When set, complete data messages are collected here instead of echoed (the
        /// Autobahn client's /getCaseCount).</summary>
        public List<byte[]> Collected;

        /// <summary>The handshake is done (or there is none): frames are being read.</summary>
        public bool Open { get { return _head == null; } }

        public override bool Receive(ReadOnlySpan<byte> data)
        {
            if (Closed) return false;
            if (_head != null)
            {
                int room = _head.Length - _headLen;
                int k = Math.Min(room, data.Length);
                data.Slice(0, k).CopyTo(new Span<byte>(_head, _headLen, k));
                int end = WsHandshake.HeadEnd(new ReadOnlySpan<byte>(_head, 0, _headLen + k), _headLen);
                if (end < 0)
                {
                    _headLen += k;
                    if (_headLen == _head.Length)
                    {
                        WriteAscii("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                        Close(new ProtocolError("WS-HS-1", 0, "request head longer than " + WsHandshake.MaxHead + " bytes"));
                        return false;
                    }
                    return true;
                }
                int used = end - _headLen;          // bytes of this chunk that belong to the head
                string head = Encoding.GetEncoding("iso-8859-1").GetString(_head, 0, end - 4);
                bool ok;
                string requirement;
                DeflateParams agreed;
                WriteAscii(WsHandshake.Answer(head, out ok, out requirement, Path, Subprotocol, Deflate && !_client && !_sink, out agreed));
                _head = null;
                if (ok && agreed != null) Agree(agreed);
                if (!ok)
                {
                    Close(new ProtocolError(requirement, 0, "opening handshake refused"));
                    return false;
                }
                data = data.Slice(used);
                if (data.Length == 0) return true;
            }
            if (!_decoder.Feed(data, this) && !Closed) Fail(_decoder.Error);
            return !Closed;
        }

        /// <summary>The opening handshake is still being read (WS-RES-3: it must complete within the
        /// idle timeout).</summary>
        public override bool Opening { get { return _head != null && !Closed; } }

        /// <summary>The request head so far, the frame in progress and the fragments of the message in
        /// progress (WS-RES-1; at least 1 while a message is unfinished).</summary>
        public override long HeldInput
        {
            get
            {
                if (Closed) return 0;
                if (_head != null) return _headLen;
                long held = _decoder.HeldBytes;
                if (_decoder.InMessage) held += Math.Max(1, Math.Max(_msgLen, _msg.Capacity));
                return held;
            }
        }

        /// <summary>The permessage-deflate state (zlib's and the compression buffer, WSD-LIM-2).</summary>
        public override long HeldState { get { return _pmd == null || Closed ? 0 : _pmd.StateBytes; } }

        public override void EndOfInput()
        {
            if (Closed) return;
            if (_head != null) { Close(default(ProtocolError)); return; }
            Close(_decoder.Finish() ? default(ProtocolError) : _decoder.Error);
        }

        /// <summary>Fails the connection (WS-ERR-1): the close frame of <paramref name="e"/>'s requirement,
        /// if it has one, then closed; e.g. a client refusing a permessage-deflate response (WSD-NEG-5).</summary>
        public void FailConnection(ProtocolError e)
        {
            if (!Closed) Fail(e);
        }

        void Fail(ProtocolError e)
        {
            int code = WsOpcodes.CloseCodeFor(e.Requirement);
            if (code != 0)
            {
                BinaryPrimitives.WriteUInt16BigEndian(_scratch, (ushort)code);
                Reply(WsOpcodes.Close, new ReadOnlySpan<byte>(_scratch, 0, 2));
            }
            Close(e);
        }

        public unsafe bool OnFrame(ref WsFrame f)
        {
            Frames++;
            int n = f.Payload.Length;
            PayloadBytes += n;
            byte op = f.Opcode;
            if (f.Fin && (op == WsOpcodes.Text || op == WsOpcodes.Binary) && !_sink && !_client && Collected == null && _pmd == null)
            {
                // The echo of an unfragmented message, written inline (what Message and Reply do): on Mono
                // each Span passed on or built costs a few ns.
                _msgOp = op;
                _msgLen = 0;
                int at = ReserveAt(WsEncoder.HeaderLength(n, false) + n);
                fixed (byte* d = OutputBuffer)
                fixed (byte* s = &MemoryMarshal.GetReference(f.Payload))
                    Commit(WsEncoder.Put(d + at, true, op, null, s, n));
                return true;
            }
            switch (op)
            {
                case WsOpcodes.Ping:
                    Reply(WsOpcodes.Pong, f.Payload);
                    return true;
                case WsOpcodes.Pong:
                    return true;
                case WsOpcodes.Close:
                    Reply(WsOpcodes.Close, f.Payload.Length >= 2 ? f.Payload.Slice(0, 2) : ReadOnlySpan<byte>.Empty);
                    Close(default(ProtocolError));
                    return false;
            }
            if (_sink) return true;
            if (_pmd != null) return DeflateFrame(ref f);
            if (f.Opcode != WsOpcodes.Continuation)
            {
                _msgOp = f.Opcode;
                _msgLen = 0;
                if (f.Fin) { Message(_msgOp, f.Payload); return true; }   // unfragmented: straight from the frame
            }
            Append(f.Payload);
            if (f.Fin)
            {
                Message(_msgOp, _msg.Slice(0, _msgLen));
                _msgLen = 0;
                if (_msg.Capacity > 64 * 1024) _msg.Free();
            }
            return true;
        }

        /// <summary>A data frame on a connection with permessage-deflate: a compressed message is inflated
        /// frame by frame onto the message buffer (WSD-CMP-2..5), its limit checked on the inflated size
        /// in bounded steps (WSD-LIM-1), its text checked as UTF-8 after inflating (WSD-CMP-4).</summary>
        bool DeflateFrame(ref WsFrame f)
        {
            if (f.Opcode != WsOpcodes.Continuation)
            {
                _msgOp = f.Opcode;
                _msgLen = 0;
                _msgCompressed = f.Rsv != 0;
                if (_msgCompressed) { _pmd.BeginMessage(); _utf8.Reset(); }
                else if (f.Fin) { Message(_msgOp, f.Payload); return true; }
            }
            if (_msgCompressed)
            {
                int before = _msgLen;
                string why;
                int code = _pmd.InflateFrame(f.Payload, f.Fin, _msg, ref _msgLen, out why);
                if (code == 0 && _msgOp == WsOpcodes.Text)
                {
                    if (_utf8.Feed(_msg.Slice(before, _msgLen - before)) >= 0 || (f.Fin && !_utf8.Complete))
                    {
                        code = 1007;
                        why = "the inflated text message is not valid UTF-8";
                    }
                }
                if (code != 0)
                {
                    string req = code == 1009 ? "WSD-LIM-1" : why.StartsWith("the inflated", StringComparison.Ordinal) ? "WSD-CMP-4" : "WSD-CMP-3";
                    Fail(new ProtocolError(req, f.Offset, why, new WebSocketCloseDetail((uint)code)));
                    return false;
                }
            }
            else Append(f.Payload);
            if (f.Fin)
            {
                Message(_msgOp, _msg.Slice(0, _msgLen));
                _msgLen = 0;
                if (_msg.Capacity > 64 * 1024) _msg.Free();
                _pmd.EndMessage();
            }
            return true;
        }

        void Message(byte opcode, ReadOnlySpan<byte> payload)
        {
            if (Collected != null) Collected.Add(payload.ToArray());
            else if (_pmd != null) ReplyCompressed(opcode, payload);
            else Reply(opcode, payload);
        }

        /// <summary>An echo on a connection with permessage-deflate: compressed, RSV1 on its (only) frame
        /// (WSD-FRM-1); uncompressed where this end compresses nothing (a client held to 8 window bits) and
        /// where the compressed payload would be longer than the message (the compressor reset, WSD-FRM-3).</summary>
        void ReplyCompressed(byte opcode, ReadOnlySpan<byte> payload)
        {
            if (!_pmd.Compresses) { Reply(opcode, payload); return; }
            bool compressed;
            ReadOnlySpan<byte> body = _pmd.Payload(payload, out compressed);
            int at = Reply(opcode, body);
            if (compressed) OutputBuffer[at] |= 0x40;
        }

        void Append(ReadOnlySpan<byte> p)
        {
            _msg.Ensure(_msgLen + p.Length);   // the decoder bounds _msgLen + p.Length by the message limit
            p.CopyTo(_msg.Slice(_msgLen, p.Length));
            _msgLen += p.Length;
        }

        /// <summary>One FIN frame, masked with a fresh key in the client role; returns where it starts in
        /// <see cref="ServerSession.OutputBuffer"/>.</summary>
        unsafe int Reply(byte opcode, ReadOnlySpan<byte> payload)
        {
            int at = ReserveAt(WsEncoder.HeaderLength(payload.Length, _client) + payload.Length);
            if (!_client) { Commit(WsEncoder.Write(true, opcode, null, payload, OutputBuffer, at)); return at; }
            _keys.Next(_key);
            fixed (byte* k = _key) Commit(WsEncoder.Write(true, opcode, k, payload, OutputBuffer, at));
            return at;
        }

        void WriteAscii(string s)
        {
            Span<byte> d = Reserve(s.Length);
            for (int i = 0; i < s.Length; i++) d[i] = (byte)s[i];
            Commit(s.Length);
        }

        public override void Dispose()
        {
            _decoder.Dispose();
            _msg.Dispose();
            if (_pmd != null) _pmd.Dispose();
            if (_keys != null) _keys.Dispose();
            base.Dispose();
        }
    }
}
