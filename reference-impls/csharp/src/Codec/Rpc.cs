using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>rpc frame types, flags and the conformance echo service's names (spec/rpc.md §2, §3, §9).</summary>
    public static class RpcTypes
    {
        public const byte Request = 0x01, Response = 0x02, Heartbeat = 0x03, Error = 0x04;
        public const byte StreamInit = 0x10, StreamInitAck = 0x11, StreamData = 0x12, StreamEnd = 0x13, StreamCancel = 0x14;
        public const byte EndStream = 0x04;
        public const byte ModeMask = 0x03;
        public const int HeaderLength = 16;
        /// <summary>RPC-LIM-1 default: 16 MiB (upstream RPC_MAX_BODY_SIZE).</summary>
        public const long DefaultMaxBody = 16L * 1024 * 1024;
        public const ushort CodeOk = 0, CodeServiceNotFound = 2, CodeMethodNotFound = 3;

        /// <summary>"frameproof.Echo" and "echo" (spec/rpc.md §9).</summary>
        public static readonly byte[] EchoService = { 0x66, 0x72, 0x61, 0x6d, 0x65, 0x70, 0x72, 0x6f, 0x6f, 0x66, 0x2e, 0x45, 0x63, 0x68, 0x6f };
        public static readonly byte[] EchoMethod = { 0x65, 0x63, 0x68, 0x6f };
        // the same names as words in memory order (bytes 0-7 and 7-14 of the service), compared through pointers
        static readonly ulong EchoService0 = BitConverter.ToUInt64(EchoService, 0), EchoService1 = BitConverter.ToUInt64(EchoService, 7);
        static readonly uint EchoMethodWord = BitConverter.ToUInt32(EchoMethod, 0);

        /// <summary>The <paramref name="length"/> bytes at <paramref name="p"/> are "frameproof.Echo".</summary>
        internal static unsafe bool IsEchoService(byte* p, int length)
        {
            return length == 15 && *(ulong*)p == EchoService0 && *(ulong*)(p + 7) == EchoService1;
        }

        /// <summary>The <paramref name="length"/> bytes at <paramref name="p"/> are "echo".</summary>
        internal static unsafe bool IsEchoMethod(byte* p, int length)
        {
            return length == 4 && *(uint*)p == EchoMethodWord;
        }

        /// <summary>RPC-HDR-4: the nine types.</summary>
        public static bool IsKnown(uint type)
        {
            return (type >= Request && type <= Error) || (type >= StreamInit && type <= StreamCancel);
        }

        /// <summary>RPC-BODY-5: STREAM_INIT_ACK, STREAM_END, STREAM_CANCEL have an empty body.</summary>
        public static bool IsControl(uint type) { return type == StreamInitAck || type == StreamEnd || type == StreamCancel; }

        /// <summary>REQUEST and STREAM_INIT carry service and method (RPC-BODY-1, RPC-BODY-3).</summary>
        public static bool HasNames(uint type) { return type == Request || type == StreamInit; }

        /// <summary>STREAM_INIT .. STREAM_CANCEL: the types that pick the stream endpoint (RPC-ECHO-7).</summary>
        public static bool IsStream(uint type) { return type >= StreamInit && type <= StreamCancel; }
    }

    /// <summary>The rpc header and the typed body fields before the payload, in owning form
    /// (testee frames, <see cref="FrameValue.Header"/>). Values are kept as given, so an encoder can
    /// refuse out-of-range ones.</summary>
    public sealed class RpcHeader
    {
        public uint Version = 1;
        public uint Type;
        public uint Flags;
        public uint Reserved;
        public uint Id;
        public byte[] Service = new byte[0];
        public byte[] Method = new byte[0];
        public uint ErrorCode;
    }

    /// <summary>The rpc codec's parameters: codec JSON <c>{"rpc": {"max_body": N}}</c>, testee <c>RpcParams</c>.</summary>
    public sealed class RpcParams
    {
        /// <summary>Largest body; 0 = the spec default (16 MiB).</summary>
        public long MaxBody;
    }

    /// <summary>One decoded frame, valid only during the handler call (spans into the decoder's input
    /// or its buffer). <see cref="Offset"/> is where the frame starts in the stream.</summary>
    public unsafe ref struct RpcFrame
    {
        public byte Version, Type, Flags, Reserved;
        public uint Id;
        public ushort ErrorCode;
        public ReadOnlySpan<byte> Payload;
        public long Offset;
        // REQUEST, STREAM_INIT: the body's names (service length, service, method length, method) at
        // Names, which the decoder keeps in place during the handler call; else null. Service and
        // Method are built only when asked for: building a Span costs Mono a few ns a frame.
        internal byte* Names;
        internal int ServiceLength, MethodLength;

        public ReadOnlySpan<byte> Service { get { return Names == null ? ReadOnlySpan<byte>.Empty : new ReadOnlySpan<byte>(Names + 2, ServiceLength); } }
        public ReadOnlySpan<byte> Method { get { return Names == null ? ReadOnlySpan<byte>.Empty : new ReadOnlySpan<byte>(Names + 4 + ServiceLength, MethodLength); } }

        /// <summary>Service and method are frameproof.Echo and echo: 0 (CodeOk); else the code the unary
        /// endpoint answers (RPC-ECHO-2/3: service first).</summary>
        internal ushort EchoCode()
        {
            if (Names == null || !RpcTypes.IsEchoService(Names + 2, ServiceLength)) return RpcTypes.CodeServiceNotFound;
            return RpcTypes.IsEchoMethod(Names + 4 + ServiceLength, MethodLength) ? RpcTypes.CodeOk : RpcTypes.CodeMethodNotFound;
        }

        public RpcHeader ToHeader()
        {
            return new RpcHeader
            {
                Version = Version, Type = Type, Flags = Flags, Reserved = Reserved, Id = Id,
                Service = Service.ToArray(), Method = Method.ToArray(), ErrorCode = ErrorCode
            };
        }

        public FrameValue ToValue() { return new FrameValue { Payload = Payload.ToArray(), Header = ToHeader() }; }
    }

    /// <summary>Receives decoded rpc frames; returns false to stop the decoder (the receiver closes).</summary>
    public interface IRpcFrameHandler
    {
        bool OnFrame(ref RpcFrame frame);
    }

    /// <summary>
    /// Streaming rpc decoder (spec/rpc.md §2, §3, §6, §11). Any split of the stream gives the same
    /// frames (RPC-STR-1/2). The header is judged once its 16 bytes are complete, in the order magic,
    /// version, type, control frame with a body, limit (RPC-HDR-2/3/4, RPC-BODY-5, RPC-LIM-1), so an
    /// oversized frame is rejected before any body byte is buffered (RPC-LIM-3); the body fields are
    /// judged once the whole body is present (RPC-BODY-1/2/3). A frame inside one fed chunk is
    /// delivered from the caller's span (no copy); a split body is accumulated in a pooled buffer that
    /// grows with the bytes received, never beyond the declared body. Errors carry the offset of the
    /// frame's first byte and stop the decoder (RPC-STR-4).
    /// </summary>
    public sealed class RpcDecoder : IDisposable
    {
        readonly long _max;
        readonly byte[] _hdr = new byte[RpcTypes.HeaderLength];
        int _hdrCount;
        byte[] _body;
        int _bodyCount, _need;
        bool _inBody;
        long _pos, _frameStart;
        bool _failed, _halted;
        ProtocolError _error;

        public RpcDecoder(long maxBody = 0)
        {
            _max = maxBody <= 0 ? RpcTypes.DefaultMaxBody : maxBody;
        }

        public bool Failed { get { return _failed; } }
        public ProtocolError Error { get { return _error; } }
        public long Position { get { return _pos; } }
        /// <summary>Bytes buffered for the frame in progress.</summary>
        public int BufferedBytes { get { return _hdrCount + _bodyCount; } }

        /// <summary>Memory held for the frame in progress (RPC-RES-1): header and body bytes so far, or
        /// the body buffer allocated, if more; at least 1 while a frame is unfinished, else 0.</summary>
        public long HeldBytes
        {
            get
            {
                if (_failed || _pos == _frameStart) return 0;
                long held = _inBody ? RpcTypes.HeaderLength + _bodyCount : _hdrCount;
                if (_inBody && _body != null && _body.Length > held) held = _body.Length;
                return Math.Max(held, 1);
            }
        }

        /// <summary>Feeds one chunk. Returns false once the decoder has failed or a handler stopped it.</summary>
        public unsafe bool Feed(ReadOnlySpan<byte> data, IRpcFrameHandler handler)
        {
            if (_failed || _halted) return false;
            int length = data.Length;
            if (length == 0) return true;
            // Pointers over the pinned chunk, not Span slices: on Mono each slice, index and Span passed
            // costs a few ns, more than the decoding of a small frame (see FrameDecoder.Feed).
            fixed (byte* start = &MemoryMarshal.GetReference(data))
            {
                byte* p = start, end = start + length;
                // Hot path: whole frames back to back at a frame boundary whose header passes every check
                // (and body fields, Deliver). Anything else, or any check failing, goes to FeedAny from the
                // frame's first byte, which decides as before.
                while (!_inBody && _hdrCount == 0)
                {
                    if (end - p < RpcTypes.HeaderLength) break;
                    if (p[0] != 0x47 || p[1] != 0x52 || p[2] != 0x50 || p[3] != 0x43 || p[4] != 1) break;
                    uint type = p[5];
                    uint n = (uint)(p[12] << 24 | p[13] << 16 | p[14] << 8 | p[15]);
                    if (!RpcTypes.IsKnown(type) || n > _max || (n != 0 && RpcTypes.IsControl(type))) break;
                    if (end - p - RpcTypes.HeaderLength < n) break;
                    if (!Deliver(p, p + RpcTypes.HeaderLength, (int)n, handler, true)) return _halted ? false : FeedAny(p, end, handler);
                    p += RpcTypes.HeaderLength + n;
                    if (p == end) return true;
                }
                return FeedAny(p, end, handler);
            }
        }

        /// <summary>The general decoding loop over the pinned bytes [p, end): any split, every check.</summary>
        unsafe bool FeedAny(byte* p, byte* end, IRpcFrameHandler handler)
        {
            while (!_failed && !_halted && p < end)
            {
                if (_inBody)
                {
                    int n = (int)Math.Min(_need - _bodyCount, end - p);
                    Ensure(_bodyCount + n);
                    fixed (byte* b = _body) ByteBuffers.Copy(b + _bodyCount, p, n);
                    _bodyCount += n;
                    _pos += n;
                    p += n;
                    if (_bodyCount == _need)
                    {
                        _inBody = false;
                        fixed (byte* h = _hdr) fixed (byte* b = _body) Deliver(h, b, _need, handler, false);
                        _hdrCount = 0;
                        _bodyCount = 0;
                        if (_body != null && _body.Length > 64 * 1024) Drop();
                    }
                    continue;
                }
                if (_hdrCount == 0 && end - p >= RpcTypes.HeaderLength)
                {
                    // The header is inside this chunk, often the whole frame too.
                    int n;
                    if (!Judge(p, out n)) return false;
                    if (end - p - RpcTypes.HeaderLength >= n)
                    {
                        _pos += RpcTypes.HeaderLength + n;
                        Deliver(p, p + RpcTypes.HeaderLength, n, handler, false);
                        p += RpcTypes.HeaderLength + n;
                        continue;
                    }
                    for (int i = 0; i < RpcTypes.HeaderLength; i++) _hdr[i] = p[i];
                    _hdrCount = RpcTypes.HeaderLength;
                    _pos += RpcTypes.HeaderLength;
                    p += RpcTypes.HeaderLength;
                    BeginBody(n);
                    continue;
                }
                // Slow path: the header is split across chunks.
                int k = (int)Math.Min(RpcTypes.HeaderLength - _hdrCount, end - p);
                for (int i = 0; i < k; i++) _hdr[_hdrCount + i] = p[i];
                _hdrCount += k;
                _pos += k;
                p += k;
                if (_hdrCount < RpcTypes.HeaderLength) continue;
                int len;
                bool ok;
                fixed (byte* h = _hdr) ok = Judge(h, out len);
                if (!ok) return false;
                if (len == 0)
                {
                    fixed (byte* h = _hdr) Deliver(h, null, 0, handler, false);
                    _hdrCount = 0;
                }
                else BeginBody(len);
            }
            return !_failed && !_halted;
        }

        /// <summary>End of stream: a frame left unfinished is truncated (RPC-STR-3). Returns false if
        /// the stream was rejected (now or before).</summary>
        public bool Finish()
        {
            if (_failed) return false;
            if (_pos > _frameStart && !_halted)
            {
                Fail("RPC-STR-3", "stream ended inside a frame (" + (_pos - _frameStart) + " bytes of it received)");
                return false;
            }
            Drop();
            return true;
        }

        /// <summary>True if the stream so far ends inside a frame.</summary>
        public bool InsideFrame { get { return _pos > _frameStart; } }

        public void Dispose() { Drop(); }

        void BeginBody(int n)
        {
            _need = n;
            _bodyCount = 0;
            _inBody = true;
        }

        /// <summary>The header checks of §11, from the 16 header bytes alone.</summary>
        unsafe bool Judge(byte* h, out int bodyLength)
        {
            bodyLength = 0;
            if (h[0] != 0x47 || h[1] != 0x52 || h[2] != 0x50 || h[3] != 0x43)
                return Fail("RPC-HDR-2", "bad magic " + Hex(new ReadOnlySpan<byte>(h, 4)));
            if (h[4] != 1) return Fail("RPC-HDR-3", "version " + h[4]);
            if (!RpcTypes.IsKnown(h[5])) return Fail("RPC-HDR-4", "unknown type 0x" + h[5].ToString("x2"));
            uint n = (uint)(h[12] << 24 | h[13] << 16 | h[14] << 8 | h[15]);
            if (RpcTypes.IsControl(h[5]) && n != 0) return Fail("RPC-BODY-5", "control frame type 0x" + h[5].ToString("x2") + " with a body of " + n + " bytes");
            if (n > _max) return Fail("RPC-LIM-1", "body of " + n + " bytes exceeds the maximum " + _max);
            bodyLength = (int)n;
            return true;
        }

        /// <summary>Parses the body fields of the frame with header <paramref name="h"/> and the
        /// <paramref name="n"/> body bytes at <paramref name="body"/>, hands the frame over, starts the next
        /// frame. False if the body fields are wrong (<paramref name="probe"/>, the hot path: with nothing
        /// changed, the general path then decides; else failed) or the handler stopped the decoder.</summary>
        unsafe bool Deliver(byte* h, byte* body, int n, IRpcFrameHandler handler, bool probe)
        {
            RpcFrame f;
            f.Version = h[4]; f.Type = h[5]; f.Flags = h[6]; f.Reserved = h[7];
            f.Id = (uint)(h[8] << 24 | h[9] << 16 | h[10] << 8 | h[11]);
            f.ErrorCode = 0;
            f.Names = null; f.ServiceLength = 0; f.MethodLength = 0;
            byte* payload = body;
            int pl = n;
            uint type = f.Type;
            if (type == RpcTypes.Request || type == RpcTypes.StreamInit)
            {
                int sl = n < 2 ? 0 : body[0] << 8 | body[1];
                int ml = n < 2 || 2 + sl + 2 > n ? 0 : body[2 + sl] << 8 | body[3 + sl];
                if (n < 2 || 2 + sl + 2 > n || 4 + sl + ml > n)
                {
                    if (probe) return false;
                    string req = type == RpcTypes.Request ? "RPC-BODY-1" : "RPC-BODY-3";
                    if (n < 2) return Fail(req, "body too short for the service length");
                    if (2 + sl + 2 > n) return Fail(req, "service name of " + sl + " bytes beyond the body");
                    return Fail(req, "method name of " + ml + " bytes beyond the body");
                }
                f.Names = body;
                f.ServiceLength = sl;
                f.MethodLength = ml;
                payload = body + 4 + sl + ml;
                pl = n - 4 - sl - ml;
            }
            else if (type == RpcTypes.Response)
            {
                if (n < 2) return probe ? false : Fail("RPC-BODY-2", "response body shorter than its error code");
                f.ErrorCode = (ushort)(body[0] << 8 | body[1]);
                payload = body + 2;
                pl = n - 2;
            }
            f.Payload = new ReadOnlySpan<byte>(payload, pl);
            if (probe) _pos += RpcTypes.HeaderLength + n;
            f.Offset = _frameStart;
            _frameStart = _pos;
            if (handler.OnFrame(ref f)) return true;
            _halted = true;
            return false;
        }

        void Ensure(int size) { _body = ByteBuffers.Grow(_body, _bodyCount, size, _need); }

        void Drop()
        {
            if (_body == null) return;
            ByteBuffers.Return(_body);
            _body = null;
        }

        bool Fail(string requirement, string message)
        {
            _failed = true;
            _error = new ProtocolError(requirement, _frameStart, message);
            _inBody = false;
            _hdrCount = 0;
            _bodyCount = 0;
            Drop();
            return false;
        }

        static string Hex(ReadOnlySpan<byte> b)
        {
            var c = new char[b.Length * 2];
            for (int i = 0; i < b.Length; i++) { c[2 * i] = "0123456789abcdef"[b[i] >> 4]; c[2 * i + 1] = "0123456789abcdef"[b[i] & 15]; }
            return new string(c);
        }
    }

    /// <summary>rpc encoder (spec/rpc.md §2, §3): checks in the order of §11's encoder list, then
    /// writes header and body straight into the destination.</summary>
    public static class RpcEncoder
    {
        /// <summary>Body length of a frame of this type with these field lengths.</summary>
        public static long BodyLength(uint type, int serviceLength, int methodLength, long payloadLength)
        {
            if (RpcTypes.HasNames(type)) return 4L + serviceLength + methodLength + payloadLength;
            if (type == RpcTypes.Response) return 2L + payloadLength;
            return payloadLength;
        }

        /// <summary>RPC-HDR-3, RPC-HDR-4, RPC-BODY-5, RPC-BODY-6, RPC-BODY-2, RPC-LIM-2.</summary>
        public static bool Check(uint version, uint type, uint errorCode, int serviceLength, int methodLength, long payloadLength,
            long maxBody, out ProtocolError error)
        {
            error = default(ProtocolError);
            if (version != 1) { error = new ProtocolError("RPC-HDR-3", 0, "version " + version + " (only 1 is written)"); return false; }
            if (!RpcTypes.IsKnown(type)) { error = new ProtocolError("RPC-HDR-4", 0, "unknown type " + type); return false; }
            if (RpcTypes.IsControl(type) && payloadLength > 0) { error = new ProtocolError("RPC-BODY-5", 0, "control frame with a payload"); return false; }
            if (RpcTypes.HasNames(type) && (serviceLength > 0xFFFF || methodLength > 0xFFFF))
            {
                error = new ProtocolError("RPC-BODY-6", 0, "name longer than 65535 bytes");
                return false;
            }
            if (type == RpcTypes.Response && errorCode > 0xFFFF) { error = new ProtocolError("RPC-BODY-2", 0, "error code " + errorCode + " above 65535"); return false; }
            long max = Math.Min(maxBody <= 0 ? RpcTypes.DefaultMaxBody : maxBody, uint.MaxValue);
            long body = BodyLength(type, serviceLength, methodLength, payloadLength);
            if (body > max) { error = new ProtocolError("RPC-LIM-2", 0, "body of " + body + " bytes exceeds the maximum " + max); return false; }
            return true;
        }

        /// <summary>Writes a checked frame into dest (16 + BodyLength bytes); returns the bytes written.
        /// Flags and reserved are written as their low byte.</summary>
        public static unsafe int Write(byte type, uint flags, uint reserved, uint id, uint errorCode,
            ReadOnlySpan<byte> service, ReadOnlySpan<byte> method, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            // Pointers, not Span slices, BinaryPrimitives and Span.CopyTo: on Mono those cost several times the work.
            int body = (int)BodyLength(type, service.Length, method.Length, payload.Length);
            if (dest.Length - RpcTypes.HeaderLength < body) throw new ArgumentException("destination too short for the frame", "dest");
            fixed (byte* d = &MemoryMarshal.GetReference(dest))
            fixed (byte* sv = &MemoryMarshal.GetReference(service))
            fixed (byte* mt = &MemoryMarshal.GetReference(method))
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
            {
                PutHeader(d, type, flags, reserved, id, (uint)body);
                int p = RpcTypes.HeaderLength;
                if (RpcTypes.HasNames(type))
                {
                    int sl = service.Length, ml = method.Length;
                    d[p] = (byte)(sl >> 8); d[p + 1] = (byte)sl;
                    ByteBuffers.Copy(d + p + 2, sv, sl);
                    p += 2 + sl;
                    d[p] = (byte)(ml >> 8); d[p + 1] = (byte)ml;
                    ByteBuffers.Copy(d + p + 2, mt, ml);
                    p += 2 + ml;
                }
                else if (type == RpcTypes.Response)
                {
                    d[p] = (byte)(errorCode >> 8); d[p + 1] = (byte)errorCode;
                    p += 2;
                }
                ByteBuffers.Copy(d + p, s, payload.Length);
                return p + payload.Length;
            }
        }

        /// <summary>A RESPONSE (flags, id, error code, payload) into <paramref name="dest"/> at
        /// <paramref name="offset"/> (the reply path: a session's output array) through pointers; returns the
        /// bytes written (16 + 2 + payload).</summary>
        public static unsafe int WriteResponse(uint flags, uint id, uint errorCode, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            int n = payload.Length;
            CheckRoom(dest, offset, RpcTypes.HeaderLength + 2 + (long)n);
            fixed (byte* d0 = dest)
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
            {
                byte* d = d0 + offset;
                PutHeader(d, RpcTypes.Response, flags, 0, id, (uint)(2 + n));
                d[RpcTypes.HeaderLength] = (byte)(errorCode >> 8);
                d[RpcTypes.HeaderLength + 1] = (byte)errorCode;
                ByteBuffers.Copy(d + RpcTypes.HeaderLength + 2, s, n);
            }
            return RpcTypes.HeaderLength + 2 + n;
        }

        /// <summary><see cref="WriteSimple(byte, uint, ReadOnlySpan{byte}, Span{byte})"/> into
        /// <paramref name="dest"/> at <paramref name="offset"/> through pointers.</summary>
        public static unsafe int WriteSimple(byte type, uint id, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            int n = payload.Length;
            CheckRoom(dest, offset, RpcTypes.HeaderLength + (long)n);
            fixed (byte* d0 = dest)
            fixed (byte* s = &MemoryMarshal.GetReference(payload))
            {
                PutHeader(d0 + offset, type, 0, 0, id, (uint)n);
                ByteBuffers.Copy(d0 + offset + RpcTypes.HeaderLength, s, n);
            }
            return RpcTypes.HeaderLength + n;
        }

        static void CheckRoom(byte[] dest, int offset, long length)
        {
            if (dest == null) throw new ArgumentNullException("dest");
            if ((uint)offset > (uint)dest.Length) throw new ArgumentOutOfRangeException("offset");
            if (dest.Length - offset < length) throw new ArgumentException("destination too short for the frame", "dest");
        }

        static unsafe void PutHeader(byte* d, byte type, uint flags, uint reserved, uint id, uint body)
        {
            d[0] = 0x47; d[1] = 0x52; d[2] = 0x50; d[3] = 0x43;
            d[4] = 1;
            d[5] = type;
            d[6] = (byte)flags;
            d[7] = (byte)reserved;
            d[8] = (byte)(id >> 24); d[9] = (byte)(id >> 16); d[10] = (byte)(id >> 8); d[11] = (byte)id;
            d[12] = (byte)(body >> 24); d[13] = (byte)(body >> 16); d[14] = (byte)(body >> 8); d[15] = (byte)body;
        }

        /// <summary>A frame without names or error code (stream frames): header + payload.</summary>
        public static int WriteSimple(byte type, uint id, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return Write(type, 0, 0, id, 0, ReadOnlySpan<byte>.Empty, ReadOnlySpan<byte>.Empty, payload, dest);
        }

        /// <summary>Allocating convenience for a header object: checks, then encodes.</summary>
        public static bool Encode(RpcHeader h, byte[] payload, long maxBody, out byte[] bytes, out ProtocolError error)
        {
            bytes = null;
            if (!Check(h.Version, h.Type, h.ErrorCode, h.Service.Length, h.Method.Length, payload.Length, maxBody, out error)) return false;
            bytes = new byte[RpcTypes.HeaderLength + BodyLength(h.Type, h.Service.Length, h.Method.Length, payload.Length)];
            Write((byte)h.Type, h.Flags, h.Reserved, h.Id, h.ErrorCode, h.Service, h.Method, payload, bytes);
            return true;
        }
    }

    /// <summary>Outcomes of rpc client matching (called synchronously by <see cref="RpcMatcher"/>).</summary>
    public interface IRpcMatchObserver
    {
        void OnReply(long request, object state, ref RpcFrame frame);
        void OnTimeout(long request, object state);
        void OnFailed(long request, object state);
        void OnUnmatched(ref RpcFrame frame);
    }

    /// <summary>
    /// rpc client side of one connection (spec/rpc.md §8): ids 0, 1, 2 ... from a per-connection
    /// counter (RPC-ID-1), a send refused while the next id is pending (RPC-ID-2), RESPONSEs matched
    /// by id whatever their order or flags (RPC-MATCH-1), unmatched ones reported (RPC-MATCH-2),
    /// timeouts oldest first (RPC-MATCH-3), other types ignored (RPC-MATCH-4), error codes passed
    /// on (RPC-MATCH-5). Feed it decoded frames as an <see cref="IRpcFrameHandler"/>. Not thread-safe.
    /// </summary>
    public sealed class RpcMatcher : IRpcFrameHandler
    {
        // Pending requests in slots of parallel arrays, linked in send order (oldest first for
        // timeouts), found by id through a dictionary of slot indices; freed slots are reused, so a
        // request allocates nothing once the arrays have grown to the largest number in flight.
        readonly IRpcMatchObserver _observer;
        readonly long _timeoutMs;
        readonly Dictionary<uint, int> _index = new Dictionary<uint, int>();
        uint[] _ids = new uint[16];
        long[] _requests = new long[16];
        object[] _states = new object[16];
        long[] _deadlines = new long[16];
        int[] _prev = new int[16], _next = new int[16];
        int _head = -1, _tail = -1, _free = -1, _used;
        uint _nextId;
        bool _failed;

        public RpcMatcher(IRpcMatchObserver observer, long timeoutMs = 0)
        {
            _observer = observer;
            _timeoutMs = timeoutMs <= 0 ? Limits.DefaultTimeoutMs : timeoutMs;
        }

        public bool Failed { get { return _failed; } }
        public int PendingCount { get { return _index.Count; } }
        public long NextDeadline { get { return _head < 0 ? long.MaxValue : _deadlines[_head]; } }

        /// <summary>The id the next request would carry, if it may be sent (RPC-ID-2; not on a failed connection).</summary>
        public bool TryNextId(out uint id)
        {
            id = _nextId;
            return !_failed && !_index.ContainsKey(_nextId);
        }

        /// <summary>Registers the request just written with <paramref name="id"/> (from TryNextId) and
        /// advances the counter.</summary>
        public void Sent(uint id, long request, object state, long nowMs)
        {
            int s;
            if (_free >= 0) { s = _free; _free = _next[s]; }
            else
            {
                if (_used == _ids.Length) Grow();
                s = _used++;
            }
            _ids[s] = id;
            _requests[s] = request;
            _states[s] = state;
            _deadlines[s] = nowMs + _timeoutMs;
            _prev[s] = _tail;
            _next[s] = -1;
            if (_tail >= 0) _next[_tail] = s; else _head = s;
            _tail = s;
            _index[id] = s;
            _nextId = unchecked(id + 1);
        }

        void Grow()
        {
            int n = _ids.Length * 2;
            Array.Resize(ref _ids, n);
            Array.Resize(ref _requests, n);
            Array.Resize(ref _states, n);
            Array.Resize(ref _deadlines, n);
            Array.Resize(ref _prev, n);
            Array.Resize(ref _next, n);
        }

        public bool OnFrame(ref RpcFrame f)
        {
            if (_failed) return false;
            if (f.Type != RpcTypes.Response) return true; // RPC-MATCH-4
            int s;
            if (_index.TryGetValue(f.Id, out s))
            {
                long request = _requests[s];
                object st = Remove(s);
                _observer.OnReply(request, st, ref f);
            }
            else _observer.OnUnmatched(ref f); // RPC-MATCH-2
            return true;
        }

        public void Expire(long nowMs)
        {
            while (_head >= 0 && _deadlines[_head] <= nowMs)
            {
                long request = _requests[_head];
                object st = Remove(_head);
                _observer.OnTimeout(request, st);
            }
        }

        public void FailAll()
        {
            _failed = true;
            while (_head >= 0)
            {
                long request = _requests[_head];
                object st = Remove(_head);
                _observer.OnFailed(request, st);
            }
        }

        /// <summary>Unlinks and frees slot s; returns its state.</summary>
        object Remove(int s)
        {
            object st = _states[s];
            _states[s] = null;
            _index.Remove(_ids[s]);
            int p = _prev[s], n = _next[s];
            if (p >= 0) _next[p] = n; else _head = n;
            if (n >= 0) _prev[n] = p; else _tail = p;
            _next[s] = _free;
            _free = s;
            return st;
        }
    }

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
            ushort code = f.EchoCode();
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

    /// <summary>`rpc` with its configuration (rpc.max_body). Its frames carry a typed header, so the
    /// testee uses <see cref="Typed"/>; the byte-level (flag, sequence) members of
    /// <see cref="FrameCodec"/> do not apply to it and say so.</summary>
    public sealed class RpcCodec : FrameCodec, ITypedFrames
    {
        public readonly long MaxBody;

        public RpcCodec(CodecSpec spec) : base(spec)
        {
            var p = spec.Params as RpcParams;
            MaxBody = p == null || p.MaxBody <= 0 ? RpcTypes.DefaultMaxBody : p.MaxBody;
        }

        public override ITypedFrames Typed { get { return this; } }

        /// <summary>The largest frame body the server accepts (rpc.max_body).</summary>
        public override long LargestInput { get { return MaxBody; } }

        // ---------------------------------------------------------------- byte-level members

        const string NotByteLevel = "rpc frames carry a typed header: use RpcDecoder / RpcMatcher (FrameCodec.Typed)";

        public override FrameDecoder NewDecoder() { throw new NotSupportedException(NotByteLevel); }

        /// <summary>A REQUEST to frameproof.Echo/echo with a payload of this length fits the limit.</summary>
        public override bool CheckPayload(long payloadLength, out ProtocolError error)
        {
            return RpcEncoder.Check(1, RpcTypes.Request, 0, RpcTypes.EchoService.Length, RpcTypes.EchoMethod.Length, payloadLength, MaxBody, out error);
        }

        /// <summary>Length of an echo REQUEST with this payload.</summary>
        public override int EncodedLength(int payloadLength)
        {
            return RpcTypes.HeaderLength + (int)RpcEncoder.BodyLength(RpcTypes.Request, RpcTypes.EchoService.Length, RpcTypes.EchoMethod.Length, payloadLength);
        }

        /// <summary>An echo REQUEST with flags = <paramref name="flag"/> and id = <paramref name="sequence"/>.</summary>
        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return WriteEchoRequest(sequence, flag, payload, dest);
        }

        public static int WriteEchoRequest(uint id, uint flags, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return RpcEncoder.Write(RpcTypes.Request, flags, 0, id, 0, RpcTypes.EchoService, RpcTypes.EchoMethod, payload, dest);
        }

        public override IRequestMatcher NewMatcher(IMatchObserver observer, long timeoutMs) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteRequest(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteOneWay(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException("rpc has no one-way call"); }

        // ---------------------------------------------------------------- micro-benchmarks (tools/bench/microbench.md)

        /// <summary>A unary echo REQUEST with id <paramref name="index"/>, flags 0, as fp-load sends it.</summary>
        public override byte[] BenchRequest(long index, ReadOnlySpan<byte> payload)
        {
            var r = new byte[EncodedLength(payload.Length)];
            WriteEchoRequest((uint)index, 0, payload, r);
            return r;
        }

        sealed class BenchRpcDecoder : BenchDecoder, IRpcFrameHandler
        {
            readonly RpcDecoder _d;
            public BenchRpcDecoder(long maxBody) { _d = new RpcDecoder(maxBody); }
            public override bool Feed(ReadOnlySpan<byte> data) { return _d.Feed(data, this); }
            public bool OnFrame(ref RpcFrame f)
            {
                // Consume(f.Payload), inlined: Mono does not inline a call that passes a Span on.
                int n = f.Payload.Length;
                Frames++;
                Checksum += n + (n > 0 ? f.Payload[0] : 0);
                return true;
            }
            public override void Dispose() { _d.Dispose(); }
        }

        public override BenchDecoder NewBenchDecoder() { return new BenchRpcDecoder(MaxBody); }

        public override int BenchReplyLength(int payloadLength) { return RpcTypes.HeaderLength + 2 + payloadLength; }

        /// <summary>The unary endpoint's RESPONSE: code 0, flags END_STREAM, the request's id (RpcSession's reply path).</summary>
        public override int WriteBenchReply(long index, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return RpcEncoder.WriteResponse(RpcTypes.EndStream, (uint)index, RpcTypes.CodeOk, payload, dest, offset);
        }
        public override int MaxInFlight { get { return 1 << 16; } }

        // ---------------------------------------------------------------- load client

        /// <summary>The call modes 0..3 (spec/rpc.md §7, RPC-MODE-1).</summary>
        public override string[] LoadVariants { get { return new[] { "unary", "client-stream", "server-stream", "bidi" }; } }

        public override ClientChannel NewClientChannel(IClientObserver observer, long timeoutMs, int variant)
        {
            return new RpcClientChannel(this, observer, timeoutMs, variant);
        }

        public override StreamClient NewStreamClient(int variant) { return new RpcStreamClient(MaxBody); }

        // ---------------------------------------------------------------- server

        /// <summary>The network server's session: the first frame picks the endpoint (RPC-ECHO-7).</summary>
        public override ServerSession NewSession(bool sink) { return new RpcSession(MaxBody, RpcSession.Endpoint.Auto, sink); }

        /// <summary>serve endpoints: "" and "unary" (the default), "stream".</summary>
        public override ServerSession NewSession(string endpoint, bool sink)
        {
            if (endpoint == "" || endpoint == "unary") return new RpcSession(MaxBody, RpcSession.Endpoint.Unary, sink);
            if (endpoint == "stream") return new RpcSession(MaxBody, RpcSession.Endpoint.Stream, sink);
            return null;
        }

        // ---------------------------------------------------------------- typed frames (testee)

        sealed class Collector : IRpcFrameHandler
        {
            public readonly List<FrameValue> Frames = new List<FrameValue>();
            public bool OnFrame(ref RpcFrame f) { Frames.Add(f.ToValue()); return true; }
        }

        public DecodeOutcome Decode(IList<byte[]> chunks)
        {
            var r = new DecodeOutcome();
            var c = new Collector();
            using (var d = new RpcDecoder(MaxBody))
            {
                bool ok = true;
                foreach (byte[] ch in chunks) if (!d.Feed(ch, c)) { ok = false; break; }
                if (ok) ok = d.Finish();
                if (!ok) r.Error = d.Error;
            }
            r.Frames.AddRange(c.Frames);
            return r;
        }

        static RpcHeader HeaderOf(FrameValue f)
        {
            return f.Header as RpcHeader ?? new RpcHeader { Version = 0, Type = 0 };
        }

        public EncodeOutcome Encode(FrameValue frame)
        {
            var r = new EncodeOutcome();
            byte[] bytes;
            ProtocolError err;
            if (RpcEncoder.Encode(HeaderOf(frame), frame.Payload ?? new byte[0], MaxBody, out bytes, out err)) r.Encoded = bytes;
            else r.Error = err;
            return r;
        }

        sealed class Recorder : IRpcMatchObserver
        {
            public MatchOutcome Out;
            public void OnReply(long request, object state, ref RpcFrame f)
            {
                Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Reply, Request = (uint)request, Frame = f.ToValue() });
            }
            public void OnTimeout(long request, object state) { Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Timeout, Request = (uint)request }); }
            public void OnFailed(long request, object state) { Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Failed, Request = (uint)request }); }
            public void OnUnmatched(ref RpcFrame f) { Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Unmatched, Frame = f.ToValue() }); }
        }

        /// <summary>spec/testee.md match for rpc: <c>send(p)</c> is a plain call (frameproof.Echo/echo,
        /// flags 0x04), <c>send_frame(f)</c> a REQUEST with f's service, method and flags (another
        /// type is refused), <c>send_one_way</c> is refused. A refused send takes no id.</summary>
        public MatchOutcome Match(long timeoutMs, IList<MatchStep> steps)
        {
            var rec = new Recorder { Out = new MatchOutcome() };
            MatchOutcome r = rec.Out;
            var m = new RpcMatcher(rec, timeoutMs);
            long now = 0;
            uint index = 0;
            using (var dec = new RpcDecoder(MaxBody))
            {
                foreach (MatchStep s in steps)
                {
                    switch (s.Kind)
                    {
                        case MatchStepKind.Send:
                        case MatchStepKind.SendOneWay:
                        case MatchStepKind.SendFrame:
                            {
                                uint n = index++;
                                byte[] bytes = null;
                                uint id;
                                if (s.Kind != MatchStepKind.SendOneWay && m.TryNextId(out id))
                                {
                                    RpcHeader h;
                                    byte[] payload;
                                    if (s.Kind == MatchStepKind.Send)
                                    {
                                        h = new RpcHeader { Type = RpcTypes.Request, Flags = RpcTypes.EndStream, Service = RpcTypes.EchoService, Method = RpcTypes.EchoMethod };
                                        payload = s.Bytes;
                                    }
                                    else
                                    {
                                        RpcHeader g = HeaderOf(s.Frame);
                                        h = g.Type == RpcTypes.Request ? new RpcHeader { Type = RpcTypes.Request, Flags = g.Flags, Service = g.Service, Method = g.Method } : null;
                                        payload = s.Frame.Payload ?? new byte[0];
                                    }
                                    ProtocolError err;
                                    if (h != null)
                                    {
                                        h.Id = id;
                                        if (RpcEncoder.Encode(h, payload, MaxBody, out bytes, out err)) m.Sent(id, n, null, now);
                                        else bytes = null;
                                    }
                                }
                                if (bytes == null)
                                {
                                    r.Sent.Add(new byte[0]);
                                    r.Completions.Add(new MatchCompletion { Kind = CompletionKind.Refused, Request = n });
                                }
                                else r.Sent.Add(bytes);
                                break;
                            }
                        case MatchStepKind.Receive:
                            if (m.Failed) break;
                            if (!dec.Feed(s.Bytes, m))
                            {
                                r.Error = dec.Error;
                                m.FailAll();
                            }
                            break;
                        case MatchStepKind.AdvanceMs:
                            now += s.AdvanceMs;
                            if (!m.Failed) m.Expire(now);
                            break;
                    }
                }
            }
            return r;
        }
    }

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

    /// <summary>Registry entry of `rpc` (spec/rpc.md): parameters under "rpc": {"max_body": N}.</summary>
    public sealed class RpcProtocol : ProtocolModule
    {
        public static readonly RpcProtocol Module = new RpcProtocol();

        public override string Name { get { return "rpc"; } }

        public override string ParamsKey { get { return "rpc"; } }

        /// <summary>The limit is rpc.max_body; "limits" does not apply.</summary>
        public override bool TakesLimits { get { return false; } }

        public override object ParseParams(JsonValue value)
        {
            var members = value.AsObject("\"rpc\"");
            CodecJson.CheckKeys(members, "rpc", "max_body");
            JsonValue v;
            return new RpcParams { MaxBody = CodecJson.TryGet(members, "max_body", out v) ? v.AsInteger("rpc.max_body", 0, long.MaxValue) : 0 };
        }

        public override FrameCodec Create(CodecSpec spec) { return new RpcCodec(spec); }
    }
}
