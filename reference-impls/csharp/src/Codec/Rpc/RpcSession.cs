using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>
    /// rpc's server session: the unary echo endpoint (RPC-ECHO-1..5, RPC-MODE-1/2), the stream echo
    /// endpoint (RPC-STREAM-1..8), or, for the network server, the one the connection's first frame
    /// picks (RPC-ECHO-7). Replies are written as soon as the frame that asks for them is complete.
    /// </summary>
    public sealed class RpcSession : ServerSession, IRpcFrameHandler
    {
        public enum Endpoint { Auto, Unary, Stream }

        readonly RpcDecoder _decoder;
        readonly bool _sink;
        Endpoint _endpoint;
        bool _open;      // stream endpoint: a stream is open
        uint _sid;       // its id

        public RpcSession(long maxBody, Endpoint endpoint, bool sink)
        {
            _decoder = new RpcDecoder(maxBody);
            _endpoint = endpoint;
            _sink = sink;
        }

        public override bool Receive(ReadOnlySpan<byte> data)
        {
            if (Closed) return false;
            if (!_decoder.Feed(data, this) && !Closed) Close(_decoder.Error);
            return !Closed;
        }

        /// <summary>EOF: the replies are already written; close, truncated if a frame was unfinished
        /// (RPC-ECHO-5, RPC-STREAM-8: no END or CANCEL for an open stream).</summary>
        public override void EndOfInput()
        {
            if (Closed) return;
            Close(_decoder.Finish() ? default(ProtocolError) : _decoder.Error);
        }

        public override long HeldInput { get { return Closed ? 0 : _decoder.HeldBytes; } }

        public bool OnFrame(ref RpcFrame f)
        {
            Frames++;
            PayloadBytes += f.Payload.Length;
            if (_endpoint == Endpoint.Auto) _endpoint = RpcTypes.IsStream(f.Type) ? Endpoint.Stream : Endpoint.Unary;
            if (_sink) return true;
            return _endpoint == Endpoint.Unary ? Unary(ref f) : Stream(ref f);
        }

        bool Unary(ref RpcFrame f)
        {
            if (f.Type != RpcTypes.Request)
            {
                Close(new ProtocolError("RPC-ECHO-4", f.Offset, "frame type 0x" + f.Type.ToString("x2") + " on the unary endpoint"));
                return false;
            }
            // pointers and the output array, not Spans built and passed (a few ns each on Mono)
            ushort code = f.UnaryCode();  // RPC-ECHO-1/2, RPC-ECHO-8
            uint flags = (uint)((f.Flags & RpcTypes.ModeMask) | RpcTypes.EndStream);
            int at;
            if (code != RpcTypes.CodeOk)
            {
                at = ReserveAt(RpcTypes.HeaderLength + 2);
                Commit(RpcEncoder.WriteResponse(flags, f.Id, code, ReadOnlySpan<byte>.Empty, OutputBuffer, at));
                return true;
            }
            at = ReserveAt(RpcTypes.HeaderLength + 2 + f.Payload.Length);
            Commit(RpcEncoder.WriteResponse(flags, f.Id, code, f.Payload, OutputBuffer, at));
            return true;
        }

        bool Stream(ref RpcFrame f)
        {
            if (!_open)
            {
                if (f.Type != RpcTypes.StreamInit) { Control(RpcTypes.StreamCancel, f.Id); return true; }          // RPC-STREAM-5
                if (f.EchoCode() != RpcTypes.CodeOk)
                {
                    Control(RpcTypes.StreamCancel, f.Id);                                                         // RPC-STREAM-6
                    return true;
                }
                _open = true;
                _sid = f.Id;
                Control(RpcTypes.StreamInitAck, f.Id);                                                            // RPC-STREAM-1
                return true;
            }
            switch (f.Type)
            {
                case RpcTypes.StreamData:                                                                         // RPC-STREAM-2
                    {
                        int at = ReserveAt(RpcTypes.HeaderLength + f.Payload.Length);
                        Commit(RpcEncoder.WriteSimple(RpcTypes.StreamData, _sid, f.Payload, OutputBuffer, at));
                    }
                    break;
                case RpcTypes.StreamEnd:                                                                          // RPC-STREAM-3
                    _open = false;
                    Control(RpcTypes.StreamEnd, _sid);
                    break;
                case RpcTypes.StreamCancel:                                                                       // RPC-STREAM-4
                    _open = false;
                    break;
                default:                                                                                          // RPC-STREAM-7
                    _open = false;
                    Control(RpcTypes.StreamCancel, _sid);
                    break;
            }
            return true;
        }

        void Control(byte type, uint id)
        {
            int at = ReserveAt(RpcTypes.HeaderLength);
            Commit(RpcEncoder.WriteSimple(type, id, ReadOnlySpan<byte>.Empty, OutputBuffer, at));
        }

        public override void Dispose()
        {
            _decoder.Dispose();
            base.Dispose();
        }
    }
}
